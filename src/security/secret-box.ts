import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

const VERSION = 'v1'

/**
 * Authenticated encryption (AES-256-GCM) of small secrets at rest, such as TOTP secrets,
 * under a key derived with HKDF from a secret of the service (a string, or key bytes) and a
 * purpose label. The stored
 * form is `v1.<iv>.<tag>.<ciphertext>` (base64url).
 */
export class SecretBox {
  readonly #key: Buffer

  constructor (secret: string | Buffer, purpose: string) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'users-api', purpose, 32))
  }

  seal (plaintext: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return [VERSION, iv, cipher.getAuthTag(), sealed].map((part) => typeof part === 'string' ? part : part.toString('base64url')).join('.')
  }

  /** The plaintext, or null when the box was made under another key or altered. */
  open (box: string): string | null {
    const [version, iv, tag, sealed, ...rest] = box.split('.')
    if (version !== VERSION || iv === undefined || tag === undefined || sealed === undefined || rest.length > 0) {
      return null
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8')
    } catch {
      return null
    }
  }
}
