/**
 * Delivery rounds of a queue in the database (the message outbox, webhook deliveries): one
 * round at a time per instance; a round asked for while one goes on follows it, and a round
 * that found a full batch is followed by another at once.
 */
export class Rounds {
  #running: Promise<void> | null = null
  #again = false

  /**
   * `batch` claims and handles one batch, and says whether it was full (more may be due);
   * `failed` logs a round that could not read or write the queue.
   */
  constructor (private readonly batch: () => Promise<boolean>, private readonly failed: (error: unknown) => void) {}

  /** Something was stored: deliver now rather than at the next round. */
  kick (): void {
    void this.run().catch(() => {}) // logged by the round
  }

  /** One round (joined when one is running); rejects when the queue could not be read or written (logged once). */
  async run (): Promise<void> {
    if (this.#running !== null) {
      this.#again = true
      return await this.#running
    }
    this.#running = this.#drain().catch((error: unknown) => {
      this.failed(error)
      throw error
    }).finally(() => { this.#running = null })
    await this.#running
  }

  /** Waits for the round in progress, if any. */
  async settled (): Promise<void> {
    await this.#running?.catch(() => {})
  }

  async #drain (): Promise<void> {
    do {
      this.#again = false
      if (await this.batch()) this.#again = true
    } while (this.#again)
  }
}
