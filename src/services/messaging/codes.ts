import { createHmac, hkdfSync, randomInt, timingSafeEqual } from 'node:crypto'
import type { MfaRepository } from '../../store/mfa.js'
import type { MessageFactor } from '../../store/users.js'

/** A code sent by message is good this long, once. */
export const MESSAGE_CODE_TTL_MS = 5 * 60 * 1000
/** Codes one challenge may be sent: beyond this the caller signs in again (a new challenge). */
export const CODES_PER_CHALLENGE = 5

/**
 * Sign-in codes sent by e-mail or SMS for one MFA challenge: six random digits, stored as a
 * keyed hash (the key derived from the service secret), compared in constant time, spent once.
 */
export class MessageCodes {
  readonly #key: Buffer
  readonly #now: () => number

  constructor (private readonly mfa: MfaRepository, secret: string, now: () => number = Date.now) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'users-api', 'mfa-message-code', 32))
    this.#now = now
  }

  /** A new code for the challenge, or null when the challenge has had its share already. */
  async issue (userId: string, challengeJti: string, method: MessageFactor): Promise<string | null> {
    const now = this.#now()
    const sent = await this.mfa.messageCodes(userId, challengeJti, new Date(now).toISOString())
    if (sent.length >= CODES_PER_CHALLENGE) return null
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    await this.mfa.addMessageCode({
      userId,
      challengeJti,
      method,
      codeHash: this.#hash(userId, challengeJti, code),
      expiresAt: new Date(now + MESSAGE_CODE_TTL_MS).toISOString()
    }, new Date(now).toISOString())
    return code
  }

  /** Spends a code sent for this challenge: the method it was sent by, or null when none matches. */
  async accept (userId: string, challengeJti: string, code: string): Promise<MessageFactor | null> {
    const now = new Date(this.#now()).toISOString()
    const candidate = Buffer.from(this.#hash(userId, challengeJti, code), 'hex')
    let match: { id: string, method: MessageFactor } | null = null
    // Every stored code is compared, so the time taken says nothing of which one matched.
    for (const stored of await this.mfa.messageCodes(userId, challengeJti, now)) {
      if (timingSafeEqual(Buffer.from(stored.codeHash, 'hex'), candidate) && stored.usable) match = stored
    }
    return match !== null && await this.mfa.spendMessageCode(match.id, now) ? match.method : null
  }

  #hash (userId: string, challengeJti: string, code: string): string {
    return createHmac('sha256', this.#key).update(`${userId}:${challengeJti}:${code}`).digest('hex')
  }
}
