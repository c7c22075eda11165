import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import formbody from '@fastify/formbody'
import { Value } from '@sinclair/typebox/value'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import {
  consentForm, mfaForm, page, PAGE_CSP, PAGE_SCRIPT, PAGE_STYLESHEET, signInForm, SIGN_IN_PAGE_CSP
} from '../../authorization-server/pages.js'
import { AUTHORIZATION_PATH, AUTHORIZATION_SERVER_PATH, DEVICE_PATH, END_SESSION_PATH, INTERACTION_PATH, SCRIPT_PATH, STYLESHEET_PATH, WEBAUTHN_SCRIPT_PATH } from '../../authorization-server/paths.js'
import type { PagesLogin } from '../../authorization-server/provider.js'
import {
  type DynamicRegistration, DynamicRegistrationErrorSchema, DynamicRegistrationResponseSchema, DynamicRegistrationSchema
} from '../../../schemas/oauth-clients.js'
import type { MfaChallenge } from '../../../schemas/mfa.js'
import { type PasskeyAuthenticationBody, PasskeyAuthenticationBodySchema } from '../../../schemas/passkeys.js'
import { ERROR_TABLE } from '../../../schemas/errors.js'
import { isServiceError } from '../../errors.js'
import type { AuthorizationServer } from '../../plugins/application/authorization-server.js'
import type { SignInProof } from '../../services/sign-in/sign-in.js'
import { publicJwks } from '../../security/signing-keys.js'

