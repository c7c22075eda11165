import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sql } from 'kysely'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { HealthSchema, ReadinessSchema } from '../../../schemas/health.js'
import { Errors } from '../../errors.js'

/** Liveness and readiness, not versioned, never rate limited (docs/api.md, "Health and documentation"). */
const health: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    config: { access: 'public', rateLimit: false },
    schema: {
      tags: ['health'],
      operationId: 'health.live',
      summary: 'Liveness probe',
      response: { 200: described(HealthSchema, 'The process runs'), ...errorResponses({ rateLimited: false }) }
    }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/ready', {
    config: { access: 'public', rateLimit: false },
    schema: {
      tags: ['health'],
      operationId: 'health.ready',
      summary: 'Readiness: the database and, when configured, Redis answer',
      response: { 200: described(ReadinessSchema, 'The database and, when configured, Redis answer'), ...errorResponses({ rateLimited: false }) }
    }
  }, async () => {
    const failed: string[] = []
    await sql`select 1`.execute(fastify.database.db).catch(() => failed.push('database'))
    const { redis } = fastify
    if (redis !== null) await redis.ping().catch(() => failed.push('redis'))
    if (failed.length > 0) throw new Errors.SERVICE_UNAVAILABLE(`${failed.join(' and ')} unreachable`)
    return { status: 'ok' as const, checks: { database: 'ok' as const, redis: redis === null ? 'not_configured' as const : 'ok' as const } }
  })
}

export default health
