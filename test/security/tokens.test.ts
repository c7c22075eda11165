import { createHash, createHmac } from 'node:crypto'
import t from 'tap'
import { TokenService, TokenVerificationError, hashToken } from '../../src/security/tokens.js'
import { claimsOf } from '../helpers/accounts.js'

const secret = 'a-test-secret-of-at-least-32-chars!!'
const service = new TokenService({ secret })

function forge (header: object, payload: object, key = secret): string {
  const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const body = `${encode(header)}.${encode(payload)}`
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`
}

const now = () => Math.floor(Date.now() / 1000)

t.test('access tokens carry the documented claims with a 16-byte jti and a 15-minute lifetime', async (t) => {
  const issued = service.issueAccessToken({ sub: 'u1', roles: ['user'], tenant: 'acme' })
  const claims = claimsOf(issued.token)
  t.equal(claims.sub, 'u1')
  t.same(claims.roles, ['user'])
  t.equal(claims.tenant, 'acme', 'caller data is copied')
  t.equal(claims.type, 'access')
  t.equal(Buffer.from(String(claims.jti), 'base64url').length, 16)
  t.equal(claims.jti, issued.jti)
  t.equal(Number(claims.exp) - Number(claims.iat), 900)
  t.same(service.verify(issued.token, 'access').sub, 'u1')
})

t.test('the lifetime can be overridden and reserved claims cannot be', async (t) => {
  const issued = service.issueAccessToken({ sub: 'u1', roles: [], type: 'refresh', exp: 1 }, 60)
  const claims = claimsOf(issued.token)
  t.equal(claims.type, 'access')
  t.equal(Number(claims.exp) - Number(claims.iat), 60)
})

t.test('refresh tokens carry the documented claims and their record holds a SHA-256 hash', async (t) => {
  const issued = service.issueRefreshToken('u1', { id: 'laptop' })
  const claims = claimsOf(issued.token)
  t.equal(claims.type, 'refresh')
  t.same(claims.device, { id: 'laptop' })
  t.equal(Buffer.from(String(claims.jti), 'base64url').length, 32)
  t.equal(Number(claims.exp) - Number(claims.iat), 7 * 24 * 3600)
  t.equal(issued.token_hash, createHash('sha256').update(issued.token).digest('hex'))
  t.equal(issued.token_hash, hashToken(issued.token))
  t.equal(issued.expires_at.getTime(), Number(claims.exp) * 1000)
  t.same(claimsOf(service.issueRefreshToken('u1').token).device, {}, 'device defaults to an empty object')
})

t.test('expired tokens fail with "Token has expired"', async (t) => {
  const past = new TokenService({ secret, now: () => Date.now() - 16 * 60 * 1000 })
  const { token } = past.issueAccessToken({ sub: 'u1', roles: [] })
  t.throws(() => service.verify(token, 'access'), new TokenVerificationError('expired'))
  t.throws(() => service.verify(token, 'access'), { message: 'Token has expired' })
})

t.test('a remembered token still expires, and only its exact text is remembered', async (t) => {
  let clock = Date.now()
  const tokens = new TokenService({ secret, now: () => clock })
  const { token } = tokens.issueAccessToken({ sub: 'u1', roles: [] }, 60)
  t.equal(tokens.verify(token, 'access').sub, 'u1')
  t.equal(tokens.verify(token, 'access').sub, 'u1', 'a second verification (remembered) agrees')
  const [header, payload, signature] = token.split('.')
  const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claimsOf(token), sub: 'u2' })).toString('base64url')}.${signature}`
  t.not(payload, tampered.split('.')[1])
  t.throws(() => tokens.verify(tampered, 'access'), new TokenVerificationError('invalid'), 'a changed payload is verified afresh and refused')
  clock += 61_000
  t.throws(() => tokens.verify(token, 'access'), new TokenVerificationError('expired'), 'past its exp, the remembered token is expired')
})

t.test('the wrong type fails with "Invalid token type"', async (t) => {
  const refresh = service.issueRefreshToken('u1').token
  const access = service.issueAccessToken({ sub: 'u1', roles: [] }).token
  t.throws(() => service.verify(refresh, 'access'), { message: 'Invalid token type', reason: 'type' })
  t.throws(() => service.verify(access, 'refresh'), { message: 'Invalid token type' })
})

t.test('bad signatures, malformed tokens and other algorithms fail with "Invalid token"', async (t) => {
  const valid = service.issueAccessToken({ sub: 'u1', roles: [] }).token
  const [header, payload] = valid.split('.')
  const base = { sub: 'u1', roles: ['admin'], type: 'access', jti: 'x', iat: now(), exp: now() + 60 }
  const cases: Record<string, string> = {
    'tampered payload': `${header}.${Buffer.from(JSON.stringify(base)).toString('base64url')}.${valid.split('.')[2]}`,
    'other secret': forge({ alg: 'HS256', typ: 'JWT' }, base, 'another-secret-another-secret-1234'),
    'alg none': `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`,
    'HS512 with the right key': (() => {
      const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')
      const body = `${encode({ alg: 'HS512', typ: 'JWT' })}.${encode(base)}`
      return `${body}.${createHmac('sha512', secret).update(body).digest('base64url')}`
    })(),
    'missing jti': forge({ alg: 'HS256', typ: 'JWT' }, { ...base, jti: undefined }),
    'missing exp': forge({ alg: 'HS256', typ: 'JWT' }, { ...base, exp: undefined }),
    'missing sub': forge({ alg: 'HS256', typ: 'JWT' }, { ...base, sub: undefined }),
    garbage: 'not.a.token',
    empty: ''
  }
  for (const [name, token] of Object.entries(cases)) {
    t.throws(() => service.verify(token, 'access'), { message: 'Invalid token', reason: 'invalid' }, name)
  }
  t.same(service.verify(forge({ alg: 'HS256', typ: 'JWT' }, base), 'access').roles, ['admin'], 'the forge helper itself is sound')
})
