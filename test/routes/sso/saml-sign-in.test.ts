import t, { type Test } from 'tap'
import { claimsOf } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail } from '../../helpers/organizations.js'
import { decoded, encoded, TestIdentityProvider } from '../../helpers/servers/saml-identity-provider.js'
import { APPLICATION, PUBLIC_URL, SSO_ENV, SsoHarness, uniqueDomain } from '../../helpers/sso.js'

/**
 * Sign-in through an organization's SAML identity provider (docs/api.md, "Enterprise sign-in"),
 * the IdP in the test's process (samlify): the account made just in time, claimed, a member
 * with the role its groups map to; and every response the service must refuse (docs/security.md,
 * "SAML"), each refused with nothing signed in.
 */

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url, { env: SSO_ENV })
    const h = new SsoHarness(app, smtp)
    const memberRole = async (organizationId: string, owner: Parameters<SsoHarness['call']>[0], email: string) =>
      (await h.call(owner, 'GET', `/organizations/${organizationId}/members?search=${encodeURIComponent(email)}`)).json().data
        .find((member: { email: string }) => member.email === email)?.role

    t.test('a first sign-in makes the account, claimed, and its membership with the mapped role; a later one follows the groups', async (t) => {
      const { owner, organization, domain, idp, connection, spMetadata } = await h.connected()
      t.match(connection, {
        kind: 'saml',
        enabled: true,
        idp_entity_id: idp.entityId,
        acs_url: `${PUBLIC_URL}/api/v1/sso/saml/${connection.id}/acs`,
        sp_entity_id: `${PUBLIC_URL}/api/v1/sso/saml/${connection.id}/metadata`,
        sign_in_url: `${PUBLIC_URL}/api/v1/sso/saml/${connection.id}/sign-in`,
        default_role: 'member'
      })
      t.match(spMetadata, `entityID="${connection.sp_entity_id}"`)
      t.match(spMetadata, `Location="${connection.acs_url}"`)

      const email = `alice@${domain}`
      const started = await h.start(connection.id)
      t.ok(started.location.startsWith(`${idp.ssoUrl}?SAMLRequest=`), 'to the IdP, HTTP-Redirect')
      const response = await idp.respond(spMetadata, {
        nameId: email, inResponseTo: started.requestId, attributes: { displayName: ['Alice Example'], groups: ['Acme Admins', 'Staff'] }
      })
      const back = SsoHarness.back(await h.acs(connection.id, response, started.relayState))
      t.equal(`${back.origin}${back.pathname}`, APPLICATION)
      const code = back.searchParams.get('code')
      t.ok(code, `a one-time code: ${back.href}`)
      const exchanged = await h.exchange(code ?? '', started.verifier)
      t.equal(exchanged.statusCode, 200, exchanged.body)
      const token = exchanged.json().data.access_token
      t.same(claimsOf(token).amr, ['fed'])
      const me = (await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })).json().data
      t.match(me, { email, name: 'Alice Example', email_verified: true })
      t.equal(await memberRole(organization.id, owner, email), 'admin', 'joined with the role of the group mapped')

      // The next sign-in, out of the admins' group: the role follows the IdP's groups.
      const again = await h.start(connection.id)
      const second = await idp.respond(spMetadata, { nameId: email, inResponseTo: again.requestId, attributes: { groups: ['Staff'] } })
      t.ok(SsoHarness.back(await h.acs(connection.id, second, again.relayState)).searchParams.get('code'))
      t.equal(await memberRole(organization.id, owner, email), 'member', 'the default role')
      const audited = await app.database.db.selectFrom('audit_logs').select(['event', 'details']).where('target_id', '=', me.id).execute()
      t.ok(audited.some((row) => row.event === 'membership.added'), 'membership.added')
      t.ok(audited.some((row) => row.event === 'membership.role_changed'), 'membership.role_changed')
      t.ok(audited.some((row) => row.event === 'user.created' && row.details.includes(`sso:${connection.id}`)), 'user.created through the connection')
    })

    t.test('every response the service must refuse is refused, and nothing is signed in', async (t) => {
      const { domain, idp, connection, spMetadata } = await h.connected()
      const email = `mallory@${domain}`
      const honest = async (inResponseTo: string) => await idp.respond(spMetadata, { nameId: email, inResponseTo })
      const stranger = new TestIdentityProvider()
      const cases: Array<[string, RegExp, (requestId: string) => Promise<string>]> = [
        ['an assertion without its signature', /^Invalid signature$/, async (id) => encoded(decoded(await honest(id)).replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, ''))],
        ['signed by another key', /^Invalid signature$/, async (id) => await stranger.respond(spMetadata, { nameId: email, inResponseTo: id, issuer: idp.entityId })],
        ['signature wrapping: an unsigned assertion beside the signed one', /^Invalid signature: multiple assertions$/, async (id) => {
          const xml = decoded(await honest(id))
          const forged = xml.slice(xml.indexOf('<saml:Assertion'), xml.indexOf('</saml:Assertion>') + '</saml:Assertion>'.length)
            .replace(/ID="[^"]+"/, 'ID="_forged"').replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, '').replace(email, `ceo@${domain}`)
          return encoded(xml.replace('<saml:Assertion', `${forged}<saml:Assertion`))
        }],
        ['signature wrapping: the signed assertion moved inside a forged one', /^Invalid signature$/, async (id) => {
          const xml = decoded(await honest(id))
          const start = xml.indexOf('<saml:Assertion')
          const end = xml.indexOf('</saml:Assertion>') + '</saml:Assertion>'.length
          const signed = xml.slice(start, end)
          const forged = signed.replace(/ID="[^"]+"/, 'ID="_forged"').replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, '').replace(email, `ceo@${domain}`)
            .replace('</saml:Assertion>', `<saml:Advice>${signed}</saml:Advice></saml:Assertion>`)
          return encoded(xml.slice(0, start) + forged + xml.slice(end))
        }],
        ['a comment inside the NameID (the name read whole: outside the verified domain)', /outside the organization's verified domains/, async (id) => await idp.respond(spMetadata, {
          nameId: '', nameIdXml: `ceo@${domain}<!---->.attacker.example`, inResponseTo: id
        })],
        ['another issuer, with the right key', /Issuer is not the connection's IdP/, async (id) => await idp.respond(spMetadata, {
          nameId: email, inResponseTo: id, issuer: 'https://evil.example/idp'
        })],
        ['an unsolicited assertion rewrapped in a response that names this request', /answers this sign-in's request/, async (id) =>
          encoded(decoded(await idp.respond(spMetadata, { nameId: email })).replace('InResponseTo=""', `InResponseTo="${id}"`))],
        // Shapes whose signature check would cost seconds, refused before any parser reads them.
        ...([
          ['many elements', /more elements than any IdP sends/, '<a/>'.repeat(1001)],
          ['deep nesting', /deeper than any IdP does/, '<a>'.repeat(40) + '</a>'.repeat(40)],
          ['many namespaces', /more namespaces than any IdP sends/, Array.from({ length: 60 }, (_, i) => `<p${i}:a xmlns:p${i}="urn:${i}"/>`).join('')]
        ] as const).map(([shape, reason, filler]): [string, RegExp, (id: string) => Promise<string>] => [`a response of ${shape}`, reason, async (id) =>
          encoded(decoded(await idp.respond(spMetadata, { nameId: email, inResponseTo: id, attributes: { groups: ['FILLER'] } })).replace('FILLER', filler))]),
        ['the wrong audience', /audience mismatch/, async (id) => await idp.respond(spMetadata, { nameId: email, inResponseTo: id, audience: 'https://other.example/sp' })],
        ['the wrong recipient', /Recipient/, async (id) => await idp.respond(spMetadata, { nameId: email, inResponseTo: id, recipient: 'https://other.example/acs' })],
        ['the wrong destination', /Destination/, async (id) => await idp.respond(spMetadata, { nameId: email, inResponseTo: id, destination: 'https://other.example/acs' })],
        ['an expired assertion', /No valid subject confirmation/, async (id) => await idp.respond(spMetadata, { nameId: email, inResponseTo: id, notBefore: -900, notOnOrAfter: -600 })],
        ['a response to a request never made', /InResponseTo is not valid/, async () => await idp.respond(spMetadata, { nameId: email, inResponseTo: '_never-requested' })],
        ['an unsolicited response', /InResponseTo is missing/, async () => await idp.respond(spMetadata, { nameId: email })],
        ['an address outside the verified domains', /outside the organization's verified domains/, async (id) => await idp.respond(spMetadata, { nameId: `mallory@${uniqueDomain('elsewhere')}`, inResponseTo: id })]
      ]
      for (const [name, reason, response] of cases) {
        await t.test(name, async (t) => {
          const started = await h.start(connection.id)
          const answer = await h.acs(connection.id, await response(started.requestId), started.relayState)
          const back = SsoHarness.back(answer)
          t.equal(back.searchParams.get('error'), 'SSO_RESPONSE_REJECTED', back.href)
          t.equal(back.searchParams.get('code'), null, 'no code')
          const latest = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed').orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirst()
          t.match(JSON.parse(latest?.details ?? '{}'), { provider: `sso:${connection.id}`, detail: reason }, 'audited with the check that failed')
        })
      }
      const accounts = await app.database.db.selectFrom('users').select('email').where('email', 'like', `%@${domain}%`).execute()
      t.same(accounts, [], 'no account made')
      const refusals = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed').execute()
      t.ok(refusals.filter((row) => row.details.includes(`sso:${connection.id}`)).length >= cases.length, 'each refusal audited with its reason')
    })

    t.test('an identity linked before signs in only while its account\'s own address is at a verified domain', async (t) => {
      const { domain, idp, connection, spMetadata } = await h.connected()
      const first = await h.start(connection.id)
      const nameId = `frank@${domain}`
      const response = await idp.respond(spMetadata, { nameId, inResponseTo: first.requestId })
      const answer = await h.acs(connection.id, response, first.relayState)
      const token = (await h.exchange(SsoHarness.back(answer).searchParams.get('code') ?? '', first.verifier)).json().data.access_token
      const me = (await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })).json().data
      await app.database.db.updateTable('users').set({ email: `frank@${uniqueDomain('personal')}` }).where('id', '=', me.id).execute()
      const again = await h.start(connection.id)
      const later = await idp.respond(spMetadata, { nameId, inResponseTo: again.requestId })
      const linked = await h.acs(connection.id, later, again.relayState)
      t.equal(SsoHarness.back(linked).searchParams.get('error'), 'SSO_RESPONSE_REJECTED')
    })

    t.test('an organization without a verified domain has nobody to sign in: its connections do not start', async (t) => {
      const { owner, organization } = await h.team('Unverified')
      const idp = new TestIdentityProvider()
      const connection = (await h.call(owner, 'POST', `/organizations/${organization.id}/sso-connections`, { name: 'IdP', idp_metadata_xml: idp.metadata() })).json().data
      const start = await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/sign-in?redirect_to=x` })
      t.equal(start.statusCode, 409)
      t.equal(start.json().error.message, 'The organization holds no verified domain: nobody signs in through its connections yet')
    })

    t.test('an IdP-initiated response signs nobody in: where the connection allows it, the browser goes to the application, which starts a sign-in', async (t) => {
      const { owner, organization, domain, idp, connection, spMetadata } = await h.connected()
      const email = `ivan@${domain}`
      const unsolicited = await idp.respond(spMetadata, { nameId: email })
      refused(t, await h.acs(connection.id, unsolicited, ''), 'refused while the connection allows none')
      const path = `/organizations/${organization.id}/sso-connections/${connection.id}`
      for (const outside of ['https://evil.example/callback', `${APPLICATION}/../admin`, 'https://user:pw@app.example.test/callback', 'javascript:alert(1)']) {
        const answer = await h.call(owner, 'PATCH', path, { idp_initiated_login_url: outside })
        t.equal(answer.statusCode, 400, `${outside}: not an allowed redirect URL`)
      }
      const loginUrl = `${APPLICATION}/sso?tenant=acme`
      const allowed = await h.call(owner, 'PATCH', path, { idp_initiated_login_url: loginUrl })
      t.equal(allowed.statusCode, 200, allowed.body)
      t.equal(allowed.json().data.idp_initiated_login_url, loginUrl)
      // Okta and Entra ID may send a RelayState of their own; a spent flow's is one the service no longer knows.
      for (const relayState of ['', 'https://app.example.test/deep/link', 'a-relay-state-the-service-never-issued']) {
        const back = SsoHarness.back(await h.acs(connection.id, unsolicited, relayState))
        t.equal(back.href, `${loginUrl}&connection_id=${connection.id}`, `to the application's login URL (RelayState ${JSON.stringify(relayState)})`)
      }
      t.equal(await app.repositories.users.findByEmail(email), undefined, 'no account made: the response signed nobody in')

      // The application starts a sign-in through the connection: the IdP answers it, and the person is in.
      const started = await h.start(connection.id)
      const response = await idp.respond(spMetadata, { nameId: email, inResponseTo: started.requestId })
      t.ok(SsoHarness.back(await h.acs(connection.id, response, started.relayState)).searchParams.get('code'), 'signed in by the flow the application started')

      t.equal((await h.call(owner, 'PATCH', path, { enabled: false })).statusCode, 200)
      refused(t, await h.acs(connection.id, unsolicited, ''), 'refused by a disabled connection')
      t.equal((await h.call(owner, 'PATCH', path, { enabled: true, idp_initiated_login_url: null })).json().data.idp_initiated_login_url, null)
      refused(t, await h.acs(connection.id, unsolicited, ''), 'refused once the login URL is removed')
    })

    t.test('an assertion is accepted once: one replayed into another flow is refused', async (t) => {
      const { domain, idp, connection, spMetadata } = await h.connected()
      const first = await h.start(connection.id)
      const assertionId = `_assertion-${domain}`
      const response = await idp.respond(spMetadata, { nameId: `erin@${domain}`, inResponseTo: first.requestId, assertionId })
      t.ok(SsoHarness.back(await h.acs(connection.id, response, first.relayState)).searchParams.get('code'))
      refused(t, await h.acs(connection.id, response, first.relayState), 'the flow is spent')
      const second = await h.start(connection.id)
      const replayed = await idp.respond(spMetadata, { nameId: `erin@${domain}`, inResponseTo: second.requestId, assertionId })
      t.equal(SsoHarness.back(await h.acs(connection.id, replayed, second.relayState)).searchParams.get('error'), 'SSO_RESPONSE_REJECTED')
    })
  })
}

function refused (t: Test, response: { statusCode: number, json: () => any }, message: string) {
  t.equal(response.statusCode, 400, message)
  t.equal(response.json().error.code, 'INVALID_OAUTH_STATE')
}
