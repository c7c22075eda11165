import fp from 'fastify-plugin'
import { RevocationList } from '../../security/revocation-list.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The revocation list of access-token identifiers (docs/api.md, "Token revocation"). */
    revocations: {
      /** A memory lookup: no round trip on the request path. */
      isRevoked: (jti: string) => boolean
      revoke: (jti: string, expiresAt: Date) => Promise<void>
      /** The list's upkeep, run as jobs of the background plugin (src/plugins/application/background.ts). */
      upkeep: RevocationUpkeep
    }
  }
}

export interface RevocationUpkeep {
  /** Re-reads the database this often (ms), so an instance learns of another's revocation within a second. */
  readonly syncMs: number
  /** Adds what was revoked since the last read, other instances' included; rejects if the database cannot be read. */
  sync: () => Promise<void>
  readonly pruneMs: number
  /** Drops expired entries from memory. */
  prune: () => void
  readonly purgeMs: number
  /** Deletes expired rows; rejects on failure. */
  purge: () => Promise<void>
}

const CHANNEL = 'users-api:revocations'
/** Every instance re-reads the database this often, so it learns of a revocation within a second. */
const POLL_MS = 500
/** Each poll re-reads this far back: covers clock skew between instances and late commits. */
const OVERLAP_MS = 5000
const PURGE_MS = 10 * 60 * 1000
/**
 * Expired entries leave memory this often, not on every poll: pruning walks the whole list,
 * and an expired entry costs only its memory (its token fails verification anyway).
 */
const PRUNE_MS = 60 * 1000

/**
 * Revocations are written to the database (so they survive restarts of the service and of
 * Redis) and kept in memory on every instance. Instances learn of each other's revocations
 * by polling the database, and at once through Redis pub/sub when REDIS_URL is set.
 */
export default fp(async (fastify) => {
  const repository = fastify.repositories.revocations
  const list = new RevocationList()
  let syncedFrom = new Date(0).toISOString()

  async function sync (): Promise<void> {
    const now = Date.now()
    for (const row of await repository.since(syncedFrom)) list.add(row.jti, Date.parse(row.expires_at), now)
    syncedFrom = new Date(now - OVERLAP_MS).toISOString()
  }
  const purge = async () => { await repository.purgeExpired(new Date().toISOString()) }
  // The first sync reads every row not yet purged, expired ones included: purged first. A
  // failed purge only leaves more to read (expired rows are skipped), so it does not stop start-up.
  // Start-up completes with the list loaded; the periodic sync, prune and purge follow from `ready`.
  await purge().catch((error: unknown) => { fastify.log.warn({ err: error }, 'revocation purge failed') })
  await sync()

  const { redis } = fastify
  const subscriber = redis?.duplicate() ?? null
  if (subscriber !== null) {
    subscriber.on('error', () => {}) // reported by the main client
    subscriber.on('message', (_channel: string, message: string) => {
      try {
        const { jti, exp } = JSON.parse(message) as { jti: unknown, exp: unknown }
        if (typeof jti === 'string' && typeof exp === 'number') list.add(jti, exp)
      } catch {
        // Not ours: ignore.
      }
    })
    // (Re)subscribing happens on every (re)connection; the poll covers what was missed meanwhile.
    subscriber.on('ready', () => { subscriber.subscribe(CHANNEL).catch(() => {}) })
    subscriber.connect().catch(() => {})
  }

  fastify.decorate('revocations', {
    isRevoked: (jti: string) => list.has(jti),
    async revoke (jti: string, expiresAt: Date) {
      await repository.add(jti, expiresAt.toISOString(), new Date().toISOString())
      list.add(jti, expiresAt.getTime())
      await redis?.publish(CHANNEL, JSON.stringify({ jti, exp: expiresAt.getTime() })).catch(() => {})
    },
    upkeep: {
      syncMs: POLL_MS,
      sync,
      pruneMs: PRUNE_MS,
      prune: () => { list.prune(Date.now()) },
      purgeMs: PURGE_MS,
      purge
    }
  })

  fastify.addHook('onClose', async () => {
    subscriber?.disconnect()
  })
}, { name: 'revocation', dependencies: ['repositories', 'redis'] })
