/** Where batches go: pino's destination (sonic-boom). */
export interface LogDestination {
  write: (chunk: Buffer) => unknown
  /** Calls back once no write is in flight (sonic-boom: on 'drain'). */
  flush: (callback: (error?: Error | null) => void) => void
  flushSync: () => void
  readonly destroyed?: boolean
}

/** Batchers with lines to write at exit, held weakly so that closed instances (tests make many) can go. */
const open = new Set<WeakRef<LineBatcher>>()
const collected = new FinalizationRegistry<WeakRef<LineBatcher>>((reference) => open.delete(reference))
process.on('exit', () => {
  for (const reference of open) reference.deref()?.flushSync()
})

/**
 * The logger's stream: lines written during one turn of the event loop are handed to the
 * destination as one write at the end of the turn, encoded once: sonic-boom in buffer mode
 * then only adds up lengths, where given text it re-measures its pending text on every
 * write. Lines wait here only until the end of the turn; at close the destination is drained,
 * and what waits when the process exits is written synchronously then. Every line (pino's and the request
 * log's) goes through the one batcher, so their order is kept.
 */
export class LineBatcher {
  #lines: string[] = []
  #scheduled = false

  constructor (private readonly destination: LogDestination) {
    const reference = new WeakRef(this)
    open.add(reference)
    collected.register(this, reference)
  }

  write (line: string): boolean {
    this.#lines.push(line)
    if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(this.#flush)
    }
    return true
  }

  /**
   * Hands over what waits and resolves once the destination has no write in flight, so that
   * the synchronous write at exit neither races an asynchronous one nor reorders lines.
   */
  async drain (): Promise<void> {
    this.#flush()
    await new Promise<void>((resolve) => { this.destination.flush(() => { resolve() }) })
  }

  /** Writes what waits and has the destination write everything it holds, synchronously. */
  flushSync (): void {
    this.#flush()
    if (this.destination.destroyed !== true) this.destination.flushSync()
  }

  readonly #flush = (): void => {
    this.#scheduled = false
    if (this.#lines.length === 0) return
    const batch = Buffer.from(this.#lines.join(''))
    this.#lines = []
    this.destination.write(batch)
  }
}
