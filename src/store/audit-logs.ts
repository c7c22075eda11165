import type { AuditEntry, AuditEvent } from '../../schemas/audit.js'
import type { CollectionRequest } from '../collection/query.js'
import { countUpTo } from './bounded-count.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { type AuditLogsTable, type Db, atomically } from './types.js'

/** An audit entry's columns, all of them. */
export const AUDIT_LOG_COLUMNS = ['id', 'event', 'actor_id', 'target_id', 'ip', 'user_agent', 'outcome', 'details', 'created_at'] as const

/** Rows inserted per statement: well under both dialects' bound-parameter limits. */
const INSERT_CHUNK = 100

/** Stores audit rows on `db` (a change's transaction), in chunks: the one insert into the audit table. */
export async function insertAuditRows (db: Db, rows: AuditLogsTable[]): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    await db.insertInto('audit_logs').values(rows.slice(start, start + INSERT_CHUNK)).execute()
  }
}

/** An entry as the audit log's API shows it (and the audit stream carries it). */
export function auditEntryOf (row: AuditLogsTable): AuditEntry {
  return {
    ...row,
    event: row.event as AuditEvent,
    outcome: row.outcome === 'success' ? 'success' : 'failure',
    details: JSON.parse(row.details) as Record<string, unknown>
  }
}

export class AuditLogsRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    this.#pages = new PageQueries<AuditLogsTable, { event?: string, actorId?: string }>(({ event, actorId }) => {
      let filtered = db.selectFrom('audit_logs')
      if (event !== undefined) filtered = filtered.where('event', '=', event)
      if (actorId !== undefined) filtered = filtered.where('actor_id', '=', actorId)
      return filtered
    }, AUDIT_LOG_COLUMNS, pages, {
      maintainedCount: ({ event, actorId }) => event === undefined && actorId === undefined ? 'audit_logs' : undefined
    })
  }

  /** The entries of `event` made since `since`, counted up to `cap`, from the (event, created_at) index alone. */
  async countSince (event: AuditEvent, since: string, cap: number): Promise<number> {
    return await countUpTo(this.db, this.db.selectFrom('audit_logs').select('created_at').where('event', '=', event).where('created_at', '>=', since), cap)
  }

  async insertMany (rows: AuditLogsTable[], db: Db = this.db): Promise<void> {
    await insertAuditRows(db, rows)
  }

  /**
   * Makes a change and stores the entries that record it in one transaction: neither is kept
   * without the other. `change` runs its statements on the transaction it is given, and
   * `alongside` what the entries bring about (their webhook deliveries).
   */
  async insertWith<T> (
    change: (trx: Db) => Promise<T>,
    rowsOf: (result: T) => AuditLogsTable[],
    alongside?: (rows: AuditLogsTable[], trx: Db) => Promise<void>
  ): Promise<T> {
    return await atomically(this.db, async (trx) => {
      const result = await change(trx)
      const rows = rowsOf(result)
      await this.insertMany(rows, trx)
      await alongside?.(rows, trx)
      return result
    })
  }

  async list (request: CollectionRequest): Promise<CollectionResult<AuditEntry>> {
    const { event, actor_id: actorId } = request.filters
    const page = await this.#pages.run(request, { event, actorId })
    return {
      ...page,
      items: page.items.map(auditEntryOf)
    }
  }

  /**
   * The latest `limit` entries `actorId` made, newest first (an account's export, docs/api.md,
   * "Account export"): read backwards through the actor's index, audit_logs_actor_id_created_at,
   * so no more than `limit` entries are read however large the log.
   */
  async latestOfActor (actorId: string, limit: number): Promise<AuditEntry[]> {
    const rows = await this.db.selectFrom('audit_logs').select(AUDIT_LOG_COLUMNS)
      .where('actor_id', '=', actorId)
      .orderBy('created_at', 'desc').orderBy('id', 'desc')
      .limit(limit).execute()
    return rows.map(auditEntryOf)
  }

  /**
   * AUDIT_RETENTION_DAYS: removes up to `limit` of the oldest entries created before `before`
   * (found through the created_at index), so that no statement holds the database for long.
   */
  async purgeBatch (before: string, limit: number): Promise<number> {
    const result = await this.db.deleteFrom('audit_logs')
      .where('id', 'in', (eb) => eb.selectFrom('audit_logs').select('id').where('created_at', '<', before).orderBy('created_at').limit(limit))
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
