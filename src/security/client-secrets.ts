import { hash, randomBytes } from 'node:crypto'

/**
 * The credentials of a registered OAuth client (docs/api.md, "OAuth clients"). A secret is 256
 * random bits, shown once and kept only as its SHA-256: a slow hash would add nothing to a
 * value no one can guess, and the authorization server hashes each presented secret to compare.
 */

/** A client's id: 128 random bits, base64url (22 characters), safe in a URL as it is. */
export function newClientId (): string {
  return randomBytes(16).toString('base64url')
}

/** A client secret: 32 random bytes, base64url (43 characters). */
export function newClientSecret (): string {
  return randomBytes(32).toString('base64url')
}

/** What is stored of a secret, and what a presented one is compared by: its SHA-256, base64url. */
export function clientSecretHash (secret: string): string {
  return hash('sha256', secret, 'base64url')
}
