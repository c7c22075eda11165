import { createHash } from 'node:crypto'
import t from 'tap'
import { clientSecretHash, newClientId, newClientSecret } from '../../src/security/client-secrets.js'

t.test('a secret is 32 random bytes in base64url: 43 characters, each one new', async (t) => {
  const secrets = Array.from({ length: 1000 }, () => newClientSecret())
  for (const secret of secrets.slice(0, 20)) {
    t.match(secret, /^[A-Za-z0-9_-]{43}$/)
    t.equal(Buffer.from(secret, 'base64url').length, 32)
  }
  t.ok(secrets.every((secret) => secret.length === 43), 'all 43 characters')
  t.equal(new Set(secrets).size, secrets.length, 'distinct')
})

t.test('a client id is 16 random bytes in base64url: 22 characters, safe in a URL, each one new', async (t) => {
  const ids = Array.from({ length: 1000 }, () => newClientId())
  t.ok(ids.every((id) => /^[A-Za-z0-9_-]{22}$/.test(id) && encodeURIComponent(id) === id))
  t.equal(new Set(ids).size, ids.length, 'distinct')
})

t.test('the hash is SHA-256 in base64url: the same for the same secret, another for another', async (t) => {
  const secret = newClientSecret()
  t.equal(clientSecretHash(secret), clientSecretHash(secret), 'deterministic')
  t.equal(clientSecretHash(secret), createHash('sha256').update(secret).digest('base64url'))
  t.match(clientSecretHash(secret), /^[A-Za-z0-9_-]{43}$/)
  t.not(clientSecretHash(secret), secret, 'not the secret itself')
  t.not(clientSecretHash(secret), clientSecretHash(newClientSecret()), 'differs per secret')
  t.not(clientSecretHash(secret), clientSecretHash(`${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`), 'one character apart')
  t.equal(clientSecretHash('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0', 'the known SHA-256 of "abc"')
})
