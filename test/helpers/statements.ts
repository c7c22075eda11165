/**
 * The statements a database runs, as the app's `onStatement` is told them (AppOptions): how
 * tests count what a request reads (docs/testing.md, "Counting statements").
 */
export class StatementLog {
  #recording: string[] | null = null

  readonly onStatement = (sql: string): void => { this.#recording?.push(sql) }

  /** The statements run while `action` ran, in order. */
  async during (action: () => Promise<unknown>): Promise<string[]> {
    const ran: string[] = []
    this.#recording = ran
    try {
      await action()
    } finally {
      this.#recording = null
    }
    return ran
  }
}

/** The statements that read `table` (select from or join it), each with whether a transaction was open when it ran. */
export function readsOf (statements: string[], table: string): Array<{ sql: string, inTransaction: boolean }> {
  const reads = new RegExp(`\\b(from|join)\\s+"?${table}"?(\\s|$)`, 'i')
  let open = false
  const found: Array<{ sql: string, inTransaction: boolean }> = []
  for (const sql of statements) {
    if (/^\s*begin\b/i.test(sql)) open = true
    else if (/^\s*(commit|rollback)\b/i.test(sql)) open = false
    else if (/^\s*select\b/i.test(sql) && reads.test(sql)) found.push({ sql, inTransaction: open })
  }
  return found
}
