import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { providerFor } from '../../helpers/servers/oauth-provider.js'

const ENTRY = 'https://spa.example/cb'
const CHALLENGE = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url')

/** A browser application's /authorize (docs/api.md, "Browser applications"). */
function authorize (app: FastifyInstance, redirectTo: string) {
  return app.inject({ method: 'GET', url: `/api/v1/auth/oauth/google/authorize?redirect_to=${encodeURIComponent(redirectTo)}&code_challenge=${CHALLENGE}&code_challenge_method=S256` })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const { env } = await providerFor(t, 'google', 'http://127.0.0.1:3000/api/v1/auth/oauth/google/callback')
    const app = await build(t, { postgresUrl: backend.url, env: { ...env, OAUTH_REDIRECT_URLS: `${ENTRY},https://other.example` } })

    const refused = async (redirectTo: string) => {
      const response = await authorize(app, redirectTo)
      t.equal(response.statusCode, 400, redirectTo)
      t.match(response.json().error, { code: 'VALIDATION_FAILED', details: [{ path: '/redirect_to' }] }, redirectTo)
      t.same(response.cookies, [], `${redirectTo}: no flow started`)
    }

    t.test('redirect_to is the entry or a path below it: /cb, /cb/, /cb/x and /cb?x=1 are accepted', async (t) => {
      for (const redirectTo of [ENTRY, `${ENTRY}/`, `${ENTRY}/x`, `${ENTRY}?x=1`, 'https://other.example/any/path']) {
        t.equal((await authorize(app, redirectTo)).statusCode, 302, redirectTo)
      }
    })

    t.test('a path that only starts with the entry\'s (/cbevil), another origin, or credentials are refused (400 on /redirect_to)', async (t) => {
      for (const redirectTo of [`${ENTRY}evil`, `${ENTRY}evil/x`, 'https://spa.example/c', 'https://spa.example/', 'http://spa.example/cb', 'https://spa.example.evil/cb', 'https://spa.example:8443/cb', 'https://user@spa.example/cb']) {
        await refused(redirectTo)
      }
    })

    t.test('encoded dot-segments and separators, and .. segments, are refused (400 on /redirect_to)', async (t) => {
      for (const redirectTo of [`${ENTRY}/%2e%2e/evil`, `${ENTRY}/..%2fevil`, `${ENTRY}/%2E%2E%2Fevil`, `${ENTRY}/.%2e/cb/x`, `${ENTRY}/x%5c..%5cevil`, `${ENTRY}/x/../../evil`, `${ENTRY}/x/../y`]) {
        await refused(redirectTo)
      }
    })
  })
}
