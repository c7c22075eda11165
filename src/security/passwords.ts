import { randomBytes, timingSafeEqual } from 'node:crypto'
import { ConcurrencyLimiter } from './concurrency-limiter.js'
import { pbkdf2Sha256 } from './hash-pool.js'

/** The floor of the hashing cost (docs/api.md, "Passwords"); stored hashes carry their own round count. */
export const PBKDF2_ROUNDS = 120_000
const ALGORITHM = 'pbkdf2-sha256'
const SALT_BYTES = 16
const KEY_BYTES = 32

interface ParsedHash { rounds: number, salt: Buffer, key: Buffer }

/** `pbkdf2-sha256$<rounds>$<salt base64url>$<key base64url>`, or null when malformed. */
function parseHash (stored: string): ParsedHash | null {
  const [algorithm, rounds, salt, key, ...rest] = stored.split('$')
  if (algorithm !== ALGORITHM || rest.length > 0 || rounds === undefined || !/^[1-9][0-9]{0,8}$/.test(rounds) ||
    salt === undefined || key === undefined) return null
  const parsed = { rounds: Number(rounds), salt: Buffer.from(salt, 'base64url'), key: Buffer.from(key, 'base64url') }
  return parsed.salt.length > 0 && parsed.key.length > 0 ? parsed : null
}

export interface PasswordHasherOptions {
  rounds?: number
  /** Hashes computed at once; each holds a hashing thread for ~30–60 ms at 120000 rounds. */
  concurrency: number
  /** Hashes allowed to wait; beyond it `hash`/`verify` reject with CapacityExceededError. */
  queueLimit: number
}

/**
 * PBKDF2-SHA256 password hashing off the event loop (low-priority worker threads), with a cap on
 * concurrent hashes so that a sign-in storm queues briefly and then sheds load instead of
 * starving every other request of threadpool and CPU.
 */
export class PasswordHasher {
  readonly #rounds: number
  readonly #limiter: ConcurrencyLimiter
  #dummyHash: Promise<string> | null = null

  constructor (options: PasswordHasherOptions) {
    this.#rounds = options.rounds ?? PBKDF2_ROUNDS
    this.#limiter = new ConcurrencyLimiter(options.concurrency, options.queueLimit)
  }

  async hash (password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES)
    const key = await this.#derive(password, salt, this.#rounds)
    return `${ALGORITHM}$${this.#rounds}$${salt.toString('base64url')}$${key.toString('base64url')}`
  }

  /** Constant-time comparison; a malformed stored hash never matches. */
  async verify (password: string, stored: string): Promise<boolean> {
    const parsed = parseHash(stored)
    if (parsed === null) return false
    const key = await this.#derive(password, parsed.salt, parsed.rounds, parsed.key.length)
    return key.length === parsed.key.length && timingSafeEqual(key, parsed.key)
  }

  /**
   * Spends the same work as `verify` against a real hash, for unknown accounts, so that
   * response timing does not reveal whether an e-mail is registered. Always false.
   */
  async verifyAgainstDummy (password: string): Promise<false> {
    this.#dummyHash ??= this.hash(randomBytes(16).toString('hex'))
    await this.verify(password, await this.#dummyHash)
    return false
  }

  async #derive (password: string, salt: Buffer, rounds: number, length = KEY_BYTES): Promise<Buffer> {
    return await this.#limiter.run(() => pbkdf2Sha256(password, salt, rounds, length))
  }
}
