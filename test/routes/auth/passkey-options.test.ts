import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createAccount, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

const BASE = '/api/v1/auth/passkeys'

async function addPasskey (app: FastifyInstance, token: string, authenticator: SoftwareAuthenticator): Promise<void> {
  const options = await app.inject(withToken(token, { method: 'POST', url: `${BASE}/registration/options` }))
  const created = await app.inject(withToken(token, { method: 'POST', url: BASE, payload: { response: authenticator.register(options.json().data) } }))
  if (created.statusCode !== 201) throw new Error(created.body)
}

/** The whole answer of POST /authentication/options, as an attacker probing addresses sees it. */
async function optionsFor (app: FastifyInstance, email?: string) {
  const answer = await app.inject({ method: 'POST', url: `${BASE}/authentication/options`, payload: email === undefined ? {} : { email } })
  if (answer.statusCode !== 200) throw new Error(answer.body)
  return answer.json() as {
    data: { challenge_id: string, options: { challenge: string, allowCredentials?: Array<{ id: string }> } }
  }
}

/** The answer without what is random in it. */
function shape ({ data }: Awaited<ReturnType<typeof optionsFor>>) {
  const { challenge_id: challengeId, options: { challenge, ...options }, ...rest } = data
  return { ...rest, options }
}

function authenticate (app: FastifyInstance, challengeId: string, response: unknown) {
  return app.inject({ method: 'POST', url: `${BASE}/authentication`, payload: { challenge_id: challengeId, response } })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const withTwo = await createAccount(app)
    const laptop = new SoftwareAuthenticator()
    const phone = new SoftwareAuthenticator()
    await addPasskey(app, withTwo.token, laptop)
    await addPasskey(app, withTwo.token, phone)
    const withNone = await createAccount(app)

    t.test('options for an address with two passkeys, one without passkeys and one without an account are alike: no credential listed, only the challenge differs', async (t) => {
      const answers = [await optionsFor(app, withTwo.email), await optionsFor(app, withNone.email), await optionsFor(app, uniqueEmail('nobody')), await optionsFor(app)]
      for (const answer of answers) {
        t.same(Object.keys(answer.data).sort(), ['challenge_id', 'options'])
        t.same(answer.data.options.allowCredentials, [], 'no credential is listed')
        t.same(shape(answer), shape(answers[0] ?? answer), 'the same answer but for the challenge')
      }
      t.equal(new Set(answers.map((answer) => answer.data.challenge_id)).size, answers.length, 'each challenge id is new')
      t.equal(new Set(answers.map((answer) => answer.data.options.challenge)).size, answers.length, 'each challenge is new')
    })

    t.test('with an address, only its account\'s passkeys answer: another account\'s is refused, and none answers for an address without an account', async (t) => {
      for (const authenticator of [laptop, phone]) {
        const { data } = await optionsFor(app, withTwo.email)
        t.equal((await authenticate(app, data.challenge_id, authenticator.assert(data.options))).statusCode, 200, 'the account\'s passkeys sign in')
      }
      const other = await optionsFor(app, withNone.email)
      t.equal((await authenticate(app, other.data.challenge_id, laptop.assert(other.data.options))).statusCode, 401, 'another account\'s passkey')
      const unknown = await optionsFor(app, uniqueEmail('nobody'))
      const refused = await authenticate(app, unknown.data.challenge_id, laptop.assert(unknown.data.options))
      t.equal(refused.statusCode, 401, 'an address without an account')
      t.equal(refused.json().error.code, 'INVALID_CREDENTIALS')
    })
  })
}
