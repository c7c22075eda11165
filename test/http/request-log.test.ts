import { Writable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import pino from 'pino'
import t from 'tap'
import { ExchangeLogController, logSerializers } from '../../src/http/request-log.js'
import { within } from '../helpers/clock.js'
import { startService } from '../helpers/process.js'

const request = {
  id: 'req-7',
  method: 'GET',
  url: '/api/v1/users?refresh_token=rt&q="quoted"\\',
  headers: { authorization: 'Bearer abc', 'user-agent': 'ua "x"\u2028é', cookie: 'sid=1' },
  ip: '203.0.113.4'
}
const reply = { statusCode: 200, elapsedTime: 1.2345 }

/** A pino logger writing into an array of lines. */
function capturing (level: pino.LevelWithSilent = 'info') {
  const lines: string[] = []
  const stream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(chunk.toString()); done() } })
  return { logger: pino({ level, serializers: logSerializers }, stream), lines }
}

t.test('the completed-request line is the one pino writes for the same entry', async (t) => {
  const ours = capturing()
  const written: string[] = []
  const controller = new ExchangeLogController(ours.logger, { write: (line) => written.push(line) })
  controller.requestCompleted(null, request as unknown as FastifyRequest, reply as unknown as FastifyReply)

  const reference = capturing()
  reference.logger.child({ reqId: request.id }).info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
  await new Promise((resolve) => setImmediate(resolve))

  t.equal(written.length, 1, 'one line')
  const line = written[0] ?? ''
  t.ok(line.endsWith('}\n'), 'newline-terminated')
  const withoutTime = (text: string) => text.replace(/"time":\d+/, '"time":0')
  t.equal(withoutTime(line), withoutTime(reference.lines[0] ?? ''), 'byte for byte, but for the time')
  const entry = JSON.parse(line) as Record<string, any>
  t.equal(entry.req.headers.authorization, '[REDACTED]')
  t.equal(entry.req.headers.cookie, '[REDACTED]')
  t.equal(entry.req.url, '/api/v1/users?refresh_token=[REDACTED]&q="quoted"\\')
  t.equal(entry.req.headers['user-agent'], 'ua "x"\u2028é', 'text survives escaping')
})

t.test('no line above level info; failures go through pino with the error', async (t) => {
  const quiet = capturing('warn')
  const written: string[] = []
  new ExchangeLogController(quiet.logger, { write: (line) => written.push(line) })
    .requestCompleted(null, request as unknown as FastifyRequest, reply as unknown as FastifyReply)
  t.same(written, [], 'nothing written at level warn')

  const { logger, lines } = capturing()
  const failed = { ...reply, statusCode: 500, log: logger.child({ reqId: request.id }) }
  new ExchangeLogController(logger, { write: (line) => written.push(line) })
    .requestCompleted(new Error('boom'), request as unknown as FastifyRequest, failed as unknown as FastifyReply)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(written, [], 'not through the fast path')
  const entry = JSON.parse(lines[0] ?? '{}') as Record<string, any>
  t.equal(entry.msg, 'request errored')
  t.equal(entry.level, 50)
  t.equal(entry.err.message, 'boom')
  t.equal(entry.req.headers.authorization, '[REDACTED]')
})

t.test('a running service logs each exchange once, redacted', async (t) => {
  const service = await startService(t, { DATABASE_URL: 'sqlite://:memory:' })
  const logged = service.nextLog((entry) => entry.msg === 'request completed')
  const response = await fetch(`${service.base}/health?token=t`, { headers: { authorization: 'Bearer secret-value' } })
  t.equal(response.status, 200)
  const entry = await logged as Record<string, any>
  t.match(entry, {
    level: 30,
    pid: service.child.pid,
    reqId: String,
    req: { method: 'GET', url: '/health?token=[REDACTED]', headers: { authorization: '[REDACTED]' }, ip: '127.0.0.1' },
    res: { statusCode: 200 },
    responseTime: Number
  })
})

t.test('a URL the router cannot decode, answered before any hook, is logged too', async (t) => {
  const service = await startService(t, { DATABASE_URL: 'sqlite://:memory:' })
  const logged = service.nextLog((entry) => entry.msg === 'request completed')
  const response = await fetch(`${service.base}/api/v1/users/%E0%A4%A?token=t`)
  t.equal(response.status, 400)
  t.match(await within('the line', 5000, logged), {
    req: { method: 'GET', url: '/api/v1/users/%E0%A4%A?token=[REDACTED]', ip: '127.0.0.1' },
    res: { statusCode: 400 },
    responseTime: Number
  })
})
