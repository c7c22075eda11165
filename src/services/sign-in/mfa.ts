import { hkdfSync } from 'node:crypto'
import QRCode from 'qrcode'
import type { MfaChallenge, TotpSetup } from '../../../schemas/mfa.js'
import { Errors } from '../../errors.js'
import { type KeyMaterial, SEALED_PURPOSES, SecretBox } from '../../security/secret-box.js'
import { hashBackupCode, matchBackupCode, newBackupCodes, newTotpSecret, provisioningUri, verifyTotp } from '../../security/totp.js'
import type { MfaRepository } from '../../store/mfa.js'
import type { Db } from '../../store/types.js'
import type { Recorded } from '../audit/index.js'

/** How a sign-in code was proved: the methods a challenge offers. */
export type MfaMethod = MfaChallenge['methods'][number]

export interface MfaServiceOptions {
  mfa: MfaRepository
  /** The service secret (JWT_SECRET): backup codes are keyed under a key derived from it. */
  secret: string
  /** The sealing key ring TOTP secrets are sealed under (docs/operations.md, "Sealed secrets"). */
  sealingKeys: readonly KeyMaterial[]
  issuer: string
  now?: () => number
}

/**
 * TOTP enrolment, backup codes and code checks (docs/api.md, "Multi-factor authentication").
 * TOTP secrets are stored sealed with AES-256-GCM; backup codes as keyed hashes; each accepted
 * TOTP step is recorded so a code (the enabling one included) and older ones are refused
 * afterwards.
 */
export class MfaService {
  readonly #mfa: MfaRepository
  readonly #box: SecretBox
  readonly #backupKey: Buffer
  readonly #issuer: string
  readonly #now: () => number

  constructor (options: MfaServiceOptions) {
    this.#mfa = options.mfa
    this.#box = new SecretBox(options.sealingKeys, SEALED_PURPOSES.totpSecret)
    this.#backupKey = Buffer.from(hkdfSync('sha256', options.secret, 'users-api', 'backup-code', 32))
    this.#issuer = options.issuer
    this.#now = options.now ?? Date.now
  }

  /** A new secret awaiting its first code; refused while TOTP is on (the secret is never shown again). */
  async setup (user: { id: string, email: string }): Promise<TotpSetup> {
    const state = await this.#state(user.id)
    if (state.enabledAt !== null) throw new Errors.CONFLICT('TOTP is already enabled; disable it first')
    const secret = newTotpSecret()
    await this.#mfa.setPendingSecret(user.id, this.#box.seal(secret))
    const uri = provisioningUri(secret, user.email, this.#issuer)
    return { secret, otpauth_url: uri, qr_code: await QRCode.toDataURL(uri, { type: 'image/png', errorCorrectionLevel: 'M' }) }
  }

  /** Turns TOTP on with a first good code; answers the first set of backup codes. */
  async enable (userId: string, code: string, recorded: Recorded): Promise<string[]> {
    const state = await this.#state(userId)
    if (state.enabledAt !== null) throw new Errors.CONFLICT('TOTP is already enabled')
    const pending = state.pendingSecret === null ? null : this.#box.open(state.pendingSecret)
    if (pending === null) throw new Errors.CONFLICT('No TOTP setup in progress: call /auth/mfa/totp/setup first')
    if (!await this.#acceptStep(userId, pending, code, state.lastStep)) throw new Errors.INVALID_MFA_CODE()
    const codes = newBackupCodes()
    const codeHashes = codes.map((backup) => hashBackupCode(this.#backupKey, userId, backup))
    await recorded(async (trx) => { await this.#mfa.enable(userId, state.pendingSecret ?? '', codeHashes, new Date(this.#now()).toISOString(), trx) })
    return codes
  }

  /** Throws CONFLICT unless TOTP is on: the answer before any code is looked at. */
  async assertEnabled (userId: string): Promise<void> {
    await this.#enabled(userId)
  }

  /** Checks a TOTP code of the enabled secret, spending its step when right. */
  async acceptTotpCode (userId: string, code: string): Promise<boolean> {
    const { secret, lastStep } = await this.#enabled(userId)
    return await this.#acceptStep(userId, secret, code, lastStep)
  }

  /** A fresh set of backup codes; the old set stops working. */
  async replaceBackupCodes (userId: string, db?: Db): Promise<string[]> {
    const codes = newBackupCodes()
    const hashes = codes.map((backup) => hashBackupCode(this.#backupKey, userId, backup))
    await this.#mfa.replaceBackupCodes(userId, hashes, new Date(this.#now()).toISOString(), db)
    return codes
  }

  /** Turns TOTP off, its secret and backup codes gone. */
  async disable (userId: string, recorded: Recorded): Promise<void> {
    await recorded(async (trx) => { await this.#mfa.disable(userId, trx) })
  }

  /** Checks a sign-in code: a TOTP code, else a backup code (spent on use). Null when neither. */
  async verifyCode (userId: string, code: string): Promise<MfaMethod | null> {
    const state = await this.#state(userId)
    const secret = state.secret === null ? null : this.#box.open(state.secret)
    if (state.enabledAt === null || secret === null) return null
    const step = verifyTotp(secret, code, this.#now(), state.lastStep)
    if (step !== null) return await this.#mfa.acceptStep(userId, step) ? 'totp' : null
    const stored = await this.#mfa.backupCodes(userId)
    const index = matchBackupCode(stored.map((row) => row.code_hash), hashBackupCode(this.#backupKey, userId, code))
    const match = stored[index]
    return match !== undefined && await this.#mfa.consumeBackupCode(match.id) ? 'backup_code' : null
  }

  async #state (userId: string) {
    const state = await this.#mfa.totpState(userId)
    if (state === undefined) throw new Errors.NOT_FOUND('User')
    return state
  }

  async #enabled (userId: string): Promise<{ secret: string, lastStep: number | null }> {
    const state = await this.#state(userId)
    const secret = state.secret === null ? null : this.#box.open(state.secret)
    if (state.enabledAt === null || secret === null) throw new Errors.CONFLICT('TOTP is not enabled')
    return { secret, lastStep: state.lastStep }
  }

  /** True when `code` is right for `secret` and its step is recorded as spent. */
  async #acceptStep (userId: string, secret: string, code: string, lastStep: number | null): Promise<boolean> {
    const step = verifyTotp(secret, code, this.#now(), lastStep)
    return step !== null && await this.#mfa.acceptStep(userId, step)
  }
}
