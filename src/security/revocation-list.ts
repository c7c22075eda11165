/**
 * Revoked access-token identifiers held in memory, so checking one costs a map lookup
 * rather than a round trip. Pruning drops the entries whose tokens have expired anyway.
 */
export class RevocationList {
  readonly #expiries = new Map<string, number>()

  /** Holds the entry until pruned; one whose token has already expired is not held. */
  add (jti: string, expiresAtMs: number, nowMs = Date.now()): void {
    if (expiresAtMs > nowMs) this.#expiries.set(jti, expiresAtMs)
  }

  has (jti: string): boolean {
    return this.#expiries.has(jti)
  }

  prune (nowMs: number): void {
    for (const [jti, expiresAt] of this.#expiries) {
      if (expiresAt <= nowMs) this.#expiries.delete(jti)
    }
  }
}
