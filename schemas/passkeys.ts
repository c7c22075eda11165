import { Type, type Static } from '@sinclair/typebox'
import { CollectionEnvelope, ListItem } from './collection.js'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { proofFields } from './proof.js'
import { EmailSchema, NameSchema } from './user.js'

/** Binary values of the WebAuthn JSON forms: base64url without padding. */
const Base64Url = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+$' })

/** Whatever the browser adds besides the members below is kept: later WebAuthn levels add members. */
const OPEN = { additionalProperties: true } as const

const CredentialFields = {
  id: Base64Url(1366),
  rawId: Base64Url(1366),
  type: Type.Literal('public-key'),
  authenticatorAttachment: Type.Optional(Type.Union([Type.Literal('platform'), Type.Literal('cross-platform')])),
  clientExtensionResults: Type.Record(Type.String(), Type.Unknown())
}

/**
 * The browser's `PublicKeyCredential.toJSON()` after
 * `navigator.credentials.create` (or @simplewebauthn/browser's startRegistration).
 */
export const RegistrationCredentialSchema = Type.Object({
  ...CredentialFields,
  response: Type.Object({
    clientDataJSON: Base64Url(2048),
    attestationObject: Base64Url(8192),
    authenticatorData: Type.Optional(Base64Url(4096)),
    transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 10 })),
    publicKeyAlgorithm: Type.Optional(Type.Integer()),
    publicKey: Type.Optional(Base64Url(4096))
  }, OPEN)
}, OPEN)

/**
 * The browser's `PublicKeyCredential.toJSON()` after `navigator.credentials.get`
 * (or @simplewebauthn/browser's startAuthentication).
 */
export const AuthenticationCredentialSchema = Type.Object({
  ...CredentialFields,
  response: Type.Object({
    clientDataJSON: Base64Url(2048),
    authenticatorData: Base64Url(4096),
    signature: Base64Url(2048),
    userHandle: Type.Optional(Type.String({ maxLength: 512, pattern: '^[A-Za-z0-9_-]*$' }))
  }, OPEN)
}, OPEN)

export const PasskeyNameSchema = Type.String({ ...NameSchema, minLength: 1, maxLength: 64 })

/** Adding, renaming or removing a passkey is a sensitive change: a proof beside it, or a step-up before. */
export const PasskeyRegistrationBodySchema = Type.Object({
  response: RegistrationCredentialSchema,
  name: Type.Optional(PasskeyNameSchema),
  ...proofFields
}, { additionalProperties: false })
export type PasskeyRegistrationBody = Static<typeof PasskeyRegistrationBodySchema>

export const PasskeyRenameBodySchema = Type.Object({ name: PasskeyNameSchema, ...proofFields }, {
  additionalProperties: false
})

export const PasskeyAuthenticationOptionsBodySchema = Type.Union([
  Type.Object({
    email: Type.Optional({ ...EmailSchema, description: 'Accept only this account\'s passkeys; without it, any discoverable passkey of this site' })
  }, { additionalProperties: false }),
  Type.Null()
])

export const PasskeyAuthenticationBodySchema = Type.Object({
  challenge_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'From /auth/passkeys/authentication/options' }),
  response: AuthenticationCredentialSchema
}, { additionalProperties: false })
export type PasskeyAuthenticationBody = Static<typeof PasskeyAuthenticationBodySchema>

/** A passkey of the caller's (docs/api.md, "Passkeys"): the key itself never leaves the service. */
export const PasskeySchema = Type.Object({
  id: IdSchema,
  name: Type.String(),
  created_at: TimestampSchema,
  last_used_at: Type.Union([TimestampSchema, Type.Null()], { description: 'The last sign-in with it; null before the first' })
}, { title: 'Passkey' })
export type Passkey = Static<typeof PasskeySchema>

export const PASSKEY_FIELDS = {
  sortable: ['name', 'created_at', 'last_used_at'],
  selectable: ['name', 'created_at', 'last_used_at'],
  searchIn: 'name'
} as const

/**
 * `navigator.credentials.create({ publicKey })` takes it after @simplewebauthn/browser
 * (or `PublicKeyCredential.parseCreationOptionsFromJSON`).
 */
export const RegistrationOptionsSchema = Type.Object({
  challenge: Type.String(),
  rp: Type.Object({ id: Type.Optional(Type.String()), name: Type.String() }),
  user: Type.Object({ id: Type.String(), name: Type.String(), displayName: Type.String() })
}, { title: 'PasskeyRegistrationOptions', additionalProperties: true })

/**
 * `navigator.credentials.get({ publicKey })` takes `options`; the sign-in sends `challenge_id` back with the answer.
 */
export const AuthenticationOptionsSchema = Type.Object({
  challenge_id: Type.String(),
  options: Type.Object({
    challenge: Type.String(),
    rpId: Type.Optional(Type.String()),
    allowCredentials: Type.Optional(Type.Array(Type.Object({ id: Type.String(), type: Type.String() }, {
      additionalProperties: true
    })))
  }, { additionalProperties: true })
}, { title: 'PasskeyAuthenticationOptions' })

export const PasskeyResponseSchema = DataEnvelope(PasskeySchema)
export const PasskeyCollectionSchema = CollectionEnvelope(ListItem(PasskeySchema, 'PasskeyListItem'))
export const RegistrationOptionsResponseSchema = DataEnvelope(RegistrationOptionsSchema)
export const AuthenticationOptionsResponseSchema = DataEnvelope(AuthenticationOptionsSchema)
