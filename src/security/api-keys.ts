import { hash, timingSafeEqual } from 'node:crypto'

/**
 * The revocation list's entry for a deleted API key (docs/api.md, "API keys"): every instance
 * refuses the key from the moment it learns of it, before its cached copy lapses.
 */
export function apiKeyRevocationId (id: string): string {
  return `api-key:${id}`
}

/**
 * What is stored of a key: its SHA-256, base64url, as of a client secret (a key is 190 random
 * bits, so a slow hash would add nothing). Node's one-shot hash: a key is hashed on every request.
 */
export function apiKeyHash (key: string): string {
  return hash('sha256', key, 'base64url')
}

/** Whether `credential` is the key whose SHA-256 is `stored` (its bytes), compared in constant time. */
export function keyMatches (stored: Buffer, credential: string): boolean {
  const presented = hash('sha256', credential, 'buffer')
  return presented.length === stored.length && timingSafeEqual(presented, stored)
}
