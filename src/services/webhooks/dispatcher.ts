import { Webhook as StandardWebhook } from 'standardwebhooks'
import type { SecretBox } from '../../security/secret-box.js'
import type { UsersRepository } from '../../store/users.js'
import type { ClaimedDelivery, DeliveryOutcome, EndpointForSending, WebhooksRepository } from '../../store/webhooks.js'
import type { AuditTrail } from '../audit/index.js'
import type { DeliveryLog, Notices } from '../messaging/index.js'
import { Rounds } from '../rounds.js'
import type { OutboundHttp } from '../../security/outbound-http.js'

/**
 * The waits after each failed try (the Standard Webhooks schedule): the last try comes about
 * 27 hours after the first, and a delivery then still failing is given up.
 */
export const RETRY_SCHEDULE_MS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600]
  .map((seconds) => seconds * 1000)
/** Tries in all: the first and one after each wait. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1
/** Deliveries claimed per round. */
const BATCH = 20

export interface WebhookDispatcherDependencies {
  webhooks: WebhooksRepository
  sender: OutboundHttp
  /** Opens the endpoints' sealed signing secrets. */
  secrets: SecretBox
  users: UsersRepository
  notices: Notices
  audit: AuditTrail
  log: DeliveryLog
  now?: () => number
}

/** The `webhook-signature` header: one signature per secret in use (the previous one too, while it lasts). */
function signature (secrets: string[], id: string, at: Date, payload: string): string {
  return secrets.map((secret) => new StandardWebhook(secret).sign(id, at, payload)).join(' ')
}

/**
 * Sends webhook deliveries (docs/api.md, "Webhooks"): what is due is claimed (so no other
 * instance sends it meanwhile), signed, POSTed once, and settled: a 2xx ends it; anything
 * else is tried again on RETRY_SCHEDULE_MS, and given up after the last try, which disables
 * an endpoint that has answered nothing with a 2xx since that delivery was made (its creator
 * is told). No order holds between deliveries: receivers order by the payload's timestamp.
 */
export class WebhookDispatcher {
  readonly #deps: WebhookDispatcherDependencies
  readonly #now: () => number
  readonly #rounds: Rounds
  /** Longer than a send may take, so no other instance takes a delivery still being sent. */
  readonly claimMs: number

