import { randomBytes } from 'node:crypto'
import { generateSync } from 'otplib'
import t from 'tap'
import { SecretBox } from '../../src/security/secret-box.js'
import { hashBackupCode, matchBackupCode, newBackupCodes, newTotpSecret, provisioningUri, TOTP_PERIOD_S, verifyTotp } from '../../src/security/totp.js'

const secret = newTotpSecret()
const step = 60_000_000
const at = (steps: number) => (step + steps) * TOTP_PERIOD_S * 1000
const codeAt = (steps: number) => generateSync({ secret, epoch: (step + steps) * TOTP_PERIOD_S })

t.test('secrets are random base32 and the URI names issuer and account', async (t) => {
  t.match(secret, /^[A-Z2-7]{32}$/)
  t.not(newTotpSecret(), secret)
  const uri = provisioningUri(secret, 'ada@example.com', 'Users API')
  t.equal(uri, `otpauth://totp/Users%20API:ada%40example.com?secret=${secret}&issuer=Users%20API`)
})

t.test('the window is one step either side, under an injected clock', async (t) => {
  const code = codeAt(0)
  t.equal(verifyTotp(secret, code, at(0)), step, 'current step')
  t.equal(verifyTotp(secret, code, at(0) + 29_999), step, 'last millisecond of the step')
  t.equal(verifyTotp(secret, code, at(1)), step, 'one step later: accepted')
  t.equal(verifyTotp(secret, code, at(-1)), step, 'one step earlier: accepted')
  t.equal(verifyTotp(secret, code, at(2)), null, 'two steps later: refused')
  t.equal(verifyTotp(secret, code, at(-2)), null, 'two steps earlier: refused')
})

t.test('a code of an accepted step, or an earlier one, is refused', async (t) => {
  t.equal(verifyTotp(secret, codeAt(0), at(0), step), null, 'replay of the same step')
  t.equal(verifyTotp(secret, codeAt(-1), at(0), step), null, 'an earlier step')
  t.equal(verifyTotp(secret, codeAt(1), at(0), step), step + 1, 'the next step is fine')
})

t.test('an accepted step ahead of this clock refuses every code without throwing', async (t) => {
  for (const ahead of [1, 2, 4, 1000]) {
    for (const offset of [-1, 0, 1]) {
      t.equal(verifyTotp(secret, codeAt(offset), at(0), step + ahead), null, `recorded step +${ahead}, code of step ${offset >= 0 ? '+' : ''}${offset}`)
    }
  }
})

t.test('malformed codes never match', async (t) => {
  for (const code of ['', '12345', '1234567', 'abcdef', ' 123456']) t.equal(verifyTotp(secret, code, at(0)), null, JSON.stringify(code))
})

t.test('backup codes: 10 of 6 digits, keyed hashes, constant-time match', async (t) => {
  const codes = newBackupCodes()
  t.equal(codes.length, 10)
  for (const code of codes) t.match(code, /^\d{6}$/)
  const key = randomBytes(32)
  const stored = codes.map((code) => hashBackupCode(key, 'user-1', code))
  t.equal(matchBackupCode(stored, hashBackupCode(key, 'user-1', codes[3] ?? '')), 3)
  t.equal(matchBackupCode(stored, hashBackupCode(key, 'user-2', codes[3] ?? '')), -1, 'bound to the user')
  t.equal(matchBackupCode(stored, hashBackupCode(randomBytes(32), 'user-1', codes[3] ?? '')), -1, 'bound to the key')
  t.equal(matchBackupCode(stored, 'short'), -1)
  t.notOk(stored.some((hash) => codes.some((code) => hash.includes(code))), 'no code in clear')
})

t.test('secret box: round trip, and refusal under another key or when altered', async (t) => {
  const box = new SecretBox('x'.repeat(32), 'totp-secret')
  const sealed = box.seal(secret)
  t.not(sealed, box.seal(secret), 'a fresh IV each time')
  t.notMatch(sealed, secret)
  t.equal(box.open(sealed), secret)
  t.equal(new SecretBox('y'.repeat(32), 'totp-secret').open(sealed), null)
  t.equal(new SecretBox('x'.repeat(32), 'other-purpose').open(sealed), null)
  const parts = sealed.split('.')
  // Flip a bit of the ciphertext itself (editing the last base64url character may only
  // touch padding bits).
  const ciphertext = Buffer.from(parts[3] ?? '', 'base64url')
  ciphertext[0] = (ciphertext[0] ?? 0) ^ 1
  parts[3] = ciphertext.toString('base64url')
  t.equal(box.open(parts.join('.')), null)
  t.equal(box.open('garbage'), null)
})
