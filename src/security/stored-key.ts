import { createHash } from 'node:crypto'

/**
 * What a store keeps of a short-lived secret (an OAuth state, a one-time code, a passkey
 * challenge): its SHA-256, so that reading the store reveals none of them.
 */
export function storedKey (secret: string): string {
  return createHash('sha256').update(secret).digest('base64url')
}
