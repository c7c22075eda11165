import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { createAccount, TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build, SECURITY_HEADERS } from '../../helpers/app.js'
import { backends, suiteName } from '../../helpers/database.js'
import { APP_URL, appWithMail } from '../../helpers/organizations.js'
import type { MailServer, ReceivedMail } from '../../helpers/servers/mail-server.js'

/**
 * Signing in by e-mail (docs/api.md, "Signing in by e-mail"), the messages read from a real SMTP
 * server on 127.0.0.1: the code; the link, which a mail scanner's GET does not spend and which
 * works in a browser other than the one that asked; single use, expiry, attempts, the same answer
 * for any address, the claim of an unclaimed account, MFA, and the operator's switch.
 */

const PUBLIC_URL = 'https://users.example.test'
const APPLICATION = 'https://app.example.test/signed-in'
const ENV = { PUBLIC_URL, OAUTH_REDIRECT_URLS: APPLICATION }

/** The code and the link of a sign-in message. */
function signInMessage (mail: ReceivedMail): { code: string, link: URL | null } {
  const code = /sign-in code is (\d{6})/.exec(mail.text)?.[1]
  if (code === undefined) throw new Error(`no code in "${mail.subject}"`)
  const link = /(https:\/\/\S+\/email-sign-in\/confirm\?token=\S+)/.exec(mail.text)?.[1]
  return { code, link: link === undefined ? null : new URL(link) }
}

async function requested (app: FastifyInstance, smtp: MailServer, email: string, extra: Record<string, unknown> = {}) {
  const answer = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email, ...extra } })
  if (answer.statusCode !== 202) throw new Error(`not taken in: ${answer.body}`)
  return signInMessage(await smtp.next(signInMessageTo(email)))
}

/** A sign-in message to `email` (its account's verification message aside). */
const signInMessageTo = (email: string) => (mail: ReceivedMail) => mail.to.includes(email) && mail.subject.includes('sign-in code')

const verify = async (app: FastifyInstance, payload: Record<string, unknown>) =>
  await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in/verify', payload })

