import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/** The threads' code: a file beside this one, here under src/ or compiled in dist/. */
const WORKER_FILE = new URL('./hash-worker.mjs', import.meta.url)

interface Job {
  id: number
  password: string
  salt: Buffer
  rounds: number
  length: number
  resolve: (key: Buffer) => void
  reject: (error: Error) => void
}

interface Slot { worker: Worker, job: Job | null }

/**
 * PBKDF2-SHA256 on worker threads that run at a lower scheduling priority (nice 10) than
 * the event loop. During a sign-in storm the hashes take the CPU the event loop leaves, so
 * requests that need no hash are still answered promptly; when nothing else runs, the hashes
 * get every core. (libuv's threadpool, which crypto.pbkdf2 uses, runs at the event loop's
 * priority and is shared with file I/O.) One pool per process, one worker per core, started
 * on first use; idle workers do not keep the process alive.
 */
class HashPool {
  readonly #slots: Slot[] = []
  readonly #queue: Job[] = []
  #nextId = 0

  constructor (private readonly size: number) {}

  async derive (password: string, salt: Buffer, rounds: number, length: number): Promise<Buffer> {
    return await new Promise<Buffer>((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, password, salt, rounds, length, resolve, reject })
      this.#dispatch()
    })
  }

  #dispatch (): void {
    while (this.#queue.length > 0) {
      const slot = this.#slots.find((candidate) => candidate.job === null) ??
        (this.#slots.length < this.size ? this.#start() : undefined)
      if (slot === undefined) return
      const job = this.#queue.shift() as Job
      slot.job = job
      // Only a busy worker keeps the process alive.
      slot.worker.ref()
      slot.worker.postMessage({
        id: job.id, password: job.password, salt: job.salt, rounds: job.rounds, length: job.length
      })
    }
  }

  #start (): Slot {
    const worker = new Worker(WORKER_FILE)
    const slot: Slot = { worker, job: null }
    worker.on('message', (message: { id: number, key?: Uint8Array, error?: string }) => {
      const job = slot.job
      slot.job = null
      worker.unref()
      if (job !== null && job.id === message.id) {
        if (message.key !== undefined) {
          job.resolve(Buffer.from(message.key.buffer, message.key.byteOffset, message.key.byteLength))
        } else {
          job.reject(new Error(message.error ?? 'hashing failed'))
        }
      }
      this.#dispatch()
    })
    // A worker that dies takes its job with it; the next job starts a new one.
    const retire = (error: Error) => {
      const index = this.#slots.indexOf(slot)
      if (index === -1) return
      this.#slots.splice(index, 1)
      slot.job?.reject(error)
      slot.job = null
      this.#dispatch()
    }
    worker.on('error', retire)
    worker.on('exit', (code) => { retire(new Error(`hashing worker exited with code ${code}`)) })
    // After the listeners: adding a message listener refs the worker's port again.
    worker.unref()
    this.#slots.push(slot)
    return slot
  }
}

let pool: HashPool | null = null

/** PBKDF2-SHA256 off the event loop, at a lower priority than it. */
export async function pbkdf2Sha256 (password: string, salt: Buffer, rounds: number, length: number): Promise<Buffer> {
  pool ??= new HashPool(availableParallelism())
  return await pool.derive(password, salt, rounds, length)
}
