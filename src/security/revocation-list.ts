/**
 * Revoked access-token identifiers held in memory, so checking one costs a map lookup
 * rather than a round trip. Pruning drops the entries whose tokens have expired anyway.
 */
export class RevocationList {
  readonly #expiries = new Map<string, number>()

  add (jti: string, expiresAtMs: number): void {
    this.#expiries.set(jti, expiresAtMs)
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
