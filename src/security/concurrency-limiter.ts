/** Thrown when both the running slots and the waiting queue are full. */
export class CapacityExceededError extends Error {
  constructor () {
    super('Capacity exceeded')
    this.name = 'CapacityExceededError'
  }
}

/** Runs at most `concurrency` tasks at once, queues up to `queueLimit`, refuses the rest. */
export class ConcurrencyLimiter {
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor (readonly concurrency: number, readonly queueLimit: number) {}

  async run<T> (task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.concurrency) {
      if (this.#waiting.length >= this.queueLimit) throw new CapacityExceededError()
      await new Promise<void>((resolve) => this.#waiting.push(resolve))
    } else {
      this.#running++
    }
    try {
      return await task()
    } finally {
      // Hand the slot straight to the next waiter, so the running count never dips and re-rises.
      const next = this.#waiting.shift()
      if (next === undefined) this.#running--
      else next()
    }
  }
}
