import { type Static, Type } from '@sinclair/typebox'
import { CodeSchema, EXAMPLE_PASSWORD } from './common.js'

/**
 * The proofs a sensitive change accepts (docs/security.md, "Sensitive changes"): the password,
 * a TOTP or backup code, a code sent by e-mail or SMS for this purpose, or a passkey.
 */
export const PROOF_METHODS = ['password', 'totp', 'backup_code', 'email', 'sms', 'passkey'] as const
export type ProofMethod = typeof PROOF_METHODS[number]

/** One proof an account can offer, as REAUTHENTICATION_REQUIRED lists them in `details`. */
export const ProofOfferSchema = Type.Object({
  proof: Type.Unsafe<ProofMethod>(Type.String({ enum: [...PROOF_METHODS] })),
  message: Type.String({ description: 'How to give it' })
}, { title: 'ProofOffer' })
export type ProofOffer = Static<typeof ProofOfferSchema>

export const CurrentPasswordSchema = Type.String({ maxLength: 128, examples: [EXAMPLE_PASSWORD], description: 'The account\'s current password' })

/**
 * The proof a sensitive change may carry beside the change itself, instead of a step-up
 * (POST /auth/reauthenticate): the current password, or, where the account has a second
 * factor, one of its codes.
 */
export const proofFields = {
  current_password: Type.Optional({ ...CurrentPasswordSchema, description: 'The current password: the proof of a sensitive change for an account without a second factor (and always required to change the password)' }),
  mfa_code: Type.Optional({ ...CodeSchema, description: 'A TOTP or backup code, or a code sent by POST /auth/reauthenticate/code: the proof of a sensitive change' })
}
