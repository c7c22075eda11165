import { createHmac, randomInt, timingSafeEqual } from 'node:crypto'
import { generateSecret, generateURI, verifySync } from 'otplib'

/** SHA-1, 6 digits, 30-second steps, ±1 step (docs/api.md, "TOTP"). */
export const TOTP_PERIOD_S = 30
const TOLERANCE_S = TOTP_PERIOD_S
export const BACKUP_CODE_COUNT = 10

export function newTotpSecret (): string {
  return generateSecret()
}

/** The provisioning URI an authenticator app reads from the QR code. */
export function provisioningUri (secret: string, email: string, issuer: string): string {
  return generateURI({ issuer, label: email, secret })
}

/**
 * The time step the code belongs to (current ±1), or null. Codes of `afterStep` or earlier
 * are refused, which makes each accepted code single use and refuses older codes too.
 */
export function verifyTotp (secret: string, code: string, nowMs: number, afterStep?: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null
  // A step recorded ahead of this clock (instances whose clocks disagree, a clock set back):
  // no code can be later than it now, and otplib throws rather than refuse.
  if (afterStep !== undefined && afterStep !== null && afterStep > Math.floor(nowMs / 1000 / TOTP_PERIOD_S)) return null
  const result = verifySync({
    secret,
    token: code,
    epoch: Math.floor(nowMs / 1000),
    epochTolerance: TOLERANCE_S,
    ...(afterStep !== undefined && afterStep !== null && { afterTimeStep: afterStep })
  })
  // The matched step, from the period start otplib reports (HOTP results have none).
  return result.valid && 'epoch' in result ? Math.floor(result.epoch / TOTP_PERIOD_S) : null
}

/** 6 decimal digits, zero-padded, from a CSPRNG (docs/api.md, "Backup codes"). */
export function newBackupCodes (count = BACKUP_CODE_COUNT): string[] {
  return Array.from({ length: count }, () => String(randomInt(0, 1_000_000)).padStart(6, '0'))
}

/**
 * Backup codes are stored as keyed hashes (HMAC-SHA256 with a server-side key and the user
 * id): six digits are too few for a plain hash to resist a dump, and too many checks per
 * sign-in for a slow one.
 */
export function hashBackupCode (key: Buffer, userId: string, code: string): string {
  return createHmac('sha256', key).update(userId).update(':').update(code).digest('base64url')
}

/** Index of the matching stored hash, comparing against every one in constant time. */
export function matchBackupCode (stored: readonly string[], candidate: string): number {
  const given = Buffer.from(candidate)
  let found = -1
  stored.forEach((hash, index) => {
    const expected = Buffer.from(hash)
    if (expected.length === given.length && timingSafeEqual(expected, given) && found === -1) found = index
  })
  return found
}
