import { EmailSchema } from '../../schemas/user.js'
import type { BuiltInOAuthProvider } from '../config/index.js'
import { schemaCheck } from '../http/validation.js'

/** What a provider says about the user, normalized. */
export interface OAuthProfile {
  subject: string
  email: string | null
  /** Only a verified address may link to an existing account. */
  emailVerified: boolean
  name: string | null
}

/** GET a provider URL with its access token; throws on a non-2xx answer. */
export type ProviderGet = (url: string, accessToken: string) => Promise<unknown>

/**
 * What differs between the built-in providers used through fixed endpoints (docs/api.md,
 * "OAuth sign-in"): extra authorization parameters, the token request's Accept header, and
 * how the profile is read from the userinfo URL. Providers configured by issuer need none of
 * this: their ID token carries the profile.
 */
export interface OAuthProvider {
  extraAuthorizationParams: Record<string, string>
  /** GitHub answers the token request with form encoding unless asked for JSON. */
  tokenRequestHeaders: Record<string, string>
  readProfile: (userinfoUrl: string, get: ProviderGet, accessToken: string) => Promise<OAuthProfile>
}

/** A subject is 1 to 255 visible ASCII characters (docs/api.md, "Callback"); GitHub's ids are numbers. */
const SUBJECT = /^[\x21-\x7e]{1,255}$/
/** Whether a provider's e-mail is one registration would accept (schemas/user.ts). */
export const isUserEmail = schemaCheck(EmailSchema)
/** Control characters (U+0000 included) and the white space around them. */
const CONTROL_AND_SPACE = /[\p{Cc}\s]+/gu

/**
 * The profile as the service may keep it: a subject in any other shape is refused (it would
 * reach the database), and control characters leave the name. The e-mail is checked where it
 * is used (`isUserEmail`): an odd one must not stop a linked user's sign-in, which does not use it.
 */
export function usableProfile (profile: OAuthProfile): OAuthProfile {
  if (!SUBJECT.test(profile.subject)) throw new Error('the profile\'s subject is not 1 to 255 visible ASCII characters')
  return { ...profile, name: usableName(profile.name) }
}

/** A name another system gives, control characters and runs of white space made one space; null when none is left. */
export function usableName (name: string | null | undefined): string | null {
  const cleaned = name?.replace(CONTROL_AND_SPACE, ' ').trim() ?? ''
  return cleaned === '' ? null : cleaned
}

function text (value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null
}

/** OpenID Connect userinfo (Google, Microsoft): `sub`, `email`, `email_verified`, `name`. */
export async function readOidcProfile (
  userinfoUrl: string,
  get: ProviderGet,
  accessToken: string
): Promise<OAuthProfile> {
  const profile = await get(userinfoUrl, accessToken) as Record<string, unknown>
  const subject = text(profile.sub)
  if (subject === null) throw new Error('userinfo has no subject')
  return oidcProfile(profile, subject)
}

/**
 * OpenID Connect's standard claims the service reads (`email`, `email_verified`, `name`), from userinfo or an ID token.
 */
export function oidcProfile (claims: Record<string, unknown>, subject: string): OAuthProfile {
  return { subject, email: text(claims.email), emailVerified: claims.email_verified === true, name: text(claims.name) }
}

interface GithubEmail { email?: unknown, primary?: unknown, verified?: unknown }

/**
 * GitHub: `/user`, whose public e-mail is often empty and never marked verified, so the
 * primary verified address comes from `/user/emails` (the userinfo URL + `/emails`).
 */
async function readGithubProfile (userinfoUrl: string, get: ProviderGet, accessToken: string): Promise<OAuthProfile> {
  const profile = await get(userinfoUrl, accessToken) as Record<string, unknown>
  if (typeof profile.id !== 'number' && typeof profile.id !== 'string') throw new Error('GitHub profile has no id')
  const emails = await get(`${userinfoUrl.replace(/\/$/, '')}/emails`, accessToken)
  const primary = Array.isArray(emails)
    ? (emails as GithubEmail[]).find((entry) => entry.primary === true && entry.verified === true)
    : undefined
  return {
    subject: String(profile.id),
    email: text(primary?.email) ?? text(profile.email),
    emailVerified: primary !== undefined,
    name: text(profile.name) ?? text(profile.login)
  }
}

export const OAUTH_PROVIDER_REGISTRY: Record<BuiltInOAuthProvider, OAuthProvider> = {
  google: {
    extraAuthorizationParams: { access_type: 'offline', prompt: 'consent' },
    tokenRequestHeaders: {},
    readProfile: readOidcProfile
  },
  github: {
    extraAuthorizationParams: {},
    tokenRequestHeaders: { accept: 'application/json' },
    readProfile: readGithubProfile
  },
  microsoft: {
    extraAuthorizationParams: {},
    tokenRequestHeaders: {},
    readProfile: readOidcProfile
  }
}
