import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { generateKeyPair } from '../../src/security/signing-keys.js'
import { createAccount, withToken } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { integrationSnippet } from '../helpers/integration-guide.js'
import { webhookReceiver } from '../helpers/servers/webhook-receiver.js'

const run = promisify(execFile)

/** The issuer the snippets name. */
const ISSUER = 'https://users.example.com'
const ALGORITHMS = ['EdDSA', 'ES256', 'RS256'] as const

/** The Python code blocks of a document that verify the API's tokens with PyJWT (from `/.well-known/jwks.json`). */
function pythonSnippets (file: string): string[] {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
  return [...text.matchAll(/```python\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').filter((code) => code.includes('/.well-known/jwks.json'))
}

/**
 * The first Python with PyJWT: Debian's `python3-jwt` (which `.ci/run` installs) is Debian's
 * /usr/bin/python3, which need not be the first `python3` on the path.
 */
async function pythonWithPyJwt (): Promise<string | undefined> {
  for (const python of ['python3', '/usr/bin/python3']) {
    try {
      await run(python, ['-c', 'import jwt, cryptography'])
      return python
    } catch {}
  }
  return undefined
}

t.test('the PyJWT snippet of docs/integration.md runs as written and accepts our access tokens', async (t) => {
  const snippets = pythonSnippets('docs/integration.md').map((code) => ({ file: 'docs/integration.md', code }))
  t.equal(snippets.length, 1, 'the document has it')
  const python = await pythonWithPyJwt()
  if (python === undefined) {
    t.comment('not run: no Python with PyJWT here (Debian: apt-get install python3-jwt); .ci/run installs it')
    return
  }
  const { stdout: version } = await run(python, ['-c', 'import jwt; print(jwt.__version__)'])
  t.comment(`PyJWT ${version.trim()} (${python})`)
  for (const algorithm of ALGORITHMS) {
    const app = await build(t, {
      env: { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: generateKeyPair(algorithm).privateKey, JWT_ISSUER: ISSUER }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const jwks = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/.well-known/jwks.json`
    const account = await createAccount(app)
    for (const { file, code } of snippets) {
      // As a reader adapts it: our address for the JWKS, the algorithm configured, the token given.
      const adapted = code.replace(`${ISSUER}/.well-known/jwks.json`, jwks).replaceAll('"EdDSA"', `"${algorithm}"`)
      const program = `import json, sys\nimport jwt\ntoken = sys.argv[1]\n${adapted}\n` +
        'print(json.dumps(verify(token)))\n'
      const { stdout } = await run(python, ['-c', program, account.token])
      t.match(JSON.parse(stdout), { sub: account.id, iss: ISSUER, type: 'access' }, `${file}, ${algorithm}`)
    }
  }
})

/** An app whose webhooks may reach 127.0.0.1, with an endpoint at `url`: its secret, a test event, a move. */
async function appWithEndpoint (t: Test, url: string) {
  const app = await build(t, { env: { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' } })
  const operator = await createAccount(app, { roles: ['super_admin'] })
  const created = await app.inject(withToken(operator.token, { method: 'POST', url: '/api/v1/webhooks', payload: { url, events: ['user.created'] } }))
  const { id, secret } = created.json().data as { id: string, secret: string }
  const test = async () => {
    const response = await app.inject(withToken(operator.token, { method: 'POST', url: `/api/v1/webhooks/${id}/test` }))
    return response.json().data as { id: string }
  }
  const moveTo = async (to: string) => {
    await app.inject(withToken(operator.token, { method: 'PATCH', url: `/api/v1/webhooks/${id}`, payload: { url: to } }))
  }
  return { app, secret, test, moveTo }
}

t.test('the Node receiver of docs/integration.md accepts our deliveries and refuses a tampered one', async (t) => {
  // As a reader runs it, on a free port of 127.0.0.1, which it prints.
  const code = integrationSnippet('js', 'standardwebhooks').replace('.listen(8080)',
    ".listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })) })")
  // The endpoint is made first, for its secret, and pointed at the receiver once it listens.
  const { app, secret, test, moveTo } = await appWithEndpoint(t, 'http://127.0.0.1:1/unused')
  const receiver = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: new URL('../..', import.meta.url), env: { ...process.env, USERS_API_WEBHOOK_SECRET: secret }, stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { receiver.kill() })
  const lines: Array<Record<string, unknown>> = []
  const waiting: Array<() => void> = []
  let buffered = ''
  receiver.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    const complete = buffered.split('\n')
    buffered = complete.pop() ?? ''
    for (const line of complete) lines.push(JSON.parse(line) as Record<string, unknown>)
    waiting.splice(0).forEach((wake) => { wake() })
  })
  const line = async (index: number) => {
    while (lines.length <= index) await new Promise<void>((resolve) => waiting.push(resolve))
    return lines[index]
  }
  const { port } = await line(0) as { port: number }
  await moveTo(`http://127.0.0.1:${port}/hooks`)
  const delivery = await test()
  t.match(await line(1), { id: delivery.id, type: 'webhook.test', data: {} }, 'verified and read')
  await app.services.webhookDispatcher.round()
  const stored = await app.database.db.selectFrom('webhook_deliveries').select(['status', 'last_status']).where('id', '=', delivery.id).executeTakeFirst()
  t.same(stored, { status: 'succeeded', last_status: 204 })
  const tampered = await fetch(`http://127.0.0.1:${port}/hooks`, {
    method: 'POST',
    headers: { 'webhook-id': delivery.id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,' + Buffer.alloc(32).toString('base64') },
    body: '{"type":"user.deleted","timestamp":"2026-01-01T00:00:00.000Z","data":{}}'
  })
  t.equal(tampered.status, 400, 'a forged delivery is refused')
  receiver.kill()
  await once(receiver, 'exit')
})

t.test('the Python receiver of docs/integration.md verifies our deliveries and refuses tampered ones', async (t) => {
  try {
    await run('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)'])
  } catch {
    t.comment('not run: no Python 3.9 or later here; .ci/run installs Debian\'s python3')
    return
  }
  const receiver = await webhookReceiver(t)
  const { secret, test } = await appWithEndpoint(t, receiver.url)
  await test()
  await receiver.receivedCount(1)
  const delivery = receiver.received[0]!
  const program = `import json, sys\n${integrationSnippet('python', 'verify_webhook')}\n` +
    'given = json.loads(sys.argv[1])\nprint(json.dumps(verify_webhook(given["secret"], given["headers"], given["body"].encode())))\n'
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(delivery.headers[name])]))
  const verify = async (body: string, signed = headers) => await run('python3', ['-c', program, JSON.stringify({ secret, headers: signed, body })])
  const { stdout } = await verify(delivery.body)
  t.same(JSON.parse(stdout), delivery.payload, 'the event, verified')
  await t.rejects(verify(delivery.body.replace('webhook.test', 'user.deleted')), /no valid signature/, 'a changed body is refused')
  await t.rejects(verify(delivery.body, { ...headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 600) }), /out of tolerance/, 'an old timestamp is refused')
})