const PUBLIC = { access: 'public' as const }
/** Where the sign-in page's script asks for a passkey challenge: the API's own route. */
const PASSKEY_OPTIONS = '/api/v1/auth/passkeys/authentication/options'
/** @simplewebauthn/browser's browser build, served to the sign-in page as it is published. */
function webauthnLibrary (): Buffer {
  return readFileSync(join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js'))
}
const HIDDEN = { hide: true }
const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']

type FormBody = Record<string, string | string[] | undefined>
type InteractionRequest = FastifyRequest<{ Params: { uid: string }, Body: FormBody }>

/** What a sign-in hands the provider: the account, and how it was proved (`acr` `2` when its methods include `mfa`). */
function loginResult ({ userId, amr }: SignInProof): { login: PagesLogin } {
  return { login: { accountId: userId, amr, acr: amr.includes('mfa') ? '2' : '1', remember: false, ts: Math.floor(Date.now() / 1000) } }
}

/** Why the consent page asks which organization (src/authorization-server/provider.ts). */
const ORGANIZATION_NOT_CHOSEN = 'organization_not_chosen'

/** A passkey's answer as the page's script posts it, held to the API route's schema. */
function isPasskeyAnswer (value: unknown): value is PasskeyAuthenticationBody {
  return Value.Check(PasskeyAuthenticationBodySchema, value)
}

/** The challenge a second-factor form carries: its token, and the factors it offers (which only choose the buttons). */
function challengeOf (body: FormBody | undefined): { mfaToken: string, methods: string[] } {
  return { mfaToken: field(body, 'mfa_token'), methods: field(body, 'methods').split(',').filter((method) => method !== '') }
}

/** A provider's name as the sign-in page shows it. */
function displayName (name: string): string {
  return name === 'github' ? 'GitHub' : `${name.charAt(0).toUpperCase()}${name.slice(1)}`
}

/** What the page says when a provider's sign-in came back with an error code (docs/api.md, "Browser applications"). */
function federatedFailure (code: string): string {
  const known = Object.values(ERROR_TABLE).find((entry) => entry.code === code)
  return known === undefined ? 'The sign-in with the provider did not finish.' : known.message.replace(/%s/g, '').trim()
}

/**
 * What a page says of a refused sign-in: the API's message, but for an account that must enrol
 * a second factor first, which the API lets do only that (docs/api.md, "Required roles").
 */
function pageMessage (error: { code: string, message: string }): string {
  return error.code === ERROR_TABLE.MFA_ENROLLMENT_REQUIRED.code
    ? 'Your role requires two-step verification, which this account has not set up yet. Set up an authenticator app or a passkey for your account first, then sign in here again.'
    : error.message
}

/** The address a sign-in request's `login_hint` names, to fill the sign-in form with. */
function hintedEmail (hint: unknown): string {
  return typeof hint === 'string' && hint.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(hint) ? hint : ''
}

/** A form field's one value, or '' when missing or sent twice. */
function field (body: FormBody | undefined, name: string): string {
  const value = body?.[name]
  return typeof value === 'string' ? value : ''
}

/**
 * The sign-in, MFA and consent pages of the authorization server (docs/api.md,
 * "Authorization server"): server-rendered forms, each carrying the interaction's
 * anti-forgery token, answered with the next page or a redirect back into the flow.
 */
function interactionPages (server: AuthorizationServer): FastifyPluginAsync {
  const { provider } = server
  return async (fastify) => {
    await fastify.register(formbody)
    const { signIn, authorizationGrants } = fastify.services
    const stylesheet = `${AUTHORIZATION_SERVER_PATH}${STYLESHEET_PATH}`
    const providers = Object.keys(fastify.config.oauth)
    /**
     * Where the page's link for `name` starts its sign-in: the API's, as a browser application
     * starts one, coming back below the interaction's own address (where its cookie is sent) with
     * a one-time code whose PKCE verifier only the service can make again for this interaction
     * (an HMAC of its uid).
     */
    function providerStart (name: string, uid: string): string {
      const challenge = createHash('sha256').update(server.formToken(`federated:${uid}`)).digest('base64url')
      const back = `${server.issuer}${INTERACTION_PATH}/${uid}/federated`
      const query = new URLSearchParams({ redirect_to: back, code_challenge: challenge, code_challenge_method: 'S256' })
      return `/api/v1/auth/oauth/${encodeURIComponent(name)}/authorize?${query.toString()}`
    }
    const scripts = [WEBAUTHN_SCRIPT_PATH, SCRIPT_PATH].map((path) => `${AUTHORIZATION_SERVER_PATH}${path}`)

    async function details (request: InteractionRequest, reply: FastifyReply) {
      server.addressToIssuer(request.raw)
      const interaction = await provider.interactionDetails(request.raw, reply.raw)
      // The cookie binds the interaction to this browser; the address's uid, when it names one, must be the same.
      if (request.params.uid !== undefined && interaction.uid !== request.params.uid) throw new Error('interaction mismatch')
      const client = await provider.Client.find(String(interaction.params.client_id))
      return { interaction, clientName: client?.clientName ?? String(interaction.params.client_id) }
    }

    function send (reply: FastifyReply, status: number, title: string, body: string, signIn = false) {
      return reply.code(status).header('content-security-policy', signIn ? SIGN_IN_PAGE_CSP : PAGE_CSP)
        .type('text/html; charset=utf-8')
        .send(page(title, body, { stylesheet, scripts: signIn ? scripts : [] }))
    }

    function expired (reply: FastifyReply) {
      return send(reply, 400, 'Sign-in expired', '<p class="error" role="alert">This sign-in has expired or was opened in another browser. Go back to the application and start again.</p>')
    }

    /**
     * Back into the flow with the interaction's result. A consent is merged with the sign-in
     * before it (the provider's last submission), so that a request that asked for a sign-in
     * (`prompt=login`) finds it answered.
     */
    async function finish (request: InteractionRequest, reply: FastifyReply, result: Record<string, unknown>) {
      const to = await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: 'consent' in result })
      return reply.redirect(to, 303)
    }

    /** The form of the interaction's prompt: sign-in or consent. */
    async function show (request: InteractionRequest, reply: FastifyReply, error: string | null, given = '') {
      const { interaction, clientName } = await details(request, reply)
      const email = given === '' ? hintedEmail(interaction.params.login_hint) : given
      const form = { action: `${INTERACTION_PATH}/${interaction.uid}`, csrf: server.formToken(interaction.uid), clientName, error }
      if (interaction.prompt.name === 'login') {
        const links = providers.map((name) => ({ name: displayName(name), href: providerStart(name, interaction.uid) }))
        return send(reply, error === null ? 200 : 400, 'Sign in', signInForm(form, email, PASSKEY_OPTIONS, links), true)
      }
      const scopes = String(interaction.params.scope ?? '').split(' ').filter((scope) => scope !== '')
      const accountId = interaction.session?.accountId
      const organizations = accountId !== undefined && interaction.prompt.reasons.includes(ORGANIZATION_NOT_CHOSEN)
        ? await authorizationGrants.organizationsToChoose(accountId)
        : []
      return send(reply, error === null ? 200 : 400, 'Allow access', consentForm(form, scopes, organizations))
    }

    /** A first factor proved: the MFA page when the account's rules ask for more, else back into the flow. */
    async function signedIn (
      request: InteractionRequest,
      reply: FastifyReply,
      found: { interaction: { uid: string }, clientName: string },
      proof: SignInProof | MfaChallenge
    ) {
      if ('mfa_token' in proof) {
        const { uid } = found.interaction
        const form = { action: `${INTERACTION_PATH}/${uid}`, csrf: server.formToken(uid), clientName: found.clientName, error: null }
        return send(reply, 200, 'Two-step verification', mfaForm(form, { mfaToken: proof.mfa_token, methods: proof.methods }))
      }
      return await finish(request, reply, loginResult(proof))
    }

    /** The second-factor page again, with what just happened: a refusal (400) or a code sent. */
    function mfaPage (
      reply: FastifyReply,
      found: { interaction: { uid: string }, clientName: string },
      challenge: { mfaToken: string, methods: string[] },
      outcome: { error?: string, sent?: string }
    ) {
      const { uid } = found.interaction
      const form = {
        action: `${INTERACTION_PATH}/${uid}`, csrf: server.formToken(uid), clientName: found.clientName, error: outcome.error ?? null
      }
      return send(reply, outcome.error === undefined ? 200 : 400, 'Two-step verification', mfaForm(form, challenge, outcome.sent ?? null))
    }

    /** Every POST: the interaction must be this browser's, and the form the one the service rendered. */
    async function checked (request: InteractionRequest, reply: FastifyReply) {
      const found = await details(request, reply).catch(() => null)
      if (found === null || !server.isFormToken(found.interaction.uid, field(request.body, 'csrf'))) return null
      return found
    }

    const interactionRoute = { config: PUBLIC, schema: HIDDEN }
    /** Every form takes a credential or a choice: counted in the sign-in tier. */
    const interactionForm = { config: { ...PUBLIC, signInRate: true }, schema: HIDDEN }

    fastify.get<{ Params: { uid: string } }>('/interaction/:uid', interactionRoute, async (request, reply) => {
      try {
        return await show(request as InteractionRequest, reply, null)
      } catch {
        return expired(reply)
      }
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/login', interactionForm, async (request, reply) => {
      const found = await checked(request, reply)
      if (found === null || found.interaction.prompt.name !== 'login') return expired(reply)
      const email = field(request.body, 'email')
      try {
        const proof = await signIn.proveWithPassword(request.serviceContext, { email, password: field(request.body, 'password') })
        return await signedIn(request, reply, found, proof)
      } catch (error) {
        if (!isServiceError(error)) throw error
        return await show(request, reply, pageMessage(error), email)
      }
    })

    fastify.get<{ Params: { uid: string }, Querystring: { code?: string, error?: string } }>('/interaction/:uid/federated', interactionRoute, async (request, reply) => {
      const interactionRequest = request as unknown as InteractionRequest
      const found = await details(interactionRequest, reply).catch(() => null)
      if (found === null || found.interaction.prompt.name !== 'login') return expired(reply)
      const { code, error } = request.query
      if (typeof code !== 'string' || code === '') {
        return await show(interactionRequest, reply, error === undefined ? 'The sign-in with the provider did not finish.' : federatedFailure(error))
      }
      try {
        const verifier = server.formToken(`federated:${found.interaction.uid}`)
        const proof = await signIn.proveWithExchangeCode(request.serviceContext, { code, code_verifier: verifier })
        return await signedIn(interactionRequest, reply, found, proof)
      } catch (failure) {
        if (!isServiceError(failure)) throw failure
        return await show(interactionRequest, reply, pageMessage(failure))
      }
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/passkey', interactionForm, async (request, reply) => {
      const found = await checked(request, reply)
      if (found === null || found.interaction.prompt.name !== 'login') return expired(reply)
      let body: unknown
      try {
        body = JSON.parse(field(request.body, 'response'))
      } catch {
        return await show(request, reply, 'The passkey did not sign you in. Try again, or use your password.')
      }
      if (!isPasskeyAnswer(body)) return await show(request, reply, 'The passkey did not sign you in. Try again, or use your password.')
      try {
        return await signedIn(request, reply, found, await signIn.proveWithPasskey(request.serviceContext, body))
      } catch (error) {
        if (!isServiceError(error)) throw error
        return await show(request, reply, pageMessage(error))
      }
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/mfa', interactionForm, async (request, reply) => {
      const found = await checked(request, reply)
      if (found === null || found.interaction.prompt.name !== 'login') return expired(reply)
      const challenge = challengeOf(request.body)
      try {
        const proof = await signIn.proveChallenge(request.serviceContext, { mfa_token: challenge.mfaToken, code: field(request.body, 'code') })
        return await finish(request, reply, loginResult(proof))
      } catch (error) {
        if (!isServiceError(error)) throw error
        return mfaPage(reply, found, challenge, { error: pageMessage(error) })
      }
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/mfa/code', interactionForm, async (request, reply) => {
      const found = await checked(request, reply)
      if (found === null || found.interaction.prompt.name !== 'login') return expired(reply)
      const challenge = challengeOf(request.body)
      const method = field(request.body, 'method')
      if (method !== 'email' && method !== 'sms') return mfaPage(reply, found, challenge, { error: 'Choose how to receive the code.' })
      try {
        await signIn.sendChallengeCode(request.serviceContext, { mfa_token: challenge.mfaToken, method })
        return mfaPage(reply, found, challenge, { sent: `A code was sent by ${method === 'email' ? 'e-mail' : 'SMS'}; it is good for 5 minutes.` })
      } catch (error) {
        if (!isServiceError(error)) throw error
        return mfaPage(reply, found, challenge, { error: pageMessage(error) })
      }
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/consent', interactionForm, async (request, reply) => {
      const found = await checked(request, reply)
      const interaction = found?.interaction
      if (interaction === undefined || interaction.prompt.name !== 'consent' || interaction.session?.accountId === undefined) return expired(reply)
      const grant = interaction.grantId === undefined
        ? new provider.Grant({
          accountId: interaction.session.accountId, clientId: String(interaction.params.client_id)
        })
        : await provider.Grant.find(interaction.grantId)
      if (grant === undefined) return expired(reply)
      const chooses = interaction.prompt.reasons.includes(ORGANIZATION_NOT_CHOSEN)
      const organization = field(request.body, 'organization')
      if (chooses && organization === '') return await show(request, reply, 'Choose an organization.')
      const missing = interaction.prompt.details as { missingOIDCScope?: string[], missingOIDCClaims?: string[] }
      if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
      if (missing.missingOIDCClaims !== undefined) grant.addOIDCClaims(missing.missingOIDCClaims)
      const grantId = await grant.save()
      if (chooses) {
        try {
          await authorizationGrants.chooseOrganization(interaction.session.accountId, grantId, organization)
        } catch (error) {
          if (!isServiceError(error)) throw error
          return await show(request, reply, 'Choose one of your organizations.')
        }
      }
      return await finish(request, reply, { consent: { grantId } })
    })

    fastify.post<{ Params: { uid: string }, Body: FormBody }>('/interaction/:uid/abort', interactionForm, async (request, reply) => {
      if (await checked(request, reply) === null) return expired(reply)
      return await finish(request, reply, { error: 'access_denied', error_description: 'The person declined' })
    })
  }
}

