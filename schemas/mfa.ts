import { type Static, Type } from '@sinclair/typebox'
import { CodeSchema, DataEnvelope } from './common.js'
import { TokenPairSchema } from './auth.js'
import { component } from './components.js'
import { proofFields } from './proof.js'

/**
 * The MFA method identifiers (docs/api.md, "Method identifiers and
 * messages"). `backup_code` answers a challenge in their place.
 */
export const MFA_METHODS = ['totp', 'sms', 'email', 'push'] as const
export const MfaMethodSchema = Type.Unsafe<typeof MFA_METHODS[number]>(Type.String({ enum: [...MFA_METHODS], title: 'MfaMethod' }))

export const CodeBodySchema = Type.Object({ code: CodeSchema }, { additionalProperties: false })

/**
 * Enrolling (or replacing) TOTP: a first code of the pending secret,
 * and the proof of a sensitive change unless the session stepped up.
 */
export const TotpEnableBodySchema = Type.Object({ code: { ...CodeSchema, description: 'A code of the pending secret' }, ...proofFields }, { additionalProperties: false })

export const TotpSetupSchema = Type.Object({
  secret: Type.String({ description: 'Base32 TOTP secret; shown only now' }),
  otpauth_url: Type.String({ description: 'otpauth:// provisioning URI' }),
  qr_code: Type.String({ pattern: '^data:image/png;base64,', description: 'The provisioning URI as a PNG QR code' })
}, { title: 'TotpSetup' })
export type TotpSetup = Static<typeof TotpSetupSchema>

export const BackupCodesSchema = Type.Object({
  backup_codes: Type.Array(Type.String({ pattern: '^[0-9]{6}$' }), { minItems: 10, maxItems: 10, description: 'Shown only now; each works once' })
}, { title: 'BackupCodes' })

/** What sign-in answers when the account has MFA on (docs/api.md, "MFA at sign-in"). */
export const MfaChallengeSchema = Type.Object({
  mfa_required: Type.Literal(true),
  mfa_token: Type.String({ description: 'Good for 5 minutes, once, at /auth/mfa/verify' }),
  methods: Type.Array(Type.Union([Type.Literal('totp'), Type.Literal('backup_code'), Type.Literal('email'), Type.Literal('sms'), Type.Literal('passkey')]), {
    description: 'What /auth/mfa/verify accepts: TOTP and backup codes, and codes sent by e-mail or SMS (ask for one at /auth/mfa/challenge); `passkey` alone: the account\'s role must use a second factor and its only one is a passkey, so sign in with it (/auth/passkeys/authentication) instead'
  })
}, { title: 'MfaChallenge' })
export type MfaChallenge = Static<typeof MfaChallengeSchema>

/**
 * A sign-in that needs no second factor: the token pair, with `mfa_required: false` (docs/api.md, "MFA at sign-in").
 */
export const SignedInSchema = Type.Composite([TokenPairSchema, Type.Object({ mfa_required: Type.Literal(false) })], { title: 'SignedIn' })
export type SignedIn = Static<typeof SignedInSchema>

/** `mfa_required` tells the two apart: a discriminator for generated clients, which the serializer ignores. */
export const SignInResultSchema = Type.Union([component('SignedIn', SignedInSchema), component('MfaChallenge', MfaChallengeSchema)], {
  title: 'SignInResult',
  discriminator: { propertyName: 'mfa_required', mapping: { false: '#/components/schemas/SignedIn', true: '#/components/schemas/MfaChallenge' } }
})
export type SignInResult = Static<typeof SignInResultSchema>

export const MfaVerifyBodySchema = Type.Object({
  mfa_token: Type.String({ minLength: 1, maxLength: 4096 }),
  code: CodeSchema
}, { additionalProperties: false })
export type MfaVerifyBody = Static<typeof MfaVerifyBodySchema>

/** The second factors sent by message, and the challenge asking for a code by one of them. */
export const MessageFactorSchema = Type.Union([Type.Literal('email'), Type.Literal('sms')])
export const MfaCodeRequestBodySchema = Type.Object({
  mfa_token: Type.String({ minLength: 1, maxLength: 4096 }),
  method: MessageFactorSchema
}, { additionalProperties: false })
export type MfaCodeRequestBody = Static<typeof MfaCodeRequestBodySchema>

/** Named response envelopes (components of the OpenAPI document). */
export const BackupCodesResponseSchema = DataEnvelope(BackupCodesSchema)
export const SignInResultResponseSchema = DataEnvelope(SignInResultSchema)
export const TotpSetupResponseSchema = DataEnvelope(TotpSetupSchema)
