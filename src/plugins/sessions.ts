import fp from 'fastify-plugin'
import { SessionService } from '../services/sessions.js'
import { SignInGuard } from '../services/sign-in-guard.js'

declare module 'fastify' {
  interface FastifyInstance {
    sessions: SessionService
    signInGuard: SignInGuard
  }
}

export default fp(async (fastify) => {
  const { repositories } = fastify
  fastify.decorate('sessions', new SessionService({
    tokens: fastify.tokens,
    sessions: repositories.sessions,
    users: repositories.users,
    revokeAccessToken: fastify.revocations.revoke,
    policy: fastify.config.session
  }))
  fastify.decorate('signInGuard', new SignInGuard(repositories.signInFailures))
}, { name: 'sessions', dependencies: ['security', 'repositories', 'revocation'] })
