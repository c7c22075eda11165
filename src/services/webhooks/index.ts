import { OutboundHttp } from '../../security/outbound-http.js'
import { outboundPolicy } from '../../security/outbound-addresses.js'
import { SEALED_PURPOSES, SecretBox } from '../../security/secret-box.js'
import type { ServiceDependencies } from '../dependencies.js'
import { Retention } from '../retention.js'
import type { Messaging } from '../messaging/index.js'
import { WebhookDispatcher } from './dispatcher.js'
import { WebhookService } from './service.js'

export { WebhookPublisher } from './publisher.js'

const DAY = 24 * 60 * 60 * 1000

/**
 * Webhook endpoints, the dispatcher that delivers their events, and the purge of settled
 * deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS (a background job).
 */
export function webhookServices (deps: ServiceDependencies, { messaging }: { messaging: Messaging }) {
  const { config, repositories, audit, now } = deps
  const secrets = new SecretBox(config.sealing.keys, SEALED_PURPOSES.webhookSecret)
  const policy = outboundPolicy(config.webhooks.allowedNetworks, 'WEBHOOK_ALLOWED_NETWORKS')
  const webhookDispatcher = new WebhookDispatcher({
    webhooks: repositories.webhooks,
    sender: new OutboundHttp({
      policy,
      timeoutMs: config.webhooks.timeoutMs,
      // Only the status counts: a receiver's answer is read this far, then its connection closed.
      maxResponseBytes: 65_536,
      userAgent: 'users-api-webhooks/1',
      resolve: deps.resolve
    }),
    secrets,
    users: repositories.users,
    notices: messaging.notices,
    audit,
    log: deps.log,
    now
  })
  return {
    webhookDispatcher,
    webhookRetention: new Retention({
      purgeBatch: async (before, limit) => await repositories.webhooks.purgeSettled(before, limit),
      retentionMs: config.webhooks.retentionDays * DAY
    }),
    webhooks: new WebhookService({
      webhooks: repositories.webhooks,
      users: repositories.users,
      secrets,
      policy,
      audit,
      cursors: deps.cursors,
      deliver: () => { webhookDispatcher.kick() },
      now
    })
  }
}
