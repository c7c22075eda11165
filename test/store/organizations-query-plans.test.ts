import { sql } from 'kysely'
import t from 'tap'
import type { CollectionRequest } from '../../src/collection/query.js'
import type { Database } from '../../src/store/database.js'
import { backends, queryPlan } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, page, planChecker, rolledBack, sortsNothing } from '../helpers/query-plans.js'

/**
 * The organization reads the services make, as the repositories build them, read from an index
 * on both databases: no full scan of organization_members, organization_invitations, sessions or
 * refresh_tokens, whose rows grow with every organization and sign-in (docs/api.md, "Organizations").
 */

const WATCHED = [
  'organization_members', 'organization_invitations', 'organization_domains', 'sso_connections', 'sessions', 'refresh_tokens'
] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const BIG = id(1, 0)
const SMALL = id(1, 1)
const tinyOrganization = (index: number) => id(1, 100 + index)

/**
 * 3,000 users; a big organization (2,000 members, joined one second apart), a small one (50)
 * and 100 tiny ones (5 each); 600 invitations; 20 claimed domains of each organization, one in
 * four verified; a session per user, 150 of them speaking for an organization. Enough rows that
 * PostgreSQL's statistics tell its indexes apart.
 */
async function seed ({ db, dialect }: Database) {
  const users = Array.from({ length: 3000 }, (_, index) => ({
    id: userId(index), email: `member-${index}@example.com`, name: `Member ${index}`, email_verified: 1, created_at: at(0), updated_at: at(0)
  }))
  await insertChunked(db, 'users', users)
  const organizations = [BIG, SMALL, ...Array.from({ length: 100 }, (_, index) => tinyOrganization(index))]
  await insertChunked(db, 'organizations', organizations.map((organization, index) =>
    ({ id: organization, name: `Organization ${index}`, slug: `organization-${index}`, created_at: at(index), updated_at: at(index) })))
  const members = [
    ...Array.from({ length: 2000 }, (_, index) =>
      ({ organization_id: BIG, user_id: userId(index), role: index === 0 ? 'owner' : 'member', created_at: at(index) })),
    ...Array.from({ length: 50 }, (_, index) =>
      ({ organization_id: SMALL, user_id: userId(index), role: index === 0 ? 'owner' : 'admin', created_at: at(index) })),
    ...Array.from({ length: 500 }, (_, index) =>
      ({ organization_id: tinyOrganization(index % 100), user_id: userId(2000 + index), role: 'owner', created_at: at(index) }))
  ]
  await insertChunked(db, 'organization_members', members)
  const invitations = Array.from({ length: 600 }, (_, index) => ({
    id: id(2, index),
    organization_id: index < 300 ? BIG : tinyOrganization(index % 100),
    email: `invited-${index}@example.com`,
    role: 'member',
    token_hash: `hash-${index}`,
    invited_by: userId(0),
    created_at: at(index),
    expires_at: at(index + 7 * 86_400)
  }))
  await insertChunked(db, 'organization_invitations', invitations)
  await insertChunked(db, 'organization_domains', organizations.flatMap((organization, index) => Array.from({ length: 20 }, (_, claim) => ({
    id: id(6, index * 20 + claim),
    organization_id: organization,
    domain: `domain-${claim}.organization-${index}.example`,
    verification_token: `token-${index}-${claim}`,
    verified_at: claim % 4 === 0 ? at(claim) : null,
    verified_by: claim % 4 === 0 ? 'dns' as const : null,
    created_at: at(claim)
  }))))
  await insertChunked(db, 'sso_connections', organizations.flatMap((organization, index) => Array.from({ length: 3 }, (_, connection) => ({
    id: id(7, index * 3 + connection),
    organization_id: organization,
    name: `IdP ${connection}`,
    enabled: 1,
    idp_entity_id: `https://idp-${index}-${connection}.example`,
    idp_sso_url: `https://idp-${index}-${connection}.example/sso`,
    idp_certificates: '[]',
    attribute_mapping: '{}',
    role_mapping: '{}',
    default_role: 'member' as const,
    // The first connection of each organization reads its IdP's metadata from a URL, due in turn.
    idp_metadata_url: connection === 0 ? `https://idp-${index}.example/metadata` : null,
    idp_metadata_read_at: connection === 0 ? at(connection) : null,
    idp_metadata_due_at: connection === 0 ? at(index) : null,
    created_at: at(connection),
    updated_at: at(connection)
  }))))
  const sessions = users.map((user, index) => ({
    id: id(3, index),
    user_id: user.id,
    device: '{}',
    created_at: at(index),
    last_used_at: at(index),
    organization_id: index < 100 ? BIG : index < 150 ? SMALL : null
  }))
  await insertChunked(db, 'sessions', sessions)
  await insertChunked(db, 'refresh_tokens', sessions.map((session, index) => ({
    jti: id(4, index),
    session_id: session.id,
    user_id: session.user_id,
    token_hash: `refresh-hash-${index}`,
    device: '{}',
    created_at: at(index),
    expires_at: at(index + 30 * 86_400),
    access_jti: id(5, index),
    organization_id: session.organization_id
  })))
  if (dialect === 'postgres') {
    for (const table of ['users', 'organizations', 'organization_members', 'organization_invitations', 'organization_domains', 'sso_connections', 'sessions', 'refresh_tokens']) {
      await sql`analyze ${sql.table(table)}`.execute(db)
    }
  }
}

