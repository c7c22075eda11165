import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import { pbkdf2Sha256 } from '../../src/security/hash-pool.js'

/** Nice values of this process's threads, from /proc (field 19 of each thread's stat). */
function threadNiceness (): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces; count fields after its closing parenthesis.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
  })
}

t.test('derives the same keys as crypto.pbkdf2, several at once', async (t) => {
  const jobs = Array.from({ length: availableParallelism() * 2 + 1 }, (_, index) => ({ password: `password-${index}`, salt: randomBytes(16) }))
  const keys = await Promise.all(jobs.map(({ password, salt }) => pbkdf2Sha256(password, salt, 1000, 32)))
  jobs.forEach(({ password, salt }, index) => {
    t.same(keys[index], pbkdf2Sync(password, salt, 1000, 32, 'sha256'), `job ${index}`)
  })
})

t.test('the hashing threads run at a lower priority than the event loop', { skip: process.platform !== 'linux' && 'thread priorities are read from /proc' }, async (t) => {
  await pbkdf2Sha256('password', randomBytes(16), 1000, 32)
  const niceness = threadNiceness()
  t.equal(niceness[0], 0, 'the main thread is untouched')
  t.ok(niceness.filter((nice) => nice === 10).length >= 1, `a thread at nice 10 (threads: ${niceness.join(', ')})`)
})
