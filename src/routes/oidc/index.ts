import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { PAGE_SCRIPT, PAGE_STYLESHEET } from '../../authorization-server/pages.js'
import { SCRIPT_PATH, STYLESHEET_PATH, WEBAUTHN_SCRIPT_PATH } from '../../authorization-server/paths.js'
import { publicJwks } from '../../security/signing-keys.js'
import { postedAsGet, providerEndpoints } from './endpoints.js'
import { interactionRoutes } from './interactions.js'
import { dynamicRegistration } from './registration.js'

const PUBLIC = { access: 'public' as const }
const HIDDEN = { hide: true }

/** @simplewebauthn/browser's browser build, served to the sign-in page as it is published. */
function webauthnLibrary (): Buffer {
  return readFileSync(join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js'))
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
  await fastify.register(interactionRoutes(server))
  await fastify.register(postedAsGet())
  const registrationToken = fastify.config.authorizationServerRegistrationToken
  if (registrationToken !== null) await fastify.register(dynamicRegistration(registrationToken))
  await fastify.register(providerEndpoints(server))
}

export default oidcRoutes
