import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { type Account, claimsOf, createAccount, signIn, TEST_PASSWORD, uniqueEmail, withToken } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { within } from '../helpers/clock.js'
import { backends, freshDatabaseUrl } from '../helpers/database.js'

/** Sends every request at once, alternating between the instances, as a load balancer would. */
async function together (apps: FastifyInstance[], requests: InjectOptions[]): Promise<LightMyRequestResponse[]> {
  return await Promise.all(requests.map(async (options, index) =>
    await (apps[index % apps.length] as FastifyInstance).inject(options)))
}

function statuses (responses: LightMyRequestResponse[]): number[] {
  return responses.map((response) => response.statusCode)
}

function errorCode (response: LightMyRequestResponse): string | undefined {
  return response.statusCode >= 400 ? response.json().error.code : undefined
}

const refresh = (token: string): InjectOptions => ({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })

/**
 * Wraps the next call of `object[method]` in `around`, which decides when the call itself
 * runs: the way to land a concurrent change at one exact point inside a request. Later
 * calls are untouched.
 */
function aroundNextCall<T extends object, K extends keyof T> (
  t: Test,
  object: T,
  method: K,
  around: (call: () => Promise<unknown>) => Promise<unknown>
): void {
  const original = object[method] as (...args: unknown[]) => Promise<unknown>
  const restore = () => { object[method] = original as T[K] }
  object[method] = (async (...args: unknown[]) => {
    restore()
    return await around(async () => await original.apply(object, args))
  }) as T[K]
  t.teardown(restore)
}

/**
 * Holds each call of `method` on any of `objects` until `count` calls have arrived, then lets
 * them all run at once: the way to make requests that would otherwise pass that point one by
 * one overlap there (over several instances: none runs before all have arrived).
 */
function gatherCalls<T extends object, K extends keyof T> (t: Test, objects: T[], method: K, count: number): void {
  let arrived = 0
  let release: () => void = () => {}
  const everyone = new Promise<void>((resolve) => { release = resolve })
  for (const object of objects) {
    const original = object[method] as (...args: unknown[]) => Promise<unknown>
    object[method] = (async (...args: unknown[]) => {
      if (++arrived >= count) release()
      await within(`${count} calls of ${String(method)} gathered`, 10_000, everyone)
      return await original.apply(object, args)
    }) as T[K]
    t.teardown(() => { object[method] = original as T[K] })
  }
}

/** What is left in the store that belongs to the user, table by table. */
async function leftovers (
  app: FastifyInstance,
  userId: string,
  postIds: string[] = []
): Promise<Record<string, number>> {
  const { db } = app.database
  const byUser = ['user_roles', 'sessions', 'refresh_tokens', 'sign_in_failures', 'lockouts', 'trusted_devices', 'mfa_backup_codes', 'user_identities'] as const
  const counts: Record<string, number> = {}
  for (const table of byUser) {
    counts[table] = (await db.selectFrom(table).select('user_id').where('user_id', '=', userId).execute()).length
  }
  counts.users = (await db.selectFrom('users').select('id').where('id', '=', userId).execute()).length
  counts.posts = (await db.selectFrom('posts').select('id').where('author_id', '=', userId).execute()).length
  counts.comments = (await db.selectFrom('comments').select('id')
    .where((eb) => eb.or([eb('author_id', '=', userId), ...(postIds.length > 0 ? [eb('post_id', 'in', postIds)] : [])])).execute()).length
  return counts
}

const NOTHING_LEFT = {
  user_roles: 0,
  sessions: 0,
  refresh_tokens: 0,
  sign_in_failures: 0,
  lockouts: 0,
  trusted_devices: 0,
  mfa_backup_codes: 0,
  user_identities: 0,
  users: 0,
  posts: 0,
  comments: 0
}

async function roleRows (app: FastifyInstance, userId: string): Promise<string[]> {
  const rows = await app.database.db.selectFrom('user_roles').select('role').where('user_id', '=', userId).execute()
  return rows.map((row) => row.role).sort()
}

