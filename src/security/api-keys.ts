import { hash, timingSafeEqual } from 'node:crypto'
import { clientSecretHash } from './client-secrets.js'

/**
 * The revocation list's entry for a deleted API key (docs/api.md, "API keys"): every instance
 * refuses the key from the moment it learns of it, before its cached copy lapses.
 */
export function apiKeyRevocationId (id: string): string {
  return `api-key:${id}`
}

/** What is stored of a key: its SHA-256, as of a client secret (190 random bits: a slow hash would add nothing). */
export const apiKeyHash = clientSecretHash

/** Whether `credential` is the key whose SHA-256 is `stored` (its bytes), compared in constant time. */
export function keyMatches (stored: Buffer, credential: string): boolean {
  const presented = hash('sha256', credential, 'buffer')
  return presented.length === stored.length && timingSafeEqual(presented, stored)
}
