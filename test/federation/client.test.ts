import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { exchangeCode, fetchTransport } from '../../src/federation/client.js'

/**
 * The code exchange authenticates the client as it is registered at the provider (docs/api.md,
 * "Enterprise sign-in"): HTTP Basic with each part form-encoded first (RFC 6749, section 2.3.1),
 * or the secret in the form. A token endpoint on 127.0.0.1 records what it receives.
 */

t.test('client_secret_basic and client_secret_post', async (t) => {
  const received: Array<{ authorization: string | undefined, body: URLSearchParams }> = []
  const server = http.createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => { body += chunk.toString() })
    request.on('end', () => {
      received.push({ authorization: request.headers.authorization, body: new URLSearchParams(body) })
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at', id_token: 'it' }))
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => await new Promise((resolve) => server.close(resolve)))
  const request = {
    tokenUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
    clientId: 'client id:1',
    clientSecret: 's3cret/+é',
    redirectUri: 'https://users.example.test/api/v1/sso/oidc/callback',
    headers: {}
  }

  t.same(await exchangeCode({ ...request, authentication: 'client_secret_basic' }, 'the-code', 'the-verifier', fetchTransport()),
    { accessToken: 'at', idToken: 'it' })
  const basic = received[0]
  t.equal(basic?.authorization, `Basic ${Buffer.from('client+id%3A1:s3cret%2F%2B%C3%A9').toString('base64')}`, 'each part form-encoded, then the pair in base64')
  t.equal(basic?.body.get('client_secret'), null, 'no secret in the form')
  t.equal(basic?.body.get('client_id'), null)
  t.match(Object.fromEntries(basic?.body ?? []), { code: 'the-code', code_verifier: 'the-verifier', grant_type: 'authorization_code', redirect_uri: request.redirectUri })

  await exchangeCode({ ...request, authentication: 'client_secret_post' }, 'the-code', 'the-verifier', fetchTransport())
  t.equal(received[1]?.authorization, undefined, 'no HTTP Basic')
  t.match(Object.fromEntries(received[1]?.body ?? []), { client_id: 'client id:1', client_secret: 's3cret/+é', code: 'the-code' })
})

t.test('a redirect is the provider\'s answer, never followed', async (t) => {
  let followed = 0
  const server = http.createServer((request, response) => {
    if (request.url === '/elsewhere') followed++
    response.writeHead(302, { location: '/elsewhere' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => await new Promise((resolve) => server.close(resolve)))
  const answer = await fetchTransport()({ method: 'GET', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, headers: {} })
  t.equal(answer.status, 302)
  t.equal(followed, 0, 'nothing asked of the place it points to')
})
