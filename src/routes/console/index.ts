import { createHash, hkdfSync } from 'node:crypto'
import fastifyCookie from '@fastify/cookie'
import csrfProtection from '@fastify/csrf-protection'
import formbody from '@fastify/formbody'
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { decodeJwt } from 'jose'
import {
  ACCOUNT_PATH, AUTHORIZATION_PATH, AUTHORIZATION_SERVER_PATH, CONSOLE_CALLBACK_PATH, CONSOLE_CLIENT_ID, CONSOLE_PATH,
  END_SESSION_PATH
} from '../../authorization-server/paths.js'
import {
  ACCOUNT_SCRIPT, ACCOUNT_SCRIPT_PATH, CONSOLE_CSP, CONSOLE_SCRIPT_CSP, CONSOLE_STYLESHEET, consolePage, link,
  escapeHtml, paragraph, sendPage
} from '../../console/pages.js'
import {
  type ConsoleSession, ConsoleCookies, COOKIE_OPTIONS, CSRF_COOKIE, SESSION_COOKIE, SIGN_IN_COOKIE
} from '../../console/session-cookies.js'
import { say } from '../../console/strings.js'
import { landingOf } from '../../console/viewer.js'
import { isServiceError } from '../../errors.js'
import { sameText } from '../../security/constant-time.js'
import type { SignInProof } from '../../services/sign-in/sign-in.js'
import account from './account.js'
import accountSignIn from './account-sign-in.js'
import auditLog from './audit-log.js'
import impersonation from './impersonation.js'
import oauthClients from './oauth-clients.js'
import organizations from './organizations.js'
import overview from './overview.js'
import webhooks from './webhooks.js'
import users from './users.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console page that loads the service's own scripts (its CSP allows them and requests to the service). */
    consoleScripts?: true
  }
  interface FastifyRequest {
    /** The console's session of the request's cookie (console pages only), its tokens fresh. */
    consoleSession: ConsoleSession | null
  }
}

const PUBLIC = { access: 'public' as const }
const HIDDEN = { hide: true }

/** The codes of a request whose session is gone (docs/api.md, "Errors"): the page signs out. */
const SIGNED_OUT = new Set(['MISSING_TOKEN', 'INVALID_TOKEN', 'TOKEN_EXPIRED', 'TOKEN_REUSED', 'SESSION_EXPIRED'])

/** What was wrong with each field of a refused form: the service's details, or the schema's. */
function problems (error: FastifyError & { details?: Array<{ path?: string, message?: string }> }): string {
  const fromSchema = error.validation?.map((issue) => ({ path: issue.instancePath, message: issue.message }))
  const listed = error.details ?? fromSchema ?? []
  const items = listed.map(({ path, message }) => `<li>${escapeHtml(`${path ?? ''} ${message ?? ''}`.trim())}</li>`).join('')
  return items === '' ? '' : `<ul class="error">${items}</ul>`
}

/** An access token this close to its end is refreshed first, so that it outlives the request. */
const REFRESH_MARGIN_MS = 30_000

function lastsBeyondMargin (accessToken: string): boolean {
  const { exp } = decodeJwt(accessToken)
  return typeof exp === 'number' && exp * 1000 - Date.now() > REFRESH_MARGIN_MS
}

/**
 * The console (docs/console.md): the service's own pages for its operators, signed in through the
 * authorization server's pages as a client built in (so every sign-in rule and method of the
 * service applies), holding an API session in a sealed `__Host-` cookie: each request is the
 * API's, authenticated and guarded by the same hooks, and served by the same services.
 */
