import t from 'tap'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { signingKeyPair } from '../../helpers/servers/saml-identity-provider.js'
import { actingAs, buildServices, contextFrom, owner } from '../../helpers/services.js'

/**
 * A domain that requires SSO refuses a password, in the one password proof the API and the
 * authorization server's sign-in page share: whatever form the address is typed in (the page
 * passes its field unvalidated; the API's schema would refuse a space). Signing in by e-mail is
 * refused too, when asking and when answering with a code sent before.
 */

for (const backend of backends()) {
  t.test(`SSO required of a domain (${backend.name})`, async (t) => {
    const fixture = await buildServices(t, backend.url)
    const { services, repositories } = fixture
    const admin = await owner(fixture)
    const organization = await services.organizations.create(actingAs(admin), { name: 'Acme', slug: `acme-${process.pid}` })
    const domain = admin.email.split('@')[1] ?? ''
    const claim = await repositories.organizationDomains.claim(organization.id, { domain, token: 'token', now: new Date().toISOString(), max: 20 })
    if (typeof claim !== 'object' || !('id' in claim)) throw new Error('not claimed')
    await repositories.organizationDomains.markVerified(organization.id, claim.id, { method: 'operator', now: new Date().toISOString() })
    await services.ssoConnections.create(actingAs(admin), organization.id, {
      name: 'IdP', idp_entity_id: 'https://idp.example/saml', idp_sso_url: 'https://idp.example/sso', idp_certificates: [signingKeyPair().certificate]
    })
    const page = contextFrom('192.0.2.9')
    t.match(await services.signIn.proveWithPassword(page, { email: admin.email, password: TEST_PASSWORD }), { userId: admin.id }, 'signs in before')
    // A code sent before SSO was required: read from the delivered message (the request kicks
    // the outbox, which may deliver and remove it before a read of the outbox table).
    await services.emailSignIn.request(page, { email: admin.email })
    await fixture.delivered()
    const message = fixture.sent.find((mail) => mail.to === admin.email && mail.subject.includes('sign-in code'))
    const code = /sign-in code is (\d{6})/.exec(message?.text ?? '')?.[1]
    if (code === undefined) throw new Error('no sign-in code delivered')
    await services.domains.update(actingAs(admin), organization.id, claim.id, { sso_required: true })
    await t.rejects(services.emailSignIn.request(page, { email: admin.email }), { code: 'SSO_REQUIRED' }, 'no code sent')
    await t.rejects(services.signIn.withEmail(page, { email: admin.email, code }), { code: 'SSO_REQUIRED' }, 'a code sent before is refused')
    for (const typed of [admin.email, ` ${admin.email.toUpperCase()} `, `${admin.email}\t`]) {
      await t.rejects(services.signIn.proveWithPassword(page, { email: typed, password: TEST_PASSWORD }), { code: 'SSO_REQUIRED' }, JSON.stringify(typed))
      await t.rejects(services.signIn.withPassword(page, { email: typed, password: TEST_PASSWORD }), { code: 'SSO_REQUIRED' }, JSON.stringify(typed))
    }
  })
}
