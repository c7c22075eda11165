// @ts-check
import { pbkdf2Sync } from 'node:crypto'
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'

/**
 * A hashing thread of hash-pool.ts. Plain JavaScript, type-checked through JSDoc and compiled
 * to dist/ with the rest, because a worker starts from a file without the TypeScript hooks its
 * parent may run under: tsx's (`npm run dev`, `npm run user:create`) do not reach worker
 * threads on Node 20, which then refuse a `.ts` file.
 */

/** Nice value of the hashing threads: the scheduler gives the event loop about 9 times their share. */
const HASHING_NICENESS = 10

/** @typedef {{ id: number, password: string, salt: Uint8Array, rounds: number, length: number }} HashJob */

// On Linux, setpriority on a thread id applies to that thread alone. Elsewhere the call fails
// and the worker runs at normal priority.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), HASHING_NICENESS)
} catch {}

const port = parentPort
if (port === null) throw new Error('hash-worker.mjs runs as a worker thread')
port.on('message', (/** @type {HashJob} */ { id, password, salt, rounds, length }) => {
  try {
    port.postMessage({ id, key: pbkdf2Sync(password, salt, rounds, length, 'sha256') })
  } catch (error) {
    port.postMessage({ id, error: String(error instanceof Error ? error.message : error) })
  }
})