const me = async (app: FastifyInstance, token: string) =>
  (await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url, { env: ENV })

    t.test('the code signs in, once; an address without an account gets the same answer, and an account at its sign-in', async (t) => {
      const account = await createAccount(app)
      const { code, link } = await requested(app, smtp, account.email)
      t.ok(link, 'a link beside the code (APP_URL is set)')
      const signedIn = await verify(app, { email: account.email.toUpperCase(), code })
      t.equal(signedIn.statusCode, 200, 'signed in')
      t.equal((await me(app, signedIn.json().data.access_token)).id, account.id)
      const again = await verify(app, { email: account.email, code })
      t.equal(again.statusCode, 400, 'spent')
      t.equal(again.json().error.code, 'INVALID_ONE_TIME_TOKEN')

      const newcomer = uniqueEmail('newcomer')
      const known = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: account.email } })
      const unknown = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: newcomer } })
      t.same(unknown.json(), known.json(), 'the same answer')
      t.equal(unknown.statusCode, known.statusCode)
      const message = signInMessage(await smtp.next(signInMessageTo(newcomer)))
      t.equal(await app.repositories.users.findByEmail(newcomer), undefined, 'no account until the sign-in')
      const made = await verify(app, { email: newcomer, code: message.code })
      t.equal(made.statusCode, 200, 'signed in, the account made')
      t.match(await me(app, made.json().data.access_token), { email: newcomer, email_verified: true })
    })

    t.test('a mail scanner\'s GET spends nothing; the link, confirmed in another browser, signs in once', async (t) => {
      const account = await createAccount(app)
      const { link } = await requested(app, smtp, account.email, { redirect_to: APPLICATION })
      if (link === null) throw new Error('no link')
      t.equal(`${link.origin}${link.pathname}`, `${PUBLIC_URL}/api/v1/auth/email-sign-in/confirm`)
      const path = `${link.pathname}${link.search}`
      for (const scanner of [1, 2]) {
        const page = await app.inject({ method: 'GET', url: path, headers: { 'user-agent': 'Safe Links scanner' } })
        t.equal(page.statusCode, 200, `scanner GET ${scanner}`)
        t.match(page.headers['content-type'], /^text\/html/)
        t.match(page.body, account.email, 'the page names the address')
        t.match(page.body, '<form method="post"', 'and asks to confirm')
        t.notMatch(page.body, '<script', 'with no script that could submit it')
        t.match(page.headers, SECURITY_HEADERS, 'under the API\'s security headers')
        t.equal(page.headers['referrer-policy'], 'same-origin', 'the token leaves in no referrer to another site')
      }
      // Another browser: no cookie of the one that asked, which the service never set.
      const confirmed = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/email-sign-in/confirm',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: PUBLIC_URL, 'sec-fetch-site': 'same-origin' },
        payload: new URLSearchParams({ token: link.searchParams.get('token') ?? '' }).toString()
      })
      t.equal(confirmed.statusCode, 303, confirmed.body)
      const back = new URL(String(confirmed.headers.location))
      t.equal(`${back.origin}${back.pathname}`, APPLICATION, 'to the application that asked')
      const token = back.searchParams.get('token') ?? ''
      const signedIn = await verify(app, { token })
      t.equal(signedIn.statusCode, 200, 'signed in')
      t.equal((await me(app, signedIn.json().data.access_token)).id, account.id)
      t.equal((await verify(app, { token })).statusCode, 400, 'the application\'s token is good once')
      const spent = await app.inject({ method: 'GET', url: path })
      t.match(spent.body, 'no longer works', 'the link is spent')
      t.notMatch(spent.body, '<form', 'nothing to confirm')
    })

    t.test('a confirmation posted from another site is refused, and the link stays usable', async (t) => {
      const account = await createAccount(app)
      const { link, code } = await requested(app, smtp, account.email)
      const token = link?.searchParams.get('token') ?? ''
      const post = async (headers: Record<string, string>) => await app.inject({
        method: 'POST',
        url: '/api/v1/auth/email-sign-in/confirm',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams({ token }).toString()
      })
      t.equal((await post({ origin: 'https://evil.example' })).statusCode, 403, 'another origin')
      t.equal((await post({ 'sec-fetch-site': 'cross-site' })).statusCode, 403, 'a cross-site form')
      t.equal((await post({ origin: 'null', 'sec-fetch-site': 'cross-site' })).statusCode, 403, 'a hidden origin from another site')
      t.equal((await post({ origin: 'null' })).statusCode, 403, 'a hidden origin that says nothing of where it came from')
      const confirmed = await post({ origin: 'null', 'sec-fetch-site': 'same-origin' })
      t.equal(confirmed.statusCode, 303, 'the service\'s own page, whose browser hid its origin')
      const back = new URL(String(confirmed.headers.location))
      t.equal(`${back.origin}${back.pathname}`, `${APP_URL}/email-sign-in`, 'to APP_URL/email-sign-in by default')
      // The link confirmed somewhere the token was not used: the message still signs in once, by its code.
      t.equal((await verify(app, { email: account.email, code })).statusCode, 200, 'the code signs in')
      t.equal((await verify(app, { token: back.searchParams.get('token') ?? '' })).statusCode, 400, 'and the message is spent: the token no longer works')
      t.equal((await post({ origin: PUBLIC_URL })).statusCode, 200, 'nor the link')
    })

    t.test('five wrong codes spend the message, each a failed sign-in of the account; an expired one is refused', async (t) => {
      const account = await createAccount(app)
      const { code } = await requested(app, smtp, account.email)
      const wrong = code === '000000' ? '111111' : '000000'
      for (let n = 0; n < 5; n++) t.equal((await verify(app, { email: account.email, code: wrong })).statusCode, 400, `wrong code ${n + 1}`)
      const locked = await verify(app, { email: account.email, code })
      t.equal(locked.statusCode, 423, 'the right code, after five wrong ones: the account is locked, as after wrong passwords')
      t.equal(locked.json().error.code, 'ACCOUNT_LOCKED')
      for (const table of ['sign_in_failures', 'lockouts'] as const) await app.database.db.deleteFrom(table).where('user_id', '=', account.id).execute()
      t.equal((await verify(app, { email: account.email, code })).statusCode, 400, 'once the lock is gone, the message is spent all the same')
      const failures = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed')
        .where('target_id', '=', account.id).execute()
      t.equal(failures.filter((row) => row.details.includes('wrong_email_code')).length, 6, 'each counted toward the lockout, as a wrong password is (the five, and the spent one)')

      const late = await requested(app, smtp, account.email)
      await app.database.db.updateTable('email_sign_ins').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('email', '=', account.email).execute()
      t.equal((await verify(app, { email: account.email, code: late.code })).statusCode, 400, 'expired after 10 minutes')
      const page = await app.inject({ method: 'GET', url: `${late.link?.pathname ?? ''}${late.link?.search ?? ''}` })
      t.match(page.body, 'no longer works', 'and its link')
    })

    t.test('an unclaimed account is claimed by the sign-in: the password planted on it stops working', async (t) => {
      const email = uniqueEmail('victim')
      // Someone registered the address first, with a password of theirs, and never proved it.
      const planted = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Planted', password: TEST_PASSWORD } })
      t.equal(planted.statusCode, 201)
      const squatter = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })
      t.equal(squatter.statusCode, 200, 'the squatter is signed in')
      const { code } = await requested(app, smtp, email)
      const owner = await verify(app, { email, code })
      t.equal(owner.statusCode, 200, 'the owner signed in')
      t.match(await me(app, owner.json().data.access_token), { id: planted.json().data.id, email_verified: true })
      const again = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })
      t.equal(again.statusCode, 401, 'the planted password is gone')
      const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: squatter.json().data.refresh_token } })
      t.equal(refreshed.statusCode, 401, 'the squatter\'s session ended')
      const claimed = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'account.claimed')
        .where('target_id', '=', planted.json().data.id).executeTakeFirst()
      t.match(JSON.parse(claimed?.details ?? '{}'), { credential_removed: true }, 'audited')
    })

    t.test('an account that changed to the address without proving it is not the mailbox\'s to enter', async (t) => {
      const squatter = await createAccount(app)
      const victim = uniqueEmail('victim')
      const changed = await app.inject(withToken(squatter.token, { method: 'PATCH', url: `/api/v1/users/${squatter.id}`, payload: { email: victim } }))
      t.equal(changed.statusCode, 200, 'the change to an address not proved')
      const { code } = await requested(app, smtp, victim)
      const refused = await verify(app, { email: victim, code })
      t.equal(refused.statusCode, 409, 'refused, as a provider sign-in is')
      t.equal(refused.json().error.code, 'EMAIL_ALREADY_REGISTERED')
      t.match(await me(app, squatter.token), { email: victim, email_verified: false }, 'the address still unproved')
    })

    t.test('an account with MFA still takes its second factor', async (t) => {
      const account = await createAccount(app)
      const setup = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
      const { secret } = setup.json().data as { secret: string }
      const enabled = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret }) } }))
      t.equal(enabled.statusCode, 200, enabled.body)
      const { code } = await requested(app, smtp, account.email)
      const answer = await verify(app, { email: account.email, code })
      t.equal(answer.statusCode, 200)
      t.match(answer.json().data, { mfa_required: true, methods: ['totp', 'backup_code'] })
      t.notOk(answer.json().data.access_token, 'no token before the second factor')
    })

    t.test('at most five messages an hour to one address; bad bodies refused', async (t) => {
      const account = await createAccount(app)
      for (let n = 0; n < 6; n++) {
        const answer = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: account.email } })
        t.equal(answer.statusCode, 202)
      }
      const outbox = await app.database.db.selectFrom('email_sign_ins').select('id').where('email', '=', account.email).execute()
      t.equal(outbox.length, 5, 'the sixth sent nothing')
      for (let n = 0; n < 5; n++) await smtp.next(signInMessageTo(account.email))
      const bodies = [{ email: account.email }, { email: account.email, code: '12345' }, { code: '123456' }, { token: 'x', email: account.email, code: '123456' }]
      for (const body of bodies) t.equal((await verify(app, body)).statusCode, 400, JSON.stringify(body))
      const elsewhere = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: account.email, redirect_to: 'https://evil.example/cb' } })
      t.equal(elsewhere.statusCode, 400, 'redirect_to outside OAUTH_REDIRECT_URLS')
    })

    t.test('EMAIL_SIGN_IN=existing sends nothing to an address without an account, in about the same time; off turns it off', async (t) => {
      // Messages to the log, as in the forgot-password timing test: what is timed is the answer, not a mail server.
      const existing = await build(t, { postgresUrl: backend.url, env: { ...ENV, EMAIL_SIGN_IN: 'existing' } })
      const accounts: Array<Awaited<ReturnType<typeof createAccount>>> = []
      // In eights: the password hashing queue answers 503 beyond its length.
      while (accounts.length < 40) {
        accounts.push(...await Promise.all(Array.from({ length: 8 }, async () => await createAccount(existing))))
      }
      const times = { known: [] as number[], unknown: [] as number[] }
      for (let n = 0; n < 400; n++) {
        const kind = n % 2 === 0 ? 'known' : 'unknown'
        // Each known address under its hourly limit: forty accounts, five each.
        const email = kind === 'known' ? accounts[(n / 2) % 40]?.email : `nobody-${n}@example.com`
        const started = process.hrtime.bigint()
        const answer = await existing.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email } })
        times[kind].push(Number(process.hrtime.bigint() - started) / 1e6)
        if (answer.statusCode !== 202) throw new Error(answer.body)
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
      const difference = Math.abs(median(times.known) - median(times.unknown))
      t.ok(difference < 5, `medians differ by ${difference.toFixed(3)} ms (known ${median(times.known).toFixed(3)}, unknown ${median(times.unknown).toFixed(3)})`)
      const strangers = await existing.database.db.selectFrom('outbox').select('id').where('recipient', 'like', 'nobody-%').execute()
      t.same(strangers, [], 'nothing sent to an address without an account')
      const kept = await existing.database.db.selectFrom('email_sign_ins').select('id').where('email', 'like', 'nobody-%').execute()
      t.equal(kept.length, 200, 'each request stored all the same, so that guesses at its code count alike')

      const { app: off } = await appWithMail(t, backend.url, { env: { ...ENV, EMAIL_SIGN_IN: 'off' } })
      const request = await off.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: accounts[0]?.email } })
      t.equal(request.statusCode, 404)
      t.equal((await verify(off, { email: accounts[0]?.email, code: '123456' })).statusCode, 404)
    })
  })
}
