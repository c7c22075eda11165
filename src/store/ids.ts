import { randomBytes } from 'node:crypto'

/** The last id made, to keep ids made in one millisecond in the order they were made. */
let previous: { ms: number, bytes: Buffer } = { ms: -1, bytes: Buffer.alloc(16) }

/**
 * UUID version 7: a 48-bit millisecond timestamp, the version and variant bits, then random
 * bits, so ids sort by creation time and index inserts stay append-mostly. Within one
 * millisecond, each id is the previous one plus one in its random bits, so that records made
 * in the same millisecond (an action and its audit entries) list in the order they were made.
 */
export function uuidv7 (now = Date.now()): string {
  let bytes: Buffer
  if (now === previous.ms) {
    bytes = Buffer.from(previous.bytes)
    // Add one to the 74 random bits, from the last byte up; the version and variant bits stay.
    for (let index = 15; index >= 6; index--) {
      if (index === 8) {
        const low = ((bytes[8] ?? 0) & 0x3f) + 1
        bytes[8] = (low & 0x3f) | 0x80
        if (low <= 0x3f) break
        continue
      }
      if (index === 6) {
        bytes[6] = ((((bytes[6] ?? 0) & 0x0f) + 1) & 0x0f) | 0x70
        break
      }
      bytes[index] = ((bytes[index] ?? 0) + 1) & 0xff
      if (bytes[index] !== 0) break
    }
  } else {
    bytes = randomBytes(16)
    bytes.writeUIntBE(now, 0, 6)
    bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70
    bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  }
  previous = { ms: now, bytes }
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

/** Whether the text is a UUID in a spelling requests may use (the `uuid` format). */
export function isUuid (text: string): boolean {
  return UUID.test(text)
}
