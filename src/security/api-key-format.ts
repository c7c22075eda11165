import { randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

/**
 * The shape of an API key (docs/api.md, "API keys"): `uak_`, the key's id (32 hex digits), `_`,
 * 32 random base62 characters and a 6-character CRC32 checksum of all that precedes it, as
 * GitHub's tokens carry one. The prefix lets secret scanners find a leaked key; the checksum
 * refuses a mistyped or made-up key without reading the database.
 */
export const API_KEY_PREFIX = 'uak_'
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const SECRET_LENGTH = 32
const CHECKSUM_LENGTH = 6
const SHAPE = /^uak_([0-9a-f]{32})_([0-9A-Za-z]{38})$/

function base62 (value: number, length: number): string {
  let text = ''
  for (let rest = value; text.length < length; rest = Math.floor(rest / 62)) text = BASE62[rest % 62] + text
  return text
}

function checksum (body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH)
}

/** A new key for the key id `id` (a UUID): shown once, kept only as its hash. */
export function newApiKey (id: string): string {
  // 62^32 ≈ 2^190; rejection sampling keeps every character equally likely.
  let secret = ''
  while (secret.length < SECRET_LENGTH) {
    for (const byte of randomBytes(SECRET_LENGTH)) {
      if (byte < 248 && secret.length < SECRET_LENGTH) secret += BASE62[byte % 62]
    }
  }
  const body = `${API_KEY_PREFIX}${id.replaceAll('-', '')}_${secret}`
  return body + checksum(body)
}

/** Whether a bearer credential is meant as an API key (rather than an access token). */
export function isApiKey (credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX)
}

/** The key's id (a UUID) when `key` has the shape and its checksum holds; undefined otherwise. */
export function apiKeyId (key: string): string | undefined {
  const match = SHAPE.exec(key)
  if (match === null) return undefined
  const body = key.slice(0, -CHECKSUM_LENGTH)
  if (checksum(body) !== key.slice(-CHECKSUM_LENGTH)) return undefined
  const hex = match[1] as string
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** What a key shows of itself in lists: its start up to its secret (the id), to recognise it, nothing to use it. */
export function apiKeyPrefixOf (id: string): string {
  return `${API_KEY_PREFIX}${id.replaceAll('-', '')}`
}
