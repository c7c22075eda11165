import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { components } from '../../../schemas/components.js'
import { withoutCanonicalMarks } from '../../validation.js'

const require = createRequire(import.meta.url)

/**
 * ReDoc's standalone bundle is the one part of redoc the service serves, so the build copies it
 * (with its license) into dist/vendor/ and redoc and its peers (react, react-dom,
 * styled-components, mobx, core-js) are development dependencies only: with their own
 * dependencies, about 85 MB less in a production install. Run from src/ (tests, tsx) there is
 * no such copy, and the bundle is read from node_modules.
 */
async function redocBundle (): Promise<string> {
  try {
    return await readFile(new URL('../../../vendor/redoc.standalone.js', import.meta.url), 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return await readFile(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8')
  }
}

/** ReDoc's page: its script is served by the service, never from the internet. */
const REDOC_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Users API — reference</title>
</head>
<body>
  <redoc spec-url="/api/openapi.json"></redoc>
  <script src="/api/redoc/redoc.standalone.js"></script>
</body>
</html>
`

/**
 * The OpenAPI 3.1 document (docs/api.md, "Health and documentation"), built from the route
 * schemas (shared schemas become `components.schemas`), Swagger UI at /api/docs, ReDoc at
 * /api/redoc, the document at /api/openapi.json. Registered before the routes, so it sees
 * them all.
 */
export default fp(async (fastify) => {
  for (const schema of components()) fastify.addSchema(schema)

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Users API',
        version: '1.0.0',
        description: 'Users, authentication and security: tokens, sessions, MFA, OAuth sign-in, RBAC, audit, rate limits.'
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
      },
      tags: [
        { name: 'health', description: 'Probes' },
        { name: 'users', description: 'Users' },
        { name: 'roles', description: 'Role administration' },
        { name: 'devices', description: 'Trusted devices' },
        { name: 'auth', description: 'Sign-in, tokens and sessions' },
        { name: 'mfa', description: 'Multi-factor authentication' },
        { name: 'passkeys', description: 'Passkeys (WebAuthn): registration, sign-in, the caller\'s passkeys' },
        { name: 'oauth', description: 'Sign-in through external providers' },
        { name: 'posts', description: 'Posts' },
        { name: 'comments', description: 'Comments on posts' },
        { name: 'audit', description: 'Audit log' },
        { name: 'security', description: 'Zero-trust access check' },
        { name: 'keys', description: 'Public keys and discovery, for services that verify tokens' }
      ]
    },
    // Only an OpenAPI 3 document is built; the other branch is for the typings.
    transformObject: (document) => withoutCanonicalMarks('openapiObject' in document ? document.openapiObject : document.swaggerObject) as object,
    // Shared schemas keep their names: `$ref: 'User'` becomes `#/components/schemas/User`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` }
  })

  await fastify.register(swaggerUi, { routePrefix: '/api/docs', staticCSP: false, uiConfig: { deepLinking: true } })

  fastify.get('/api/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())

  const bundle = await redocBundle()
  fastify.get('/api/redoc', { schema: { hide: true } }, async (_request, reply) => await reply.type('text/html; charset=utf-8').send(REDOC_PAGE))
  fastify.get('/api/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_request, reply) =>
    await reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').send(bundle))
}, { name: 'documentation' })
