import t from 'tap'
import { SmtpMailer } from '../../../src/services/messaging/transports/smtp-mailer.js'
import { mailServer } from '../../helpers/servers/mail-server.js'

/** The SMTP transport against a real SMTP server: pooled connections (docs/operations.md, "Mail and SMS"). */

const message = (to: string) => ({ to, subject: 'Pooled', text: 'Hello', html: null })

t.test('messages in a row share one connection; one the server ended is replaced for the next message', async (t) => {
  const smtp = await mailServer(t)
  const mailer = new SmtpMailer(smtp.url(), 'pool-test@example.com')
  t.teardown(async () => { await mailer.close() })
  for (const to of ['one@example.com', 'two@example.com', 'three@example.com']) await mailer.send(message(to))
  t.same(smtp.received.map((mail) => mail.to), [['one@example.com'], ['two@example.com'], ['three@example.com']])
  t.ok(smtp.received.every((mail) => mail.secure && mail.user === 'mailer'), 'each over STARTTLS, logged in')
  t.equal(smtp.connections, 1, 'one connection (one handshake, one login) for the three')

  // The server restarts on its port: it ends the open connection (421), as a relay shutting down does.
  await smtp.stop()
  const restarted = await mailServer(t, smtp.port)
  await mailer.send(message('four@example.com'))
  t.same(restarted.received.map((mail) => mail.to), [['four@example.com']], 'the next message is delivered')
  t.equal(restarted.connections, 1, 'over a new connection')
})
