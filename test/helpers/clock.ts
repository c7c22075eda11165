/** Waiting on time: a deadline for a promise, polling until something holds, the clock moving past an instant. */

/** Settles as `promise` does; rejects if it has not within `withinMs`. */
export async function within<T> (what: string, withinMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${withinMs} ms: ${what}`)), withinMs)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Milliseconds until `check` answers true, asked every 10 ms (news from another instance has
 * no event here to await); Infinity if it has not within `limitMs`.
 */
export async function msUntil (check: () => Promise<boolean>, limitMs: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return Infinity
}

/** Resolves once the clock has moved past the given instant (milliseconds). */
export async function clockPast (instant: number): Promise<void> {
  while (Date.now() <= instant) await new Promise((resolve) => setImmediate(resolve))
}