/** The error RFC 7591 answers for a refused registration, from the service's validation details. */
function registrationError (details: Array<{ path: string, message: string }>) {
  const redirect = details.some((issue) => /^\/(post_logout_)?redirect_uris/.test(issue.path))
  return {
    error: redirect ? 'invalid_redirect_uri' as const : 'invalid_client_metadata' as const,
    error_description: details.map((issue) => `${issue.path}: ${issue.message}`).join('; ')
  }
}

/**
 * Dynamic client registration (RFC 7591), when the operator set an initial access token
 * (AUTHORIZATION_SERVER_REGISTRATION_TOKEN): a registration held to the rules of the admin API's,
 * through the same service, audited; answered in the RFC's shape.
 */
function dynamicRegistration (initialAccessToken: string): FastifyPluginAsync {
  const expected = Buffer.from(`Bearer ${initialAccessToken}`)
  return async (fastify) => {
    const { oauthClients } = fastify.services
    fastify.post<{ Body: DynamicRegistration }>('/reg', {
      config: PUBLIC,
      attachValidation: true,
      schema: {
        hide: true,
        body: DynamicRegistrationSchema,
        response: {
          201: DynamicRegistrationResponseSchema,
          400: DynamicRegistrationErrorSchema,
          401: DynamicRegistrationErrorSchema
        }
      }
    }, async (request, reply) => {
      const presented = Buffer.from(request.headers.authorization ?? '')
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
        return await reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"')
          .send({ error: 'invalid_token', error_description: 'the initial access token is missing or wrong' })
      }
      if (request.validationError !== undefined) {
        return await reply.code(400).send({ error: 'invalid_client_metadata', error_description: request.validationError.message })
      }
      try {
        return await reply.code(201).send(await oauthClients.registerDynamically(request.serviceContext, request.body))
      } catch (error) {
        if (!isServiceError(error) || !('details' in error)) throw error
        return await reply.code(400).send(registrationError(error.details as Array<{ path: string, message: string }>))
      }
    })
  }
}

