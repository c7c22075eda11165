import type { OutboxRepository, QueuedMessage } from '../store/outbox.js'
import type { DeliveryLog, Mailer, SmsSender } from './delivery.js'

/** Messages claimed per round. */
const BATCH = 10
/** The shortest claim; see `claimMs`. */
const MIN_CLAIM_MS = 60_000
/** The longest wait between two tries of one message. */
const MAX_RETRY_MS = 60 * 60 * 1000
/** Tries before a message is given up (and reported as an error): about 3.5 hours at the default retry. */
const MAX_ATTEMPTS = 12

export interface MessageOutboxDependencies {
  outbox: OutboxRepository
  mailer: Mailer
  sms: SmsSender
  /** The first retry waits this long, each next one twice as long (up to an hour). */
  retryMs: number
  log: DeliveryLog
  now?: () => number
}

/**
 * A send that has not settled within its sender's limit counts as failed, so that it is tried
 * again under a new claim rather than left to outlive the one it holds (a sender that keeps
 * its limit has given up by then).
 */
async function withinLimit (limitMs: number, sending: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new Error(`not sent within ${limitMs} ms`)) }, limitMs)
  })
  try {
    await Promise.race([sending, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Delivers the outbox: what is due is claimed (so no other instance sends it meanwhile), sent,
 * and removed; a failure is logged and tried again later with backoff. Requests never wait
 * for a mail server: they store the message, and delivery follows.
 */
export class MessageOutbox {
  readonly #deps: MessageOutboxDependencies
  readonly #now: () => number
  /**
   * How long a claim holds: twice the longest send (the Mailer's and SmsSender's own limits),
   * so no other instance takes a message while it is still being sent and its outcome stored;
   * a claim lapses, and a crashed instance's messages are sent by another, after that.
   */
  readonly claimMs: number
  #running: Promise<void> | null = null
  #again = false
  #timer: NodeJS.Timeout | null = null

  constructor (deps: MessageOutboxDependencies) {
    this.#deps = deps
    this.#now = deps.now ?? Date.now
    for (const [name, sender] of [['Mailer', deps.mailer], ['SmsSender', deps.sms]] as const) {
      if (!Number.isFinite(sender.timeoutMs) || sender.timeoutMs <= 0) throw new Error(`${name}.timeoutMs must be a positive number of milliseconds, not ${String(sender.timeoutMs)}`)
    }
    this.claimMs = Math.max(MIN_CLAIM_MS, 2 * Math.max(deps.mailer.timeoutMs, deps.sms.timeoutMs))
  }

  /** Delivers what is due every `intervalMs`, and at once after each `kick`. */
  start (intervalMs: number): void {
    this.#timer = setInterval(() => { this.kick() }, intervalMs).unref()
    this.kick()
  }

  /** A message was stored: deliver now rather than at the next round. */
  kick (): void {
    void this.deliverDue()
  }

  /** One delivery run at a time; a run asked for while one goes on follows it. */
  async deliverDue (): Promise<void> {
    if (this.#running !== null) {
      this.#again = true
      return await this.#running
    }
    this.#running = this.#drain().catch((error: unknown) => {
      this.#deps.log.warn({ err: error }, 'outbox unreachable; delivery retried at the next round')
    }).finally(() => { this.#running = null })
    await this.#running
  }

  /** Stops the rounds and waits for the one in progress. */
  async stop (): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer)
    await this.#running
    await this.#deps.mailer.close()
  }

  async #drain (): Promise<void> {
    do {
      this.#again = false
      const now = this.#now()
      const claimed = await this.#deps.outbox.claimDue(new Date(now).toISOString(), new Date(now + this.claimMs).toISOString(), BATCH)
      await Promise.all(claimed.map(async (message) => { await this.#deliver(message) }))
      if (claimed.length === BATCH) this.#again = true
    } while (this.#again)
  }

  async #deliver (message: QueuedMessage): Promise<void> {
    const { outbox, mailer, sms, retryMs, log } = this.#deps
    const sender = message.channel === 'email' ? mailer : sms
    try {
      if (message.channel === 'email') await withinLimit(mailer.timeoutMs, mailer.send({ to: message.recipient, subject: message.subject, text: message.text, html: message.html }))
      else await withinLimit(sms.timeoutMs, sms.send({ to: message.recipient, body: message.text }))
    } catch (error) {
      const attempts = message.attempts + 1
      const entry = { err: error, messageId: message.id, channel: message.channel, subject: message.subject, attempts }
      if (attempts >= MAX_ATTEMPTS) {
        log.error(entry, 'message given up after repeated delivery failures')
        await outbox.remove(message.id)
        return
      }
      const wait = Math.min(retryMs * 2 ** (attempts - 1), MAX_RETRY_MS)
      log.warn({ ...entry, retryInMs: wait }, 'message not delivered; it will be tried again')
      await outbox.reschedule(message.id, attempts, new Date(this.#now() + wait).toISOString(), error instanceof Error ? error.message : String(error))
      return
    }
    await outbox.remove(message.id)
    // A sender that only writes to the log has said so with a warning: nothing was delivered.
    if (sender.logOnly !== true) log.info({ messageId: message.id, channel: message.channel, subject: message.subject, attempts: message.attempts + 1 }, 'message delivered')
  }
}
