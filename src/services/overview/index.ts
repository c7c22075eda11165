import type { ServiceDependencies } from '../dependencies.js'
import { OverviewService } from './overview.js'

/** The operators' overview (docs/api.md, "Overview"). */
export function overviewServices ({ repositories }: ServiceDependencies) {
  const { auditLogs, signInFailures, webhooks, outbox } = repositories
  return { overview: new OverviewService({ auditLogs, signInFailures, webhooks, outbox }) }
}
