import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

const MAC_BYTES = 16

/**
 * Opaque, tamper-evident cursors: the last row's sort values plus a fingerprint of the
 * query they belong to, signed with HMAC-SHA256. A cursor edited by hand, or replayed with
 * another sort or filter, is refused instead of silently skipping or repeating rows.
 */
export class CursorCodec {
  readonly #key: Buffer

  constructor (secret: string) {
    this.#key = createHash('sha256').update('collection-cursor:').update(secret).digest()
  }

  encode (fingerprint: string, values: unknown[]): string {
    const body = Buffer.from(JSON.stringify({ q: fingerprint, v: values })).toString('base64url')
    return `${body}.${this.#mac(body).toString('base64url')}`
  }

  /** The sort values, or null when the cursor is forged, corrupt or from another query. */
  decode (cursor: string, fingerprint: string): unknown[] | null {
    const [body = '', mac = '', ...rest] = cursor.split('.')
    const given = Buffer.from(mac, 'base64url')
    if (rest.length > 0 || given.length !== MAC_BYTES || !timingSafeEqual(given, this.#mac(body))) return null
    try {
      const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
      if (typeof payload !== 'object' || payload === null || !('q' in payload) || !('v' in payload)) return null
      return payload.q === fingerprint && Array.isArray(payload.v) ? payload.v : null
    } catch {
      return null
    }
  }

  #mac (body: string): Buffer {
    return createHmac('sha256', this.#key).update(body).digest().subarray(0, MAC_BYTES)
  }
}
