import type { AuditEvent } from '../../../schemas/audit.js'
import { redact } from '../../security/redaction.js'
import { uuidv7 } from '../../store/ids.js'
import type { AuditLogsTable, Db } from '../../store/types.js'
import { personOf, type RequestContext } from '../context.js'

export interface AuditRecord {
  event: AuditEvent
  outcome: 'success' | 'failure'
  actorId?: string | null
  targetId?: string | null
  ip?: string | null
  userAgent?: string | null
  details?: Record<string, unknown>
}

/** What a service says of an event; the request context adds where it came from. */
export type AuditFields = Omit<AuditRecord, 'event' | 'ip' | 'userAgent'>

/** An entry recording a change, with its event. */
export type AuditChange = AuditFields & { event: AuditEvent }

/**
 * Makes a change with the entries that record it in one transaction (AuditTrail.recorded):
 * `change` runs its statements on the transaction it is given; the entries are stored unless
 * `recordedIf` says, from its result, that nothing changed.
 */
export interface Recorded {
  <T>(change: (trx: Db) => Promise<T>, recordedIf?: (result: T) => boolean): Promise<T>
  /**
   * For a change that can store its entries in the one statement that makes it, rather than in
   * a transaction around it: their rows, and `stored`, to call once that statement stored them.
   * Undefined when the entries bring something else to store with them (webhook deliveries):
   * the change is then made through the call.
   */
  alone?: () => { rows: AuditLogsTable[], stored: () => void } | undefined
}

function toRow (entry: AuditRecord): AuditLogsTable {
  return {
    id: uuidv7(),
    event: entry.event,
    actor_id: entry.actorId ?? null,
    target_id: entry.targetId ?? null,
    ip: entry.ip ?? null,
    user_agent: entry.userAgent?.slice(0, 512) ?? null,
    outcome: entry.outcome,
    details: JSON.stringify(redact(entry.details ?? {})),
    created_at: new Date().toISOString()
  }
}

/**
 * The entry's row, from the context's address and user agent; its caller is the actor unless
 * the entry names one (an organization's API key has no person: none). In an impersonation the
 * details name the administrator too, and the API key's id when a key made the request.
 */
function rowIn (context: RequestContext, event: AuditEvent, entry: AuditFields): AuditLogsTable {
  const { caller, ip, userAgent } = context
  const impersonatorId = caller?.impersonatorId ?? null
  const keyId = caller?.apiKey?.id
  const details = {
    ...entry.details,
    ...(impersonatorId !== null && { impersonator_id: impersonatorId }),
    ...(keyId !== undefined && { api_credential_id: keyId })
  }
  return toRow({ actorId: caller == null ? null : personOf(caller), ...entry, details, event, ip, userAgent })
}

export interface AuditTrailOptions {
  write: (rows: AuditLogsTable[]) => Promise<void>
  /** Runs `change` and writes the rows that record it in one transaction. */
  writeWith: <T>(change: (trx: Db) => Promise<T>, rowsOf: (result: T) => AuditLogsTable[]) => Promise<T>
  /**
   * Whether `rows` may be stored by a change's own statement (Recorded.alone): when they bring
   * nothing else to store, what to do once they are stored; undefined otherwise.
   */
  storedAlone?: (rows: AuditLogsTable[]) => (() => void) | undefined
  onError: (error: unknown, pending: number) => void
  /** Flush at least this often: the interval of the background plugin's flush job. */
  flushIntervalMs?: number
  /** Flush at once when this many are waiting. */
  batchSize?: number
  /** Beyond this many waiting (storage down for long), the oldest are dropped and reported. */
  maxPending?: number
}

/**
 * The audit table's writer. A change a service makes is stored with its entries in one
 * transaction (`recordChange`), and an event that changes nothing (a refused sign-in) is
 * written at once (`recordIn`): the caller awaits either before answering, so an acknowledged
 * action has its entry, after a crash too, and every instance lists it. Only what may be batched (`record`: a
 * rate-limit refusal, at most one per client, tier and window) is queued and written off the request path; a failed
 * batch keeps its rows for the next try, and `close()` writes everything still waiting.
 */
