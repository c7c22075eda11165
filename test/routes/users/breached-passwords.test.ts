import t from 'tap'
import { uniqueEmail } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { pwnedPasswordsServer } from '../../helpers/servers/pwned-passwords.js'

t.test('a breached password at registration answers 400 PASSWORD_BREACHED in the error envelope', async (t) => {
  const api = await pwnedPasswordsServer(t)
  api.add('correct-horse-battery-staple-1', 12)
  const app = await build(t, { env: { PASSWORD_BREACH_CHECK: 'block', PASSWORD_BREACH_API_URL: api.url } })
  const refused = await app.inject({
    method: 'POST', url: '/api/v1/users', payload: { email: uniqueEmail('breached'), name: 'Breached', password: 'correct-horse-battery-staple-1' }
  })
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: { code: 'PASSWORD_BREACHED', message: 'This password has appeared in a data breach: choose another' } })
  t.notMatch(refused.body, /correct-horse/)
  const accepted = await app.inject({
    method: 'POST', url: '/api/v1/users', payload: { email: uniqueEmail('fresh'), name: 'Fresh', password: 'an-unbreached-passphrase-9' }
  })
  t.equal(accepted.statusCode, 201)
})
