import type { Transporter } from 'nodemailer'
import type { MailMessage, Mailer } from '../ports.js'

/** Time allowed to reach the mail server (its name resolved and every address tried). */
const CONNECTION_TIMEOUT_MS = 10_000
/** Time allowed for the server's greeting, and for a STARTTLS upgrade, once connected. */
const GREETING_TIMEOUT_MS = 10_000
/** Time the server may stay silent once the conversation has begun. */
const SOCKET_TIMEOUT_MS = 30_000
/**
 * The whole of one send, however the server behaves: a server that answers slowly but always
 * within the socket timeout could otherwise hold a send for ever. The connection is closed
 * then, before the message is complete, so the server drops it; the outbox claims a message
 * for longer than this (docs/api.md, "Messages").
 */
export const SMTP_SEND_TIMEOUT_MS = CONNECTION_TIMEOUT_MS + GREETING_TIMEOUT_MS + SOCKET_TIMEOUT_MS
/**
 * An open connection left unused this long is closed with QUIT: well before the socket timeout,
 * which would end it as a failure, and before relays drop idle clients.
 */
const IDLE_CONNECTION_MS = 10_000

/**
 * Mail over SMTP_URL with nodemailer: `smtp://` upgrades with STARTTLS whenever the server
 * offers it, `smtps://` is TLS from the start; certificates are verified unless the URL says
 * otherwise (`?tls.rejectUnauthorized=false`, for a relay with a private certificate).
 * Connections are pooled (nodemailer's defaults: at most 5, each for 100 messages): a message
 * sent after another within IDLE_CONNECTION_MS goes over the open connection, without a new
 * TCP and TLS handshake, AUTH, and the greeting a server may delay (smtp-server waits 100 ms
 * to catch clients that talk first, Postfix's postscreen several seconds). nodemailer is loaded
 * at the first message, not at start (docs/performance.md, "Start-up").
 */
export class SmtpMailer implements Mailer {
  readonly timeoutMs = SMTP_SEND_TIMEOUT_MS
  #transport: Promise<Transporter> | null = null

  constructor (private readonly url: string, private readonly from: string) {}

  async #transporter (): Promise<Transporter> {
    this.#transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport({
      url: this.url,
      pool: true,
      idleTimeout: IDLE_CONNECTION_MS,
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      dnsTimeout: CONNECTION_TIMEOUT_MS,
      greetingTimeout: GREETING_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS
    }, { from: this.from }))
    return await this.#transport
  }

  async send ({ to, subject, text, html }: MailMessage): Promise<void> {
    await (await this.#transporter()).sendMail({
      to, subject, text, ...(html !== null && { html }), signal: AbortSignal.timeout(SMTP_SEND_TIMEOUT_MS)
    })
  }

  async close (): Promise<void> {
    if (this.#transport !== null) (await this.#transport).close()
  }
}
