import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import swagger, { type OpenAPIV3_2 as OpenApi32 } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { EXAMPLE_PASSWORD } from '../../../schemas/common.js'
import { components } from '../../../schemas/components.js'
import { PASSWORD_LENGTH } from '../../../schemas/user.js'
import { WEBHOOK_EVENT_TYPES, WebhookPayloadSchema } from '../../../schemas/webhooks.js'
import { publishedPasswordSchema } from '../../security/password-policy.js'
import { withoutCanonicalMarks } from '../../http/validation.js'
import { documentationCsp } from './security-headers.js'

const require = createRequire(import.meta.url)

/**
 * ReDoc's standalone bundle is the one part of redoc the service serves, so the build copies it
 * (with its license) into dist/vendor/ and redoc and its peers (react, react-dom,
 * styled-components, mobx, core-js) are development dependencies only: with their own
 * dependencies, about 85 MB less in a production install. Run from src/ (tests, tsx) there is
 * no such copy, and the bundle is read from node_modules. It is read when first asked for, once
 * per process: a megabyte that an instance no one reads the reference on does not hold, and
 * that the test suite's hundreds of instances do not each read again.
 */
async function readRedocBundle (): Promise<string> {
  let bundle: string
  try {
    bundle = await readFile(new URL('../../../vendor/redoc.standalone.js', import.meta.url), 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    bundle = await readFile(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8')
  }
  // The menu's "API docs by Redocly" line shows a logo from Redocly's CDN, with no option to
  // turn it off; with no address the image fails at once and the line shows its text alone.
  return bundle.replaceAll(REDOCLY_LOGO, '')
}

let redoc: Promise<string> | undefined

/** The bundle, read at the first request for it; a read that failed is tried again at the next. */
async function redocBundle (): Promise<string> {
  redoc ??= readRedocBundle().catch((error: unknown) => {
    redoc = undefined
    throw error
  })
  return await redoc
}

/** Where Swagger UI is served: the root points there, and start-up names it (src/server.ts). */
export const DOCUMENTATION_PATH = '/api/docs'

/** The one thing ReDoc's bundle loads from outside the service. */
const REDOCLY_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg'

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

/** Headers set outside the routes (security headers, rate limits), described once and referenced by every response. */
const COMMON_HEADERS = {
  'Cache-Control': {
    description: 'no-store: answers carry tokens and personal data (docs/api.md, "Security headers")',
    schema: { type: 'string', const: 'no-store' }
  },
  'X-RateLimit-Limit': { description: 'Requests the client may make in the window of this route\'s tier', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Remaining': { description: 'Requests left in the window', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Reset': { description: 'Seconds until the oldest counted request leaves the window', schema: { type: 'integer', minimum: 0 } }
}
const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
/** Answered by the HTTP parser before routing: no rate limit is counted for them. */
const BEFORE_ROUTING = new Set(['408', '431'])

interface ResponseObject { headers?: Record<string, unknown> }
interface OperationObject { responses: Record<string, ResponseObject> }

/**
 * Adds the headers every response carries to each response of the document: Cache-Control
 * (unless the route sets its own) and, on routes under a rate limit (those that can answer 429),
 * the X-RateLimit-* headers (docs/api.md, "Rate limits").
 */
function withCommonHeaders (document: Record<string, unknown>): Record<string, unknown> {
  const reference = (name: string) => ({ $ref: `#/components/headers/${name}` })
  for (const item of Object.values(document.paths as Record<string, Record<string, OperationObject>>)) {
    for (const operation of Object.values(item)) {
      const rateLimited = '429' in operation.responses
      for (const [status, response] of Object.entries(operation.responses)) {
        const names = ['Cache-Control', ...(rateLimited && !BEFORE_ROUTING.has(status) ? RATE_LIMIT_HEADERS : [])]
        const headers = { ...response.headers }
        for (const name of names) headers[name] ??= reference(name)
        response.headers = headers
      }
    }
  }
  const components = document.components as Record<string, unknown>
  components.headers = COMMON_HEADERS
  return document
}

/** The Standard Webhooks headers every delivery carries (docs/integration.md, "Receiving webhooks"). */
const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'The delivery\'s id: the same on every try, for deduplication' },
  { name: 'webhook-timestamp', description: 'When this try was signed, in seconds since the epoch' },
  { name: 'webhook-signature', description: 'Space-separated `v1,<base64 HMAC-SHA256>` signatures of `<id>.<timestamp>.<body>`' }
].map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }))

type OpenApiWebhooks = NonNullable<OpenApi32.Document['webhooks']>

