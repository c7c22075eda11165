/** An e-mail as a Mailer receives it; `html` is null for text-only messages. */
export interface MailMessage { to: string, subject: string, text: string, html: string | null }

/**
 * How e-mail leaves the service. The built-in ones send over SMTP (SMTP_URL) or write the
 * message to the log; a deployment may put its own in their place.
 */
export interface Mailer {
  /** The longest one send may take: by then it has given up. The outbox claims a message for longer. */
  readonly timeoutMs: number
  /** True for a sender that only writes the message to the log: nothing is delivered. */
  readonly logOnly?: boolean
  send: (message: MailMessage) => Promise<void>
  close: () => Promise<void>
}

/** How an SMS leaves the service: the built-in one POSTs `{ to, body }` to SMS_WEBHOOK_URL, or logs it. */
export interface SmsSender {
  /** The longest one send may take, as for a Mailer. */
  readonly timeoutMs: number
  /** As for a Mailer. */
  readonly logOnly?: boolean
  send: (message: { to: string, body: string }) => Promise<void>
}

/** Where delivery reports what happened to a message (the application's logger). */
export interface DeliveryLog {
  info: (entry: Record<string, unknown>, message: string) => void
  warn: (entry: Record<string, unknown>, message: string) => void
  error: (entry: Record<string, unknown>, message: string) => void
}
