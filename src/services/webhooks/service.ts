import { randomBytes } from 'node:crypto'
import {
  DELIVERY_FIELDS, WEBHOOK_FIELDS, type Webhook, type WebhookCreate, type WebhookDelivery, type WebhookUpdate
} from '../../../schemas/webhooks.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, validationFailed } from '../../errors.js'
import { endpointUrlProblem, type OutboundPolicy } from '../../security/outbound-addresses.js'
import type { SecretBox } from '../../security/secret-box.js'
import { uuidv7 } from '../../store/ids.js'
import { deliveryOf, type WebhooksRepository } from '../../store/webhooks.js'
import type { UsersRepository } from '../../store/users.js'
import { claimedAccount } from '../sign-in/index.js'
import type { AuditTrail } from '../audit/index.js'
import { holderOf, type RequestContext } from '../context.js'
import { deliveryRow } from './publisher.js'

/** How long deliveries are also signed with the previous secret after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000

/** A signing secret as Standard Webhooks writes one: `whsec_` and 32 random bytes in base64. */
function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

export interface WebhookServiceDependencies {
  webhooks: WebhooksRepository
  users: UsersRepository
  /** Seals the signing secrets at rest. */
  secrets: SecretBox
  policy: OutboundPolicy
  audit: AuditTrail
  cursors: CursorCodec
  /** Deliveries were stored: send them now. */
  deliver: () => void
  now?: () => number
}

/**
 * Webhook endpoints and their deliveries (docs/api.md, "Webhooks"); the route declares the
 * permission, this service keeps the rules: where an endpoint may point, its secret shown
 * once, and what each change is audited as.
 */
export class WebhookService {
  readonly #now: () => number

