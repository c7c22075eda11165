import t from 'tap'
import { DOMAIN_CHALLENGE_PREFIX, DOMAIN_CHALLENGE_VALUE_PREFIX } from '../../../schemas/domains.js'
import { DOMAINS_PER_ORGANIZATION } from '../../../src/services/organizations/domains.js'
import { createAccount } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail, OrganizationHarness, refused } from '../../helpers/organizations.js'
import { dnsServer } from '../../helpers/servers/dns-server.js'

/**
 * Verified domains (docs/api.md, "Verified domains"): a claim is proved by the TXT record it
 * names, looked up on a real DNS server of the test's own; one organization only holds a domain
 * verified; only owners (and a super_admin) change claims, and only a super_admin vouches
 * without DNS.
 */

let domainCounter = 0
/** A domain no other test of this process claims. */
const uniqueDomain = () => `corp-${process.pid}-${domainCounter++}.example`

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const dns = await dnsServer(t)
    const { app, smtp } = await appWithMail(t, backend.url, { resolveTxt: dns.resolveTxt })
    const h = new OrganizationHarness(app, smtp)
    const claim = async (owner: Parameters<OrganizationHarness['call']>[0], organizationId: string, domain: string) =>
      await h.call(owner, 'POST', `/organizations/${organizationId}/domains`, { domain })
    const verify = async (caller: Parameters<OrganizationHarness['call']>[0], organizationId: string, domainId: string, method?: string) =>
      await h.call(caller, 'POST', `/organizations/${organizationId}/domains/${domainId}/verify`, method === undefined ? {} : { method })
    const audited = async (event: string, domainId: string) => (await app.database.db.selectFrom('audit_logs').select(['actor_id', 'details'])
      .where('event', '=', event).execute()).filter((row) => JSON.parse(row.details).domain_id === domainId)

    t.test('a claim names its TXT record; the record proves it, and the answer is then the same without another lookup', async (t) => {
      const { owner, organization } = await h.team('Acme')
      const domain = uniqueDomain()
      const claimed = await claim(owner, organization.id, domain.toUpperCase())
      t.equal(claimed.statusCode, 201)
      const claimData = claimed.json().data
      t.equal(claimed.headers.location, `/api/v1/organizations/${organization.id}/domains/${claimData.id}`)
      t.match(claimData, { domain, verified_at: null, verified_by: null, txt_record_name: `${DOMAIN_CHALLENGE_PREFIX}.${domain}` }, 'stored in lower case')
      t.match(claimData.txt_record_value, new RegExp(`^${DOMAIN_CHALLENGE_VALUE_PREFIX}[A-Za-z0-9_-]{32}$`))
      t.equal((await audited('domain.claimed', claimData.id)).length, 1, 'audited')

      refused(t, await verify(owner, organization.id, claimData.id), 409, 'CONFLICT',
        `No TXT record ${claimData.txt_record_name} holds this claim's value (txt_record_value) yet`)
      t.ok(dns.queries.includes(claimData.txt_record_name), 'asked the DNS server')
      dns.publish(claimData.txt_record_name, `${DOMAIN_CHALLENGE_VALUE_PREFIX}not-this-claims-token`)
      refused(t, await verify(owner, organization.id, claimData.id), 409, 'CONFLICT', undefined)
      // A long value may come in several strings of one record: they are read joined.
      const value: string = claimData.txt_record_value
      dns.publish(claimData.txt_record_name, value.slice(0, 10), value.slice(10))
      const verified = await h.call(owner, 'POST', `/organizations/${organization.id}/domains/${claimData.id}/verify`)
      t.equal(verified.statusCode, 200, `a bare POST verifies by DNS: ${verified.body}`)
      t.match(verified.json().data, { id: claimData.id, domain, verified_by: 'dns', verified_at: String })
      const asked = dns.queries.length
      t.same((await verify(owner, organization.id, claimData.id)).json().data, verified.json().data, 'a verified claim answers as it is')
      t.equal(dns.queries.length, asked, 'without asking DNS again')
      t.match(await audited('domain.verified', claimData.id), [{ actor_id: owner.id }], 'one audit entry')

      const listed = await h.call(owner, 'GET', `/organizations/${organization.id}/domains`)
      t.same(listed.json().data.map((item: { id: string }) => item.id), [claimData.id])
      t.equal((await h.call(owner, 'GET', `/organizations/${organization.id}/domains/${claimData.id}`)).json().data.verified_by, 'dns')
    })

    t.test('one organization only holds a domain verified; others may claim it, and verify it once it is withdrawn', async (t) => {
      const first = await h.team('First')
      const second = await h.team('Second')
      const domain = uniqueDomain()
      const mine = (await claim(first.owner, first.organization.id, domain)).json().data
      const theirs = (await claim(second.owner, second.organization.id, domain)).json().data
      t.not(mine.txt_record_value, theirs.txt_record_value, 'each claim has its own token')
      dns.publish(mine.txt_record_name, mine.txt_record_value)
      dns.publish(theirs.txt_record_name, theirs.txt_record_value)
      t.equal((await verify(first.owner, first.organization.id, mine.id)).statusCode, 200)
      refused(t, await verify(second.owner, second.organization.id, theirs.id), 409, 'CONFLICT', 'Domain verified by another organization')
      t.equal((await h.call(second.owner, 'GET', `/organizations/${second.organization.id}/domains/${theirs.id}`)).json().data.verified_at, null)

      const withdrawn = await h.call(first.owner, 'DELETE', `/organizations/${first.organization.id}/domains/${mine.id}`)
      t.equal(withdrawn.statusCode, 204)
      t.equal((await audited('domain.removed', mine.id)).length, 1, 'audited')
      refused(t, await h.call(first.owner, 'GET', `/organizations/${first.organization.id}/domains/${mine.id}`), 404, 'NOT_FOUND', 'Domain not found')
      t.equal((await verify(second.owner, second.organization.id, theirs.id)).statusCode, 200, 'the domain is free to verify')
    })

    t.test('a claim twice, and claims beyond the limit, are refused', async (t) => {
      const { owner, organization } = await h.team('Hoarder')
      const domain = uniqueDomain()
      t.equal((await claim(owner, organization.id, domain)).statusCode, 201)
      refused(t, await claim(owner, organization.id, domain.toUpperCase()), 409, 'CONFLICT', 'Domain already claimed by this organization')
      for (let index = 1; index < DOMAINS_PER_ORGANIZATION; index++) {
        t.equal((await claim(owner, organization.id, uniqueDomain())).statusCode, 201)
      }
      refused(t, await claim(owner, organization.id, uniqueDomain()), 409, 'CONFLICT', `An organization claims at most ${DOMAINS_PER_ORGANIZATION} domains`)
    })

    t.test('what is not an e-mail domain is refused', async (t) => {
      const { owner, organization } = await h.team('Validation')
      for (const domain of ['acme', 'http://acme.com', 'acme..com', '-acme.com', 'acme.com.', 'ÄCME.com', 'a b.com', `${'a'.repeat(64)}.com`, '*.acme.com']) {
        refused(t, await claim(owner, organization.id, domain), 400, 'VALIDATION_FAILED')
      }
    })

    t.test('only owners change claims; members read them; outsiders learn nothing', async (t) => {
      const { owner, organization, admin, member } = await h.team('Roles')
      const pending = (await claim(owner, organization.id, uniqueDomain())).json().data
      dns.publish(pending.txt_record_name, pending.txt_record_value)
      const outsider = await createAccount(app)
      for (const caller of [admin, member]) {
        refused(t, await claim(caller, organization.id, uniqueDomain()), 403, 'FORBIDDEN')
        refused(t, await verify(caller, organization.id, pending.id), 403, 'FORBIDDEN')
        refused(t, await h.call(caller, 'DELETE', `/organizations/${organization.id}/domains/${pending.id}`), 403, 'FORBIDDEN')
        t.equal((await h.call(caller, 'GET', `/organizations/${organization.id}/domains`)).statusCode, 200)
      }
      for (const [method, path] of [['GET', 'domains'], ['GET', `domains/${pending.id}`], ['POST', `domains/${pending.id}/verify`], ['DELETE', `domains/${pending.id}`]] as const) {
        refused(t, await h.call(outsider, method, `/organizations/${organization.id}/${path}`, method === 'POST' ? {} : undefined), 404, 'NOT_FOUND')
      }
      // Another organization's owner naming this claim under their own organization finds nothing.
      const other = await h.team('Other')
      refused(t, await verify(other.owner, other.organization.id, pending.id), 404, 'NOT_FOUND', 'Domain not found')
      refused(t, await h.call(other.owner, 'DELETE', `/organizations/${other.organization.id}/domains/${pending.id}`), 404, 'NOT_FOUND')
      t.equal((await h.call(owner, 'GET', `/organizations/${organization.id}/domains/${pending.id}`)).json().data.verified_at, null, 'nothing changed')
    })

    t.test('an operator (super_admin) vouches without DNS; an owner cannot', async (t) => {
      const { owner, organization } = await h.team('Vouched')
      const pending = (await claim(owner, organization.id, uniqueDomain())).json().data
      refused(t, await verify(owner, organization.id, pending.id, 'operator'), 403, 'FORBIDDEN', 'Permission denied. Requires: super_admin')
      const operator = await createAccount(app, { roles: ['super_admin'] })
      const asked = dns.queries.length
      const verified = await verify(operator, organization.id, pending.id, 'operator')
      t.equal(verified.statusCode, 200, verified.body)
      t.equal(verified.json().data.verified_by, 'operator')
      t.equal(dns.queries.length, asked, 'no DNS lookup')
      t.match(await audited('domain.verified', pending.id), [{ actor_id: operator.id }])
    })

    t.test('a name server that cannot answer is 503, and the claim stays pending', async (t) => {
      const { owner, organization } = await h.team('Unlucky')
      const pending = (await claim(owner, organization.id, uniqueDomain())).json().data
      dns.fail(pending.txt_record_name)
      refused(t, await verify(owner, organization.id, pending.id), 503, 'SERVICE_UNAVAILABLE',
        `Service unavailable: the DNS lookup of ${pending.txt_record_name} failed; try again`)
      t.equal((await h.call(owner, 'GET', `/organizations/${organization.id}/domains/${pending.id}`)).json().data.verified_at, null)
    })
  })
}