/**
 * The authorization and end-session endpoints take POST as OpenID Connect requires (Core 3.1.2.1,
 * RP-Initiated Logout 2): a form posted to either is answered with a redirect to the same request
 * by GET. oidc-provider's own POST support would need its session cookie to be `SameSite=None`,
 * sent with any other site's requests; the redirect is a top-level navigation, which the
 * `SameSite=Lax` cookie accompanies. Repeated parameters stay repeated (and are refused).
 */
const POSTED_AS_GET = [AUTHORIZATION_PATH, END_SESSION_PATH]

function postedAsGet (): FastifyPluginAsync {
  return async (fastify) => {
    await fastify.register(formbody)
    for (const path of POSTED_AS_GET) {
      fastify.post<{ Body: FormBody }>(path, { config: PUBLIC, schema: HIDDEN }, async (request, reply) => {
        const query = new URLSearchParams()
        for (const [name, value] of Object.entries(request.body ?? {})) {
          for (const item of [value ?? []].flat()) query.append(name, item)
        }
        return await reply.redirect(`${AUTHORIZATION_SERVER_PATH}${path}?${query.toString()}`, 303)
      })
    }
  }
}

/**
 * Everything else under /oidc is oidc-provider's (authorization, token, userinfo, introspection,
 * revocation, device, end-session, its discovery): handed the raw request with its body unread
 * (oidc-provider reads bodies itself) and the security headers already set.
 */
