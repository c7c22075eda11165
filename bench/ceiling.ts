import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import pino from 'pino'
import securityHeaders from '../src/plugins/infrastructure/security-headers.js'
import { logSerializers } from '../src/http/request-log.js'

/**
 * The ceiling: bare Fastify answering the same JSON shapes as the service's benchmarked
 * routes, with no authentication, storage, headers or logging. Ratios are measured against it.
 *
 * With SPEC_OBLIGATIONS=1 it is the floor instead: the same server plus what the
 * specification makes every request pay whatever the implementation, the security headers
 * (docs/api.md, "Security headers": the service's exact set) and a request log that logs what
 * the service's does (docs/api.md, "Request log"): the request's method, URL, redacted headers
 * and client address, then the status and duration, through Fastify's own request logging at
 * LOG_LEVEL (info by default), written asynchronously in batches.
 */
const obligations = process.env.SPEC_OBLIGATIONS === '1'
const user = { id: '01890000-0000-7000-8000-000000000001', email: 'bench@example.com', email_verified: false, name: 'Bench User', created_at: '2026-01-01T00:00:00.000Z' }
const app: FastifyInstance = obligations
  ? Fastify({
    loggerInstance: pino({ level: process.env.LOG_LEVEL ?? 'info', serializers: logSerializers }, pino.destination({ dest: 1, sync: false, minLength: 4096 })) as FastifyBaseLogger
  })
  : Fastify({ logger: false })
if (obligations) await app.register(securityHeaders)
app.get('/health', async () => ({ status: 'ok' }))
app.get('/api/v1/users/:id', async () => ({ data: user }))
app.get('/api/v1/users', async () => ({
  data: Array.from({ length: 20 }, (_, index) => ({ ...user, id: `${user.id.slice(0, -2)}${String(index).padStart(2, '0')}` })),
  meta: { kind: 'offset', page: 1, limit: 20, total: 51, totalExact: true, totalPages: 3 }
}))
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
