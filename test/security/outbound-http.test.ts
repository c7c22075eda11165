import diagnosticsChannel from 'node:diagnostics_channel'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { OutboundHttp, type OutboundHttpOptions, OutboundRequestError, type Resolver } from '../../src/security/outbound-http.js'
import { outboundPolicy } from '../../src/security/outbound-addresses.js'

// Every server and every connection here is on 127.0.0.1: no packet may go anywhere else.

const LOOPBACK = outboundPolicy(['127.0.0.0/8'], 'WEBHOOK_ALLOWED_NETWORKS')
const PUBLIC_ONLY = outboundPolicy([], 'WEBHOOK_ALLOWED_NETWORKS')

interface Received { method: string, url: string, headers: http.IncomingHttpHeaders, body: string }

/** A receiver on 127.0.0.1: `answer` handles each request once its body is read; `received` lists them. */
async function receiver (t: Test, answer: (response: http.ServerResponse) => void) {
  const received: Received[] = []
  let connections = 0
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() })
      answer(response)
    })
  })
  server.on('connection', () => { connections++ })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { server, received, port: (server.address() as AddressInfo).port, connections: () => connections }
}

/** Counts the client sockets Node creates while `work` runs. */
async function socketsDuring (work: () => Promise<void>): Promise<number> {
  let sockets = 0
  const count = (): void => { sockets++ }
  const channel = diagnosticsChannel.channel('net.client.socket')
  channel.subscribe(count)
  try {
    await work()
  } finally {
    channel.unsubscribe(count)
  }
  return sockets
}

/** A client as webhooks make it: answers read up to 64 KiB unless said otherwise. */
function client (options: Pick<OutboundHttpOptions, 'policy' | 'timeoutMs' | 'resolve'> & Partial<OutboundHttpOptions>): OutboundHttp {
  return new OutboundHttp({ maxResponseBytes: 65_536, userAgent: 'users-api-webhooks/1', ...options })
}

/** A delivery's shape of request: a signed JSON POST. */
async function post (sender: OutboundHttp, url: string) {
  return await sender.request({
    method: 'POST',
    url,
    headers: { 'x-webhook-signature': 'sig-1', 'content-type': 'application/json' },
    body: JSON.stringify({ event: 'user.created' })
  })
}

t.test('a 200 answer: the receiver got the body and headers', async (t) => {
  const { port, received } = await receiver(t, (response) => response.end('ok'))
  const sender = client({ policy: LOOPBACK, timeoutMs: 5000 })
  const sockets = await socketsDuring(async () => {
    t.equal((await post(sender, `http://127.0.0.1:${port}/hooks/in?x=1`)).status, 200)
  })
  t.equal(sockets, 1, 'the socket probe of the SSRF tests sees a send')
  t.equal(received.length, 1)
  const [got] = received
  t.equal(got?.method, 'POST')
  t.equal(got?.url, '/hooks/in?x=1')
  t.equal(got?.body, '{"event":"user.created"}')
  t.equal(got?.headers['content-type'], 'application/json')
  t.equal(got?.headers['content-length'], String(Buffer.byteLength('{"event":"user.created"}')))
  t.equal(got?.headers['user-agent'], 'users-api-webhooks/1')
  t.equal(got?.headers['x-webhook-signature'], 'sig-1')
  t.equal(sender.timeoutMs, 5000)
})

t.test('a 500 answer resolves with its status', async (t) => {
  const { port } = await receiver(t, (response) => {
    response.statusCode = 500
    response.end('boom')
  })
  const sender = client({ policy: LOOPBACK, timeoutMs: 5000 })
  t.equal((await post(sender, `http://127.0.0.1:${port}/`)).status, 500)
})

t.test('a redirect is returned, never followed', async (t) => {
  const { port, received } = await receiver(t, (response) => {
    response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' })
    response.end()
  })
  const sender = client({ policy: LOOPBACK, timeoutMs: 5000 })
  t.equal((await post(sender, `http://127.0.0.1:${port}/`)).status, 302)
  t.equal(received.length, 1)
})

t.test('a receiver that never answers: rejected at the deadline', async (t) => {
  const { server, port } = await receiver(t, () => {})
  const requested = once(server, 'request')
  const sender = client({ policy: LOOPBACK, timeoutMs: 200 })
  const started = Date.now()
  const sent = post(sender, `http://127.0.0.1:${port}/`)
  await requested
  const error = await sent.then(() => null, (error: unknown) => error)
  t.ok(error instanceof OutboundRequestError)
  t.equal((error as OutboundRequestError).message, 'no answer within 200 ms')
  t.equal((error as OutboundRequestError).refused, false)
  t.ok(Date.now() - started < 1000, 'settled within a second')
})

t.test('an endless body: resolved with the status once the cap is read, the connection closed', async (t) => {
  let answered: http.ServerResponse | undefined
  const { port } = await receiver(t, (response) => {
    answered = response
    response.writeHead(200, { 'content-type': 'text/plain' })
    const chunk = Buffer.alloc(16_384, 'x')
    const pump = (): void => {
      while (!response.destroyed && response.write(chunk));
    }
    response.on('drain', pump)
    pump()
  })
  const sender = client({ policy: LOOPBACK, timeoutMs: 10_000, maxResponseBytes: 100_000 })
  const started = Date.now()
  const answer = await post(sender, `http://127.0.0.1:${port}/`)
  t.equal(answer.status, 200)
  t.equal(answer.complete, false, 'said to be cut short')
  t.equal(answer.body.length, 100_000, 'the body up to the cap, no more')
  t.ok(Date.now() - started < 2000, 'promptly, long before the deadline')
  if (answered !== undefined && !answered.destroyed) await once(answered, 'close')
  t.pass('the receiver saw the connection close')
})