function providerEndpoints (server: AuthorizationServer): FastifyPluginAsync {
  const callback = server.provider.callback()
  return async (fastify) => {
    fastify.removeAllContentTypeParsers()
    fastify.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    const handler: RouteHandlerMethod = function handOver (request, reply) {
      server.addressToIssuer(request.raw)
      reply.hijack()
      const raw = reply.raw
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) raw.setHeader(name, value)
      }
      const original = request.raw.url ?? '/'
      // oidc-provider builds its addresses from the part of the URL it was mounted at; the
      // request log names the whole one, put back before the line is written.
      Object.assign(request.raw, { originalUrl: original, url: original.slice(AUTHORIZATION_SERVER_PATH.length) || '/' })
      raw.once('finish', () => { request.raw.url = original })
      fastify.logWhenAnswered(request, reply)
      void callback(request.raw, raw)
    }
    fastify.route({ method: ALL_METHODS, url: '/*', config: PUBLIC, schema: HIDDEN, handler })
    // The device's user code is a secret of eight letters: guesses at it count in the sign-in tier.
    fastify.route({
      method: ALL_METHODS, url: DEVICE_PATH, config: { ...PUBLIC, signInRate: true }, schema: HIDDEN, handler
    })
  }
}

/** The authorization server's routes, under /oidc, when it is on. */
const oidcRoutes: FastifyPluginAsync = async (fastify) => {
  const server = fastify.authorizationServer
  if (server === null) return
  // The keys of both the ID tokens and the API's tokens (/.well-known/jwks.json has the API's
  // only, and none under HS256).
  const jwks = { keys: [...server.idTokenJwks, ...publicJwks(fastify.config.jwt)] }
  const library = webauthnLibrary()

  fastify.get(STYLESHEET_PATH, { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(PAGE_STYLESHEET))
  fastify.get(SCRIPT_PATH, { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(PAGE_SCRIPT))
  fastify.get(WEBAUTHN_SCRIPT_PATH, { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(library))
  fastify.get('/jwks', { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.header('cache-control', 'public, max-age=300').type('application/jwk-set+json').send(jwks))
  await fastify.register(interactionPages(server))
  await fastify.register(postedAsGet())
  const registrationToken = fastify.config.authorizationServerRegistrationToken
  if (registrationToken !== null) await fastify.register(dynamicRegistration(registrationToken))
  await fastify.register(providerEndpoints(server))
}

export default oidcRoutes
