import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBodySchema, TokenPairSchema } from '../../../schemas/auth.js'
import { DataEnvelope } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { MeSchema } from '../../../schemas/user.js'
import { Errors } from '../../errors.js'
import { effectiveRoles, permissionsOf } from '../../security/permissions.js'
import { startSession } from '../../services/sessions.js'

const bearer = [{ bearerAuth: [] }]

/** CONTRACT section 3: sign-in and the caller's own account. */
const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { repositories, passwords, tokens } = fastify

  fastify.post('/login', {
    schema: {
      tags: ['auth'],
      summary: 'Sign in with e-mail and password',
      body: LoginBodySchema,
      response: { 200: DataEnvelope(TokenPairSchema), ...errorResponses({ body: true }, 401) }
    }
  }, async (request) => {
    const { email, password, device } = request.body
    const account = await repositories.users.findByEmail(email)
    // Unknown e-mail, password-less account and wrong password cost the same hash and answer alike.
    const valid = account?.password_hash != null
      ? await passwords.verify(password, account.password_hash)
      : await passwords.verifyAgainstDummy(password)
    const principal = valid && account !== undefined ? await repositories.users.findPrincipal(account.id) : undefined
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    return { data: await startSession({ tokens, refreshTokens: repositories.refreshTokens }, principal, device) }
  })

  fastify.get('/me', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['auth'],
      summary: 'The signed-in user with roles, permissions and MFA state',
      security: bearer,
      response: { 200: DataEnvelope(MeSchema), ...errorResponses({}, 401) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    const user = await repositories.users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return {
      data: {
        ...user,
        roles: [...effectiveRoles(caller.roles)],
        permissions: permissionsOf(caller.roles),
        mfa_enabled: caller.mfaEnabled
      }
    }
  })
}

export default auth