const consoleRoutes: FastifyPluginAsync = async (fastify) => {
  const { services, authorizationServer: server } = fastify
  const cookies = new ConsoleCookies(fastify.config.sealing.keys)
  await fastify.register(fastifyCookie)
  await fastify.register(formbody)
  await fastify.register(csrfProtection, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: CSRF_COOKIE,
    cookieOpts: COOKIE_OPTIONS,
    csrfOpts: { hmacKey: Buffer.from(hkdfSync('sha256', fastify.config.jwtSecret, '', 'console-forms', 32)) },
    // A form's token holds only within the session that rendered it.
    getUserInfo: (request: FastifyRequest) => request.consoleSession?.binding ?? ''
  })
  fastify.decorateRequest('consoleSession', null)

  fastify.addHook('onSend', async (request, reply, payload) => {
    reply.header('content-security-policy', request.routeOptions.config.consoleScripts === true ? CONSOLE_SCRIPT_CSP : CONSOLE_CSP)
    return payload
  })

  /**
   * The session of the cookie with an access token good for this request (refreshed when near its
   * end, while its operator acts as someone too, so that it does not idle out meanwhile), or null.
   * An impersonation near its end is over: the operator's own session again.
   */
  async function freshSession (request: FastifyRequest, reply: FastifyReply): Promise<ConsoleSession | null> {
    const cookie = cookies.session(request.cookies[SESSION_COOKIE])
    if (cookie === null) return null
    const { acting, ...own } = cookie
    const session = acting !== undefined && lastsBeyondMargin(acting) ? cookie : own
    if (lastsBeyondMargin(session.access)) {
      if (session !== cookie) reply.setCookie(SESSION_COOKIE, cookies.seal(session), COOKIE_OPTIONS)
      return session
    }
    try {
      const pair = await services.signIn.refresh(request.serviceContext, session.refresh)
      const renewed = { ...session, access: pair.access_token, refresh: pair.refresh_token }
      reply.setCookie(SESSION_COOKIE, cookies.seal(renewed), COOKIE_OPTIONS)
      return renewed
    } catch (error) {
      // An ended session: the guard then refuses the request as signed out.
      if (isServiceError(error)) return null
      throw error
    }
  }

  // The session's access token is the request's bearer token: the API's guards admit the request or not.
  fastify.addHook('onRequest', async (request, reply) => {
    delete request.headers.authorization
    if (request.routeOptions.config.access === 'public') return
    request.consoleSession = await freshSession(request, reply)
    if (request.consoleSession !== null) request.headers.authorization = `Bearer ${request.consoleSession.acting ?? request.consoleSession.access}`
  })

  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    // Only a refused session signs the page out: a wrong code or password is the form's error.
    if (status === 401 && SIGNED_OUT.has(error.code)) {
      // An impersonation ended otherwise (its token revoked): the operator's own session again.
      const session = request.consoleSession
      if (session?.acting !== undefined) {
        reply.setCookie(SESSION_COOKIE, cookies.withoutActing(session), COOKIE_OPTIONS)
        return await reply.redirect(`${CONSOLE_PATH}/users`, 303)
      }
      reply.clearCookie(SESSION_COOKIE, COOKIE_OPTIONS)
      const to = request.url.startsWith(ACCOUNT_PATH) ? '?to=account' : ''
      if (request.method === 'GET') return await reply.redirect(`${CONSOLE_PATH}/sign-in${to}`, 303)
      return sendPage(reply, 401, consolePage(say('signIn'), `${paragraph(error.message, 'error')}<p>${link(`${CONSOLE_PATH}/sign-in`, 'signInAgain')}</p>`, null))
    }
    if (error.code?.startsWith('FST_CSRF_') === true) return sendPage(reply, 403, consolePage(say('notAllowedTitle'), paragraph(say('formExpired'), 'error'), null))
    if (status >= 500) {
      request.log.error({ err: error }, 'console page failed')
      return sendPage(reply, 500, consolePage(say('somethingWrong'), paragraph(say('somethingWrong'), 'error'), null))
    }
    const title = status === 403 ? say('notAllowedTitle') : status === 404 ? say('notFoundTitle') : say('somethingWrong')
    // Every signed-in person may see their own page, whatever the console refused them.
    return sendPage(reply, status, consolePage(title, `${paragraph(error.message, 'error')}${problems(error)}<p>${link(ACCOUNT_PATH, 'yourAccount')}</p>`, null))
  })

  fastify.get(`${CONSOLE_PATH}/console.css`, { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(CONSOLE_STYLESHEET))

  fastify.get(ACCOUNT_SCRIPT_PATH, { config: PUBLIC, schema: HIDDEN }, async (_request, reply) =>
    await reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(ACCOUNT_SCRIPT))

  fastify.get(CONSOLE_PATH, { config: PUBLIC, schema: HIDDEN }, async (request, reply) => {
    const session = cookies.session(request.cookies[SESSION_COOKIE])
    if (session !== null) return await reply.redirect(landingOf(session.access, 'console'), 303)
    const body = server === null
      ? paragraph(say('signInUnavailable'), 'error')
      : `${paragraph(say('signInIntro'))}<p>${link(`${CONSOLE_PATH}/sign-in`, 'signIn')}</p>`
    return sendPage(reply, 200, consolePage(say('console'), body, null))
  })

  if (server !== null) {
    const redirectUri = `${server.issuer}${CONSOLE_CALLBACK_PATH}`
    signInRoutes(fastify, cookies, redirectUri, server.issuer)
  }
  await fastify.register(overview, { prefix: `${CONSOLE_PATH}/overview` })
  await fastify.register(users, { prefix: `${CONSOLE_PATH}/users` })
  await fastify.register(organizations, { prefix: `${CONSOLE_PATH}/organizations` })
  await fastify.register(oauthClients, { prefix: `${CONSOLE_PATH}/oauth-clients` })
  await fastify.register(webhooks, { prefix: `${CONSOLE_PATH}/webhooks` })
  await fastify.register(auditLog, { prefix: `${CONSOLE_PATH}/audit-log` })
  await fastify.register(impersonation, { prefix: CONSOLE_PATH, cookies })
  await fastify.register(account, { prefix: ACCOUNT_PATH })
  await fastify.register(accountSignIn, { prefix: ACCOUNT_PATH })
}

