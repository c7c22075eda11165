import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type JobDefinition, JobRunner } from '../../jobs/runner.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Every periodic (and start-up) job of the instance, with its state. */
    backgroundJobs: Pick<JobRunner, 'jobs' | 'events'>
  }
}

const HOUR = 60 * 60 * 1000
/**
 * Expired artifacts deleted per statement, and statements per run (every 10 minutes): up to
 * 200,000 a run, 333 a second, above the token rate one instance sustains (docs/performance.md,
 * "Authorization server"), each statement a short lock.
 */
const ARTIFACT_PURGE_BATCH = 1000
const ARTIFACT_PURGE_BATCHES = 200
const ARTIFACT_PURGE_EVERY_MS = 10 * 60 * 1000
/** Every instance delivers what is due this often (and at once after storing a message). */
const OUTBOX_POLL_MS = 2000

/** The one list of jobs (docs/architecture.md, "Background jobs"), with their bodies. */
function jobTable (fastify: FastifyInstance): JobDefinition[] {
  const { services, auditTrail, config, log, repositories } = fastify
  const { auditRetention, webhookRetention } = services
  const upkeep = fastify.revocations.upkeep
  const retryWindowMs = config.session.refreshRetryWindowS * 1000

  // Closed in this order: what may still write audit entries before the audit trail's last flush.
  return [
    {
      name: 'oauth-discovery',
      everyMs: null,
      atReady: true,
      does: 'reads each OAuth issuer\'s discovery document; a provider whose document cannot be read is logged, ' +
        'and its routes answer 502 until a later read succeeds (docs/operations.md, "Providers by issuer")',
      shared: 'per instance: each keeps the documents it read in memory',
      run: async () => {
        for (const { provider, reason } of await services.federation.discoverAll()) {
          log.warn({ provider, reason }, 'OAuth provider unavailable: its discovery document could not be read')
        }
      },
      failed: 'OAuth discovery failed'
    },
    {
      name: 'revocation-sync',
      everyMs: upkeep.syncMs,
      atReady: false,
      does: 'adds the revocations stored since the last read, other instances\' included, to the list in memory',
      shared: 'per instance by nature: each keeps its own list in memory',
      run: upkeep.sync,
      failed: 'revocation sync failed; retrying',
      recovered: 'revocation sync recovered'
    },
    {
      name: 'revocation-prune',
      everyMs: upkeep.pruneMs,
      atReady: false,
      does: 'drops expired revocations from the list in memory',
      shared: 'per instance by nature: each prunes its own list',
      run: async () => { upkeep.prune() },
      failed: 'revocation prune failed'
    },
    {
      name: 'revocation-purge',
      everyMs: upkeep.purgeMs,
      atReady: false,
      does: 'deletes the revocation rows whose token has expired',
      shared: 'every instance may run it: the delete is idempotent',
      run: upkeep.purge,
      failed: 'revocation purge failed'
    },
    // Without a retry window (REFRESH_RETRY_WINDOW_S=0) no pair is kept for retries.
    ...(retryWindowMs === 0
      ? []
      : [{
          name: 'refresh-retry-erase',
          everyMs: retryWindowMs,
          atReady: false,
          does: 'erases the token pairs kept for refresh retries, within one more window once their own has passed',
          shared: 'every instance may run it: erasing is idempotent',
          run: async () => { await services.sessions.eraseLapsedRetries() },
          failed: 'erasing refresh retries failed'
        }]),
    {
      name: 'outbox-drain',
      everyMs: OUTBOX_POLL_MS,
      atReady: true,
      does: 'delivers the messages due (also at once after one is stored), retrying failures with backoff',
      shared: 'every instance drains: each message is claimed on its row, so none is sent twice',
      // The outbox logs its own failures (a round started by a stored message too).
      run: async () => { await services.outbox.round() },
      // Delivery under way finishes; what is not delivered yet stays for the next instance to start.
      stop: async () => { await services.outbox.stop() }
    },
    {
      name: 'webhook-delivery',
      everyMs: OUTBOX_POLL_MS,
      atReady: true,
      does: 'sends the webhook deliveries due (also at once after one is stored), retrying failures on the Standard Webhooks schedule',
      shared: 'every instance sends: each delivery is claimed on its row, so none is sent twice at once',
      // The dispatcher logs its own failures (a round started by a stored delivery too).
      run: async () => { await services.webhookDispatcher.round() },
      stop: async () => { await services.webhookDispatcher.stop() }
    },
    {
      name: 'webhook-delivery-purge',
      everyMs: HOUR,
      atReady: true,
      does: 'deletes settled webhook deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS, in small paced batches',
      shared: 'every instance may run it: the deletes are idempotent and batched',
      run: async () => {
        const removed = await webhookRetention.purge()
        if (removed > 0) log.info({ removed }, 'webhook deliveries past retention purged')
      },
      failed: 'webhook delivery purge failed; tried again within the hour',
      stop: async () => { await webhookRetention.stop() }
    },
    {
      name: 'sso-metadata-refresh',
      everyMs: 10 * 60 * 1000,
      atReady: false,
      does: 'reads again the IdP metadata of the SSO connections configured by URL once a day (after a failed read: in an hour, ' +
        'then twice as long each time, up to a day), taking up a new signing certificate; a failed read keeps the last good one',
      shared: 'every instance may run it: each read is taken on its row, so none is made twice',
      run: async () => {
        const { read, failed } = await services.ssoMetadataRefresh.refreshDue()
        if (failed > 0) log.warn({ read, failed }, 'SSO connections\' IdP metadata could not be read; the last good one stays in use')
      },
      failed: 'SSO metadata refresh failed; tried again within 10 minutes'
    },
    {
      name: 'account-erasure',
      everyMs: HOUR,
      atReady: true,
      does: 'erases the accounts whose holders asked for their deletion once ACCOUNT_DELETION_GRACE_DAYS have passed',
      shared: 'every instance may run it: an account erased by another is not found again',
      run: async () => {
        const erased = await services.accountDeletion.eraseDue()
        if (erased > 0) log.info({ erased }, 'accounts erased at the end of their grace period')
      },
      failed: 'erasing accounts due for deletion failed; tried again within the hour'
    },
    {
      name: 'authorization-artifact-purge',
      everyMs: ARTIFACT_PURGE_EVERY_MS,
      atReady: true,
      does: 'deletes the authorization server\'s expired sessions, codes, tokens and consents, in batches',
      shared: 'every instance may run it: the deletes are idempotent and batched',
      run: async () => {
        const now = new Date().toISOString()
        let removed = 0
        for (let batch = 0; batch < ARTIFACT_PURGE_BATCHES; batch++) {
          const deleted = await repositories.authorizationArtifacts.purgeExpired(now, ARTIFACT_PURGE_BATCH)
          removed += deleted
          if (deleted < ARTIFACT_PURGE_BATCH) break
        }
        if (removed > 0) log.info({ removed }, 'expired authorization server artifacts purged')
      },
      failed: 'purging expired authorization server artifacts failed; tried again within 10 minutes'
    },
    {
      name: 'audit-retention-purge',
      everyMs: HOUR,
      atReady: true,
      does: 'deletes audit entries past AUDIT_RETENTION_DAYS, in small paced batches',
      shared: 'every instance may run it: the deletes are idempotent and batched',
      run: async () => {
        // Start-up does not wait for it: a backlog takes as long as it takes, in small batches.
        const removed = await auditRetention.purge()
        if (removed > 0) log.info({ removed }, 'audit entries past retention purged')
      },
      failed: 'audit purge failed; tried again within the hour',
      stop: async () => { await auditRetention.stop() }
    },
    {
      name: 'audit-flush',
      everyMs: auditTrail.flushIntervalMs,
      atReady: false,
      does: 'writes the audit entries queued for a batch (rate-limit refusals, job failures)',
      shared: 'per instance: each flushes its own queue',
      run: async () => { await auditTrail.flush() },
      failed: 'audit flush failed',
      audited: false,
      // Last: writes everything still queued, the entries of the jobs stopped before included.
      stop: async () => {
        await auditTrail.close()
        await fastify.auditSink.close()
      }
    }
  ]
}

/**
 * One home for background work: every job in one table, run by the job runner
 * (src/jobs/runner.ts) once the app is ready and stopped in one onClose hook, before the
 * database closes (later plugins close first).
 */
export default fp(async (fastify) => {
  const { auditTrail, log } = fastify
  const runner = new JobRunner(jobTable(fastify), {
    log,
    recordFailure: (job) => { auditTrail.record({ event: 'job.failed', outcome: 'failure', details: { job } }) }
  })
  fastify.decorate('backgroundJobs', runner)
  fastify.addHook('onReady', async () => { runner.start() })
  fastify.addHook('onClose', async () => { await runner.stop() })
}, { name: 'background', dependencies: ['revocation', 'audit', 'services'] })
