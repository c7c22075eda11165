import { Type } from '@sinclair/typebox'

/**
 * The latest `exp` a Date can hold (year 275760): a token past it would never expire, nor
 * could its revocation be kept.
 */
const LATEST_NUMERIC_DATE = 8_640_000_000_000

/** Whole seconds since the epoch, as a JWT's times are written and as the service writes them. */
const NumericDateSchema = Type.Integer({ minimum: 0, maximum: LATEST_NUMERIC_DATE })

const DeviceInfoSchema = Type.Record(Type.String(), Type.Unknown(), { description: 'Device information given at sign-in, or an empty object' })

/** What every token of the service carries besides its `type`. */
const common = {
  sub: Type.String({ description: 'User id' }),
  jti: Type.String({ description: 'Random URL-safe identifier: 16 bytes (access, mfa) or 32 (refresh)' }),
  iat: NumericDateSchema,
  exp: NumericDateSchema,
  iss: Type.Optional(Type.String({ description: 'JWT_ISSUER, when set' }))
}

/** An access token's claims; data claims given at issuance may travel beside them. */
export const AccessClaimsSchema = Type.Object({
  ...common,
  roles: Type.Array(Type.String(), { description: 'Roles at issuance; what the caller may do is read from the store' }),
  type: Type.Literal('access'),
  auth_time: Type.Optional(Type.Integer({ minimum: 0, maximum: LATEST_NUMERIC_DATE, description: 'When the sign-in that opened the session was proved; a refresh keeps it' })),
  amr: Type.Optional(Type.Array(Type.String(), { description: 'How the sign-in was proved (RFC 8176 values: pwd, otp, sms, mfa, hwk, user, fed); a refresh keeps them' })),
  org_id: Type.Optional(Type.String({ description: 'The organization the session selected (POST /auth/organization), while the user is a member' })),
  org_roles: Type.Optional(Type.Array(Type.String(), { description: 'The user\'s roles in that organization when the token was issued' })),
  act: Type.Optional(Type.Object({ sub: Type.String() }, { description: 'RFC 8693 actor: the administrator acting as the user (docs/api.md, "Impersonation")' }))
})

/** A refresh token's claims: one link of a session's token family. */
export const RefreshClaimsSchema = Type.Object({
  ...common,
  type: Type.Literal('refresh'),
  device: DeviceInfoSchema
})

/** An MFA challenge's claims: good only at `/auth/mfa/verify`, once; the device goes on to the session it opens. */
export const MfaClaimsSchema = Type.Object({
  ...common,
  type: Type.Literal('mfa'),
  device: DeviceInfoSchema,
  amr: Type.Optional(Type.Array(Type.String(), { description: 'How the first factor was proved' })),
  cv: Type.Optional(Type.Integer({ minimum: 0, description: 'The account\'s credentials version at issuance: a new password or a claim since refuses the challenge' }))
})

export const TokenClaimsSchema = Type.Union([AccessClaimsSchema, RefreshClaimsSchema, MfaClaimsSchema])
