import t from 'tap'
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../src/http/validation.js'
import { withToken } from '../helpers/accounts.js'
import { backends } from '../helpers/database.js'
import { buildLogged } from '../helpers/log-capture.js'

const LEVELS = 5000
const arrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`
const objects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`
const credential = (extensions: string) =>
  `{"challenge_id":"x","response":{"id":"a","rawId":"a","type":"public-key","response":{"clientDataJSON":"a","authenticatorData":"a","signature":"a"},"clientExtensionResults":${extensions}}}`

t.test('nesting is measured without parsing: brackets inside strings do not count', async (t) => {
  t.equal(MAX_JSON_DEPTH, 32)
  t.notOk(nestedDeeperThan(arrays(32), 32), '32 levels pass')
  t.ok(nestedDeeperThan(arrays(33), 32), '33 levels do not')
  t.ok(nestedDeeperThan(`{"a":${objects(32)}}`, 32), 'objects count as arrays do')
  t.notOk(nestedDeeperThan(`["${'['.repeat(100)}"]`, 32), 'brackets in a string')
  t.notOk(nestedDeeperThan(`["\\"${'{'.repeat(100)}"]`, 32), 'after an escaped quote, still in the string')
  t.notOk(nestedDeeperThan(`["\\\\",${arrays(30)}]`, 32), 'an escaped backslash ends before the closing quote')
  t.ok(nestedDeeperThan(`["\\\\",${arrays(32)}]`, 32))
  t.notOk(nestedDeeperThan(`${arrays(32)},${arrays(32)}`, 32), 'depth, not the number of brackets')
})

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('a body nested 5000 levels deep answers 400 VALIDATION_FAILED on every route, with no error logged', async (t) => {
      const { app, entries } = await buildLogged(t, { postgresUrl: backend.url })
      const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: 'deep@example.com', name: 'Deep', password: 'correct-horse-battery' } })
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'deep@example.com', password: 'correct-horse-battery' } })
      t.equal(created.statusCode, 201)
      const token: string = login.json().data.access_token
      const attacks: Array<{ label: string, method: 'POST' | 'PATCH', url: string, payload: string, token?: string }> = [
        { label: 'passkey assertion, deep clientExtensionResults', method: 'POST', url: '/api/v1/auth/passkeys/authentication', payload: credential(`{"x":${arrays(LEVELS)}}`) },
        { label: 'passkey assertion, deep objects', method: 'POST', url: '/api/v1/auth/passkeys/authentication', payload: credential(`{"x":${objects(1500)}}`) },
        { label: 'registration, a deep name', method: 'POST', url: '/api/v1/users', payload: `{"email":"a@example.com","name":${arrays(LEVELS)},"password":"correct-horse-battery"}` },
        { label: 'registration, a deep array body', method: 'POST', url: '/api/v1/users', payload: arrays(LEVELS) },
        { label: 'login, a deep device', method: 'POST', url: '/api/v1/auth/login', payload: `{"email":"deep@example.com","password":"correct-horse-battery","device":${arrays(LEVELS)}}` },
        { label: 'login, deep objects', method: 'POST', url: '/api/v1/auth/login', payload: objects(1600) },
        { label: 'refresh', method: 'POST', url: '/api/v1/auth/refresh', payload: `{"refresh_token":${arrays(LEVELS)}}` },
        { label: 'a user\'s change, authenticated', method: 'PATCH', url: `/api/v1/users/${String(created.json().data.id)}`, payload: `{"name":${arrays(LEVELS)}}`, token }
      ]
      for (const attack of attacks) {
        t.ok(Buffer.byteLength(attack.payload) <= 10_240, `${attack.label}: under the body limit`)
        const request = { method: attack.method, url: attack.url, payload: attack.payload, headers: { 'content-type': 'application/json' } }
        const response = await app.inject(attack.token === undefined ? request : withToken(attack.token, request))
        t.equal(response.statusCode, 400, attack.label)
        t.same(response.json(), {
          error: { code: 'VALIDATION_FAILED', message: 'Validation failed', details: [{ path: '', message: `body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }] }
        }, `${attack.label}: the error envelope, naming the problem`)
      }
      await app.close()
      const logged = await entries()
      t.equal(logged.filter((entry) => entry.msg === 'request completed' && (entry.res as { statusCode: number }).statusCode === 400).length, attacks.length, 'each refusal is logged')
      t.same(logged.filter((entry) => Number(entry.level) >= 50), [], 'nothing at level error or above')
    })

    t.test('bodies nested up to the limit are parsed as before', async (t) => {
      const { app } = await buildLogged(t, { postgresUrl: backend.url })
      const payload = `{"email":"a@example.com","name":"Nested","password":"correct-horse-battery","extra":${arrays(MAX_JSON_DEPTH - 1)}}`
      const response = await app.inject({ method: 'POST', url: '/api/v1/users', payload, headers: { 'content-type': 'application/json' } })
      t.equal(response.statusCode, 400)
      t.same(response.json().error.details, [{ path: '/extra', message: 'is not an allowed property' }], 'refused by the schema, not by its depth')
    })
  })
}
