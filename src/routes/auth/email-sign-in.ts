import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from '@sinclair/typebox'
import {
  EmailSignInConfirmBodySchema, EmailSignInConfirmQuerySchema, EmailSignInRequestBodySchema, EmailSignInVerifyBodySchema
} from '../../../schemas/email-sign-in.js'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import { AcceptedResponseSchema } from '../../../schemas/recovery.js'
import { escapeHtml } from '../../authorization-server/pages.js'
import { Errors } from '../../errors.js'

/** What every request is answered, whatever the address. */
const SENT = { data: { message: 'If this address may sign in, a message with a code and a link is on its way.' } }
const CONFIRM_PATH = '/api/v1/auth/email-sign-in/confirm'

/** The confirmation page: plain HTML, no script or style, every value escaped. */
function confirmationPage (title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>`
}

/** A person's page, not an API answer: 200, as any page saying what happened. */
const SPENT_PAGE = confirmationPage('This link no longer works',
  '<p>It was used already, or it expired (a link is good for 10 minutes, once). Ask for a new one where you signed in.</p>')

const HtmlPage = (description: string) => Type.String({ description })

/**
 * A page, under the API's security headers (its CSP as the contract has it: the page holds no
 * script, and every value in it is escaped), whose referrer goes to the service only, so that the
 * link's token never leaves in one. Not `no-referrer`: under it Chromium posts the page's form with
 * `Origin: null`, which the confirmation must tell from another site's (found by the browser test).
 */
async function sendPage (reply: FastifyReply, html: string) {
  return await reply.header('referrer-policy', 'same-origin').type('text/html; charset=utf-8').send(html)
}

/**
 * Signing in by e-mail (docs/api.md, "Signing in by e-mail"): a code and a link by message; the
 * code, or the token of a confirmed link, signs in. The link's GET only shows a page that asks to
 * confirm, so that a mail scanner opening it spends nothing.
 */
const emailSignIn: FastifyPluginAsyncTypebox = async (fastify) => {
  const { emailSignIn: service, signIn } = fastify.services
  // The confirmation page's form posts as browsers post forms; only these routes parse them.
  await fastify.register(formbody)

  fastify.post('/email-sign-in', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.emailSignIn.request',
      summary: 'Send a sign-in code and link to an address (the same answer whether or not it has an account)',
      body: EmailSignInRequestBodySchema,
      response: { 202: described(AcceptedResponseSchema, 'Taken in: a message is on its way when the address may sign in'), ...errorResponses({ body: true }, 403, 404) }
    }
  }, async (request, reply) => {
    await service.request(request.serviceContext, request.body)
    return await reply.code(202).send(SENT)
  })

  fastify.post('/email-sign-in/verify', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.emailSignIn.verify',
      summary: 'Sign in with the code of the message (and its address), or the token a confirmed link handed the application',
      body: EmailSignInVerifyBodySchema,
      response: {
        200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the account has MFA on (`mfa_required`)'),
        ...errorResponses({ body: true }, 401, 403, 404, 423)
      }
    }
  }, async (request) => ({ data: await signIn.withEmail(request.serviceContext, request.body) }))

  fastify.get('/email-sign-in/confirm', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.emailSignIn.confirmPage',
      summary: 'The page the link opens: it asks to confirm, and spends nothing',
      querystring: EmailSignInConfirmQuerySchema,
      produces: ['text/html'],
      response: { 200: HtmlPage('The page asking to confirm, or saying the link is spent or expired'), ...errorResponses({}, 404) }
    }
  }, async (request, reply) => {
    let email
    try {
      email = await service.linkAddress(request.query.token)
    } catch (error) {
      if (!(error instanceof Errors.INVALID_ONE_TIME_TOKEN)) throw error
      return await sendPage(reply, SPENT_PAGE)
    }
    return await sendPage(reply, confirmationPage('Sign in', `<p>Sign in as <strong>${escapeHtml(email)}</strong>?</p>
<form method="post" action="${CONFIRM_PATH}"><input type="hidden" name="token" value="${escapeHtml(request.query.token)}">
<button type="submit">Sign in</button></form>
<p>If you did not ask to sign in, close this page: nothing happens.</p>`))
  })

  fastify.post('/email-sign-in/confirm', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.emailSignIn.confirm',
      summary: 'The page\'s confirmation: the link is spent, and the browser goes to the application with a one-time token',
      consumes: ['application/x-www-form-urlencoded'],
      produces: ['text/html'],
      body: EmailSignInConfirmBodySchema,
      response: {
        303: Type.Null({ description: 'To the application', headers: { Location: Type.String({ description: 'redirect_to?token=<one-time token, 60 s>' }) } }),
        200: HtmlPage('The page saying the link is spent or expired'),
        ...errorResponses({ body: true }, 403, 404)
      }
    }
  }, async (request, reply) => {
    let back
    try {
      back = await service.confirmLink(request.body.token, {
        origin: request.headers.origin, fetchSite: request.headers['sec-fetch-site'] as string | undefined
      })
    } catch (error) {
      if (!(error instanceof Errors.INVALID_ONE_TIME_TOKEN)) throw error
      return await sendPage(reply, SPENT_PAGE)
    }
    return await reply.redirect(back, 303)
  })
}

export default emailSignIn