/**
 * Signing in: an authorization request of the built-in client (code, PKCE, `state` kept in a
 * sealed cookie of the browser that started it), its code exchanged at the token endpoint within
 * the process, its ID token's account and methods opening the console's API session; signing
 * out ends it, then the authorization server's session (RP-initiated logout).
 */
function signInRoutes (fastify: FastifyInstance, cookies: ConsoleCookies, redirectUri: string, issuer: string): void {
  const { services } = fastify
  const unfinished = (reply: FastifyReply) =>
    sendPage(reply, 400, consolePage(say('signIn'), `${paragraph(say('signInUnfinished'), 'error')}<p>${link(`${CONSOLE_PATH}/sign-in`, 'signInAgain')}</p>`, null))

  /** The account and sign-in methods of the code's ID token, or null when the code is refused. */
  async function exchange (code: string, verifier: string, ip: string): Promise<SignInProof | null> {
    const answer = await fastify.inject({
      method: 'POST',
      url: `${AUTHORIZATION_SERVER_PATH}/token`,
      remoteAddress: ip,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: CONSOLE_CLIENT_ID, code_verifier: verifier }).toString()
    })
    if (answer.statusCode !== 200) return null
    const { id_token: idToken } = answer.json<{ id_token?: unknown }>()
    if (typeof idToken !== 'string') return null
    const { sub, amr, aud } = decodeJwt(idToken)
    if (typeof sub !== 'string' || aud !== CONSOLE_CLIENT_ID) return null
    return { userId: sub, amr: Array.isArray(amr) ? amr.filter((method): method is string => typeof method === 'string') : [] }
  }

  fastify.get<{ Querystring: Record<string, unknown> }>(`${CONSOLE_PATH}/sign-in`, {
    config: { ...PUBLIC, signInRate: true }, schema: HIDDEN
  }, async (request, reply) => {
    const to = request.query.to === 'account' ? 'account' : 'console'
    // Signed in already: no second session (a stale cookie's page sends the browser back here, cleared).
    const session = cookies.session(request.cookies[SESSION_COOKIE])
    if (session !== null) return await reply.redirect(landingOf(session.access, to), 303)
    const { value, signIn } = cookies.newSignIn(to)
    reply.setCookie(SIGN_IN_COOKIE, value, { ...COOKIE_OPTIONS, maxAge: 600 })
    const query = new URLSearchParams({
      client_id: CONSOLE_CLIENT_ID,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid',
      // A console sign-in is proved afresh, never carried over from the authorization server's session.
      prompt: 'login',
      state: signIn.state,
      code_challenge: createHash('sha256').update(signIn.verifier).digest('base64url'),
      code_challenge_method: 'S256'
    })
    return await reply.redirect(`${AUTHORIZATION_SERVER_PATH}${AUTHORIZATION_PATH}?${query.toString()}`, 303)
  })

  fastify.get<{ Querystring: Record<string, unknown> }>(CONSOLE_CALLBACK_PATH, {
    config: { ...PUBLIC, signInRate: true }, schema: HIDDEN
  }, async (request, reply) => {
    const underWay = cookies.signIn(request.cookies[SIGN_IN_COOKIE])
    reply.clearCookie(SIGN_IN_COOKIE, COOKIE_OPTIONS)
    const { code, state } = request.query
    if (underWay === null || typeof code !== 'string' || typeof state !== 'string' || !sameText(state, underWay.state)) return unfinished(reply)
    const proof = await exchange(code, underWay.verifier, request.ip)
    if (proof === null) return unfinished(reply)
    const pair = await services.signIn.consoleSession(request.serviceContext, proof)
    reply.setCookie(SESSION_COOKIE, cookies.newSession(pair.access_token, pair.refresh_token), COOKIE_OPTIONS)
    return await reply.redirect(landingOf(pair.access_token, underWay.to), 303)
  })

  fastify.post(`${CONSOLE_PATH}/sign-out`, {
    config: { access: 'bearer', allowWithoutMfa: true }, preValidation: fastify.csrfProtection, schema: HIDDEN
  }, async (request, reply) => {
    const session = request.consoleSession
    if (session?.acting !== undefined) {
      // Acting as a user: the impersonation ends first, then the same form signs the operator out.
      await services.signIn.signOut(request.serviceContext, undefined)
      reply.setCookie(SESSION_COOKIE, cookies.withoutActing(session), COOKIE_OPTIONS)
      return await reply.redirect(`${CONSOLE_PATH}/sign-out`, 307)
    }
    await services.signIn.signOut(request.serviceContext, session?.refresh)
    reply.clearCookie(SESSION_COOKIE, COOKIE_OPTIONS)
    const query = new URLSearchParams({ client_id: CONSOLE_CLIENT_ID, post_logout_redirect_uri: `${issuer}${CONSOLE_PATH}` })
    return await reply.redirect(`${AUTHORIZATION_SERVER_PATH}${END_SESSION_PATH}?${query.toString()}`, 303)
  })
}

export default consoleRoutes
