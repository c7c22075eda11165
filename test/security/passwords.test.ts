import t from 'tap'
import { CapacityExceededError, ConcurrencyLimiter } from '../../src/security/concurrency-limiter.js'
import { PBKDF2_ROUNDS, PasswordHasher } from '../../src/security/passwords.js'

const hasher = new PasswordHasher({ concurrency: 2, queueLimit: 8 })

t.test('hashes are self-describing PBKDF2-SHA256 with 120000 rounds and a random salt', async (t) => {
  const first = await hasher.hash('correct horse')
  const second = await hasher.hash('correct horse')
  const [algorithm, rounds, salt, key] = first.split('$')
  t.equal(algorithm, 'pbkdf2-sha256')
  t.equal(Number(rounds), PBKDF2_ROUNDS)
  t.equal(PBKDF2_ROUNDS, 120_000)
  t.equal(Buffer.from(salt ?? '', 'base64url').length, 16)
  t.equal(Buffer.from(key ?? '', 'base64url').length, 32)
  t.not(first, second, 'salts differ')
})

t.test('verify accepts the right password only', async (t) => {
  const stored = await hasher.hash('s3cret-pass')
  t.equal(await hasher.verify('s3cret-pass', stored), true)
  t.equal(await hasher.verify('s3cret-pasS', stored), false)
  t.equal(await hasher.verify('', stored), false)
})

t.test('verify uses the rounds stored with the hash, so the setting can rise later', async (t) => {
  const cheap = new PasswordHasher({ rounds: 1000, concurrency: 1, queueLimit: 1 })
  const stored = await cheap.hash('legacy')
  t.match(stored, /^pbkdf2-sha256\$1000\$/)
  t.equal(await hasher.verify('legacy', stored), true)
})

t.test('malformed stored hashes never match', async (t) => {
  for (const stored of ['', 'plain', 'pbkdf2-sha256$abc$x$y', 'md5$1000$AAAA$AAAA', 'pbkdf2-sha256$1000$$', 'pbkdf2-sha256$1000$AA$AA$extra']) {
    t.equal(await hasher.verify('anything', stored), false, stored)
  }
})

t.test('the dummy verification answers false and costs a real hash', async (t) => {
  const started = performance.now()
  t.equal(await hasher.verifyAgainstDummy('whatever'), false)
  t.ok(performance.now() - started > 5, 'did real work')
})

t.test('the concurrency limiter runs, queues, then refuses', async (t) => {
  const limiter = new ConcurrencyLimiter(1, 1)
  let release = () => {}
  const blocker = new Promise<void>((resolve) => { release = resolve })
  let running = 0
  let peak = 0
  const task = async () => {
    running++
    peak = Math.max(peak, running)
    await blocker
    running--
    return 'done'
  }
  const first = limiter.run(task)
  const second = limiter.run(task)
  await t.rejects(limiter.run(task), CapacityExceededError)
  release()
  t.same(await Promise.all([first, second]), ['done', 'done'])
  t.equal(peak, 1, 'never more than the concurrency at once')
  t.equal(await limiter.run(async () => 'again'), 'again', 'slots are released')
})
