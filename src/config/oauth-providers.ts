import { isHttpBase, isHttpUrl } from './addresses.js'
import { list } from './environment.js'
import { shown } from './problems.js'

/**
 * The OAuth sign-in providers (docs/operations.md, "OAuth providers"): the built-in ones, those
 * configured by issuer, and where browser applications may be sent back after a sign-in.
 */

/** The providers known by name; any other is configured by its issuer (docs/api.md, "OAuth sign-in"). */
export const BUILT_IN_OAUTH_PROVIDERS = ['google', 'github', 'microsoft'] as const
export type BuiltInOAuthProvider = typeof BUILT_IN_OAUTH_PROVIDERS[number]

export interface OAuthEndpoints {
  authUrl: string
  tokenUrl: string
  userinfoUrl: string
}

/**
 * One provider's client registration. With an issuer, its endpoints and keys come from the
 * issuer's discovery document and its ID token is validated; without, the fixed endpoints.
 */
export type OAuthProviderConfig = {
  clientId: string
  clientSecret: string
  redirectUri: string
  scopes: string[]
} & ({ issuer: string } | ({ issuer: null } & OAuthEndpoints))

/**
 * Public endpoints and usual sign-in scopes, overridable per variable. Google is an OpenID
 * provider with one issuer, so it is discovered from it unless its endpoints are overridden;
 * Microsoft's `common` endpoint answers for every tenant, each with an issuer of its own, so it
 * needs OAUTH_MICROSOFT_ISSUER (one tenant) for its ID token to be validated.
 */
const OAUTH_DEFAULTS: Record<BuiltInOAuthProvider, OAuthEndpoints & { scopes: string[], issuer?: string }> = {
  google: {
    issuer: 'https://accounts.google.com',
    scopes: ['openid', 'email', 'profile'],
    authUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    userinfoUrl: 'https://openidconnect.googleapis.com/v1/userinfo'
  },
  github: {
    scopes: ['read:user', 'user:email'],
    authUrl: 'https://github.com/login/oauth/authorize',
    tokenUrl: 'https://github.com/login/oauth/access_token',
    userinfoUrl: 'https://api.github.com/user'
  },
  microsoft: {
    scopes: ['openid', 'email', 'profile', 'User.Read'],
    authUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    userinfoUrl: 'https://graph.microsoft.com/oidc/userinfo'
  }
}
const OIDC_SCOPES = ['openid', 'email', 'profile']
/** A provider's name as it appears in paths and in its variables' names. */
const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/

/** One of the providers the service knows without configuration. */
export function isBuiltIn (name: string): name is BuiltInOAuthProvider {
  return (BUILT_IN_OAUTH_PROVIDERS as readonly string[]).includes(name)
}

/**
 * OAUTH_PROVIDERS names the enabled providers; unset, the built-in ones with a client id. A
 * provider with `_ISSUER` is discovered from it; a built-in one without uses its endpoints.
 * The result holds the enabled providers by lower-case name.
 */
export function readOAuth (
  env: Record<string, string | undefined>,
  problems: string[]
): Record<string, OAuthProviderConfig> {
  const oauth: Record<string, OAuthProviderConfig> = {}
  const listed = env.OAUTH_PROVIDERS === undefined ? null : list(env.OAUTH_PROVIDERS).map((name) => name.toLowerCase())
  const names = listed ??
    BUILT_IN_OAUTH_PROVIDERS.filter((name) => env[`OAUTH_${name.toUpperCase()}_CLIENT_ID`] !== undefined)
  for (const name of new Set(names)) {
    if (!PROVIDER_NAME.test(name)) {
      problems.push(
        'OAUTH_PROVIDERS names must be a letter then up to 31 letters, digits or underscores' +
        shown('OAUTH_PROVIDERS', name)
      )
      continue
    }
    const prefix = `OAUTH_${name.toUpperCase()}_`
    const read = (variable: string, fallback?: string) => {
      const value = env[prefix + variable] ?? fallback
      if (value === undefined) problems.push(`${prefix}${variable} is required when OAuth provider ${name} is enabled`)
      return value ?? ''
    }
    const url = (variable: string, fallback?: string) => {
      const value = read(variable, fallback)
      if (value !== '' && !isHttpUrl(value)) {
        problems.push(`${prefix}${variable} must be an http(s) URL${shown(prefix + variable, value)}`)
      }
      return value
    }
    const client = {
      clientId: read('CLIENT_ID'),
      clientSecret: read('CLIENT_SECRET'),
      redirectUri: url('REDIRECT_URI')
    }
    const scopes = env[`${prefix}SCOPES`]?.split(/[\s,]+/).filter((scope) => scope.length > 0)
    const overridden = ['AUTH_URL', 'TOKEN_URL', 'USERINFO_URL']
      .some((variable) => env[prefix + variable] !== undefined)
    const issuer = env[`${prefix}ISSUER`] ?? (isBuiltIn(name) && !overridden ? OAUTH_DEFAULTS[name].issuer : undefined)
    if (issuer !== undefined) {
      if (!isHttpBase(issuer)) {
        problems.push(
          `${prefix}ISSUER must be an http(s) URL without query or fragment${shown(`${prefix}ISSUER`, issuer)}`
        )
      }
      const defaultScopes = isBuiltIn(name) ? OAUTH_DEFAULTS[name].scopes : OIDC_SCOPES
      oauth[name] = { ...client, scopes: scopes ?? defaultScopes, issuer }
    } else if (isBuiltIn(name)) {
      const defaults = OAUTH_DEFAULTS[name]
      oauth[name] = {
        ...client,
        scopes: scopes ?? [...defaults.scopes],
        issuer: null,
        authUrl: url('AUTH_URL', defaults.authUrl),
        tokenUrl: url('TOKEN_URL', defaults.tokenUrl),
        userinfoUrl: url('USERINFO_URL', defaults.userinfoUrl)
      }
    } else {
      problems.push(
        `${prefix}ISSUER is required: ${name} is not a built-in provider (${BUILT_IN_OAUTH_PROVIDERS.join(', ')})`
      )
    }
  }
  return oauth
}

/**
 * OAUTH_REDIRECT_URLS: http(s) URLs without query or fragment, in the parser's form (an entry
 * that is only an origin gets its `/`, and so admits every path of that origin). A return URL
 * matches an entry on its origin and a path boundary (FederatedSignInService, docs/api.md "Browser
 * applications"). null: that mode is off.
 */
export function readRedirectUrls (value: string | undefined, problems: string[]): string[] | null {
  if (value === undefined) return null
  const entries = list(value)
  const bad = entries.filter((entry) => !isHttpBase(entry))
  if (bad.length > 0 || entries.length === 0) {
    problems.push(
      'OAUTH_REDIRECT_URLS must be a comma-separated list of http(s) URLs without query or fragment' +
      shown('OAUTH_REDIRECT_URLS', value)
    )
    return null
  }
  return entries.map((entry) => new URL(entry).href)
}
