import type { OutboxRepository, QueuedMessage } from '../../store/outbox.js'
import { Rounds } from '../rounds.js'
import type { DeliveryLog, Mailer, SmsSender } from './ports.js'

/** A kind of outbound message: the outbox's `channel` column. */
export type Channel = QueuedMessage['channel']

/**
 * How the messages of one channel leave. A new kind of delivery registers one of these for its
 * channel (`senders`); claims, retries, backoff and logging are the outbox's, written once.
 */
export interface ChannelSender {
  /** Named in a configuration error (the port's interface). */
  readonly name: string
  /** The longest one send may take: by then it has given up. The outbox claims a message for longer. */
  readonly timeoutMs: number
  /** True for a sender that only writes the message to the log: nothing is delivered. */
  readonly logOnly?: boolean
  send: (message: QueuedMessage) => Promise<void>
}

/** An e-mail: subject, text and HTML, through the Mailer. */
function mailSender (mailer: Mailer): ChannelSender {
  return {
    name: 'Mailer',
    get timeoutMs () { return mailer.timeoutMs },
    get logOnly () { return mailer.logOnly },
    send: async (message) => {
      await mailer.send({ to: message.recipient, subject: message.subject, text: message.text, html: message.html })
    }
  }
}

/** An SMS: the text only, through the SmsSender. */
function smsSender (sms: SmsSender): ChannelSender {
  return {
    name: 'SmsSender',
    get timeoutMs () { return sms.timeoutMs },
    get logOnly () { return sms.logOnly },
    send: async (message) => { await sms.send({ to: message.recipient, body: message.text }) }
  }
}

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
  /** Senders of further channels (or in place of the mailer's or SMS sender's), by channel. */
  senders?: Partial<Record<Channel, ChannelSender>>
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
 * Delivers the outbox: what is due is claimed (so no other instance sends it meanwhile), sent
 * by its channel's sender, and removed; a failure is logged and tried again later with backoff.
 * Requests never wait for a mail server: they store the message, and delivery follows. The
 * rounds are the background plugin's (src/plugins/application/background.ts), besides `kick`.
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
  /** Each message's sender, by its channel. */
  readonly #senders: Map<Channel, ChannelSender>
  readonly #rounds: Rounds

  constructor (deps: MessageOutboxDependencies) {
    this.#deps = deps
    this.#now = deps.now ?? Date.now
    const senders = { email: mailSender(deps.mailer), sms: smsSender(deps.sms), ...deps.senders }
    this.#senders = new Map(Object.entries(senders) as Array<[Channel, ChannelSender]>)
    for (const { name, timeoutMs } of this.#senders.values()) {
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
        throw new Error(`${name}.timeoutMs must be a positive number of milliseconds, not ${String(timeoutMs)}`)
      }
    }
    const longestSendMs = Math.max(...[...this.#senders.values()].map((sender) => sender.timeoutMs))
    this.claimMs = Math.max(MIN_CLAIM_MS, 2 * longestSendMs)
    this.#rounds = new Rounds(async () => await this.#batch(), (error) => {
      this.#deps.log.warn({ err: error }, 'outbox unreachable; delivery retried at the next round')
    })
  }

  /** A message was stored: deliver now rather than at the next round. */
  kick (): void {
    this.#rounds.kick()
  }

  /** One delivery run at a time; a run asked for while one goes on follows it. A failure is logged. */
  async deliverDue (): Promise<void> {
    await this.round().catch(() => {}) // logged by the run
  }

  /** As `deliverDue`, but rejects when the outbox could not be read or written (logged once per run). */
  async round (): Promise<void> {
    await this.#rounds.run()
  }

  /** Waits for the run in progress (the rounds are stopped by their owner), then closes the mailer. */
  async stop (): Promise<void> {
    await this.#rounds.settled()
    await this.#deps.mailer.close()
  }

  /** Claims and delivers one batch; true when it was full. */
  async #batch (): Promise<boolean> {
    const now = this.#now()
    const claimed = await this.#deps.outbox.claimDue(
      new Date(now).toISOString(), new Date(now + this.claimMs).toISOString(), BATCH
    )
    await Promise.all(claimed.map(async (message) => { await this.#deliver(message) }))
    return claimed.length === BATCH
  }

  async #deliver (message: QueuedMessage): Promise<void> {
    const { outbox, retryMs, log } = this.#deps
    const sender = this.#senders.get(message.channel)
    try {
      if (sender === undefined) throw new Error(`no sender for channel ${message.channel}`)
      await withinLimit(sender.timeoutMs, sender.send(message))
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
      await outbox.reschedule(message.id, attempts, new Date(this.#now() + wait).toISOString(),
        error instanceof Error ? error.message : String(error))
      return
    }
    await outbox.remove(message.id)
    // A sender that only writes to the log has said so with a warning: nothing was delivered.
    if (sender?.logOnly !== true) {
      const { id: messageId, channel, subject } = message
      log.info({ messageId, channel, subject, attempts: message.attempts + 1 }, 'message delivered')
    }
  }
}
