import type { DeliveryLog, MailMessage, Mailer, SmsSender } from '../ports.js'

/** The limit on a message written to the log instead of sent. */
const LOG_WRITE_MS = 1000

/** Without SMTP_URL: each e-mail is written to the log (development), links and codes included. */
export class LogMailer implements Mailer {
  /** Writing a line to the log: at once, well within this. */
  readonly timeoutMs = LOG_WRITE_MS
  readonly logOnly = true

  constructor (private readonly log: DeliveryLog) {}

  async send ({ to, subject, text }: MailMessage): Promise<void> {
    this.log.warn({ to, subject, text }, 'e-mail not delivered: written to the log because SMTP_URL is unset')
  }

  async close (): Promise<void> {}
}

/** Without SMS_WEBHOOK_URL: each SMS is written to the log. */
export class LogSmsSender implements SmsSender {
  readonly timeoutMs = LOG_WRITE_MS
  readonly logOnly = true

  constructor (private readonly log: DeliveryLog) {}

  async send ({ to, body }: { to: string, body: string }): Promise<void> {
    this.log.warn({ to, text: body }, 'SMS not delivered: written to the log because SMS_WEBHOOK_URL is unset')
  }
}
