import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { SCIM } from '../../../schemas/scim.js'
import { withToken } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail, refused } from '../../helpers/organizations.js'
import { patchOp, ScimHarness } from '../../helpers/scim.js'
import { PUBLIC_URL, SSO_ENV } from '../../helpers/sso.js'

/** SCIM 2.0 provisioning by an organization's directory (docs/api.md, "SCIM provisioning"). */

for (const backend of backends()) {
  t.test(`SCIM provisioning (${suiteName(backend)})`, async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url, { env: SSO_ENV })
    const harness = new ScimHarness(app, smtp)

    t.test('an owner makes the directory: its token is shown once, rotated at will, and only owners manage it', async (t) => {
      const { owner, admin, organization, directory } = await harness.provisioned()
      t.match(directory.token, /^scim_[A-Za-z0-9_-]{43}$/)
      t.equal(directory.base_url, `${PUBLIC_URL}/scim/v2/directories/${directory.id}`)
      const read = await harness.call(owner, 'GET', `/organizations/${organization.id}/scim-directories/${directory.id}`)
      t.equal(read.statusCode, 200)
      t.notOk('token' in read.json().data, 'never shown again')
      t.notOk(JSON.stringify(await app.database.db.selectFrom('scim_directories').selectAll().execute()).includes(directory.token), 'kept only as its hash')
      refused(t, await harness.call(admin, 'POST', `/organizations/${organization.id}/scim-directories`, { name: 'Mine' }), 403, 'FORBIDDEN')
      refused(t, await harness.call(owner, 'POST', `/organizations/${organization.id}/scim-directories`, { name: 'Second' }), 409, 'CONFLICT',
        'An organization holds at most 1 SCIM directory')

      t.equal((await harness.scim(directory, 'GET', '/Users')).statusCode, 200)
      const rotated = await harness.call(owner, 'POST', `/organizations/${organization.id}/scim-directories/${directory.id}/token`)
      t.equal(rotated.statusCode, 200)
      t.equal((await harness.scim(directory, 'GET', '/Users')).statusCode, 401, 'the old token stops at once')
      t.equal((await harness.scim({ id: directory.id, token: rotated.json().data.token }, 'GET', '/Users')).statusCode, 200)
      t.equal((await harness.audited('scim_directory.token_rotated', organization.id)).length, 1)
    })

    t.test('the SCIM routes take only their own directory\'s token, and answer in SCIM\'s error body', async (t) => {
      const { owner, directory } = await harness.provisioned()
      const other = await harness.provisioned()
      const none = await app.inject({ method: 'GET', url: `/scim/v2/directories/${directory.id}/Users` })
      t.equal(none.statusCode, 401)
      t.match(none.headers['content-type'], /^application\/scim\+json/)
      t.same(none.json(), { schemas: [SCIM.error], status: '401', detail: 'Missing token' })
      t.equal((await harness.scim({ id: directory.id, token: other.directory.token }, 'GET', '/Users')).statusCode, 401,
        'another organization\'s directory token')
      t.equal((await harness.scim({ id: directory.id, token: owner.token }, 'GET', '/Users')).statusCode, 401,
        'an owner\'s access token is no directory token')
      const config = await harness.scim(directory, 'GET', '/ServiceProviderConfig')
      t.match(config.json(), {
        patch: { supported: true }, bulk: { supported: false }, filter: { supported: true, maxResults: 100 }
      })
      t.match((await harness.scim(directory, 'GET', '/ResourceTypes')).json().Resources, [{ id: 'User' }, { id: 'Group' }])
      t.match((await harness.scim(directory, 'GET', '/Schemas')).json().Resources, [{ id: SCIM.user }, { id: SCIM.group }])
    })

    t.test('Entra ID\'s requests provision a person, map a group to a role, deactivate, reactivate and delete', async (t) => {
      const { organization, directory, domain, member } = await harness.provisioned({ 'Acme Admins': 'admin' })
      const address = ScimHarness.address(domain, 'Ada.Lovelace')
      // Entra ID's documented create (its userName is the UPN; the address is in emails).
      const created = await harness.scim(directory, 'POST', '/Users', {
        schemas: [SCIM.user, SCIM.enterpriseUser],
        externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
        userName: address,
        active: true,
        emails: [{ primary: true, type: 'work', value: address }],
        meta: { resourceType: 'User' },
        name: { formatted: 'Ada Lovelace', familyName: 'Lovelace', givenName: 'Ada' },
        roles: [],
        [SCIM.enterpriseUser]: { department: 'Engines' }
      })
      t.equal(created.statusCode, 201, created.body)
      t.match(created.headers['content-type'], /^application\/scim\+json/)
      const user = created.json()
      t.match(user, { id: String, userName: address, active: true, externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef', [SCIM.enterpriseUser]: { department: 'Engines' } })
      t.equal(created.headers.location, user.meta.location)
      const account = await app.repositories.users.findByEmail(address.toLowerCase())
      t.ok(account?.email_verified, 'the account is made with its address vouched for')
      t.equal(account?.name, 'Ada Lovelace')
      t.equal(account?.password_hash, null)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), 'member', 'joins with the default role')

      // Entra ID looks a person up by userName before creating them.
      const found = await harness.scim(directory, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${address.toUpperCase()}"`)}`)
      t.match(found.json(), {
        schemas: [SCIM.listResponse], totalResults: 1, startIndex: 1, itemsPerPage: 1, Resources: [{ id: user.id }]
      })
      refused409(t, await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: address.toUpperCase(), emails: [{ value: address }] }))
      // RFC 7644 §3.4.2.4: a startIndex below 1 is read as 1, a negative count as 0.
      t.match((await harness.scim(directory, 'GET', '/Users?startIndex=-5&count=1')).json(), { totalResults: 1, startIndex: 1, itemsPerPage: 1 })
      t.match((await harness.scim(directory, 'GET', '/Users?count=-1')).json(), { totalResults: 1, itemsPerPage: 0, Resources: [] })

      // Entra ID's group: made without members, found by displayName without them, then added to.
      const group = await harness.scim(directory, 'POST', '/Groups', {
        schemas: [SCIM.group, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/Group'],
        externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
        displayName: 'Acme Admins',
        meta: { resourceType: 'Group' }
      })
      t.equal(group.statusCode, 201, group.body)
      const groupId = group.json().id
      const listed = await harness.scim(directory, 'GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "Acme Admins"')}`)
      t.same(listed.json().Resources.map((item: Record<string, unknown>) => [item.id, 'members' in item]), [[groupId, false]])
      const memberAccess = (await harness.selected(member, organization.id)).access_token
      const added = await harness.scim(directory, 'PATCH', `/Groups/${groupId}`,
        patchOp({ op: 'Add', path: 'members', value: [{ $ref: null, value: user.id }] }))
      t.equal(added.statusCode, 200, added.body)
      t.same(added.json().members, [{ value: user.id, display: address.toLowerCase() }])
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), 'admin', 'the group maps to admin')
      // Entra ID removes a member by value, without a filter.
      const removed = await harness.scim(directory, 'PATCH', `/Groups/${groupId}`,
        patchOp({ op: 'Remove', path: 'members', value: [{ $ref: null, value: user.id }] }))
      t.same(removed.json().members, [], removed.body)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), 'member', 'the role follows')
      await harness.scim(directory, 'PATCH', `/Groups/${groupId}`, patchOp({ op: 'Add', path: 'members', value: [{ value: user.id }] }))

      // Entra ID's updates, then its disable with the string "False" (its non-compliant mode).
      const updated = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp(
        { op: 'Replace', path: 'name.familyName', value: 'Byron' },
        { op: 'Replace', path: 'displayName', value: 'Ada Byron' },
        { op: 'Replace', path: `${SCIM.enterpriseUser}:department`, value: 'Analytical Engines' }
      ))
      t.equal(updated.statusCode, 200, updated.body)
      t.match(updated.json(), { name: { familyName: 'Byron' }, displayName: 'Ada Byron', active: true })
      t.equal((await app.repositories.users.findById(account?.id ?? ''))?.name, 'Ada Byron', 'the account\'s name follows')

      const disabled = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'Replace', path: 'active', value: 'False' }))
      t.equal(disabled.statusCode, 200, disabled.body)
      t.equal(disabled.json().active, false)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), undefined, 'the membership ends')
      t.equal((await app.inject(withToken(memberAccess, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'others keep theirs')

      const enabled = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'Replace', path: 'active', value: 'True' }))
      t.equal(enabled.json().active, true)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), 'admin', 'rejoins with the role of its groups')

      t.equal((await harness.scim(directory, 'DELETE', `/Users/${user.id}`)).statusCode, 204)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), undefined)
      t.equal((await harness.scim(directory, 'GET', `/Users/${user.id}`)).statusCode, 404)
      t.ok(await app.repositories.users.findById(account?.id ?? ''), 'the account stays')
      const events = (await app.database.db.selectFrom('audit_logs').select('event').where('target_id', '=', account?.id ?? '')
        .orderBy('created_at').orderBy('id').execute()).map((row) => row.event)
      t.same(events.filter((event) => event.startsWith('scim.') || event.startsWith('membership.')), [
        'scim.user_created', 'membership.added', 'membership.role_changed', 'membership.role_changed', 'membership.role_changed',
        'scim.user_updated', 'scim.user_deactivated',
        'membership.removed', 'scim.user_reactivated', 'membership.added', 'scim.user_deleted', 'membership.removed'
      ])
    })

    t.test('Okta\'s requests: a password is dropped, groups are replaced and members removed by filter, deactivation by value', async (t) => {
      const { organization, directory, domain } = await harness.provisioned({ Engineering: 'admin' })
      const address = ScimHarness.address(domain, 'test.user')
      // Okta's documented create, with the password it sends when password sync is on.
      const created = await harness.scim(directory, 'POST', '/Users', {
        schemas: [SCIM.user],
        userName: address,
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: address, type: 'work' }],
        displayName: 'Test User',
        locale: 'en-US',
        externalId: '00ujl29u0le5T6Aj10h7',
        groups: [],
        password: '1mz050nq',
        active: true
      }, 'application/json')
      t.equal(created.statusCode, 201, created.body)
      const user = created.json()
      t.notOk('password' in user, 'never answered')
      t.notOk((await app.database.db.selectFrom('scim_users').select('resource').where('id', '=', user.id).executeTakeFirst())?.resource.includes('1mz050nq'),
        'never kept')

      const page = await harness.scim(directory, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${address}"`)}&startIndex=1&count=100`)
      t.equal(page.json().totalResults, 1)
      const group = await harness.scim(directory, 'POST', '/Groups', { schemas: [SCIM.group], displayName: 'Test SCIMv2', members: [] })
      const groupId = group.json().id
      const renamed = await harness.scim(directory, 'PATCH', `/Groups/${groupId}`, patchOp(
        { op: 'replace', value: { id: groupId, displayName: 'Engineering' } }
      ))
      t.equal(renamed.json().displayName, 'Engineering')
      await harness.scim(directory, 'PATCH', `/Groups/${groupId}`, patchOp({ op: 'add', path: 'members', value: [{ value: user.id, display: address }] }))
      const accountId = (await app.repositories.users.findByEmail(address))?.id ?? ''
      t.equal(await harness.roleOf(organization.id, accountId), 'admin')
      const removed = await harness.scim(directory, 'PATCH', `/Groups/${groupId}`, patchOp({ op: 'remove', path: `members[value eq "${user.id}"]` }))
      t.equal(removed.statusCode, 200, removed.body)
      t.same(removed.json().members, [])
      t.equal(await harness.roleOf(organization.id, accountId), 'member', 'back to the default role')

      // Okta's profile update is a PUT of the whole user.
      const put = await harness.scim(directory, 'PUT', `/Users/${user.id}`, {
        ...user, name: { givenName: 'Tess', familyName: 'User' }, displayName: 'Tess User'
      })
      t.equal(put.statusCode, 200, put.body)
      t.equal((await app.repositories.users.findById(accountId))?.name, 'Tess User')
      const deactivated = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', value: { active: false } }))
      t.equal(deactivated.json().active, false)
      t.equal(await harness.roleOf(organization.id, accountId), undefined)
      t.equal((await harness.scim(directory, 'DELETE', `/Groups/${groupId}`)).statusCode, 204)
      t.equal((await harness.scim(directory, 'GET', `/Groups/${groupId}`)).statusCode, 404)
    })

    t.test('the account-claiming rule: provisioning an unclaimed account claims it and removes its password', async (t) => {
      const { organization, directory, domain } = await harness.provisioned()
      const address = ScimHarness.address(domain)
      const squatter = await harness.accountAt(address, false)
      const created = await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: address })
      t.equal(created.statusCode, 201, created.body)
      t.equal((await app.repositories.users.findById(squatter.id))?.email_verified, true)
      t.equal(await app.repositories.users.findPasswordHash(squatter.id), null, 'the first registrant\'s password is gone')
      t.equal((await app.inject(withToken(squatter.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401, 'and their sessions')
      t.equal(await harness.roleOf(organization.id, squatter.id), 'member')
      t.equal((await harness.audited('account.claimed')).filter((row) => row.target_id === squatter.id).length, 1)
    })

    t.test('a person the directory deactivated signs in through the organization\'s IdP no more', async (t) => {
      const { owner, organization, connection, idp, spMetadata, domain } = await harness.connected()
      const made = await harness.call(owner, 'POST', `/organizations/${organization.id}/scim-directories`, { name: 'Directory' })
      const directory = made.json().data
      const email = ScimHarness.address(domain)
      const user = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: email })).json()
      const signIn = async () => {
        const started = await harness.start(connection.id)
        const response = await idp.respond(spMetadata, { nameId: email, inResponseTo: started.requestId })
        return ScimHarness.back(await harness.acs(connection.id, response, started.relayState))
      }
      t.ok((await signIn()).searchParams.get('code'), 'signs in while active')
      await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
      t.equal((await signIn()).searchParams.get('error'), 'SSO_RESPONSE_REJECTED')
      const account = await app.repositories.users.findByEmail(email)
      t.equal(await harness.roleOf(organization.id, account?.id ?? ''), undefined, 'no membership made just in time')
      const rejected = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed')
        .where('details', 'like', '%deactivated this person%').execute()
      t.equal(rejected.length, 1, 'audited with its reason')
    })

    t.test('a deactivated person joins through no invitation; a deactivation needs no verified domain', async (t) => {
      const { owner, organization, directory, domain } = await harness.provisioned()
      const person = await harness.accountAt(ScimHarness.address(domain))
      const { token } = await harness.invite(owner, organization.id, person.email, 'admin')
      // Provisioned inactive: a member already would leave; this one is none yet.
      const user = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: person.email, active: false })).json()
      t.equal(user.active, false)
      refused(t, await harness.accept(person, token), 409, 'CONFLICT',
        'The organization\'s directory deactivated this account: it joins once the directory reactivates it')
      t.equal(await harness.roleOf(organization.id, person.id), undefined)

      await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: true }))
      t.equal(await harness.roleOf(organization.id, person.id), 'member')
      const claim = await app.database.db.selectFrom('organization_domains').select('id').where('organization_id', '=', organization.id)
        .executeTakeFirstOrThrow()
      t.equal((await harness.call(owner, 'DELETE', `/organizations/${organization.id}/domains/${claim.id}`)).statusCode, 204)
      const off = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
      t.equal(off.statusCode, 200, 'the domain withdrawn, the person still leaves')
      t.equal(await harness.roleOf(organization.id, person.id), undefined)
    })

    t.test('PATCH operations that would reach a prototype, or do not apply, are refused', async (t) => {
      const { directory, domain } = await harness.provisioned()
      const user = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: ScimHarness.address(domain) })).json()
      const group = (await harness.scim(directory, 'POST', '/Groups', { schemas: [SCIM.group], displayName: 'Team' })).json()
      for (const operation of [
        { op: 'add', path: '__proto__.polluted', value: 'yes' },
        { op: 'replace', path: 'constructor.prototype.polluted', value: 'yes' },
        { op: 'add', path: 'name.__proto__.polluted', value: 'yes' },
        { op: 'replace', value: { 'constructor.prototype.polluted': 'yes' } },
        { op: 'replace', value: { name: { constructor: { prototype: { polluted: 'yes' } } } } },
        // Inherited names lead out of the resource too: onto functions and prototypes every object shares.
        { op: 'add', value: { 'hasOwnProperty.call': 1 } },
        { op: 'add', path: 'toString.polluted', value: 'yes' },
        { op: 'add', path: 'userName.charAt.polluted', value: 'yes' },
        { op: 'add', path: 'emails.push.polluted', value: 'yes' },
        { op: 'replace', value: { name: { valueOf: { polluted: 'yes' } } } }
      ]) {
        for (const target of [`/Users/${user.id}`, `/Groups/${group.id}`]) {
          const answer = await harness.scim(directory, 'PATCH', target, patchOp(operation))
          t.equal(answer.statusCode, 400, `${target.split('/')[1]}: ${JSON.stringify(operation)}`)
        }
      }
      t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched')
      t.equal(typeof Object.prototype.hasOwnProperty.call, 'function', 'Function.prototype.call untouched')
      const sharedFunctions = [
        Object.prototype.toString, String.prototype.charAt, Array.prototype.push, Object.prototype.valueOf
      ]
      for (const shared of sharedFunctions) {
        t.equal((shared as unknown as Record<string, unknown>).polluted, undefined, `${shared.name} untouched`)
      }
      const emptied = await harness.scim(directory, 'PATCH', `/Groups/${group.id}`, patchOp({ op: 'replace', path: 'members', value: null }))
      t.same(emptied.json().members, [], 'members replaced by null: none')
      const stray = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'remove', path: 'emails[type eq "home"].value' }))
      t.ok(stray.statusCode < 500, `an operation scim-patch cannot apply: ${stray.statusCode}`)
      const shouted = await harness.scim(directory, 'PUT', `/Users/${user.id}`, { ...user, PASSWORD: 'Sh0uted-Secret' })
      t.equal(shouted.statusCode, 200)
      t.notOk(shouted.body.includes('Sh0uted-Secret'), 'a password in any case is dropped')
    })

    t.test('a person whose account moved to an address elsewhere is not brought back, nor renamed', async (t) => {
      const { organization, directory, domain } = await harness.provisioned()
      const person = await harness.accountAt(ScimHarness.address(domain))
      const user = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: person.email })).json()
      await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
      // The person changes their account's address to one of another organization (or their own).
      const moved = `${person.id.slice(0, 8)}@elsewhere.example`
      await app.database.db.updateTable('users').set({ email: moved }).where('id', '=', person.id).execute()
      const back = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: true }))
      t.equal(back.statusCode, 400, back.body)
      t.match(back.json(), { scimType: 'invalidValue', detail: /no longer at one of the organization's verified domains/ })
      t.equal(await harness.roleOf(organization.id, person.id), undefined, 'no membership')
      const renamed = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'displayName', value: 'Renamed By A' }))
      t.equal(renamed.statusCode, 200, 'the User itself may change')
      t.not((await app.repositories.users.findById(person.id))?.name, 'Renamed By A', 'the account keeps its name')
    })

    t.test('a name with control characters is kept as a provider\'s is: spaces in their place', async (t) => {
      const { directory, domain } = await harness.provisioned()
      const userName = ScimHarness.address(domain)
      const created = await harness.scim(directory, 'POST', '/Users', {
        schemas: [SCIM.user], userName, displayName: 'Ada\u001b[31m\r\nInjected\u0007'
      })
      t.equal(created.statusCode, 201, created.body)
      const account = await app.repositories.users.findByEmail(userName)
      t.equal(account?.name, 'Ada [31m Injected')
    })

    t.test('refusals, each in SCIM\'s error body', async (t) => {
      const { owner, organization, directory, domain } = await harness.provisioned()
      const outside = await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: 'someone@elsewhere.example' })
      t.equal(outside.statusCode, 400)
      t.match(outside.json(), { schemas: [SCIM.error], status: '400', scimType: 'invalidValue', detail: /elsewhere\.example is not one of the organization's verified domains/ })
      t.equal((await app.repositories.users.findByEmail('someone@elsewhere.example')), undefined, 'no account made')
      const notAddress = await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: 'jdoe' })
      t.match(notAddress.json(), { status: '400', scimType: 'invalidValue' })
      const filter = await harness.scim(directory, 'GET', `/Users?filter=${encodeURIComponent('name.familyName gt "A"')}`)
      t.match(filter.json(), { status: '400', scimType: 'invalidFilter' })
      const broken = await harness.scim(directory, 'GET', `/Users?filter=${encodeURIComponent('userName eq')}`)
      t.match(broken.json(), { status: '400', scimType: 'invalidFilter' })
      const syntax = await app.inject(withToken(directory.token, {
        method: 'POST', url: `/scim/v2/directories/${directory.id}/Users`, headers: { 'content-type': 'application/scim+json' }, payload: '{"userName":'
      }))
      t.match(syntax.json(), { status: '400', scimType: 'invalidSyntax' })
      t.equal((await harness.scim(directory, 'GET', '/Users/not-an-id')).statusCode, 404)
      t.equal((await harness.scim(directory, 'GET', '/Users/0193b5a2-7c1e-7d40-9a6b-2f1c8e4d3a90')).statusCode, 404)
      const unknownMember = await harness.scim(directory, 'POST', '/Groups', {
        schemas: [SCIM.group], displayName: 'Ghosts', members: [{ value: '0193b5a2-7c1e-7d40-9a6b-2f1c8e4d3a90' }]
      })
      t.match(unknownMember.json(), { status: '400', scimType: 'invalidValue', detail: /not users of this directory/ })
      const badOp = await harness.scim(directory, 'PATCH', '/Groups/0193b5a2-7c1e-7d40-9a6b-2f1c8e4d3a90', patchOp({ op: 'move', path: 'x' }))
      t.equal(badOp.statusCode, 400)

      // The organization's only owner, provisioned and then deactivated, keeps the organization owned.
      const ownerUser = await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: owner.email, active: true })
      t.equal(ownerUser.statusCode, 400, 'the owner\'s address is not at the verified domain')
      const boss = await harness.accountAt(ScimHarness.address(domain, 'boss'))
      await app.database.db.updateTable('organization_members').set({ role: 'member' }).where('organization_id', '=', organization.id)
        .where('user_id', '=', owner.id).execute()
      await app.database.db.insertInto('organization_members')
        .values({ organization_id: organization.id, user_id: boss.id, role: 'owner', created_at: new Date().toISOString() }).execute()
      const bossUser = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: boss.email })).json()
      const last = await harness.scim(directory, 'PATCH', `/Users/${bossUser.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
      t.equal(last.statusCode, 409)
      t.match(last.json(), { scimType: 'uniqueness', detail: /last owner/ })
      t.equal((await harness.scim(directory, 'GET', `/Users/${bossUser.id}`)).json().active, true, 'nothing changed')
    })
  })
}

function refused409 (t: Test, response: LightMyRequestResponse) {
  t.equal(response.statusCode, 409)
  t.match(response.json(), { schemas: [SCIM.error], status: '409', scimType: 'uniqueness' })
}
