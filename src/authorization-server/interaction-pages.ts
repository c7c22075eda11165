import { createHash } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ERROR_TABLE } from '../../schemas/errors.js'
import type { MfaChallenge } from '../../schemas/mfa.js'
import { type PasskeyAuthenticationBody, PasskeyAuthenticationBodySchema } from '../../schemas/passkeys.js'
import { isServiceError } from '../errors.js'
import { isUserEmail } from '../federation/providers.js'
import type { RequestContext } from '../services/context.js'
import type { Services } from '../services/index.js'
import type { SignInProof } from '../services/sign-in/sign-in.js'
import { consentForm, emailCodeForm, mfaForm, page, PAGE_CSP, signInForm, SIGN_IN_PAGE_CSP } from './pages.js'
import { AUTHORIZATION_SERVER_PATH, INTERACTION_PATH, SCRIPT_PATH, STYLESHEET_PATH, WEBAUTHN_SCRIPT_PATH } from './paths.js'
import type { AuthorizationServer, PagesLogin } from './provider.js'

/** A posted form's fields as @fastify/formbody parses them: a field sent twice is an array. */
export type FormBody = Record<string, string | string[] | undefined>
type InteractionRequest = FastifyRequest<{ Params: { uid: string }, Body: FormBody }>
type FederatedRequest = FastifyRequest<{ Params: { uid: string }, Querystring: { code?: string, error?: string } }>
type EmailLinkRequest = FastifyRequest<{ Params: { uid: string }, Querystring: { token?: string } }>
/** The interaction a request belongs to, and the name of the application asking. */
interface Found { interaction: Awaited<ReturnType<AuthorizationServer['provider']['interactionDetails']>>, clientName: string }

/** Where the sign-in page's script asks for a passkey challenge: the API's own route. */
const PASSKEY_OPTIONS = '/api/v1/auth/passkeys/authentication/options'

/** Why the consent page asks which organization (src/authorization-server/provider.ts). */
const ORGANIZATION_NOT_CHOSEN = 'organization_not_chosen'

const PASSKEY_REFUSED = 'The passkey did not sign you in. Try again, or use your password.'
const FEDERATED_UNFINISHED = 'The sign-in with the provider did not finish.'
const NO_SINGLE_SIGN_ON = 'No single sign-on is set up for this address. Sign in with your password, or ask your organization.'

/** What a sign-in hands the provider: the account, and how it was proved (`acr` `2` when its methods include `mfa`). */
function loginResult ({ userId, amr }: SignInProof): { login: PagesLogin } {
  return { login: { accountId: userId, amr, acr: amr.includes('mfa') ? '2' : '1', remember: false, ts: Math.floor(Date.now() / 1000) } }
}

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
  return known === undefined ? FEDERATED_UNFINISHED : known.message.replace(/%s/g, '').trim()
}

/**
 * What a page says of a refused sign-in: the API's message, but for an account that must enrol
 * a second factor first, which the API lets do only that (docs/api.md, "Required roles").
 */
function pageMessage (error: { code: string, message: string }): string {
  if (error.code === ERROR_TABLE.MFA_ENROLLMENT_REQUIRED.code) {
    return 'Your role requires two-step verification, which this account has not set up yet. Set up an authenticator app or a passkey for your account first, then sign in here again.'
  }
  return error.code === ERROR_TABLE.SSO_REQUIRED.code ? `${error.message}: continue with single sign-on.` : error.message
}

/** The address a sign-in request's `login_hint` names, to fill the sign-in form with. */
function hintedEmail (hint: unknown): string {
  return typeof hint === 'string' && hint.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(hint) ? hint : ''
}

/** A form field's one value, or '' when missing or sent twice. */
export function field (body: FormBody | undefined, name: string): string {
  const value = body?.[name]
  return typeof value === 'string' ? value : ''
}

/**
 * The sign-in, MFA and consent pages of the authorization server (docs/api.md, "Authorization
 * server"): server-rendered forms, each carrying the interaction's anti-forgery token, answered
 * with the next page or a redirect back into the flow. Each public method is one route's whole
 * answer (src/routes/oidc/interactions.ts); the sign-in itself is the API's
 * (`SignInService`), so every rule of the API holds here.
 */
export class InteractionPages {
  readonly #stylesheet = `${AUTHORIZATION_SERVER_PATH}${STYLESHEET_PATH}`
  readonly #scripts = [WEBAUTHN_SCRIPT_PATH, SCRIPT_PATH].map((path) => `${AUTHORIZATION_SERVER_PATH}${path}`)

  constructor (
    private readonly server: AuthorizationServer,
    private readonly services: Pick<Services, 'signIn' | 'authorizationGrants' | 'ssoDiscovery' | 'emailSignIn'>,
    /** The providers a person may sign in with instead (OAUTH_* settings). */
    private readonly providers: string[]
  ) {}

