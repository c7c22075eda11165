import nodemailer from 'nodemailer'
import type { MailMessage, Mailer } from '../services/delivery.js'

/** Time allowed to reach, greet and hear back from the mail server: a stuck one delays only the outbox. */
const CONNECTION_TIMEOUT_MS = 10_000
const SOCKET_TIMEOUT_MS = 30_000

/**
 * Mail over SMTP_URL with nodemailer: `smtp://` upgrades with STARTTLS whenever the server
 * offers it, `smtps://` is TLS from the start; certificates are verified unless the URL says
 * otherwise (`?tls.rejectUnauthorized=false`, for a relay with a private certificate).
 */
export class SmtpMailer implements Mailer {
  readonly #transport

  constructor (url: string, from: string) {
    this.#transport = nodemailer.createTransport({
      url,
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      greetingTimeout: CONNECTION_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS
    }, { from })
  }

  async send ({ to, subject, text, html }: MailMessage): Promise<void> {
    await this.#transport.sendMail({ to, subject, text, ...(html !== null && { html }) })
  }

  async close (): Promise<void> {
    this.#transport.close()
  }
}
