import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

const VERSION = 'v1'

/** What each kind of secret is sealed for: a key of its own is derived for each from the ring. */
export const SEALED_PURPOSES = {
  totpSecret: 'totp-secret',
  webhookSecret: 'webhook-signing-secret',
  refreshRetry: 'refresh-retry',
  idTokenKey: 'authorization-server-key',
  ssoClientSecret: 'sso-client-secret'
} as const

/** Key material a box key is derived from: a secret string, or key bytes. */
export type KeyMaterial = string | Buffer

/**
 * Authenticated encryption (AES-256-GCM) of small secrets at rest (TOTP secrets, webhook
 * signing secrets, the pairs kept for refresh retries, the authorization server's private keys,
 * SSO connections' client secrets), under keys derived with HKDF from the sealing key ring and
 * a purpose label (docs/operations.md, "Sealed secrets"). The first key of the ring seals; every
 * key opens, so that a former key still opens what it sealed until `npm run secrets:reseal`
 * sealed it again under the first.
 * The stored form is `v1.<iv>.<tag>.<ciphertext>` (base64url).
 */
export class SecretBox {
  readonly #keys: Buffer[]

  constructor (material: KeyMaterial | readonly KeyMaterial[], purpose: string) {
    const ring = Array.isArray(material) ? material as readonly KeyMaterial[] : [material as KeyMaterial]
    if (ring.length === 0) throw new Error('a secret box needs a key')
    this.#keys = ring.map((key) => Buffer.from(hkdfSync('sha256', key, 'users-api', purpose, 32)))
  }

  seal (plaintext: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0] as Buffer, iv)
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return [VERSION, iv, cipher.getAuthTag(), sealed].map((part) => typeof part === 'string' ? part : part.toString('base64url')).join('.')
  }

  /** The plaintext, or null when no key of the ring sealed the box, or it was altered. */
  open (box: string): string | null {
    return this.#opened(box)?.plaintext ?? null
  }

  /**
   * The box sealed under the ring's first key: itself when it already is, a new box when a
   * former key sealed it, null when no key opens it.
   */
  resealed (box: string): string | null {
    const opened = this.#opened(box)
    if (opened === undefined) return null
    return opened.key === 0 ? box : this.seal(opened.plaintext)
  }

  #opened (box: string): { plaintext: string, key: number } | undefined {
    const [version, iv, tag, sealed, ...rest] = box.split('.')
    if (version !== VERSION || iv === undefined || tag === undefined || sealed === undefined || rest.length > 0) {
      return undefined
    }
    for (const [index, key] of this.#keys.entries()) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
        decipher.setAuthTag(Buffer.from(tag, 'base64url'))
        const plaintext = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8')
        return { plaintext, key: index }
      } catch {}
    }
    return undefined
  }
}