  constructor (deps: WebhookDispatcherDependencies) {
    this.#deps = deps
    this.#now = deps.now ?? Date.now
    this.claimMs = Math.max(60_000, 2 * deps.sender.timeoutMs)
    this.#rounds = new Rounds(async () => await this.#batch(), (error) => {
      deps.log.warn({ err: error }, 'webhook deliveries unreachable; retried at the next round')
    })
  }

  /** Deliveries were stored: send now rather than at the next round. */
  kick (): void {
    this.#rounds.kick()
  }

  /** One round (joined when one is running); rejects when the deliveries could not be read or written. */
  async round (): Promise<void> {
    await this.#rounds.run()
  }

  /** Waits for the round in progress (the rounds are stopped by their owner). */
  async stop (): Promise<void> {
    await this.#rounds.settled()
  }

  async #batch (): Promise<boolean> {
    const now = this.#now()
    const { webhooks } = this.#deps
    const claimed = await webhooks.claimDue(
      new Date(now).toISOString(), new Date(now + this.claimMs).toISOString(), BATCH
    )
    const endpoints = await webhooks.endpointsForSending([...new Set(claimed.map((delivery) => delivery.endpointId))])
    const answered = new Set<string>()
    const givenUp: Array<{ delivery: ClaimedDelivery, endpoint: EndpointForSending }> = []
    await Promise.all(claimed.map(async (delivery) => {
      const endpoint = endpoints.get(delivery.endpointId)
      // Deleted meanwhile (its deliveries with it), or disabled: the delivery waits for it.
      if (endpoint === undefined) return
      if (!endpoint.enabled) {
        await webhooks.pause(delivery.id)
        return
      }
      const outcome = await this.#deliver(delivery, endpoint)
      if (outcome === 'succeeded') answered.add(endpoint.id)
      if (outcome === 'failed') givenUp.push({ delivery, endpoint })
    }))
    // Once per endpoint and batch, before the given-up deliveries are judged: an endpoint that
    // answered another delivery of the batch answered since they were made.
    await webhooks.markAnswered([...answered], new Date(this.#now()).toISOString())
    for (const { delivery, endpoint } of givenUp) await this.#disableIfFailing(delivery, endpoint)
    return claimed.length === BATCH
  }

  /** The secrets to sign with now: the current one, and the previous one until it expires. */
  #secrets (endpoint: EndpointForSending, at: number): string[] {
    const { secrets } = this.#deps
    const current = secrets.open(endpoint.secret)
    if (current === null) throw new Error('the signing secret cannot be opened: the key it was sealed under is neither SEALING_KEY nor in SEALING_PREVIOUS_KEYS')
    const previous = endpoint.previousSecret !== null && endpoint.previousSecretExpiresAt !== null &&
      Date.parse(endpoint.previousSecretExpiresAt) > at
      ? secrets.open(endpoint.previousSecret)
      : null
    return previous === null ? [current] : [current, previous]
  }

  /** Sends one delivery and settles it: what became of it. */
  async #deliver (delivery: ClaimedDelivery, endpoint: EndpointForSending): Promise<DeliveryOutcome['status']> {
    const { webhooks, sender, log } = this.#deps
    const at = this.#now()
    const attempts = delivery.attempts + 1
    let lastStatus: number | null = null
    let lastError: string | null = null
    try {
      const response = await sender.request({
        method: 'POST',
        url: endpoint.url,
        headers: {
          'content-type': 'application/json',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(Math.floor(at / 1000)),
          'webhook-signature': signature(this.#secrets(endpoint, at), delivery.id, new Date(at), delivery.payload)
        },
        body: delivery.payload
      })
      lastStatus = response.status
      if (response.status >= 200 && response.status < 300) {
        await webhooks.settle(delivery, { status: 'succeeded', attempts, nextAttemptAt: null, lastStatus, lastError: null }, new Date(this.#now()).toISOString())
        return 'succeeded'
      }
      lastError = response.status >= 300 && response.status < 400 ? `answered ${response.status}: redirects are not followed` : `answered ${response.status}`
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error)
    }
    const settledAt = this.#now()
    const wait = RETRY_SCHEDULE_MS[attempts - 1]
    const outcome: DeliveryOutcome = wait === undefined
      ? { status: 'failed', attempts, nextAttemptAt: null, lastStatus, lastError }
      : { status: 'pending', attempts, nextAttemptAt: new Date(settledAt + wait).toISOString(), lastStatus, lastError }
    await webhooks.settle(delivery, outcome, new Date(settledAt).toISOString())
    const entry = { deliveryId: delivery.id, endpointId: endpoint.id, attempts, status: lastStatus, reason: lastError }
    if (outcome.status === 'pending') {
      log.warn({ ...entry, retryInMs: wait }, 'webhook not delivered; it will be tried again')
    } else {
      log.error(entry, 'webhook delivery given up after repeated failures')
    }
    return outcome.status
  }

  /** Disables an endpoint that answered no delivery with a 2xx since this one was made (audited, its creator told). */
  async #disableIfFailing (delivery: ClaimedDelivery, endpoint: EndpointForSending): Promise<void> {
    const { webhooks, users, notices, audit, log } = this.#deps
    const now = new Date(this.#now()).toISOString()
    const creator = endpoint.createdBy === null ? undefined : await users.findById(endpoint.createdBy)
    const disabled = await audit.recordServiceChange(async (trx) => {
      const done = await webhooks.disableFailing(endpoint.id, delivery.createdAt, now, trx)
      if (done && creator !== undefined) await notices.add(creator.email, 'webhook_disabled', trx, `The endpoint is ${endpoint.id}, at ${new URL(endpoint.url).origin}.`)
      return done
    }, (done) => done ? [{ event: 'webhook.disabled', outcome: 'success', details: { webhook_id: endpoint.id, reason: 'failing' } }] : [])
    if (!disabled) return
    log.error({ endpointId: endpoint.id }, 'webhook endpoint disabled: its deliveries kept failing')
    notices.deliver()
  }
}
