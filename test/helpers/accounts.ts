/** Test accounts through the API: registering, signing in, stepping up, tokens and what they carry. */
import type { FastifyInstance, InjectOptions } from 'fastify'
import { generateSync } from 'otplib'
import { REAUTHENTICATION_TTL_MS } from '../../src/services/sign-in/reauthentication.js'
import type { MailServer } from './servers/mail-server.js'
import type { TestProvider } from './servers/oauth-provider.js'

/** The password every test account is created with. */
export const TEST_PASSWORD = 'correct-horse-battery'

let emailCounter = 0

export function uniqueEmail (prefix = 'user'): string {
  return `${prefix}-${process.pid}-${emailCounter++}@example.com`
}

export interface Account {
  id: string
  email: string
  password: string
  token: string
}

/**
 * Registers through the API and signs in; optionally grants roles directly in the store. The
 * address is proved (the account claimed) unless `verified: false`, and the session stepped
 * up unless `reauthenticated: false` (docs/testing.md, "Test accounts"), so
 * tests of other features make sensitive changes as an owner who just proved it is them.
 */
export async function createAccount (
  app: FastifyInstance,
  options: { roles?: Array<'moderator' | 'admin' | 'super_admin'>, name?: string, verified?: boolean, reauthenticated?: boolean } = {}
): Promise<Account> {
  const email = uniqueEmail()
  const password = TEST_PASSWORD
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: options.name ?? 'Test User', password } })
  if (created.statusCode !== 201) throw new Error(`registration failed: ${created.body}`)
  const { id } = created.json().data
  if (options.verified !== false) await app.repositories.users.markEmailVerified(id, email)
  for (const role of options.roles ?? []) await app.repositories.users.addRole(id, role)
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
  const token: string = login.json().data.access_token
  // The step-up is granted in the store, as POST /auth/reauthenticate would with the password,
  // without paying for another hash on every account a test makes (that route has tests of its own).
  if (options.reauthenticated !== false) {
    await app.repositories.sessions.grantReauthentication(
      id,
      claimsOf(token).jti as string,
      new Date(Date.now() + REAUTHENTICATION_TTL_MS).toISOString()
    )
  }
  return { id, email, password, token }
}

/** Signs `account` in once more with its password: a new session's pair of tokens. */
export async function signIn (
  app: FastifyInstance,
  account: Pick<Account, 'email' | 'password'>
): Promise<{ access_token: string, refresh_token: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
  if (response.statusCode !== 200) throw new Error(response.body)
  return response.json().data
}

/**
 * Steps up the session of `token`, of an account without a password or second factor, as such
 * an account does: a code sent to its address `to`, taken from the test's mail server, given back.
 */
export async function stepUpWithEmailCode (
  app: FastifyInstance,
  token: string,
  smtp: MailServer,
  to: string
): Promise<void> {
  const sent = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/reauthenticate/code', payload: { method: 'email' } }))
  if (sent.statusCode !== 202) throw new Error(`no code sent: ${sent.body}`)
  const message = await smtp.next((mail) => mail.to.includes(to) && mail.subject.endsWith('confirmation code'))
  const code = /is (\d{6})\./.exec(message.text)?.[1]
  const stepUp = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/reauthenticate', payload: { code } }))
  if (stepUp.statusCode !== 200) throw new Error(`step-up failed: ${stepUp.body}`)
}

/**
 * Turns TOTP on for `account` through the API (its session stepped up, as `createAccount`
 * leaves it); answers a code of the secret `offset` steps of 30 s from now, and the backup codes.
 */
export async function enableTotp (
  app: FastifyInstance,
  account: Account
): Promise<{ code: (offset: number) => string, backupCodes: string[] }> {
  const setup = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
  const { secret } = setup.json().data as { secret: string }
  const code = (offset: number) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 })
  const enabled = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: code(0) } }))
  if (enabled.statusCode !== 200) throw new Error(enabled.body)
  return { code, backupCodes: enabled.json().data.backup_codes }
}

export function withToken (token: string, options: InjectOptions): InjectOptions {
  return { ...options, headers: { ...options.headers, authorization: `Bearer ${token}` } }
}

/** The claims a JWT carries (its payload), read without checking the signature. */
export function claimsOf (token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
}

/**
 * The Cookie header that carries an /authorize answer's state cookie back to the callback:
 * `__Host-oauth_state` over HTTPS, `oauth_state` over http.
 */
export function stateCookie (authorize: { cookies: Array<{ name: string, value: string }> }): string {
  const cookie = authorize.cookies.find((entry) => entry.name === 'oauth_state' || entry.name === '__Host-oauth_state')
  if (cookie === undefined) throw new Error('no state cookie')
  return `${cookie.name}=${cookie.value}`
}

/** A provider sign-in as a browser makes it: /authorize, approval at the provider, /callback. */
export async function providerSignIn (app: FastifyInstance, provider: TestProvider, profile: Record<string, unknown>) {
  const authorize = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/microsoft/authorize' })
  const location = new URL(String(authorize.headers.location))
  const code = provider.approve(location.searchParams.get('code_challenge') ?? '', profile)
  return await app.inject({
    method: 'GET',
    url: `/api/v1/auth/oauth/microsoft/callback?code=${code}&state=${location.searchParams.get('state') ?? ''}`,
    headers: { cookie: stateCookie(authorize) }
  })
}