for (const backend of backends()) {
  t.test(`organization query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { organizations, invitations, organizationDomains, ssoConnections, sessions } = recorded.repositories
    const { dialect } = database
    await seed(database)

    t.test('the membership check (the role of a user in an organization), by the primary key', async (t) => {
      const membership = dialect === 'sqlite'
        ? /SEARCH \w+ USING (COVERING )?INDEX \w+ \(organization_id=\? AND user_id=\?\)/
        : /organization_members_(pkey|user_id)/
      await checkPlans(t, database, recorded, 'organization_members', async () => {
        t.equal(await organizations.roleOf(BIG, userId(5)), 'member', 'the answer, to be sure the query ran')
      }, membership)
      await checkPlans(t, database, recorded, 'organization_members', async () => {
        t.match(await organizations.member(SMALL, userId(7)), { id: userId(7), role: 'admin' })
      }, membership)
    })

    t.test('the members page of an organization, in joining order, by offset and by cursor', async (t) => {
      const index = /organization_members_organization_id_created_at_user_id/
      const newestFirst = [{ field: 'created_at', descending: true }, { field: 'id', descending: true }]
      const variants: Array<[string, Partial<CollectionRequest>]> = [
        ['offset, oldest first', {}],
        ['offset, newest first', { sort: newestFirst }],
        ['cursor, first page', { pagination: { kind: 'cursor', limit: 20, after: null } }],
        ['cursor, later page', { pagination: { kind: 'cursor', limit: 20, after: [at(1000), userId(1000)] } }],
        ['cursor, newest first', { sort: newestFirst, pagination: { kind: 'cursor', limit: 20, after: [at(1000), userId(1000)] } }]
      ]
      for (const [variant, overrides] of variants) {
        t.test(variant, async (t) => {
          const plans = await checkPlans(t, database, recorded, 'organization_members', async () => {
            const result = await organizations.listMembers(BIG, page(overrides))
            t.equal(result.items.length, 20, 'a full page')
          }, index)
          sortsNothing(t, plans, dialect)
        })
      }
      const later = await organizations.listMembers(BIG, page({ pagination: { kind: 'cursor', limit: 2, after: [at(1000), userId(1000)] } }))
      t.same(later.items.map((member) => member.id), [userId(1001), userId(1002)], 'the cursor page goes on after its row')
    })

    t.test('the organizations of a user, through the user\'s memberships', async (t) => {
      for (const pagination of [{ kind: 'offset', page: 1, limit: 20 }, { kind: 'cursor', limit: 20, after: null }] as const) {
        await checkPlans(t, database, recorded, 'organization_members', async () => {
          const result = await organizations.listOfMember(userId(7), page({ pagination }))
          t.same(result.items.map((organization) => organization.id).sort(), [BIG, SMALL])
        }, /organization_members_user_id/)
      }
    })

    t.test('a search of every organization by name or slug: through their trigram indexes on PostgreSQL', async (t) => {
      const result = await organizations.listAll(userId(0), page({ search: 'organization-42' }))
      t.same(result.items.map((organization) => organization.id), [tinyOrganization(40)], 'the one slug that holds the term')
      if (dialect === 'sqlite') return // no search index over organizations (docs/api.md, "Collections at scale")
      // On 102 organizations the page is cheaper read through the primary key than through the
      // GIN indexes, which cost more to start; the count, which reads every match, takes them,
      // as the page does at scale (docs/performance.md, "Selective searches on PostgreSQL").
      recorded.ran.length = 0
      await organizations.listAll(userId(0), page({ search: 'organization-42' }))
      const count = recorded.ran.find((query) => query.sql.includes('count(*)'))
      if (count === undefined) throw new Error('the page is counted')
      const plan = await queryPlan(database, 'organizations', { compile: () => count })
      for (const index of [/organizations_name_trigram/, /organizations_slug_trigram/]) t.match(plan, index, count.sql)
    })

    t.test('the invitations page of an organization', async (t) => {
      const variants: Array<Partial<CollectionRequest>> = [
        {},
        { pagination: { kind: 'cursor', limit: 20, after: [at(100), id(2, 100)] } },
        { sort: [{ field: 'created_at', descending: true }, { field: 'id', descending: true }] }
      ]
      for (const overrides of variants) {
        const plans = await checkPlans(t, database, recorded, 'organization_invitations', async () => {
          t.equal((await invitations.list(BIG, page(overrides))).items.length, 20)
        }, /organization_invitations_organization_id_created_at_id/)
        sortsNothing(t, plans, dialect)
      }
    })

    t.test('an organization\'s creation counts its creator\'s of the day through an index', async (t) => {
      const { checkPlans: checkOrganizations } = planChecker(['organizations'])
      await checkOrganizations(t, database, recorded, 'organizations', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.match(await organizations.create({ name: 'New', slug: 'new-organization' }, userId(7), at(2000), { max: 10, since: at(0) }, trx), { slug: 'new-organization' })
        })
      }, /organizations_created_by_created_at/)
    })

    t.test('the sessions that speak for an organization and the access tokens issued for it, found after a membership change', async (t) => {
      for (const member of [userId(120), undefined]) {
        await checkPlans(t, database, recorded, 'refresh_tokens', async () => {
          const tokens = await sessions.organizationAccessTokens(SMALL, member, at(0))
          t.equal(tokens.length, member === undefined ? 50 : 1, 'the access tokens to revoke')
        }, /refresh_tokens_organization_id_user_id_created_at/)
        await checkPlans(t, database, recorded, 'sessions', async () => {
          await rolledBack(recorded.db, async (trx) => { await sessions.forgetOrganization(SMALL, member, trx) })
        // One member's few sessions may as well be found through the index of their sessions.
        }, member === undefined ? /sessions_organization_id/ : /sessions_(organization_id|user_id\w*)/)
      }
    })

    t.test('an invitation\'s checks (member, pending, the counts of its limits) and the token\'s lookup', async (t) => {
      const window = { max: 1000, since: at(0) }
      const plans = await checkPlans(t, database, recorded, 'organization_invitations', async () => {
        await rolledBack(recorded.db, async (trx) => {
          const outcome = await invitations.invite(
            { organizationId: BIG, email: 'newcomer@example.com', role: 'member', tokenHash: 'new-hash', invitedBy: userId(0), expiresAt: at(10_000_000) },
            () => ({ channel: 'email', recipient: 'newcomer@example.com', subject: 'Invitation', text: 'Token: x', html: null }),
            at(1000), { organization: window, inviter: window, pair: window, address: window }, trx)
          t.match(outcome, { email: 'newcomer@example.com' }, 'stored (then rolled back)')
        })
      }, /organization_invitations_organization_id_(email|created_at_id)/)
      const all = plans.map(({ plan }) => plan).join('\n')
      t.match(all, /organization_invitations_invited_by_created_at/, 'the inviter\'s count, across organizations, by its index')
      t.match(all, /organization_invitations_email_created_at/, 'the address\'s count, by its index')
      await checkPlans(t, database, recorded, 'organization_invitations', async () => {
        t.match(await invitations.find('hash-42', at(0)), { id: id(2, 42) })
      }, dialect === 'sqlite' ? /SEARCH organization_invitations USING INDEX \w+ \(token_hash=\?\)/ : /organization_invitations_token_hash/)
    })
    t.test('an organization\'s domains: its page, one claim, a new claim\'s count and a verification, through its index', async (t) => {
      const byOrganization = /organization_domains_organization_id_domain/
      // An organization holds at most 20 claims: the page sorts so few in no time, whatever its order.
      for (const overrides of [{}, { sort: [{ field: 'domain', descending: false }, { field: 'id', descending: false }] }]) {
        await checkPlans(t, database, recorded, 'organization_domains', async () => {
          t.equal((await organizationDomains.list(SMALL, page(overrides))).items.length, 20)
        }, byOrganization)
      }
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        t.match(await organizationDomains.find(SMALL, id(6, 25)), { domain: 'domain-5.organization-1.example' })
      }, dialect === 'sqlite' ? /organization_domains_organization_id_domain|sqlite_autoindex_organization_domains_1/ : /organization_domains_(pkey|organization_id_domain)/)
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.match(await organizationDomains.claim(SMALL, { domain: 'new.example', token: 'token', now: at(0), max: 21 }, trx), { domain: 'new.example' })
        })
      }, byOrganization)
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.match(await organizationDomains.markVerified(SMALL, id(6, 25), { method: 'dns', now: at(0) }, trx), { verified_by: 'dns' })
        })
      }, dialect === 'sqlite' ? /organization_domains_organization_id_domain|sqlite_autoindex_organization_domains_1/ : /organization_domains_(pkey|organization_id_domain)/)
    })
    t.test('an SSO sign-in\'s lookups: the organization holding a domain verified, the domain checked for a connection\'s organization, its connections', async (t) => {
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        t.equal(await organizationDomains.verifiedHolderOf('domain-4.organization-7.example'), tinyOrganization(5))
        t.equal(await organizationDomains.verifiedHolderOf('domain-5.organization-7.example'), undefined, 'a pending claim holds nothing')
      }, /organization_domains_verified_domain/)
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        t.equal(await organizationDomains.isVerifiedFor(SMALL, 'domain-8.organization-1.example'), true)
        t.equal(await organizationDomains.isVerifiedFor(BIG, 'domain-8.organization-1.example'), false, 'another organization\'s domain')
      }, /organization_domains_(organization_id_domain|verified_domain)/)
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        t.equal(await organizationDomains.ssoRequiredFor('domain-4.organization-7.example'), false)
      }, /organization_domains_verified_domain/)
      await checkPlans(t, database, recorded, 'organization_domains', async () => {
        t.equal(await organizationDomains.holdsAnyVerified(SMALL), true)
      }, /organization_domains_organization_id_domain/)
      await checkPlans(t, database, recorded, 'sso_connections', async () => {
        t.equal((await ssoConnections.listOf(SMALL)).length, 3)
      }, /sso_connections_organization_id_created_at/)
      await checkPlans(t, database, recorded, 'sso_connections', async () => {
        t.match(await ssoConnections.find(id(7, 4)), { organizationId: SMALL })
      }, dialect === 'sqlite' ? /sqlite_autoindex_sso_connections_1/ : /sso_connections_pkey/)
      await checkPlans(t, database, recorded, 'sso_connections', async () => {
        t.equal((await ssoConnections.metadataDue(at(10), 5)).length, 5)
      }, /sso_connections_idp_metadata_due_at/)
      await checkPlans(t, database, recorded, 'sso_connections', async () => {
        t.equal(await ssoConnections.claimMetadataRead(id(7, 3), at(1), at(3600)), true)
      }, dialect === 'sqlite' ? /sqlite_autoindex_sso_connections_1/ : /sso_connections_pkey/)
    })
  })
}