/** The refresh tokens of the session that issued `accessToken`, oldest first, with the session's state. */
async function family (app: FastifyInstance, accessToken: string) {
  const jti = claimsOf(accessToken).jti as string
  const { db } = app.database
  const { session_id: sessionId } = await db.selectFrom('refresh_tokens').select('session_id').where('access_jti', '=', jti).executeTakeFirstOrThrow()
  const tokens = await db.selectFrom('refresh_tokens').select(['spent_at', 'revoked_at']).where('session_id', '=', sessionId).orderBy('created_at').execute()
  const session = await db.selectFrom('sessions').select(['revoked_at', 'revoked_reason']).where('id', '=', sessionId).executeTakeFirstOrThrow()
  return { sessionId, tokens, session }
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    // Two instances on one database (on PostgreSQL each with its own pool of connections):
    // every test spreads its requests over both. Racing writes go over one on SQLite: a write
    // and its audit entry share a transaction that spans awaits, and two instances in one
    // process on one file would wait on each other's locks with the thread both run on.
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const apps: [FastifyInstance, FastifyInstance] = [await build(t, { databaseUrl }), await build(t, { databaseUrl })]
    const [app] = apps
    const writers = backend.url === null ? [app] : apps
    const admin = await createAccount(app, { roles: ['super_admin'] })
    const deleteUser = async (id: string) => {
      const response = await apps[1].inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${id}` }))
      if (response.statusCode !== 204) throw new Error(response.body)
    }

    t.test('parallel registrations of one e-mail: one 201, the others 409, one stored user', async (t) => {
      const email = uniqueEmail('race')
      const password = TEST_PASSWORD
      // Some in upper case: addresses are unique regardless of case.
      const responses = await together(writers, Array.from({ length: 8 }, (_, index) => ({
        method: 'POST' as const, url: '/api/v1/users', payload: { email: index % 3 === 0 ? email.toUpperCase() : email, name: `Racer ${index}`, password }
      })))
      const created = responses.filter((response) => response.statusCode === 201)
      t.equal(created.length, 1, 'exactly one registration succeeds')
      for (const response of responses.filter((candidate) => candidate.statusCode !== 201)) {
        t.equal(response.statusCode, 409)
        t.same(response.json(), { error: { code: 'EMAIL_ALREADY_REGISTERED', message: 'Email already registered' } })
      }
      const user = created[0]?.json().data
      const stored = await app.database.db.selectFrom('users').select(['id', 'name']).where('email', '=', email.toLowerCase()).execute()
      t.same(stored, [{ id: user.id, name: user.name }], 'one row, the one answered 201')
      t.same(await roleRows(app, user.id), ['user'], 'with its role, once')
      t.equal((await apps[1].inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })).statusCode, 200, 'the account works')
    })

    t.test('parallel refreshes of one refresh token: every request answered the same pair, one rotation, the session lives on', async (t) => {
      // Of concurrent refreshes of one token, one spends it and the others get the pair it was
      // spent for (docs/api.md, "Sessions"). Every request, on either instance, reaches the
      // spend before any has spent it. Several rounds, since the interleaving differs from one
      // to the next.
      const account = await createAccount(app)
      for (let round = 1; round <= 6; round++) {
        const instance = apps[round % 2] as FastifyInstance
        const pair = await signIn(instance, account)
        // Each request reaches the rotation (SessionsRepository.rotate) before any has rotated.
        gatherCalls(t, writers.map((each) => each.repositories.sessions), 'rotate', 6)
        const responses = await together(writers, Array.from({ length: 6 }, () => refresh(pair.refresh_token)))
        t.same(statuses(responses), Array(6).fill(200), `round ${round}: every request answered`)
        const issued = responses[0]?.json().data
        t.same(new Set(responses.map((response) => response.body)), new Set([responses[0]?.body]), `round ${round}: with one pair`)
        const { sessionId, tokens, session } = await family(app, issued.access_token)
        t.same(session, { revoked_at: null, revoked_reason: null }, `round ${round}: the session lives on`)
        t.equal(tokens.length, 2, `round ${round}: the presented token and one successor`)
        t.ok(
          tokens[0]?.spent_at !== null && tokens[1]?.spent_at === null &&
            tokens.every((token) => token.revoked_at === null),
          `round ${round}: the presented token spent, its successor live`
        )
        const listed = await apps[1].inject(withToken(issued.access_token, { method: 'GET', url: '/api/v1/auth/sessions?limit=100' }))
        t.equal(listed.json().data.filter((entry: { id: string }) => entry.id === sessionId).length, 1, `round ${round}: listed once`)
        t.equal((await instance.inject(refresh(issued.refresh_token))).statusCode, 200, `round ${round}: the new refresh token works`)
      }
    })

    t.test('both instances answer a retried refresh with the pair the token was spent for', async (t) => {
      // With Redis too, when there is one to share: the kept pair lives in the database either way.
      const redisUrl = process.env.TEST_REDIS_URL
      const instances = redisUrl === undefined || redisUrl === ''
        ? apps
        : [
            await build(t, { databaseUrl, env: { REDIS_URL: redisUrl } }),
            await build(t, { databaseUrl, env: { REDIS_URL: redisUrl } })
          ]
      const account = await createAccount(app)
      const pair = await signIn(app, account)
      const rotated = await apps[0].inject(refresh(pair.refresh_token))
      t.equal(rotated.statusCode, 200)
      const retried = await together(instances, [refresh(pair.refresh_token), refresh(pair.refresh_token)])
      t.same(retried.map((response) => response.body), [rotated.body, rotated.body], 'each instance answers the same pair')
      t.equal((await family(app, rotated.json().data.access_token)).tokens.length, 2, 'and records no other')
      t.equal((await apps[1].inject(refresh(rotated.json().data.refresh_token))).statusCode, 200, 'the pair\'s refresh token rotates on the other instance')
      t.equal(errorCode(await apps[0].inject(refresh(pair.refresh_token))), 'TOKEN_REUSED', 'once it is spent, the first token is reuse')
      t.match((await family(app, rotated.json().data.access_token)).session, { revoked_at: String, revoked_reason: 'reuse' }, 'which ends the session')
    })

    /**
     * A first refresh of `token` that stops just before its rotation until a second refresh has
     * arrived and read the token unspent; the second then tries to spend it after the first has.
     */
    async function raceOnRotate (
      t: Test,
      instance: FastifyInstance,
      token: string
    ): Promise<[LightMyRequestResponse, LightMyRequestResponse]> {
      const { sessions } = instance.repositories
      let second: Promise<LightMyRequestResponse> | undefined
      let firstRotation: Promise<unknown> | undefined
      const rotate = sessions.rotate.bind(sessions) as (...args: unknown[]) => Promise<unknown>
      t.teardown(() => { Reflect.deleteProperty(sessions, 'rotate') })
      Object.assign(sessions, {
        rotate: async (...args: unknown[]) => {
          if (firstRotation === undefined) {
            firstRotation = (async () => {
              const secondRead = new Promise<void>((resolve) => {
                aroundNextCall(t, sessions, 'findByTokenHash', async (call) => { const found = await call(); resolve(); return found })
              })
              second = instance.inject(refresh(token))
              await secondRead
              return await rotate(...args)
            })()
            return await firstRotation
          }
          await firstRotation
          return await rotate(...args)
        }
      })
      const first = await instance.inject(refresh(token))
      return [first, await second as LightMyRequestResponse]
    }

    t.test('a refresh that read the token before another spent it gets the kept pair; with retries off it is reuse', async (t) => {
      const account = await createAccount(app)
      const pair = await signIn(app, account)
      const [first, second] = await raceOnRotate(t, app, pair.refresh_token)
      t.equal(first.statusCode, 200, 'the first refresh gets the pair')
      t.equal(second.body, first.body, 'the second gets it too')
      t.same((await family(app, pair.access_token)).session, { revoked_at: null, revoked_reason: null }, 'the session lives on')
      t.equal((await app.inject(refresh(first.json().data.refresh_token))).statusCode, 200, 'and its new refresh token works')

      // With retries off no pair answers the loser: a spent token is reuse, and the session ends
      // (docs/api.md, "Sessions").
      const withoutRetries = await build(t, { databaseUrl, env: { REFRESH_RETRY_WINDOW_S: '0' } })
      const other = await signIn(withoutRetries, account)
      const [winner, loser] = await raceOnRotate(t, withoutRetries, other.refresh_token)
      t.equal(winner.statusCode, 200, 'retries off: the first refresh gets the pair')
      t.equal(errorCode(loser), 'TOKEN_REUSED', 'retries off: the second is refused as reuse')
      t.match((await family(app, other.access_token)).session, { revoked_at: String, revoked_reason: 'reuse' }, 'retries off: the session ends')
      t.equal(errorCode(await withoutRetries.inject(refresh(winner.json().data.refresh_token))), 'TOKEN_REUSED', 'retries off: the winner\'s refresh token is refused too')
      t.equal(errorCode(await withoutRetries.inject(withToken(winner.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))), 'INVALID_TOKEN',
        'retries off: and its access token is revoked')
    })

    t.test('a logout landing inside a refresh of its session: no usable access token comes out', async (t) => {
      const account = await createAccount(app)
      const me = (token: string) => apps[1].inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))
      const logout = async (accessToken: string) => {
        const response = await apps[1].inject(withToken(accessToken, { method: 'POST', url: '/api/v1/auth/logout' }))
        if (response.statusCode !== 204) throw new Error(response.body)
      }

      // Between the refresh's read and its spend (SessionsRepository.rotate, which stores the
      // rotation with its audit entry): invalid, not a reuse.
      const before = await signIn(app, account)
      aroundNextCall(t, app.repositories.sessions, 'rotate', async (call) => { await logout(before.access_token); return await call() })
      const refused = await app.inject(refresh(before.refresh_token))
      t.equal(errorCode(refused), 'INVALID_TOKEN', 'ended before the new pair is recorded: no pair')

      const after = await signIn(app, account)
      aroundNextCall(t, app.repositories.sessions, 'rotate', async (call) => { const rotated = await call(); await logout(after.access_token); return rotated })
      const rotated = await app.inject(refresh(after.refresh_token))
      t.equal(rotated.statusCode, 200, 'ended just after: the pair was answered')
      t.equal(errorCode(await me(rotated.json().data.access_token)), 'INVALID_TOKEN', 'but the logout revoked its access token')
      t.equal(errorCode(await app.inject(refresh(rotated.json().data.refresh_token))), 'INVALID_TOKEN', 'and its refresh token')
      t.equal(errorCode(await app.inject(refresh(after.refresh_token))), 'INVALID_TOKEN', 'and a retry of the spent one gets no pair')
      const reuses = await app.database.db.selectFrom('audit_logs').select('id').where('event', '=', 'auth.token_reused').where('target_id', '=', account.id).execute()
      t.same(reuses, [], 'no reuse recorded')
    })

    t.test('an access token\'s revocation lasts until the token expires, however late in its second it was signed', async (t) => {
      const account = await createAccount(app)
      // The access token is signed only once the clock has passed into the next second: signed
      // with the clock of that moment, it would outlive a revocation counted from the instant
      // the session is recorded under.
      const { tokens } = app
      const issue = tokens.issueAccessToken
      const restore = () => { tokens.issueAccessToken = issue }
      t.teardown(restore)
      tokens.issueAccessToken = (...args) => {
        restore()
        const nextSecond = Math.ceil((Date.now() + 1) / 1000) * 1000
        while (Date.now() < nextSecond); // synchronous, as signing is
        return issue.apply(tokens, args)
      }
      const pair = await signIn(app, account)
      const out = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: pair.refresh_token } }))
      t.equal(out.statusCode, 204)
      const { jti, exp } = claimsOf(pair.access_token) as { jti: string, exp: number }
      const revocation = await app.database.db.selectFrom('revoked_tokens').select('expires_at').where('jti', '=', jti).executeTakeFirstOrThrow()
      t.ok(Date.parse(revocation.expires_at) >= exp * 1000, `revoked until ${revocation.expires_at}, the token expires at ${new Date(exp * 1000).toISOString()}`)
    })

    t.test('parallel trusted devices: the limit of five holds', async (t) => {
      const account = await createAccount(app)
      for (let round = 1; round <= 3; round++) {
        const responses = await together(writers, Array.from({ length: 8 }, (_, n) =>
          withToken(account.token, { method: 'POST', url: `/api/v1/users/${account.id}/devices`, payload: { device_id: `round-${round}-device-${n}`, name: 'Device' } })))
        t.same(statuses(responses).sort(), [201, 201, 201, 201, 201, 409, 409, 409], `round ${round}: five trusted, three refused`)
        const stored = await app.database.db.selectFrom('trusted_devices').select('id').where('user_id', '=', account.id).execute()
        t.equal(stored.length, 5, `round ${round}: five stored`)
        await app.database.db.deleteFrom('trusted_devices').where('user_id', '=', account.id).execute()
      }
    })

    t.test('parallel sign-ins of one account: each answered a pair, and exactly SESSION_MAX_CONCURRENT (3) sessions live', async (t) => {
      const account = await createAccount(app) // its own sign-in is one of the sessions, the oldest
      for (let round = 1; round <= 3; round++) {
        // Each sign-in's password check takes its own time: the sessions are opened all at once.
        // One instance: two in one process on one SQLite file would wait on each other's locks
        // with the thread both run on. On PostgreSQL its pool opens them side by side, and only
        // the account's row held by each open keeps the count (SQLite's one connection runs
        // one transaction at a time anyway).
        gatherCalls(t, [app.repositories.auditLogs], 'insertWith', 6) // the sessions open with their audit entries
        const responses = await together([app], Array.from({ length: 6 }, () =>
          ({ method: 'POST' as const, url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })))
        t.same(statuses(responses), Array(6).fill(200), `round ${round}: every sign-in answered`)
        const live = await app.database.db.selectFrom('sessions').select('id').where('user_id', '=', account.id).where('revoked_at', 'is', null).execute()
        t.equal(live.length, 3, `round ${round}: the oldest sessions ended, three live`)
        const working = await Promise.all(responses.map(async (response) =>
          (await apps[1].inject(refresh(response.json().data.refresh_token))).statusCode))
        t.equal(working.filter((status) => status === 200).length, 3, `round ${round}: the three live sessions' refresh tokens work, the ended ones' do not`)
      }
    })

    t.test('parallel role changes: no duplicates, no 500, the final roles those the store holds', async (t) => {
      const target = await createAccount(app)
      const change = (method: 'PUT' | 'DELETE', role: string): InjectOptions =>
        withToken(admin.token, { method, url: `/api/v1/users/${target.id}/roles/${role}` })
      const stated = async () => (await apps[1].inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${target.id}/roles` }))).json().data.roles.sort()

      const sameGrant = await together(writers, Array.from({ length: 6 }, () => change('PUT', 'moderator')))
      t.same(statuses(sameGrant), Array(6).fill(200), 'the same role granted six times at once')
      t.same(await roleRows(app, target.id), ['moderator', 'user'], 'held once')

      const differentGrants = await together(writers, [change('PUT', 'admin'), change('PUT', 'super_admin'), change('PUT', 'moderator'), change('PUT', 'admin')])
      t.same(statuses(differentGrants), [200, 200, 200, 200], 'different roles granted at once')
      t.same(await roleRows(app, target.id), ['admin', 'moderator', 'super_admin', 'user'])

      const sameRevoke = await together(writers, Array.from({ length: 6 }, () => change('DELETE', 'super_admin')))
      t.same(statuses(sameRevoke), Array(6).fill(200), 'the same role removed six times at once')
      t.same(await roleRows(app, target.id), ['admin', 'moderator', 'user'])

      // Changes to different roles commute: the end state is certain.
      const mixed = await together(writers, [change('DELETE', 'admin'), change('PUT', 'super_admin'), change('DELETE', 'moderator'), change('DELETE', 'user')])
      t.same(statuses(mixed), [200, 200, 200, 200], 'grants and removals of different roles at once')
      t.same(await roleRows(app, target.id), ['super_admin'])
      t.same(await stated(), ['super_admin'], 'the API states what the store holds')

      // Grants and removals of one role: whichever lands last decides, and its answer (read
      // after its own write) shows the final state.
      const contested = await together(writers, [change('PUT', 'moderator'), change('DELETE', 'moderator'), change('PUT', 'moderator'), change('DELETE', 'moderator')])
      t.same(statuses(contested), [200, 200, 200, 200], 'grants and removals of one role at once')
      const final = await roleRows(app, target.id)
      t.ok(['super_admin', 'moderator,super_admin'].includes(final.join(',')), `a state the changes could make: ${final.join(',')}`)
      t.same(await stated(), final, 'the API states what the store holds')
      t.ok(contested.some((response) => response.json().data.roles.sort().join(',') === final.join(',')), 'the last change answered the final state')
    })

    t.test('parallel deletes of one user: every answer 204, one deletion, nothing left behind', async (t) => {
      const victim = await createAccount(app, { roles: ['moderator'] })
      const neighbour = await createAccount(app)
      await signIn(apps[1], victim)
      const write = async (author: Account, url: string, payload: Record<string, string>) => {
        const response = await app.inject(withToken(author.token, { method: 'POST', url, payload }))
        if (response.statusCode !== 201) throw new Error(response.body)
        return response.json().data as { id: string }
      }
      const post = await write(victim, '/api/v1/posts', { title: 'Mine', body: 'Text', status: 'published' })
      const neighbours = await write(neighbour, '/api/v1/posts', { title: 'Theirs', body: 'Text', status: 'published' })
      await write(victim, `/api/v1/posts/${post.id}/comments`, { body: 'On my post' })
      await write(neighbour, `/api/v1/posts/${post.id}/comments`, { body: 'On their post' })
      await write(victim, `/api/v1/posts/${neighbours.id}/comments`, { body: 'On a neighbour\'s post' })
      await write(victim, `/api/v1/users/${victim.id}/devices`, { device_id: 'phone', name: 'Phone' })
      await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: victim.email, password: 'wrong-password' } })
      const before = await leftovers(app, victim.id, [post.id])
      t.same(Object.keys(before).filter((table) => before[table] === 0), ['lockouts', 'mfa_backup_codes', 'user_identities'],
        'the user has rows in every other table')

      const deletes = await together(writers, Array.from({ length: 6 }, () => withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${victim.id}` })))
      t.same(statuses(deletes), Array(6).fill(204), 'repeating a delete answers 204')
      t.ok(deletes.every((response) => response.body === ''), 'with no body')
      t.same(await leftovers(apps[1], victim.id, [post.id]), NOTHING_LEFT, 'nothing of the user is left')
      t.equal((await apps[1].inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${victim.id}` }))).statusCode, 404)
      const comments = await apps[1].inject(withToken(neighbour.token, { method: 'GET', url: `/api/v1/posts/${neighbours.id}/comments` }))
      t.same(comments.json().data, [], 'the user\'s comment on another\'s post went with the user')
      t.equal((await apps[1].inject(withToken(neighbour.token, { method: 'GET', url: `/api/v1/posts/${neighbours.id}` }))).statusCode, 200, 'that post stays')

      const audit = await app.inject(withToken(admin.token, { method: 'GET', url: '/api/v1/audit-logs?event=user.deleted&limit=100' }))
      const entries = (audit.json().data as Array<{ target_id: string, details: { existed: boolean } }>)
        .filter((entry) => entry.target_id === victim.id)
      t.equal(entries.length, 6, 'each delete is audited')
      t.equal(entries.filter((entry) => entry.details.existed).length, 1, 'exactly one of them removed the user')
    })

    t.test('a delete racing role changes, sign-ins and writes of that user', async (t) => {
      const victim = await createAccount(app)
      const expected: Array<[InjectOptions, Array<number | string>]> = [
        [withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${victim.id}` }), [204]],
        ...['moderator', 'admin', 'moderator'].map((role): [InjectOptions, Array<number | string>] =>
          [withToken(admin.token, { method: 'PUT', url: `/api/v1/users/${victim.id}/roles/${role}` }), [200, 'NOT_FOUND']]),
        [withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${victim.id}/roles/user` }), [200, 'NOT_FOUND']],
        ...Array.from({ length: 3 }, (): [InjectOptions, Array<number | string>] =>
          [{ method: 'POST', url: '/api/v1/auth/login', payload: { email: victim.email, password: victim.password } }, [200, 'INVALID_CREDENTIALS']]),
        ...Array.from({ length: 2 }, (): [InjectOptions, Array<number | string>] =>
          [{ method: 'POST', url: '/api/v1/auth/login', payload: { email: victim.email, password: 'wrong-password' } }, ['INVALID_CREDENTIALS']]),
        // Forbidden when the role 'user' is taken before moderator or admin is granted: roles are read per request.
        [withToken(victim.token, { method: 'POST', url: '/api/v1/posts', payload: { title: 'Last words', body: 'Text' } }), [201, 'FORBIDDEN', 'INVALID_TOKEN']]
      ]
      const responses = await together(writers, expected.map(([options]) => options))
      responses.forEach((response, index) => {
        const [options, outcomes] = expected[index] as [InjectOptions, Array<number | string>]
        t.ok(outcomes.includes(errorCode(response) ?? response.statusCode), `${options.method as string} ${options.url as string}: ${response.statusCode} ${errorCode(response) ?? ''}`)
      })
      t.same(await leftovers(app, victim.id), NOTHING_LEFT, 'nothing of the user is left')
      for (const response of responses.filter((candidate) =>
        candidate.statusCode === 200 && candidate.json().data.refresh_token !== undefined)) {
        t.equal(errorCode(await apps[1].inject(refresh(response.json().data.refresh_token))), 'INVALID_TOKEN', 'a session opened in the race is gone')
      }
    })

    t.test('a delete landing inside a request about, or by, that user', async (t) => {
      const { repositories, passwords } = app

      const granted = await createAccount(app)
      // Changes are stored with their audit entries (insertWith): the delete lands just before.
      aroundNextCall(t, repositories.auditLogs, 'insertWith', async (call) => { await deleteUser(granted.id); return await call() })
      const grant = await app.inject(withToken(admin.token, { method: 'PUT', url: `/api/v1/users/${granted.id}/roles/moderator` }))
      t.equal(grant.statusCode, 404, 'a role granted to a user deleted after the existence check')
      t.equal(errorCode(grant), 'NOT_FOUND')

      const signingIn = await createAccount(app)
      aroundNextCall(t, repositories.auditLogs, 'insertWith', async (call) => { await deleteUser(signingIn.id); return await call() })
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: signingIn.email, password: signingIn.password } })
      t.equal(login.statusCode, 401, 'a sign-in whose account is deleted before its session is stored')
      t.equal(errorCode(login), 'INVALID_CREDENTIALS')

      const mistyping = await createAccount(app)
      aroundNextCall(t, passwords, 'verify', async (call) => { const valid = await call(); await deleteUser(mistyping.id); return valid })
      const failed = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: mistyping.email, password: 'wrong-password' } })
      t.equal(failed.statusCode, 401, 'a wrong password whose account is deleted while it is checked')
      t.equal(errorCode(failed), 'INVALID_CREDENTIALS')

      const rotating = await createAccount(app)
      const pair = await signIn(app, rotating)
      // A rotation stores its audit entry itself (SessionsRepository.rotate): the delete lands just before.
      aroundNextCall(t, repositories.sessions, 'rotate', async (call) => { await deleteUser(rotating.id); return await call() })
      const rotated = await app.inject(refresh(pair.refresh_token))
      t.equal(rotated.statusCode, 401, 'a refresh whose account is deleted while the token rotates')
      t.equal(errorCode(rotated), 'INVALID_TOKEN')

      const writing = await createAccount(app)
      aroundNextCall(t, repositories.posts, 'create', async (call) => { await deleteUser(writing.id); return await call() })
      const post = await app.inject(withToken(writing.token, { method: 'POST', url: '/api/v1/posts', payload: { title: 'Too late', body: 'Text' } }))
      t.equal(post.statusCode, 401, 'a post whose author is deleted after authentication')
      t.equal(errorCode(post), 'INVALID_TOKEN')
      t.equal(post.headers['www-authenticate'], 'Bearer')

      for (const account of [granted, signingIn, mistyping, rotating, writing]) {
        t.same(await leftovers(app, account.id), NOTHING_LEFT, 'nothing of the user is left')
      }
    })
  })
}