  /** GET of an interaction: its form, or the page saying it expired. */
  async view (request: InteractionRequest, reply: FastifyReply) {
    try {
      return await this.#show(request, reply, null)
    } catch {
      return this.#expired(reply)
    }
  }

  async password (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const email = field(request.body, 'email')
    return await this.#signIn(request, reply, found, async (context) =>
      await this.services.signIn.proveWithPassword(context, { email, password: field(request.body, 'password') }), email)
  }

  /** Back from a provider's sign-in with its one-time code (or the error it ended with). */
  async federated (request: FederatedRequest, reply: FastifyReply) {
    const interactionRequest = request as unknown as InteractionRequest
    const found = await this.#details(interactionRequest, reply).catch(() => null)
    if (found === null || found.interaction.prompt.name !== 'login') return this.#expired(reply)
    const { code, error } = request.query
    if (typeof code !== 'string' || code === '') {
      const message = error === undefined ? FEDERATED_UNFINISHED : federatedFailure(error)
      return await this.#show(interactionRequest, reply, message)
    }
    const verifier = this.server.formToken(`federated:${found.interaction.uid}`)
    return await this.#signIn(interactionRequest, reply, found, async (context) =>
      await this.services.signIn.proveWithExchangeCode(context, { code, code_verifier: verifier }))
  }

  /**
   * Single sign-on for the address given: the organization holding its domain verified sends
   * the browser to its identity provider through its first enabled connection, started as a
   * browser application starts one, and coming back as a provider's sign-in does (`federated`).
   */
  async singleSignOn (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const email = field(request.body, 'email').trim()
    if (!isUserEmail(email)) return await this.#show(request, reply, 'Enter your work e-mail address to continue with single sign-on.', email)
    let connection
    try {
      [connection] = (await this.services.ssoDiscovery.discover({ email })).connections
    } catch (error) {
      if (!isServiceError(error)) throw error
    }
    if (connection === undefined) return await this.#show(request, reply, NO_SINGLE_SIGN_ON, email)
    return reply.redirect(this.#browserStart(connection.sign_in_url, found.interaction.uid), 303)
  }

  /**
   * A sign-in code by e-mail for the address given (the API's, docs/api.md, "Signing in by
   * e-mail"): the message's link, once confirmed, comes back to this interaction (`emailLink`).
   */
  async emailCode (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const email = field(request.body, 'email').trim()
    if (!isUserEmail(email)) return await this.#show(request, reply, 'Enter your e-mail address to get a sign-in code.', email)
    const { uid } = found.interaction
    try {
      await this.services.emailSignIn.request(request.serviceContext, { email, redirect_to: `${this.server.issuer}${INTERACTION_PATH}/${uid}/email` })
    } catch (error) {
      if (!isServiceError(error)) throw error
      return await this.#show(request, reply, pageMessage(error), email)
    }
    return this.#emailCodePage(reply, found, email, null)
  }

  /** The code of the message sent by `emailCode`. */
  async emailSignIn (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const email = field(request.body, 'email')
    try {
      const proof = await this.services.signIn.proveWithEmail(request.serviceContext, { email, code: field(request.body, 'code') })
      return await this.#signedIn(request, reply, found, proof)
    } catch (error) {
      if (!isServiceError(error)) throw error
      return this.#emailCodePage(reply, found, email, pageMessage(error))
    }
  }

  /** Back from the message's link, confirmed on the API's page, with the token it hands over. */
  async emailLink (request: EmailLinkRequest, reply: FastifyReply) {
    const interactionRequest = request as unknown as InteractionRequest
    const found = await this.#details(interactionRequest, reply).catch(() => null)
    if (found === null || found.interaction.prompt.name !== 'login') {
      // The message still signs in once: by its code where the sign-in began, or its link opened there.
      return this.#send(reply, 400, 'Continue where you began', '<p class="error" role="alert">This sign-in began in another browser or device, or has expired. Enter the code from the message where you began, or open the link there.</p>')
    }
    const token = request.query.token ?? ''
    return await this.#signIn(interactionRequest, reply, found, async (context) =>
      await this.services.signIn.proveWithEmail(context, { token }))
  }

  #emailCodePage (reply: FastifyReply, found: Found, email: string, error: string | null) {
    const { uid } = found.interaction
    const form = { action: `${INTERACTION_PATH}/${uid}`, csrf: this.server.formToken(uid), clientName: found.clientName, error }
    return this.#send(reply, error === null ? 200 : 400, 'Check your e-mail', emailCodeForm(form, email))
  }

  async passkey (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    let body: unknown
    try {
      body = JSON.parse(field(request.body, 'response'))
    } catch {
      return await this.#show(request, reply, PASSKEY_REFUSED)
    }
    if (!isPasskeyAnswer(body)) return await this.#show(request, reply, PASSKEY_REFUSED)
    return await this.#signIn(request, reply, found, async (context) =>
      await this.services.signIn.proveWithPasskey(context, body))
  }

  /** A second factor's code answering the challenge. */
  async secondFactor (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const challenge = challengeOf(request.body)
    try {
      const proof = await this.services.signIn.proveChallenge(request.serviceContext, { mfa_token: challenge.mfaToken, code: field(request.body, 'code') })
      return await this.#finish(request, reply, loginResult(proof))
    } catch (error) {
      if (!isServiceError(error)) throw error
      return this.#mfaPage(reply, found, challenge, { error: pageMessage(error) })
    }
  }

  /** A code sent by e-mail or SMS for the challenge. */
  async sendCode (request: InteractionRequest, reply: FastifyReply) {
    const found = await this.#checkedLogin(request, reply)
    if (found === null) return this.#expired(reply)
    const challenge = challengeOf(request.body)
    const method = field(request.body, 'method')
    if (method !== 'email' && method !== 'sms') return this.#mfaPage(reply, found, challenge, { error: 'Choose how to receive the code.' })
    try {
      await this.services.signIn.sendChallengeCode(request.serviceContext, { mfa_token: challenge.mfaToken, method })
      return this.#mfaPage(reply, found, challenge, { sent: `A code was sent by ${method === 'email' ? 'e-mail' : 'SMS'}; it is good for 5 minutes.` })
    } catch (error) {
      if (!isServiceError(error)) throw error
      return this.#mfaPage(reply, found, challenge, { error: pageMessage(error) })
    }
  }

  /** The consent given, with the organization chosen when the application asked for one. */
  async consent (request: InteractionRequest, reply: FastifyReply) {
    const { provider } = this.server
    const interaction = (await this.#checked(request, reply))?.interaction
    if (interaction === undefined || interaction.prompt.name !== 'consent' || interaction.session?.accountId === undefined) return this.#expired(reply)
    const grant = interaction.grantId === undefined
      ? new provider.Grant({
        accountId: interaction.session.accountId, clientId: String(interaction.params.client_id)
      })
      : await provider.Grant.find(interaction.grantId)
    if (grant === undefined) return this.#expired(reply)
    const chooses = interaction.prompt.reasons.includes(ORGANIZATION_NOT_CHOSEN)
    const organization = field(request.body, 'organization')
    if (chooses && organization === '') return await this.#show(request, reply, 'Choose an organization.')
    const missing = interaction.prompt.details as { missingOIDCScope?: string[], missingOIDCClaims?: string[] }
    if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims !== undefined) grant.addOIDCClaims(missing.missingOIDCClaims)
    const grantId = await grant.save()
    if (chooses) {
      try {
        await this.services.authorizationGrants.chooseOrganization(interaction.session.accountId, grantId, organization)
      } catch (error) {
        if (!isServiceError(error)) throw error
        return await this.#show(request, reply, 'Choose one of your organizations.')
      }
    }
    return await this.#finish(request, reply, { consent: { grantId } })
  }

  /** The person declined. */
  async abort (request: InteractionRequest, reply: FastifyReply) {
    if (await this.#checked(request, reply) === null) return this.#expired(reply)
    return await this.#finish(request, reply, { error: 'access_denied', error_description: 'The person declined' })
  }

  /**
   * A sign-in started at `start` (a provider's or an SSO connection's) as a browser application
   * starts one, coming back below the interaction's own address (where its cookie is sent) with
   * a one-time code whose PKCE verifier only the service can make again for this interaction
   * (an HMAC of its uid).
   */
  #browserStart (start: string, uid: string): string {
    const challenge = createHash('sha256').update(this.server.formToken(`federated:${uid}`)).digest('base64url')
    const back = `${this.server.issuer}${INTERACTION_PATH}/${uid}/federated`
    const query = new URLSearchParams({ redirect_to: back, code_challenge: challenge, code_challenge_method: 'S256' })
    return `${start}?${query.toString()}`
  }

  async #details (request: InteractionRequest, reply: FastifyReply): Promise<Found> {
    const { provider } = this.server
    this.server.addressToIssuer(request.raw)
    const interaction = await provider.interactionDetails(request.raw, reply.raw)
    // The cookie binds the interaction to this browser; the address's uid, when it names one, must be the same.
    if (request.params.uid !== undefined && interaction.uid !== request.params.uid) throw new Error('interaction mismatch')
    const client = await provider.Client.find(String(interaction.params.client_id))
    return { interaction, clientName: client?.clientName ?? String(interaction.params.client_id) }
  }

  #send (reply: FastifyReply, status: number, title: string, body: string, signIn = false) {
    return reply.code(status).header('content-security-policy', signIn ? SIGN_IN_PAGE_CSP : PAGE_CSP)
      .type('text/html; charset=utf-8')
      .send(page(title, body, { stylesheet: this.#stylesheet, scripts: signIn ? this.#scripts : [] }))
  }

  #expired (reply: FastifyReply) {
    return this.#send(reply, 400, 'Sign-in expired', '<p class="error" role="alert">This sign-in has expired or was opened in another browser. Go back to the application and start again.</p>')
  }

  /**
   * Back into the flow with the interaction's result. A consent is merged with the sign-in
   * before it (the provider's last submission), so that a request that asked for a sign-in
   * (`prompt=login`) finds it answered.
   */
  async #finish (request: InteractionRequest, reply: FastifyReply, result: Record<string, unknown>) {
    const to = await this.server.provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: 'consent' in result })
    return reply.redirect(to, 303)
  }

  /** The form of the interaction's prompt: sign-in or consent. */
  async #show (request: InteractionRequest, reply: FastifyReply, error: string | null, given = '') {
    const { interaction, clientName } = await this.#details(request, reply)
    const email = given === '' ? hintedEmail(interaction.params.login_hint) : given
    const form = { action: `${INTERACTION_PATH}/${interaction.uid}`, csrf: this.server.formToken(interaction.uid), clientName, error }
    if (interaction.prompt.name === 'login') {
      const links = this.providers.map((name) => ({
        name: displayName(name), href: this.#browserStart(`/api/v1/auth/oauth/${encodeURIComponent(name)}/authorize`, interaction.uid)
      }))
      const byEmail = this.services.emailSignIn.enabled
      return this.#send(reply, error === null ? 200 : 400, 'Sign in', signInForm(form, email, PASSKEY_OPTIONS, links, byEmail), true)
    }
    const scopes = String(interaction.params.scope ?? '').split(' ').filter((scope) => scope !== '')
    const accountId = interaction.session?.accountId
    const organizations = accountId !== undefined && interaction.prompt.reasons.includes(ORGANIZATION_NOT_CHOSEN)
      ? await this.services.authorizationGrants.organizationsToChoose(accountId)
      : []
    return this.#send(reply, error === null ? 200 : 400, 'Allow access', consentForm(form, scopes, organizations))
  }

  /**
   * Signs in with what `prove` proves of the request's context; a refusal shows the sign-in
   * form again with its message (and the address given, `given`).
   */
  async #signIn (
    request: InteractionRequest,
    reply: FastifyReply,
    found: Found,
    prove: (context: RequestContext) => Promise<SignInProof | MfaChallenge>,
    given?: string
  ) {
    let proof
    try {
      proof = await prove(request.serviceContext)
    } catch (error) {
      if (!isServiceError(error)) throw error
      return await this.#show(request, reply, pageMessage(error), given)
    }
    return await this.#signedIn(request, reply, found, proof)
  }

  /** A first factor proved: the MFA page when the account's rules ask for more, else back into the flow. */
  async #signedIn (request: InteractionRequest, reply: FastifyReply, found: Found, proof: SignInProof | MfaChallenge) {
    if ('mfa_token' in proof) return this.#mfaPage(reply, found, { mfaToken: proof.mfa_token, methods: proof.methods }, {})
    return await this.#finish(request, reply, loginResult(proof))
  }

  /** The second-factor page, with what just happened: a refusal (400) or a code sent. */
  #mfaPage (
    reply: FastifyReply,
    found: Found,
    challenge: { mfaToken: string, methods: string[] },
    outcome: { error?: string, sent?: string }
  ) {
    const { uid } = found.interaction
    const form = {
      action: `${INTERACTION_PATH}/${uid}`, csrf: this.server.formToken(uid), clientName: found.clientName, error: outcome.error ?? null
    }
    return this.#send(reply, outcome.error === undefined ? 200 : 400, 'Two-step verification', mfaForm(form, challenge, outcome.sent ?? null))
  }

  /** Every POST: the interaction must be this browser's, and the form the one the service rendered. */
  async #checked (request: InteractionRequest, reply: FastifyReply): Promise<Found | null> {
    const found = await this.#details(request, reply).catch(() => null)
    if (found === null || !this.server.isFormToken(found.interaction.uid, field(request.body, 'csrf'))) return null
    return found
  }

  /** A POST of the sign-in's forms: checked, and the interaction still asking for a sign-in. */
  async #checkedLogin (request: InteractionRequest, reply: FastifyReply): Promise<Found | null> {
    const found = await this.#checked(request, reply)
    return found === null || found.interaction.prompt.name !== 'login' ? null : found
  }
}