t.test('a GET: the body read whole, no body or length sent', async (t) => {
  const { port, received } = await receiver(t, (response) => response.end('<EntityDescriptor/>'))
  const reader = client({ policy: LOOPBACK, timeoutMs: 5000, userAgent: 'users-api-sso/1' })
  const answer = await reader.request({ method: 'GET', url: `http://127.0.0.1:${port}/metadata`, headers: { accept: 'application/xml' } })
  t.same({ status: answer.status, body: answer.body.toString(), complete: answer.complete }, { status: 200, body: '<EntityDescriptor/>', complete: true })
  t.equal(received[0]?.method, 'GET')
  t.equal(received[0]?.headers['content-length'], undefined)
  t.equal(received[0]?.headers.accept, 'application/xml')
  t.equal(received[0]?.headers['user-agent'], 'users-api-sso/1')
})

t.test('a closed port: rejected with the error code', async (t) => {
  const closed = http.createServer()
  closed.listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const { port } = closed.address() as AddressInfo
  await new Promise((resolve) => closed.close(resolve))
  const sender = client({ policy: LOOPBACK, timeoutMs: 5000 })
  const error = await post(sender, `http://127.0.0.1:${port}/`).then(() => null, (error: unknown) => error)
  t.ok(error instanceof OutboundRequestError)
  t.equal((error as OutboundRequestError).message, 'connection failed: ECONNREFUSED')
  t.equal((error as OutboundRequestError).refused, false)
})

t.test('SSRF: a loopback literal is refused without a connection', async (t) => {
  const { port, connections } = await receiver(t, (response) => response.end())
  const sender = client({ policy: PUBLIC_ONLY, timeoutMs: 5000 })
  const sockets = await socketsDuring(async () => {
    await t.rejects(post(sender, `http://127.0.0.1:${port}/`), { refused: true, message: /^refused: 127\.0\.0\.1 is a loopback address/ })
  })
  t.equal(sockets, 0)
  t.equal(connections(), 0)
})

t.test('SSRF: a name resolving to a refused address is refused before any socket', async (t) => {
  const answers: string[][] = [
    ['169.254.169.254'], ['10.0.0.7'], ['192.168.1.1'], ['172.16.0.1'], ['100.64.0.1'],
    ['fd00::1'], ['fe80::1'], ['::ffff:10.0.0.1'], ['0.0.0.0'], ['93.184.216.34', '10.0.0.1']
  ]
  let lookups = 0
  let current: string[] = []
  const resolve: Resolver = async (hostname) => {
    lookups++
    t.equal(hostname, 'hooks.example.test')
    return current.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  const sender = client({ policy: PUBLIC_ONLY, timeoutMs: 5000, resolve })
  const sockets = await socketsDuring(async () => {
    for (const addresses of answers) {
      current = addresses
      await t.rejects(post(sender, 'https://hooks.example.test/'),
        { refused: true, message: /^refused: hooks\.example\.test resolves to an? \w+ address/ }, addresses.join(', '))
    }
  })
  t.equal(sockets, 0, 'no socket was created')
  t.equal(lookups, answers.length, 'the resolver answered each time')
})

t.test('SSRF: a mapped IPv4 literal is refused without a lookup', async (t) => {
  let lookups = 0
  const resolve: Resolver = async () => {
    lookups++
    return [{ address: '93.184.216.34', family: 4 }]
  }
  const sender = client({ policy: PUBLIC_ONLY, timeoutMs: 5000, resolve })
  const sockets = await socketsDuring(async () => {
    await t.rejects(post(sender, 'http://[::ffff:a9fe:a9fe]/'), { refused: true, message: /linkLocal/ })
  })
  t.equal(sockets, 0)
  t.equal(lookups, 0)
})

t.test('a name resolving to no address, or failing to resolve, is an error', async (t) => {
  const none = client({ policy: PUBLIC_ONLY, timeoutMs: 5000, resolve: async () => [] })
  await t.rejects(post(none, 'https://hooks.example.test/'), { refused: false, message: 'cannot resolve hooks.example.test: no address' })
  const failing = client({
    policy: PUBLIC_ONLY,
    timeoutMs: 5000,
    resolve: async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.test'), { code: 'ENOTFOUND' }) }
  })
  await t.rejects(post(failing, 'https://hooks.example.test/'), { refused: false, message: 'cannot resolve hooks.example.test: ENOTFOUND' })
})

t.test('a resolver that never answers: rejected at the deadline, no socket', async (t) => {
  const resolve: Resolver = async () => await new Promise(() => {})
  const sender = client({ policy: PUBLIC_ONLY, timeoutMs: 100, resolve })
  const sockets = await socketsDuring(async () => {
    await t.rejects(post(sender, 'https://hooks.example.test/'), { refused: false, message: 'no answer within 100 ms' })
  })
  t.equal(sockets, 0)
})

t.test('the checked address is the one connected to (pinned), the Host header the name', async (t) => {
  const { port, received } = await receiver(t, (response) => response.end())
  let lookups = 0
  const resolve: Resolver = async () => {
    lookups++
    return [{ address: '127.0.0.1', family: 4 }]
  }
  const sender = client({ policy: LOOPBACK, timeoutMs: 5000, resolve })
  t.equal((await post(sender, `http://receiver.test:${port}/hook`)).status, 200)
  t.equal(lookups, 1, 'resolved once')
  t.equal(received.length, 1)
  t.equal(received[0]?.url, '/hook')
  t.equal(received[0]?.headers.host, `receiver.test:${port}`)
})
