import { spawn } from 'node:child_process'
import t from 'tap'
import { LineBatcher } from '../../src/http/log-batching.js'

/** A destination recording its writes and synchronous flushes. */
function recording () {
  const writes: string[] = []
  let flushes = 0
  const drains: Array<() => void> = []
  const destination = {
    write: (chunk: Buffer) => writes.push(chunk.toString()),
    flushSync: () => { flushes++ },
    flush: (callback: () => void) => { drains.push(callback) }
  }
  return { writes, flushes: () => flushes, drains, destination }
}

t.test('lines of one turn reach the destination as one write, in order, at the end of the turn', async (t) => {
  const { writes, destination } = recording()
  const batcher = new LineBatcher(destination)
  batcher.write('a\n')
  batcher.write('b\n')
  batcher.write('c\n')
  t.same(writes, [], 'nothing written during the turn')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(writes, ['a\nb\nc\n'], 'one write, in order')
  batcher.write('d\n')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(writes, ['a\nb\nc\n', 'd\n'], 'the next turn is its own batch')
})

t.test('flushSync writes what waits and flushes the destination', async (t) => {
  const { writes, flushes, destination } = recording()
  const batcher = new LineBatcher(destination)
  batcher.write('a\n')
  batcher.flushSync()
  t.same(writes, ['a\n'])
  t.equal(flushes(), 1)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(writes, ['a\n'], 'nothing written twice')
})

t.test('drain hands over what waits and resolves when the destination has no write in flight', async (t) => {
  const { writes, drains, destination } = recording()
  const batcher = new LineBatcher(destination)
  batcher.write('a\n')
  let drained = false
  const done = batcher.drain().then(() => { drained = true })
  t.same(writes, ['a\n'], 'handed over at once, not at the end of the turn')
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(drained, 'waits for the destination')
  drains.forEach((callback) => { callback() })
  await done
  t.ok(drained)
})

t.test('lines waiting when the process exits are written', async (t) => {
  const script = [
    "import pino from 'pino'",
    "import { LineBatcher } from './src/http/log-batching.ts'",
    "const logger = pino({ base: null }, new LineBatcher(pino.destination({ dest: 1, sync: false, minLength: 4096, contentMode: 'buffer' })))",
    "for (let n = 0; n < 1000; n++) logger.info({ n }, 'line')",
    'process.exit(0)'
  ].join('\n')
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const code = await new Promise((resolve) => child.once('close', resolve))
  t.equal(code, 0)
  const numbers = output.trim().split('\n').map((line) => (JSON.parse(line) as { n: number }).n)
  t.same(numbers, Array.from({ length: 1000 }, (_, n) => n), 'every line, in order')
})
