import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../config/index.js'
import { createInstance } from '../http/instance.js'

/**
 * The OpenAPI document, built from a ready app that never listens (in-memory SQLite,
 * silent), for `npm run export:openapi` and the client-generation test. `environment` sets
 * what the document depends on (PASSWORD_POLICY).
 */
export async function buildOpenApiDocument (
  environment: Record<string, string> = {}
): Promise<Record<string, unknown>> {
  const app: FastifyInstance = createInstance(loadConfig({ DATABASE_URL: 'sqlite://:memory:', LOG_LEVEL: 'silent', JWT_SECRET: 'x'.repeat(32), MFA_REQUIRED_ROLES: 'none', ...environment }))
  try {
    await app.ready()
    return app.swagger() as unknown as Record<string, unknown>
  } finally {
    await app.close()
  }
}
