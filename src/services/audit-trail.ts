import type { Config } from '../config/index.js'
import type { Repositories } from '../store/repositories.js'
import { type AuditSink, auditStorage, AuditTrail } from './audit/index.js'
import { WebhookPublisher } from './webhooks/index.js'

/**
 * The trail services record through (docs/api.md, "Audit log"): each entry stored with the
 * webhook deliveries it brings about, in one transaction, then written to the stream when one is
 * configured. Built before the services, which take it; `published` tells them that deliveries
 * wait (the webhook dispatcher sends them at once). `failed` is told of the first failed write
 * of a run (its entries are kept for the next try), `recovered` of the write that ends the run.
 */
export function createAuditTrail (
  { config, repositories }: { config: Config, repositories: Repositories },
  options: {
    published: () => void
    sink?: AuditSink
    failed: (error: unknown, pending: number) => void
    recovered?: () => void
  }
): AuditTrail {
  const storage = auditStorage({
    auditLogs: repositories.auditLogs,
    publisher: new WebhookPublisher({ webhooks: repositories.webhooks, streamAudit: config.auditStream.kind === 'webhooks' }),
    published: options.published,
    ...(options.sink !== undefined && { sink: options.sink })
  })
  let failing = false
  return new AuditTrail({
    write: async (rows) => {
      await storage.write(rows)
      if (failing) options.recovered?.()
      failing = false
    },
    writeWith: storage.writeWith,
    storedAlone: storage.storedAlone,
    onError: (error, pending) => {
      if (!failing) options.failed(error, pending)
      failing = true
    }
  })
}
