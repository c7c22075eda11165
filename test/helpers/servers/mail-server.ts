import type { AddressInfo } from 'node:net'
import { simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import type { TestContext } from '../context.js'
import { WebhookReceiver } from './webhook-receiver.js'

/** A message as the SMTP server received it, parsed. */
export interface ReceivedMail {
  from: string
  to: string[]
  subject: string
  text: string
  html: string
  /** Whether the session was encrypted (upgraded with STARTTLS, or TLS from the start) when the message was sent. */
  secure: boolean
  /** The user the client authenticated as. */
  user: string | undefined
}

export const SMTP_USER = 'mailer'
export const SMTP_PASSWORD = 'mailer-password'

/**
 * A real SMTP server on 127.0.0.1 (smtp-server, in this process): STARTTLS on smtp-server's
 * own self-signed certificate, or, `secure`, TLS from the start on the same certificate (what
 * `smtps://` expects); AUTH PLAIN/LOGIN required once encrypted. Messages are parsed with
 * mailparser, as a mail client would read them; `next` waits for one. `hold` keeps messages
 * unanswered, as a slow server would, until `release`.
 */
export class MailServer {
  readonly received: ReceivedMail[] = []
  readonly secure: boolean
  readonly #waiting: Array<{ match: (mail: ReceivedMail) => boolean, resolve: (mail: ReceivedMail) => void }> = []
  readonly #server: SMTPServer
  #held: Array<() => void> | null = null
  readonly #holdWaiters: Array<{ count: number, resolve: () => void }> = []
  port = 0
  /** Connections clients opened (each a TCP and TLS handshake and a login). */
  connections = 0

  constructor (options: { secure?: boolean } = {}) {
    this.secure = options.secure === true
    this.#server = new SMTPServer({
      logger: false,
      secure: this.secure,
      // smtp-server looks up each client's address in DNS by default: the system's name server,
      // off this machine, where no test sends anything.
      disableReverseLookup: true,
      // Stopping, the server answers 421 and ends the connections still open after this grace
      // (the service keeps idle ones open for its next message), as smtp-server does after 30 s.
      closeTimeout: 100,
      authOptional: false,
      onConnect: (_session, callback) => {
        this.connections += 1
        callback()
      },
      onAuth: (auth, _session, callback) => {
        if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username })
        else callback(new Error('Invalid username or password'))
      },
      onData: (stream, session, callback) => {
        simpleParser(stream).then((parsed) => {
          const addresses = (value: typeof parsed.to) => [value ?? []].flat().flatMap((group) => group.value.map((address) => address.address ?? ''))
          const answer = () => {
            this.#accept({
              from: addresses(parsed.from)[0] ?? '',
              to: addresses(parsed.to),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
              secure: session.secure,
              user: typeof session.user === 'string' ? session.user : undefined
            })
            callback()
          }
          if (this.#held === null) answer()
          else this.#hold(answer)
        }, callback)
      }
    })
  }

  /** Listens on `port` (0: any free one). */
  async start (port = 0): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.server.once('error', reject)
      this.#server.listen(port, '127.0.0.1', () => resolve())
    })
    this.port = (this.#server.server.address() as AddressInfo).port
    return this
  }

  async stop (): Promise<void> {
    this.release()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  /** The service's SMTP_URL for this server; the certificate is the server's own, trusted by name only here. */
  url (): string {
    return `${this.secure ? 'smtps' : 'smtp'}://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${this.port}?tls.rejectUnauthorized=false`
  }

  /** From now on, each message received is left unanswered (the sender keeps waiting) until `release`. */
  hold (): void {
    this.#held ??= []
  }

  /** Resolves once `count` messages are held. */
  async holding (count: number): Promise<void> {
    if ((this.#held?.length ?? 0) >= count) return
    await new Promise<void>((resolve) => this.#holdWaiters.push({ count, resolve }))
  }

  /** Answers the held messages (they count as received now) and stops holding. */
  release (): void {
    const held = this.#held ?? []
    this.#held = null
    for (const answer of held) answer()
  }

  #hold (answer: () => void): void {
    const held = this.#held ?? []
    held.push(answer)
    for (const waiter of this.#holdWaiters.filter((waiting) => held.length >= waiting.count)) {
      this.#holdWaiters.splice(this.#holdWaiters.indexOf(waiter), 1)
      waiter.resolve()
    }
  }

  /** The first message received (already, or from now on) that `match` accepts, taken off the list. */
  async next (match: (mail: ReceivedMail) => boolean = () => true): Promise<ReceivedMail> {
    const index = this.received.findIndex(match)
    if (index >= 0) return this.received.splice(index, 1)[0] as ReceivedMail
    return await new Promise((resolve) => this.#waiting.push({ match, resolve }))
  }

  #accept (mail: ReceivedMail): void {
    const waiter = this.#waiting.findIndex((waiting) => waiting.match(mail))
    if (waiter >= 0) this.#waiting.splice(waiter, 1)[0]?.resolve(mail)
    else this.received.push(mail)
  }
}

/** The `token` parameter of the first link in a message, or its bare "Token:" line. */
export function tokenIn (mail: ReceivedMail): string {
  const token = /[?&]token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1] ?? /Token: ([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
  if (token === undefined) throw new Error(`no token in the message "${mail.subject}"`)
  return token
}

/** An SMS provider's webhook on 127.0.0.1: records each `{ to, body }` it is sent. */
export class SmsWebhook {
  readonly #receiver = new WebhookReceiver({
    path: '/sms', answer: ({ headers }) => headers['content-type'] === 'application/json' ? 204 : 415
  })

  /** Taken by `next`. */
  #taken = 0

  get url (): string {
    return this.#receiver.url
  }

  /** The messages sent and not yet taken by `next`. */
  get received (): Array<{ to: string, body: string }> {
    return this.#receiver.received.slice(this.#taken)
      .map(({ payload }) => payload as unknown as { to: string, body: string })
  }

  async start (): Promise<this> {
    await this.#receiver.start()
    return this
  }

  async stop (): Promise<void> {
    await this.#receiver.stop()
  }

  async next (): Promise<{ to: string, body: string }> {
    await this.#receiver.receivedCount(this.#taken + 1)
    const [message] = this.received
    this.#taken++
    if (message === undefined) throw new Error('no message')
    return message
  }
}

/** A mail server for one test, on `port` (any free one by default), stopped at its end. */
export async function mailServer (t: TestContext, port = 0): Promise<MailServer> {
  const server = await new MailServer().start(port)
  t.teardown(async () => { await server.stop() })
  return server
}