  constructor (private readonly deps: WebhookServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** Creates an endpoint; its creator's address must have been proved (docs/security.md, "Account claiming"). */
  async create (context: RequestContext, input: WebhookCreate): Promise<Webhook & { secret: string }> {
    const caller = holderOf(context, 'making a webhook endpoint')
    await claimedAccount(this.deps.users, caller.id)
    this.#assertUrl(input.url)
    const secret = newSecret()
    const now = new Date(this.#now()).toISOString()
    const webhook = await this.deps.audit.recordChange(context, async (trx) => await this.deps.webhooks.create({
      id: uuidv7(),
      url: input.url,
      description: input.description ?? '',
      event_types: JSON.stringify(input.events),
      secret: this.deps.secrets.seal(secret),
      previous_secret: null,
      previous_secret_expires_at: null,
      disabled_at: input.enabled === false ? now : null,
      disabled_reason: input.enabled === false ? 'manual' : null,
      last_success_at: null,
      created_by: caller.id,
      created_at: now,
      updated_at: now
    }, trx), (created) => [{
      // The receiver's origin only: a URL's path or query may carry its credential (a Slack-style token).
      event: 'webhook.created', outcome: 'success', details: { webhook_id: created.id, origin: new URL(created.url).origin, events: created.events }
    }])
    return { ...webhook, secret }
  }

  async list (query: CollectionQueryInput) {
    return await collectionPage(query, { ...WEBHOOK_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: 'webhooks' },
      this.deps.cursors, async (request) => await this.deps.webhooks.list(request))
  }

  async get (id: string): Promise<Webhook> {
    const webhook = await this.deps.webhooks.find(id)
    if (webhook === undefined) throw new Errors.NOT_FOUND('Webhook')
    return webhook
  }

  /** Changes an endpoint; enabling one makes the deliveries it kept waiting due at once. */
  async update (context: RequestContext, id: string, input: WebhookUpdate): Promise<Webhook> {
    holderOf(context, 'changing a webhook endpoint')
    if (input.url !== undefined) this.#assertUrl(input.url)
    const now = new Date(this.#now()).toISOString()
    const changes = {
      ...(input.url !== undefined && { url: input.url }),
      ...(input.description !== undefined && { description: input.description }),
      ...(input.events !== undefined && { event_types: JSON.stringify(input.events) }),
      ...(input.enabled !== undefined && { enabled: input.enabled })
    }
    const webhook = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.webhooks.update(id, changes, now, trx),
      (updated) => updated === undefined ? [] : [{ event: 'webhook.updated', outcome: 'success', details: { webhook_id: id, fields: Object.keys(input) } }])
    if (webhook === undefined) throw new Errors.NOT_FOUND('Webhook')
    if (input.enabled === true) this.deps.deliver()
    return webhook
  }

  /** Deletes an endpoint and its deliveries; deleting one that does not exist succeeds too. */
  async remove (context: RequestContext, id: string): Promise<void> {
    await this.deps.audit.recordChange(context, async (trx) => await this.deps.webhooks.delete(id, trx),
      (deleted) => deleted ? [{ event: 'webhook.deleted', outcome: 'success', details: { webhook_id: id } }] : [])
  }

  /**
   * A new signing secret, shown this once. Deliveries are signed with both secrets for
   * PREVIOUS_SECRET_TTL_MS, so receivers can move to the new one without missing any.
   */
  async rotateSecret (context: RequestContext, id: string): Promise<Webhook & { secret: string }> {
    holderOf(context, 'making a webhook\'s secret')
    const { webhooks, secrets, audit } = this.deps
    const secret = newSecret()
    const at = this.#now()
    const webhook = await audit.recordChange(context, async (trx) => {
      const current = await webhooks.sealedSecret(id, trx)
      if (current === undefined) return undefined
      return await webhooks.rotateSecret(id, secrets.seal(secret), {
        secret: current, expiresAt: new Date(at + PREVIOUS_SECRET_TTL_MS).toISOString()
      }, new Date(at).toISOString(), trx)
    }, (rotated) => rotated === undefined ? [] : [{ event: 'webhook.secret_rotated', outcome: 'success', details: { webhook_id: id } }])
    if (webhook === undefined) throw new Errors.NOT_FOUND('Webhook')
    return { ...webhook, secret }
  }

  async deliveries (id: string, query: CollectionQueryInput) {
    await this.get(id)
    return await collectionPage(query, { ...DELIVERY_FIELDS, defaultSort: [{ field: 'created_at', descending: true }], scope: `webhook-deliveries:${id}` },
      this.deps.cursors, async (request) => await this.deps.webhooks.listDeliveries(id, request))
  }

  /** Sends a delivery again now, whatever became of it; its endpoint must be enabled. */
  async retry (context: RequestContext, id: string, deliveryId: string): Promise<WebhookDelivery> {
    await this.#enabled(id)
    const now = new Date(this.#now()).toISOString()
    const delivery = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.webhooks.retryDelivery(id, deliveryId, now, trx),
      (retried) => retried === undefined ? [] : [{ event: 'webhook.delivery_retried', outcome: 'success', details: { webhook_id: id, delivery_id: deliveryId } }])
    if (delivery === undefined) throw new Errors.NOT_FOUND('Delivery')
    this.deps.deliver()
    return delivery
  }

  /** Sends the endpoint a `webhook.test` event (whatever it is subscribed to). */
  async test (context: RequestContext, id: string): Promise<WebhookDelivery> {
    await this.#enabled(id)
    const now = new Date(this.#now()).toISOString()
    const row = deliveryRow(id, { type: 'webhook.test', data: { webhook_id: id } }, now)
    await this.deps.audit.recordChange(context, async (trx) => { await this.deps.webhooks.addDeliveries([row], trx) },
      () => [{ event: 'webhook.tested', outcome: 'success', details: { webhook_id: id, delivery_id: row.id } }])
    this.deps.deliver()
    return deliveryOf(row)
  }

  async #enabled (id: string): Promise<void> {
    const webhook = await this.get(id)
    if (!webhook.enabled) throw new Errors.CONFLICT('The webhook is disabled: enable it first')
  }

  #assertUrl (url: string): void {
    const problem = endpointUrlProblem(url, this.deps.policy)
    if (problem !== null) throw validationFailed([{ path: '/url', message: problem }])
  }
}
