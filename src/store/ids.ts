import { randomBytes } from 'node:crypto'

/**
 * UUID version 7: a 48-bit millisecond timestamp, the version and variant bits, then random
 * bits, so ids sort by creation time and index inserts stay append-mostly.
 */
export function uuidv7 (now = Date.now()): string {
  const bytes = randomBytes(16)
  bytes.writeUIntBE(now, 0, 6)
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** What Ajv's `uuid` format accepts: any letter case, optionally as a URN. */
const UUID = /^(?:urn:uuid:)?([0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})$/i

/**
 * A UUID as the service writes it, lower case and bare; anything else as it is. UUIDs are
 * case-insensitive (docs/api.md, "Identifiers"), ids are stored and compared as text.
 */
export function canonicalUuid (text: string): string {
  const bare = UUID.exec(text)?.[1]
  return bare === undefined ? text : bare.toLowerCase()
}
