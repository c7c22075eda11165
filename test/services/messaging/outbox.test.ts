import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { SMTP_SEND_TIMEOUT_MS, SmtpMailer } from '../../../src/services/messaging/transports/smtp-mailer.js'
import type { Mailer, MailMessage } from '../../../src/services/messaging/ports.js'
import { MessageOutbox } from '../../../src/services/messaging/outbox.js'
import { build } from '../../helpers/app.js'
import type { TestContext } from '../../helpers/context.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { type MailServer, mailServer } from '../../helpers/servers/mail-server.js'

const silent = { info () {}, warn () {}, error () {} }

/** Two instances of the service on one database, both delivering through `smtp`. */
async function twoInstances (
  t: TestContext,
  postgresUrl: string,
  smtp: MailServer
): Promise<[FastifyInstance, FastifyInstance]> {
  const databaseUrl = await freshDatabaseUrl(t, postgresUrl)
  const env = { SMTP_URL: smtp.url(), EMAIL_VERIFICATION: 'off' }
  const first = await build(t, { databaseUrl, env })
  return [first, await build(t, { databaseUrl, env })]
}

async function queue (app: FastifyInstance, recipients: string[]): Promise<void> {
  for (const recipient of recipients) {
    await app.repositories.outbox.add({ channel: 'email', recipient, subject: `For ${recipient}`, text: 'Hello', html: null }, new Date().toISOString())
  }
}

async function outboxSize (app: FastifyInstance): Promise<number> {
  return (await app.database.db.selectFrom('outbox').select('id').execute()).length
}

/** Another instance's outbox, delivering through `mailer`, whose clock reads `aheadMs` later. */
function laterInstance (app: FastifyInstance, aheadMs: number, mailer: Mailer) {
  return new MessageOutbox({
    outbox: app.repositories.outbox,
    mailer,
    sms: { timeoutMs: 1000, async send () { throw new Error('no SMS here') } },
    retryMs: 1000,
    log: silent,
    now: () => Date.now() + aheadMs
  })
}

// Several instances share one outbox only on PostgreSQL.
for (const backend of backends().filter((candidate) => candidate.url !== null)) {
  const postgresUrl = backend.url ?? ''
  t.test(`the outbox shared by two instances (${backend.name})`, async (t) => {
    t.test('both draining one outbox at once: each message is delivered exactly once', async (t) => {
      const smtp = await mailServer(t)
      const [first, second] = await twoInstances(t, postgresUrl, smtp)
      const recipients = Array.from({ length: 45 }, (_, n) => `shared-${n}@example.com`)
      await queue(first, recipients)
      while (await outboxSize(first) > 0) {
        await Promise.all([
          first.services.outbox.deliverDue(),
          second.services.outbox.deliverDue(),
          first.services.outbox.deliverDue(),
          second.services.outbox.deliverDue()
        ])
      }
      // Any round a poller started meanwhile has finished too.
      await Promise.all([first.services.outbox.deliverDue(), second.services.outbox.deliverDue()])
      const delivered = smtp.received.flatMap((mail) => mail.to).sort()
      t.same(delivered, [...recipients].sort(), 'every message once, none twice')
    })

    t.test('a message being sent is not taken by another instance until its send has given up, and then some', async (t) => {
      const smtp = await mailServer(t)
      const [first, second] = await twoInstances(t, postgresUrl, smtp)
      t.ok(first.services.outbox.claimMs >= 2 * SMTP_SEND_TIMEOUT_MS, `a claim (${first.services.outbox.claimMs} ms) outlasts the longest send (${SMTP_SEND_TIMEOUT_MS} ms) twice over`)
      smtp.hold()
      const recipients = ['slow-1@example.com', 'slow-2@example.com', 'slow-3@example.com']
      await queue(first, recipients)
      const sending = Promise.all([first.services.outbox.deliverDue(), second.services.outbox.deliverDue()])
      await smtp.holding(recipients.length)

      // When the slowest send would have given up, with 10 s more to store its outcome.
      const taken: MailMessage[] = []
      const later = laterInstance(first, SMTP_SEND_TIMEOUT_MS + 10_000, {
        timeoutMs: SMTP_SEND_TIMEOUT_MS,
        async send (message) { taken.push(message) },
        async close () {}
      })
      await later.deliverDue()
      t.same(taken, [], 'nothing is taken while it is being sent')

      smtp.release()
      await sending
      await Promise.all([first.services.outbox.deliverDue(), second.services.outbox.deliverDue()])
      t.same(smtp.received.flatMap((mail) => mail.to).sort(), recipients, 'each message delivered once')
      t.equal(await outboxSize(first), 0)
    })

    t.test('an instance that stops in the middle of a send: its claim lapses, and another instance sends the message', async (t) => {
      const smtp = await mailServer(t)
      const [first, second] = await twoInstances(t, postgresUrl, smtp)
      // Their own polls stopped first, so that the claim below is the only one (a poll could take the message before
      // it).
      await Promise.all([first.services.outbox.stop(), second.services.outbox.stop()])
      await queue(first, ['orphan@example.com'])
      const now = Date.now()
      // Claimed as the outbox claims, by an instance that then stops.
      const [claimed] = await first.repositories.outbox.claimDue(
        new Date(now).toISOString(),
        new Date(now + first.services.outbox.claimMs).toISOString(),
        10
      )
      t.match(claimed, { recipient: 'orphan@example.com' })
      const mailer = new SmtpMailer(smtp.url(), 'outbox-test@example.com')
      t.teardown(async () => { await mailer.close() })
      await laterInstance(first, first.services.outbox.claimMs - 1000, mailer).deliverDue()
      t.equal(await outboxSize(first), 1, 'not before the claim lapses')
      await laterInstance(first, first.services.outbox.claimMs + 1000, mailer).deliverDue()
      t.match(await smtp.next(), { to: ['orphan@example.com'] }, 'after it, another instance sends it')
      t.equal(await outboxSize(first), 0)
    })
  })
}

for (const backend of backends()) {
  t.test(`an outbox's senders (${backend.name})`, async (t) => {
    t.test('a send still pending at its sender\'s limit counts as failed, and the message is tried again later', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { EMAIL_VERIFICATION: 'off' } })
      await queue(app, ['slow@example.com'])
      const hanging = laterInstance(app, 0, {
        timeoutMs: 50,
        send: async () => { await new Promise(() => {}) },
        async close () {}
      })
      await hanging.deliverDue()
      const rows = await app.database.db.selectFrom('outbox').select(['attempts', 'last_error', 'claimed_until']).execute()
      t.same(rows, [{ attempts: 1, last_error: 'not sent within 50 ms', claimed_until: null }])
    })

    t.test('a sender without a limit is refused', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      for (const timeoutMs of [Number.NaN, 0, Infinity]) {
        t.throws(() => laterInstance(app, 0, { timeoutMs, async send () {}, async close () {} }), /^Mailer\.timeoutMs must be a positive number of milliseconds/, String(timeoutMs))
      }
    })
  })
}