export class AuditTrail {
  readonly #pending: AuditLogsTable[] = []
  readonly #options: Required<AuditTrailOptions>
  #flushing: Promise<void> | null = null
  #followUp: Promise<void> | null = null

  constructor (options: AuditTrailOptions) {
    this.#options = {
      flushIntervalMs: 250,
      batchSize: 200,
      maxPending: 50_000,
      ...options,
      storedAlone: options.storedAlone ?? (() => undefined)
    }
  }

  /** How often to flush what is queued: the interval of the background plugin's flush job. */
  get flushIntervalMs (): number {
    return this.#options.flushIntervalMs
  }

  /** Queues an entry for the next batch: only for events that may be written late. */
  record (entry: AuditRecord): void {
    this.#queue(toRow(entry))
  }

  /** `record`, with the context's address, user agent and caller, as `recordIn` writes them. */
  recordLaterIn (context: RequestContext, event: AuditEvent, entry: AuditFields): void {
    this.#queue(rowIn(context, event, entry))
  }

  #queue (row: AuditLogsTable): void {
    this.#pending.push(row)
    const overflow = this.#pending.length - this.#options.maxPending
    if (overflow > 0) {
      this.#pending.splice(0, overflow)
      this.#options.onError(new Error(`audit backlog full: ${overflow} oldest entries dropped`), this.#pending.length)
    }
    if (this.#pending.length >= this.#options.batchSize) void this.flush()
  }

  /**
   * Writes `event` with the context's address and user agent (the actor is its caller unless
   * the entry names one); resolves once it is stored.
   */
  async recordIn (context: RequestContext, event: AuditEvent, entry: AuditFields): Promise<void> {
    await this.#options.write([rowIn(context, event, entry)])
  }

  /**
   * Makes a change and stores the entries that record it in one transaction (docs/api.md,
   * "Audit log"): `change` runs its statements on the transaction it is given, and
   * `entriesOf` says, from its result, what happened.
   */
  async recordChange<T> (
    context: RequestContext,
    change: (trx: Db) => Promise<T>,
    entriesOf: (result: T) => AuditChange[]
  ): Promise<T> {
    return await this.#options.writeWith(change, (result) =>
      entriesOf(result).map(({ event, ...entry }) => rowIn(context, event, entry)))
  }

  /** As `recordChange`, for a change the service makes of itself (background work): no request, address or actor. */
  async recordServiceChange<T> (change: (trx: Db) => Promise<T>, entriesOf: (result: T) => AuditChange[]): Promise<T> {
    return await this.#options.writeWith(change, (result) => entriesOf(result).map((entry) => toRow(entry)))
  }

  /** A change made through the result is stored with `entries`, for a service that makes it on another's behalf. */
  recorded (context: RequestContext, entries: AuditChange[]): Recorded {
    const recorded: Recorded = async (change, recordedIf = () => true) =>
      await this.recordChange(context, change, (result) => recordedIf(result) ? entries : [])
    recorded.alone = () => {
      const rows = entries.map(({ event, ...entry }) => rowIn(context, event, entry))
      const stored = this.#options.storedAlone(rows)
      return stored === undefined ? undefined : { rows, stored }
    }
    return recorded
  }

  /**
   * Writes everything recorded before the call. A write in flight holds only what was waiting
   * when it began, so callers during it share one follow-up write of the rest: at most one
   * write runs and one waits, however many requests record meanwhile (or storage is down).
   */
  async flush (): Promise<void> {
    if (this.#flushing === null) return await this.#writePending()
    this.#followUp ??= this.#flushing.then(async () => {
      this.#followUp = null
      await this.#writePending()
    })
    await this.#followUp
  }

  async #writePending (): Promise<void> {
    if (this.#pending.length === 0) return
    const batch = this.#pending.splice(0, this.#pending.length)
    this.#flushing = this.#options.write(batch).catch((error: unknown) => {
      this.#pending.unshift(...batch)
      this.#options.onError(error, this.#pending.length)
    }).finally(() => { this.#flushing = null })
    await this.#flushing
  }

  /** Writes everything still waiting (one retry if a write fails), once the flush job has stopped. */
  async close (): Promise<void> {
    await this.flush()
    await this.flush()
  }
}
