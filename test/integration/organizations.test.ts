import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose'
import t from 'tap'
import { generateKeyPair } from '../../src/security/signing-keys.js'
import { TEST_PASSWORD, uniqueEmail } from '../helpers/accounts.js'
import { backends, freshDatabaseUrl, REDIS_ENV, suiteName } from '../helpers/database.js'
import { within } from '../helpers/clock.js'
import { callService, type LogEntry, type ServiceProcess, startService } from '../helpers/process.js'
import { type MailServer, mailServer, tokenIn } from '../helpers/servers/mail-server.js'

/**
 * Organizations seen from outside, with no browser: the service runs as its own process on
 * 127.0.0.1, sends its mail to a real SMTP server there, and a resource server reads the
 * organization off the access tokens with jose and the JWKS alone.
 */
const ISSUER = 'https://users.example.com'
const APP_URL = 'https://app.example.test'
/** How long a message may take to arrive: it is sent as soon as its transaction commits, well within this. */
const MAIL_WAIT_MS = 10_000

interface TokenPair { access_token: string, refresh_token: string }

/** Registers `email`, proves it with the token of the verification mail delivered, and signs in. */
async function registerVerifyAndSignIn (
  service: ServiceProcess,
  smtp: MailServer,
  email: string,
  name: string
): Promise<{ id: string, tokens: TokenPair }> {
  const created = await callService(service, 'POST', '/api/v1/users', { body: { email, name, password: TEST_PASSWORD } })
  if (created.status !== 201) throw new Error(`registration failed: ${JSON.stringify(created.body)}`)
  const verification = await within(`the verification mail to ${email}`, MAIL_WAIT_MS,
    smtp.next((mail) => mail.to.includes(email) && mail.subject.startsWith('Verify')))
  const verified = await callService(service, 'POST', '/api/v1/auth/email/verify', { body: { token: tokenIn(verification) } })
  if (verified.status !== 200 || verified.body.data.email_verified !== true) {
    throw new Error(`verification failed: ${JSON.stringify(verified.body)}`)
  }
  const login = await callService(service, 'POST', '/api/v1/auth/login', { body: { email, password: TEST_PASSWORD } })
  if (login.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(login.body)}`)
  return { id: created.body.data.id, tokens: login.body.data }
}

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    t.test('invited by e-mail, accepted, selected: the token carries the organization until the member is removed', async (t) => {
      const smtp = await mailServer(t)
      const key = generateKeyPair('EdDSA')
      const service = await startService(t, {
        ...REDIS_ENV,
        DATABASE_URL: await freshDatabaseUrl(t, backend.url, { shared: true }),
        MFA_REQUIRED_ROLES: 'none',
        RATE_LIMIT_MAX: '100000',
        RATE_LIMIT_AUTH_MAX: '1000',
        JWT_ALGORITHM: 'EdDSA',
        JWT_PRIVATE_KEY: key.privateKey,
        JWT_ISSUER: ISSUER,
        SMTP_URL: smtp.url(),
        APP_URL
      })
      const errors: LogEntry[] = []
      service.onLog((entry) => { if (Number(entry.level) >= 50) errors.push(entry) })
      // The resource server: nothing but the published JWKS and the issuer.
      const jwks = createRemoteJWKSet(new URL(`${service.base}/.well-known/jwks.json`))
      const claims = async (token: string): Promise<JWTPayload> =>
        (await jwtVerify(token, jwks, { issuer: ISSUER, algorithms: ['EdDSA'] })).payload

      const owner = await registerVerifyAndSignIn(service, smtp, uniqueEmail('org-owner'), 'Org Owner')
      const slug = `acme-${process.pid}`
      const created = await callService(service, 'POST', '/api/v1/organizations', {
        token: owner.tokens.access_token,
        body: { name: 'Acme Widgets', slug }
      })
      t.equal(created.status, 201, 'the verified owner creates an organization')
      const organization = created.body.data
      t.match(organization, { id: /^[0-9a-f-]{36}$/, name: 'Acme Widgets', slug, role: 'owner' }, 'and owns it')

      const inviteeEmail = uniqueEmail('org-invitee')
      const invited = await callService(service, 'POST', `/api/v1/organizations/${organization.id}/invitations`, {
        token: owner.tokens.access_token,
        body: { email: inviteeEmail, role: 'admin' }
      })
      t.equal(invited.status, 201, 'the owner invites an address that has no account yet')
      t.match(invited.body.data, { id: /^[0-9a-f-]{36}$/, email: inviteeEmail, role: 'admin', invited_by: owner.id })

      const invitation = await within('the invitation mail', MAIL_WAIT_MS,
        smtp.next((mail) => mail.to.includes(inviteeEmail) && mail.text.includes('accept-invitation?token=')))
      const link = /(\S+)\/accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(invitation.text)
      t.match(invitation.text.replaceAll('\u200b', ''), '“Acme Widgets”', 'the invitation mail quotes the organization\'s name in its body')
      t.equal(link?.[1], APP_URL, 'and links to the application')
      const token = link?.[2] ?? ''
      t.ok(token.length >= 16, 'with a token in the link')
      t.match(invitation.text, `Token: ${token}`, 'and the same token bare')
      t.notOk(JSON.stringify(invited.body).includes(token), 'the token is in the mail only, never in the API answer')

      const invitee = await registerVerifyAndSignIn(service, smtp, inviteeEmail, 'Org Invitee')
      t.notOk('org_id' in await claims(invitee.tokens.access_token), 'no organization in the invitee\'s token yet')

      const accepted = await callService(service, 'POST', '/api/v1/invitations/accept', {
        token: invitee.tokens.access_token,
        body: { token }
      })
      t.equal(accepted.status, 200, 'the invitee accepts with the token from the mail')
      t.match(accepted.body.data, { id: organization.id, slug, role: 'admin' }, 'and holds the invited role')
      const again = await callService(service, 'POST', '/api/v1/invitations/accept', {
        token: invitee.tokens.access_token,
        body: { token }
      })
      t.equal(again.status, 400)
      t.equal(again.body.error.code, 'INVALID_ONE_TIME_TOKEN', 'the invitation is single use')

      const members = await callService(service, 'GET', `/api/v1/organizations/${organization.id}/members`, {
        token: owner.tokens.access_token
      })
      t.equal(members.status, 200)
      t.same(
        members.body.data.map((member: { id: string, role: string }) => [member.id, member.role]).sort(),
        [[owner.id, 'owner'], [invitee.id, 'admin']].sort(),
        'the owner sees both members'
      )

      const selected = await callService(service, 'POST', '/api/v1/auth/organization', {
        body: { refresh_token: invitee.tokens.refresh_token, organization_id: organization.id }
      })
      t.equal(selected.status, 200, 'the invitee selects the organization with the refresh token')
      t.equal(selected.body.data.token_type, 'Bearer', 'and gets a token pair, as from a refresh')
      const inOrganization: TokenPair = selected.body.data
      t.match(await claims(inOrganization.access_token), {
        iss: ISSUER,
        sub: invitee.id,
        org_id: organization.id,
        org_roles: ['admin']
      }, 'the resource server reads the organization and the invited role off the verified token')
      t.same((await claims(inOrganization.access_token)).org_roles, ['admin'], 'exactly the one role')

      const refreshed = await callService(service, 'POST', '/api/v1/auth/refresh', {
        body: { refresh_token: inOrganization.refresh_token }
      })
      t.equal(refreshed.status, 200)
      const later: TokenPair = refreshed.body.data
      t.match(await claims(later.access_token), { org_id: organization.id, org_roles: ['admin'] },
        'a later refresh of the session keeps the organization')
      t.equal((await callService(service, 'GET', '/api/v1/auth/me', { token: later.access_token })).status, 200)

      const removed = await callService(service, 'DELETE', `/api/v1/organizations/${organization.id}/members/${invitee.id}`, {
        token: owner.tokens.access_token
      })
      t.equal(removed.status, 204, 'the owner removes the member', { body: removed.body, errors })
      const notice = await within('the removal notice', MAIL_WAIT_MS,
        smtp.next((mail) => mail.to.includes(inviteeEmail) && mail.subject.includes('removed')))
      t.equal(notice.subject, 'You were removed from an organization', 'the member is told by mail')
      t.match(notice.text, `Organization: Acme Widgets (${slug})`)
      const refused = await callService(service, 'GET', '/api/v1/auth/me', { token: later.access_token })
      t.equal(refused.status, 401, 'the member\'s next request with the access token that carried the organization is refused')
      t.equal(refused.body?.error?.code, 'INVALID_TOKEN')

      const afterRemoval = await callService(service, 'POST', '/api/v1/auth/refresh', {
        body: { refresh_token: later.refresh_token }
      })
      t.equal(afterRemoval.status, 200, 'the member\'s session still refreshes')
      const outside = await claims(afterRemoval.body.data.access_token)
      t.equal(outside.sub, invitee.id)
      t.notOk('org_id' in outside, 'into an access token without org_id')
      t.notOk('org_roles' in outside, 'nor org_roles')
      t.equal((await callService(service, 'GET', '/api/v1/auth/me', { token: afterRemoval.body.data.access_token })).status, 200)

      const reselected = await callService(service, 'POST', '/api/v1/auth/organization', {
        body: { refresh_token: afterRemoval.body.data.refresh_token, organization_id: organization.id }
      })
      t.equal(reselected.status, 404)
      t.equal(reselected.body.error.code, 'NOT_FOUND', 'the former member cannot select the organization again')
      const listed = await callService(service, 'GET', `/api/v1/organizations/${organization.id}/members`, {
        token: owner.tokens.access_token
      })
      t.same(listed.body.data.map((member: { id: string }) => member.id), [owner.id], 'the owner is the only member left')

      // Stopped here, before the mail server is (teardown): no delivery is cut off half-way.
      service.child.kill('SIGTERM')
      await service.exited
      t.same(smtp.received.map((mail) => mail.subject), [], 'no other mail was sent')
      t.same(errors, [], 'the service logged no error')
    })
  })
}
