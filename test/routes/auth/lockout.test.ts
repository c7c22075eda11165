import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

function signIn (app: FastifyInstance, account: Account, password: string, remoteAddress = '127.0.0.1') {
  return app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress, payload: { email: account.email, password } })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('5 failures from an address lock the account there, even with the right password', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const victim = await createAccount(app)
      const neighbour = await createAccount(app)
      for (let attempt = 1; attempt <= 5; attempt++) {
        const response = await signIn(app, victim, 'wrong-password')
        t.equal(response.statusCode, 401, `failure ${attempt} is an ordinary 401`)
      }
      const locked = await signIn(app, victim, victim.password)
      t.equal(locked.statusCode, 423)
      t.same(locked.json().error.code, 'ACCOUNT_LOCKED')
      t.equal((await signIn(app, neighbour, neighbour.password)).statusCode, 200, 'other accounts from the same address are unaffected')
      t.equal((await signIn(app, victim, victim.password, '203.0.113.7')).statusCode, 200,
        'one address cannot lock the victim out elsewhere')
    })

    t.test('simultaneous wrong passwords: five are answered and counted, the rest refused as locked', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const answers = await Promise.all(Array.from({ length: 8 }, () => signIn(app, account, 'wrong-password')))
      t.same(answers.map((answer) => answer.statusCode).sort(), [401, 401, 401, 401, 401, 423, 423, 423])
      const failures = await app.database.db.selectFrom('sign_in_failures').select('id').where('user_id', '=', account.id).execute()
      t.equal(failures.length, 5, 'an attempt settled under the lock is not counted')
      t.equal((await signIn(app, account, account.password)).statusCode, 423, 'and they locked the account')
    })

    t.test('4 failures then a success start the count again', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      for (let attempt = 0; attempt < 4; attempt++) await signIn(app, account, 'wrong-password')
      t.equal((await signIn(app, account, account.password)).statusCode, 200)
      for (let attempt = 0; attempt < 4; attempt++) await signIn(app, account, 'wrong-password')
      t.equal((await signIn(app, account, account.password)).statusCode, 200, 'not locked: the earlier failures were cleared')
    })

    t.test('failures from many addresses lock the account everywhere', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      for (const address of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4']) {
        for (let attempt = 0; attempt < 5; attempt++) await signIn(app, account, 'wrong-password', address)
      }
      const elsewhere = await signIn(app, account, account.password, '192.0.2.99')
      t.equal(elsewhere.statusCode, 423)
    })

    t.test('IPv6 clients are counted by /64', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      for (let attempt = 1; attempt <= 5; attempt++) await signIn(app, account, 'wrong-password', `2001:db8:1:2::${attempt}`)
      t.equal((await signIn(app, account, account.password, '2001:db8:1:2::ff')).statusCode, 423, 'same /64')
      t.equal((await signIn(app, account, account.password, '2001:db8:1:3::1')).statusCode, 200, 'another /64')
    })

    t.test('the lock lifts after 15 minutes', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      for (let attempt = 0; attempt < 5; attempt++) await signIn(app, account, 'wrong-password')
      t.equal((await signIn(app, account, account.password)).statusCode, 423)
      const past = new Date(Date.now() - 1000).toISOString()
      await app.database.db.updateTable('lockouts').set({ locked_until: past }).execute()
      await app.database.db.updateTable('sign_in_failures').set({ created_at: new Date(Date.now() - 16 * 60_000).toISOString() }).execute()
      t.equal((await signIn(app, account, account.password)).statusCode, 200)
    })

    t.test('failures are kept a day, then deleted at the account\'s next failure', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const failures = () => app.database.db.selectFrom('sign_in_failures').select(['created_at', 'cleared_at']).where('user_id', '=', account.id).execute()
      for (let attempt = 0; attempt < 2; attempt++) await signIn(app, account, 'wrong-password')
      t.equal((await signIn(app, account, account.password)).statusCode, 200)
      t.same((await failures()).map((row) => row.cleared_at !== null), [true, true], 'a success marks them cleared, it does not delete them')
      const old = new Date(Date.now() - 25 * 60 * 60_000).toISOString()
      await app.database.db.updateTable('sign_in_failures').set({ created_at: old }).where('user_id', '=', account.id).execute()
      await signIn(app, account, 'wrong-password')
      t.same((await failures()).map((row) => row.cleared_at), [null], 'the day-old ones are gone, the new one counts')
    })
  })
}