/** The event catalogue as OpenAPI 3.1 `webhooks`: what each event type's delivery POSTs to an endpoint. */
function webhookOperations (): OpenApiWebhooks {
  return Object.fromEntries(WEBHOOK_EVENT_TYPES.map((type) => [type, {
    post: {
      operationId: `webhooks.events.${type}`,
      summary: `The \`${type}\` event`,
      tags: ['webhooks'],
      // No bearer token: the receiver checks the signature instead.
      security: [],
      parameters: WEBHOOK_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: WebhookPayloadSchema(type) } } },
      responses: { '2XX': { description: 'Received: any 2xx ends the delivery; anything else is tried again' } }
    }
  }])) as OpenApiWebhooks
}

/**
 * The OpenAPI 3.1 document (docs/api.md, "Health and documentation"), built from the route
 * schemas (shared schemas become `components.schemas`), Swagger UI at /api/docs, ReDoc at
 * /api/redoc, the document at /api/openapi.json and /api/openapi.yaml. Registered before the routes, so it sees
 * them all.
 */
export default fp(async (fastify) => {
  for (const schema of components()) fastify.addSchema(schema)

  /** The `Password` component says what the configured PASSWORD_POLICY asks (docs/api.md, "Passwords"). */
  function withPasswordPolicy (document: Record<string, unknown>): Record<string, unknown> {
    const schemas = (document.components as { schemas: Record<string, Record<string, unknown>> }).schemas
    schemas.Password = { type: 'string', ...publishedPasswordSchema(PASSWORD_LENGTH, fastify.config.passwordPolicy), examples: [EXAMPLE_PASSWORD], title: 'Password' }
    return document
  }

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Users API',
        version: '1.0.0',
        description: 'Users, authentication and security: tokens, sessions, MFA, OAuth sign-in, RBAC, audit, rate limits. ' +
          'No string, in a body, a query or a path, may contain U+0000: such a request answers 400 VALIDATION_FAILED.'
      },
      servers: [{ url: '/' }],
      webhooks: webhookOperations(),
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token (a JWT), or an API key (uak_…) on the routes its scopes allow' },
          scimToken: { type: 'http', scheme: 'bearer', description: 'A SCIM directory\'s token (scim_…), shown once when the directory is made or its token rotated' }
        }
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
        { name: 'sso', description: 'Sign-in through an organization\'s own identity provider (SAML 2.0)' },
        { name: 'scim', description: 'SCIM 2.0 provisioning by an organization\'s directory (its own bearer token)' },
        { name: 'posts', description: 'Posts' },
        { name: 'comments', description: 'Comments on posts' },
        { name: 'organizations', description: 'Organizations, their members and invitations' },
        { name: 'api-keys', description: 'A person\'s API keys; an organization\'s are under `organizations`' },
        { name: 'webhooks', description: 'Webhook endpoints and their deliveries; the events are under `webhooks`' },
        { name: 'oauth-clients', description: 'The applications that sign people in with the service (its authorization server)' },
        { name: 'audit', description: 'Audit log' },
        { name: 'security', description: 'Zero-trust access check' },
        { name: 'keys', description: 'Public keys and discovery, for services that verify tokens' }
      ]
    },
    // Only an OpenAPI 3 document is built; the other branch is for the typings.
    transformObject: (document) => withPasswordPolicy(withCommonHeaders(withoutCanonicalMarks('openapiObject' in document ? document.openapiObject : document.swaggerObject) as Record<string, unknown>)),
    // Shared schemas keep their names: `$ref: 'User'` becomes `#/components/schemas/User`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` }
  })

  await fastify.register(swaggerUi, {
    routePrefix: DOCUMENTATION_PATH, staticCSP: documentationCsp({ workers: false }), uiConfig: { deepLinking: true }
  })

  fastify.get('/api/openapi.json', { schema: { hide: true } }, async () => fastify.swagger())
  fastify.get('/api/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    await reply.type('application/yaml; charset=utf-8').send(fastify.swagger({ yaml: true })))

  // The service's root, where a new user's browser first goes: to the documentation; any
  // other client is told where things are.
  fastify.get('/', { schema: { hide: true } }, async (request, reply) => {
    if (request.headers.accept?.includes('text/html') === true) return await reply.redirect(DOCUMENTATION_PATH)
    return { documentation: DOCUMENTATION_PATH, reference: '/api/redoc', openapi: '/api/openapi.json', health: '/health' }
  })

  const redocCsp = documentationCsp({ workers: true })
  fastify.get('/api/redoc', { schema: { hide: true } }, async (_request, reply) =>
    await reply.type('text/html; charset=utf-8').header('content-security-policy', redocCsp).send(REDOC_PAGE))
  fastify.get('/api/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_request, reply) =>
    await reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').send(await redocBundle()))
}, { name: 'documentation' })
