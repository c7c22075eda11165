import { createHash, hkdfSync, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import Provider, { type Adapter, type Configuration, interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider'
import { STANDARD_SCOPES } from '../../schemas/oauth-clients.js'
import { clientSecretHash } from '../security/client-secrets.js'
import { ID_TOKEN_ALGORITHMS, type PublicJwk } from '../security/signing-keys.js'
import type { IdTokenKeySet } from '../services/authorization-server/id-token-keys.js'
import type { AuthorizationGrantService } from '../services/authorization-server/authorization-grants.js'
import type { SessionService } from '../services/sessions/sessions.js'
import type { AuthorizationArtifactsRepository } from '../store/authorization-artifacts.js'
import type { UsersRepository } from '../store/users.js'
import { artifactAdapter, type AdapterStores } from './adapter.js'
import {
  AUTHORIZATION_PATH, AUTHORIZATION_SERVER_PATH, CONSOLE_CALLBACK_PATH, CONSOLE_CLIENT_ID, CONSOLE_PATH, STYLESHEET_PATH
} from './paths.js'
import { deviceCodeForm, deviceConfirmForm, escapeHtml, page, providerForm, providerPageCsp, signOutForm } from './pages.js'

/** How sure the sign-in was (the `acr` claim): one factor, or two (`amr` holds `mfa`). */
export const ACR_VALUES = ['1', '2'] as const

/** The scope whose tokens speak for an organization the person chose on the consent page. */
export const ORGANIZATION_SCOPE: (typeof STANDARD_SCOPES)[number] = 'organization'

/** What a sign-in at the pages hands oidc-provider (interactionResult's `login`); `ts` is when (`auth_time`). */
export interface PagesLogin { accountId: string, amr: string[], acr: string, remember: false, ts: number }

/** The authorization server, and the anti-forgery tokens of its pages' forms. */
export interface AuthorizationServer {
  provider: Provider
  /** The public halves of the keys ID tokens are signed with and still verified with, for the JWKS. */
  idTokenJwks: PublicJwk[]
  /** Its issuer: JWT_ISSUER without a trailing slash. */
  issuer: string
  /** The token a page's forms carry for the interaction `uid`: an HMAC only the service can make. */
  formToken: (uid: string) => string
  isFormToken: (uid: string, token: unknown) => boolean
  /**
   * Makes a request one to the issuer's address before oidc-provider reads it: every address it
   * builds (redirects, its discovery) is then the issuer's, whatever Host or X-Forwarded-*
   * header the request carried, behind a proxy or not.
   */
  addressToIssuer: (request: IncomingMessage) => void
}

/** The console's grant is spent by its code's exchange, within the code's minute. */
const CONSOLE_GRANT_TTL_S = 120

/** How long a device code may be entered (and polled for). */
const DEVICE_CODE_TTL_S = 600

/** A consent is remembered this long (a year); revoking it ends it at once. */
const GRANT_TTL_S = 365 * 24 * 60 * 60

export interface AuthorizationServerOptions {
  /** The issuer: JWT_ISSUER, an http(s) URL. */
  issuer: string
  /** The service's secret (JWT_SECRET), which its cookies' keys are derived from, whatever JWT_ALGORITHM is. */
  secret: string
  /** What ID tokens are signed with, and every key published (src/services/authorization-server/id-token-keys.ts). */
  idTokenKeys: IdTokenKeySet
  /** Scopes machine clients may be given (AUTHORIZATION_SERVER_SCOPES). */
  scopes: string[]
  /** How long a session at the authorization server, and its refresh tokens, last (SESSION_IDLE_TIMEOUT_S). */
  sessionTtlS: number
  /** Reads the scheme and host from X-Forwarded-Proto and -Host (which the mount sets to the issuer's). */
  proxy: boolean
  users: Pick<UsersRepository, 'findById' | 'findPrincipal'>
  artifacts: AuthorizationArtifactsRepository
  /** The service's sessions, which the provider's are bound to. */
  sessions: Pick<SessionService, 'useAuthorizationSession' | 'openAtAuthorizationServer' | 'endAuthorizationSession'>
  /** The organization a consent chose for the `organization` scope. */
  grants: Pick<AuthorizationGrantService, 'mustChooseOrganization' | 'organizationOf'>
  shortLived: AdapterStores['shortLived']
  clients: AdapterStores['clients']
  now?: () => number
}

/** The stylesheet's address as the pages link it. */
const STYLESHEET = `${AUTHORIZATION_SERVER_PATH}${STYLESHEET_PATH}`

/** A page of the provider's own (device codes, sign-out), in the service's style and escaped. */
function render (ctx: KoaContextWithOIDC, title: string, body: string): void {
  ctx.type = 'html'
  ctx.body = page(title, body, { stylesheet: STYLESHEET })
}

/**
 * oidc-provider's prompts, and one more reason for consent: the `organization` scope asked for
 * by a member of an organization whose consent chose none they still are a member of.
 */
function promptsWithOrganization (grants: AuthorizationServerOptions['grants']) {
  const policy = interactionPolicy.base()
  policy.get('consent')?.checks.add(new interactionPolicy.Check(
    'organization_not_chosen', 'the organization the tokens speak for was not chosen',
    async (ctx) => {
      const accountId = ctx.oidc.session?.accountId
      const asked = ctx.oidc.requestParamOIDCScopes.has(ORGANIZATION_SCOPE)
      if (!asked || accountId === undefined) return interactionPolicy.Check.NO_NEED_TO_PROMPT
      // prompt=consent asks again, and so offers another organization.
      const again = ctx.oidc.prompts.has('consent') && ctx.oidc.result?.consent === undefined
      return await grants.mustChooseOrganization(accountId, again ? undefined : ctx.oidc.grant?.jti)
    },
    () => ({ chooseOrganization: true })
  ))
  return policy
}

/**
 * Binds the provider's sessions to the service's (docs/api.md, "Authorization server"): once a
 * sign-in at the pages signed the browser in here, a session of the service is opened for the
 * provider's session; a sign-out here ends it. (A session here is found only while the
 * service's is live: see the adapter.) A sign-in that never got here (abandoned, or another
 * account to sign out first) opened nothing.
 */
async function bindSessions (ctx: Partial<KoaContextWithOIDC>, sessions: AuthorizationServerOptions['sessions']): Promise<void> {
  const session = ctx.oidc?.session as (KoaContextWithOIDC['oidc']['session'] & { destroyed?: boolean }) | undefined
  if (session === undefined) return
  const result = ctx.oidc?.result
  const login = result?.login as PagesLogin | undefined
  if (session.destroyed === true) {
    await sessions.endAuthorizationSession(session.uid)
  } else if (login !== undefined && result?.consent === undefined && session.accountId === login.accountId) {
    // (A consent carries its sign-in again, merged, src/routes/oidc/index.ts: its session is open already.)
    await sessions.openAtAuthorizationServer(login.accountId, login.amr, session.uid)
  }
}

/**
 * The built-in console's authorization requests are the console's own (docs/console.md): a
 * sign-in proved afresh (`prompt=login`), its code in the query. Another site starting one with
 * `prompt=none` would get a code for a signed-in person silently, as no consent is asked.
 */
function consoleRequestAllowed (ctx: { path: string, query: Record<string, unknown> }): boolean {
  const { client_id: clientId, prompt, response_mode: responseMode } = ctx.query
  if (ctx.path !== AUTHORIZATION_PATH || clientId !== CONSOLE_CLIENT_ID) return true
  return prompt === 'login' && (responseMode === undefined || responseMode === 'query')
}

/** The device pages' request failed with its session never stored: oidc-provider cannot re-render its form. */
function unstoredDeviceForm (ctx: KoaContextWithOIDC): boolean {
  const route = ctx.oidc?.route
  return (route === 'code_verification' || route === 'device_resume') && typeof ctx.oidc.session?.exp !== 'number'
}

/** How often a device may ask whether its code was entered, at first (RFC 8628, 3.2). */
const DEVICE_POLL_INTERVAL_S = 5
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
/** The model a device code's last poll is kept under (src/authorization-server/adapter.ts). */
const DEVICE_POLL_MODEL = 'DevicePoll'

/**
 * The token endpoint's rules oidc-provider leaves open, applied to its answers:
 * - a client-credentials request naming a scope the server does not know is refused with
 *   `invalid_scope` (RFC 6749, 5.2), not answered with a token for the rest;
 * - the device authorization answer says how often to poll (`interval`, RFC 8628, 3.2), and a
 *   device polling faster than that is told `slow_down`, its interval 5 seconds longer from then
 *   on (3.5), wherever its polls land (the last one is kept beside its code, by the code's hash).
 */
async function tokenEndpointRules (
  ctx: KoaContextWithOIDC,
  rules: { knownScopes: ReadonlySet<string>, devicePolls: Adapter, now: () => number }
): Promise<void> {
  const route = ctx.oidc?.route
  if (route === 'device_authorization' && ctx.status === 200) {
    ctx.body = { ...ctx.body as object, interval: DEVICE_POLL_INTERVAL_S }
    return
  }
  if (route !== 'token') return
  const params = ctx.oidc.params as { grant_type?: string, scope?: string, device_code?: string } | undefined
  if (params?.grant_type === 'client_credentials' && ctx.status === 200) {
    // The scope as sent: oidc-provider's params keep only the scopes it knows.
    const sent = (ctx.oidc as { body?: { scope?: unknown } }).body?.scope
    const unknown = (typeof sent === 'string' ? sent : '').split(' ').filter((scope) => scope !== '' && !rules.knownScopes.has(scope))
    if (unknown.length === 0) return
    await ctx.oidc.entities.ClientCredentials?.destroy()
    ctx.status = 400
    ctx.body = { error: 'invalid_scope', error_description: `unknown scope: ${unknown.join(' ')}` }
    return
  }
  const body = ctx.body as { error?: string } | undefined
  if (params?.grant_type !== DEVICE_GRANT || body?.error !== 'authorization_pending' || typeof params.device_code !== 'string') return
  const id = createHash('sha256').update(params.device_code).digest('base64url')
  const last = await rules.devicePolls.find(id) as { at: number, interval: number } | undefined
  const at = rules.now()
  let interval = last?.interval ?? DEVICE_POLL_INTERVAL_S
  if (last !== undefined && at - last.at < last.interval * 1000) {
    interval += 5
    ctx.body = { error: 'slow_down', error_description: `polled too often: wait ${interval} seconds between requests` }
  }
  await rules.devicePolls.upsert(id, { at, interval }, DEVICE_CODE_TTL_S)
}

/**
 * The service as an OAuth 2.1 / OpenID Connect provider (docs/api.md, "Authorization server"),
 * on oidc-provider: authorization code with PKCE (S256 only), refresh tokens rotated on every
 * use, client credentials, the device grant, introspection, revocation, userinfo, RP-initiated
 * logout. Accounts, clients and every artifact live in the service's database.
 */
export function createAuthorizationServer (options: AuthorizationServerOptions): Provider {
  const now = options.now ?? Date.now
  const cookieKey = Buffer.from(hkdfSync('sha256', options.secret, '', 'authorization-server-cookies', 32)).toString('base64url')
  const { users, artifacts } = options

  const Adapter = artifactAdapter({
    artifacts,
    shortLived: options.shortLived,
    clients: options.clients,
    liveSession: async (accountId, uid) => await options.sessions.useAuthorizationSession(accountId, uid),
    now
  })
  const configuration: Configuration = {
    adapter: Adapter,
    async findAccount (_ctx, sub, token) {
      const principal = await users.findPrincipal(sub)
      if (principal === undefined) return undefined
      // Codes and tokens name their grant: its consent chose the organization, if any.
      const grantId = token === undefined || !('grantId' in token) ? undefined : token.grantId
      return {
        accountId: sub,
        async claims (use, scope) {
          const user = await users.findById(sub)
          // The organization is read at every userinfo call, never frozen into an ID token.
          const asked = use === 'userinfo' && grantId !== undefined && scope.split(' ').includes(ORGANIZATION_SCOPE)
          const organization = asked ? await options.grants.organizationOf(grantId, sub) : undefined
          return {
            sub,
            email: user?.email,
            email_verified: user?.email_verified,
            name: user?.name,
            ...(organization !== undefined && { org_id: organization.id, org_roles: [organization.role] })
          }
        }
      }
    },
    // The ID token carries the profile and address the scopes give, as userinfo does: most relying
    // parties (Auth.js, next-auth) read them from the ID token alone.
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub', 'auth_time', 'acr', 'amr'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      [ORGANIZATION_SCOPE]: ['org_id', 'org_roles']
    },
    scopes: [...STANDARD_SCOPES, ...options.scopes],
    clients: [{
      client_id: CONSOLE_CLIENT_ID,
      client_name: 'Console',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      redirect_uris: [`${options.issuer}${CONSOLE_CALLBACK_PATH}`],
      post_logout_redirect_uris: [`${options.issuer}${CONSOLE_PATH}`]
    }],
    acrValues: [...ACR_VALUES],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    // RS256 unless the client chose another: OpenID Connect's default, which every relying party verifies.
    clientDefaults: { id_token_signed_response_alg: 'RS256', token_endpoint_auth_method: 'client_secret_basic' },
    enabledJWA: { idTokenSigningAlgValues: [...ID_TOKEN_ALGORITHMS] },
    // The signing generation's first: oidc-provider signs with the first key of an algorithm.
    jwks: { keys: options.idTokenKeys.published.map((key) => key.privateJwk) as never[] },
    cookies: { keys: [cookieKey] },
    pkce: { required: () => true },
    responseTypes: ['code'],
    // OpenID Connect: every authorization request names its redirect URI, even a client's only one.
    allowOmittingSingleRegisteredRedirectUri: false,
    rotateRefreshToken: true,
    // The administrator allowed the client refresh tokens: it gets one with every code. Without
    // `offline_access` (granted only with prompt=consent, as OpenID Connect has it) it ends with
    // the session at the authorization server.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // A consent is remembered per account and client, not per browser session: the one given
    // before is read from the database (and `GET /api/v1/auth/grants` lists it).
    async loadExistingGrant (ctx) {
      const { Grant } = ctx.oidc.provider
      const given = ctx.oidc.result?.consent?.grantId
      if (given !== undefined) return await Grant.find(given)
      const accountId = ctx.oidc.session?.accountId
      const clientId = ctx.oidc.client?.clientId
      if (accountId === undefined || clientId === undefined) return undefined
      // The service's own console asks no consent: its grant lives until its code is exchanged.
      if (clientId === CONSOLE_CLIENT_ID) {
        const grant = new Grant({ accountId, clientId })
        grant.addOIDCScope('openid')
        await grant.save()
        return grant
      }
      const stored = await artifacts.grantFor(accountId, clientId, new Date(now()).toISOString())
      return stored === undefined ? undefined : await Grant.find(stored.id)
    },
    ttl: {
      AccessToken: 900,
      ClientCredentials: 900,
      IdToken: 900,
      AuthorizationCode: 60,
      Interaction: 600,
      DeviceCode: DEVICE_CODE_TTL_S,
      Session: options.sessionTtlS,
      RefreshToken: options.sessionTtlS,
      Grant: (_ctx, grant) => grant.clientId === CONSOLE_CLIENT_ID ? CONSOLE_GRANT_TTL_S : GRANT_TTL_S
    },
    interactions: {
      url: (_ctx, interaction) => `${AUTHORIZATION_SERVER_PATH}/interaction/${interaction.uid}`,
      policy: promptsWithOrganization(options.grants)
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // A public client learns only of its own tokens; a confidential one (a resource server) of any.
        async allowedPolicy (ctx, client, token) {
          return client.clientAuthMethod !== 'none' || token.clientId === ctx.oidc.client?.clientId
        }
      },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      // Tokens are for this service's userinfo and introspection; audiences for other APIs are not offered.
      resourceIndicators: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource (ctx, form) {
          // (oidc-provider took a post_logout_redirect_uri only if the client registered it.)
          const { post_logout_redirect_uri: back, state } = ctx.oidc.params as Record<string, string | undefined>
          const stay = back === undefined ? null : new URL(back)
          if (stay !== null && state !== undefined) stay.searchParams.set('state', state)
          render(ctx, 'Sign out', signOutForm(providerForm(form), ctx.host, stay?.href ?? null))
        },
        async postLogoutSuccessSource (ctx) {
          render(ctx, 'Signed out', '<p>You are signed out.</p>')
        }
      },
      deviceFlow: {
        enabled: true,
        async userCodeInputSource (ctx, form, _out, error) {
          render(ctx, 'Connect a device', deviceCodeForm(providerForm(form), error !== undefined))
        },
        async userCodeConfirmSource (ctx, form, client, _deviceInfo, userCode) {
          render(ctx, 'Connect a device', deviceConfirmForm(providerForm(form), client.clientName ?? client.clientId, userCode))
        },
        async successSource (ctx) {
          render(ctx, 'Device connected', '<p>Your device is signed in. You may close this page.</p>')
        }
      }
    },
    async renderError (ctx, out) {
      render(ctx, 'Something went wrong', `<p class="error" role="alert">${escapeHtml(String(out.error_description ?? out.error))}</p>`)
    }
  }
  const provider = new Provider(options.issuer, configuration)
  provider.proxy = options.proxy
  const knownScopes = new Set(configuration.scopes)
  const devicePolls = new Adapter(DEVICE_POLL_MODEL)
  provider.use(async (ctx, next) => {
    if (!consoleRequestAllowed(ctx)) {
      ctx.status = 400
      render(ctx as KoaContextWithOIDC, 'Something went wrong', '<p class="error" role="alert">The console signs in only from its own page.</p>')
      return
    }
    try {
      await next()
    } catch (error) {
      if (!unstoredDeviceForm(ctx as KoaContextWithOIDC)) throw error
      // oidc-provider answers a refused device form with a fresh one whose secret it keeps in the
      // browser's session; without one stored (a form posted with no cookie, or an expired one)
      // it fails to store it. A form of a session of its own is asked for instead.
      ctx.status = 303
      ctx.redirect((ctx as KoaContextWithOIDC).oidc.urlFor('code_verification'))
    }
    // Its pages (errors, device, sign-out, form_post's) have the pages' CSP, not the API's.
    if (ctx.response.is('html') === 'html' && typeof ctx.body === 'string') ctx.set('content-security-policy', providerPageCsp(ctx.body))
    await bindSessions(ctx, options.sessions)
    // (ctx.oidc is undefined where no route of the provider matched.)
    await tokenEndpointRules(ctx as KoaContextWithOIDC, { knownScopes, devicePolls, now })
  })
  // A client secret is kept as its hash (src/store/migrations/0020-authorization-server.ts): the
  // presented one is hashed and compared in constant time.
  provider.Client.prototype.compareClientSecret = function compare (this: { clientSecret?: string }, actual: string) {
    const expected = Buffer.from(this.clientSecret ?? '')
    const presented = Buffer.from(clientSecretHash(actual))
    return expected.length === presented.length && timingSafeEqual(expected, presented)
  }
  return provider
}
