import { type CompiledQuery, sql } from 'kysely'
import type { IssuedRefreshToken } from '../security/tokens.js'
import { AUDIT_LOG_COLUMNS } from './audit-logs.js'
import { bindNamed, Placeholder } from './prepared.js'
import { type AuditLogsTable, type Db, type Dialect, type RefreshTokensTable, type SessionsTable, atomically } from './types.js'
import { userRowHold } from './users.js'

/** What a refresh records (SessionsRepository.rotate). */
export interface Rotation {
  /** The presented token, spent by the rotation. */
  spentJti: string
  sessionId: string
  userId: string
  /** The new refresh token, and the access token issued with it. */
  issued: IssuedRefreshToken
  accessJti: string
  device: Record<string, unknown>
  now: string
  /** The new pair sealed, kept on the session for retries; null when they are off. */
  retry: { pair: string, until: string } | null
  /** The organization the new pair speaks for, kept on the session for its later refreshes. */
  organizationId: string | null
  /**
   * The audit entries that record the rotation, stored with it (by its one statement on
   * PostgreSQL, Recorded.alone); none when they are stored in a transaction around it.
   */
  entries: AuditLogsTable[]
}

export function refreshTokenRow (
  sessionId: string,
  userId: string,
  { issued, accessJti, organizationId }: Pick<Rotation, 'issued' | 'accessJti' | 'organizationId'>,
  device: Record<string, unknown>,
  now: string
): RefreshTokensTable {
  return {
    jti: issued.jti,
    session_id: sessionId,
    user_id: userId,
    token_hash: issued.token_hash,
    device: JSON.stringify(device),
    created_at: now,
    expires_at: issued.expires_at.toISOString(),
    spent_at: null,
    revoked_at: null,
    access_jti: accessJti,
    organization_id: organizationId
  }
}

/** What a rotation leaves on its session: its last use, its organization, the rotation kept for retries. */
function keptRotation (rotation: Rotation): Pick<SessionsTable, typeof KEPT_COLUMNS[number]> {
  return {
    last_used_at: rotation.now,
    organization_id: rotation.organizationId,
    retry_jti: rotation.retry === null ? null : rotation.spentJti,
    retry_pair: rotation.retry?.pair ?? null,
    retry_until: rotation.retry?.until ?? null
  }
}

const KEPT_COLUMNS = ['last_used_at', 'organization_id', 'retry_jti', 'retry_pair', 'retry_until'] as const
const REFRESH_TOKEN_COLUMNS = Object.keys({
  jti: true,
  session_id: true,
  user_id: true,
  token_hash: true,
  device: true,
  created_at: true,
  expires_at: true,
  spent_at: true,
  revoked_at: true,
  access_jti: true,
  organization_id: true
} satisfies Record<keyof RefreshTokensTable, true>) as Array<keyof RefreshTokensTable>

/** A value compiled as the Placeholder `name` (prepared.ts), typed as the column it goes in. */
const placeholder = (name: string) => new Placeholder(name) as unknown as string

/** Each column's value as the Placeholder `<prefix>.<column>`. */
function placeholders<Column extends string> (columns: readonly Column[], prefix: string): Record<Column, string> {
  return Object.fromEntries(columns.map((column) => [column, placeholder(`${prefix}.${column}`)])) as Record<Column, string>
}

/** The values of rotationStatement's and rotationSteps' placeholders for `rotation`. */
export function rotationValues (rotation: Rotation): Record<string, unknown> {
  const { sessionId, userId, now } = rotation
  const successor = refreshTokenRow(sessionId, userId, rotation, rotation.device, now)
  const kept = keptRotation(rotation)
  return {
    userId,
    sessionId,
    spentJti: rotation.spentJti,
    now,
    entries: JSON.stringify(rotation.entries),
    ...Object.fromEntries(KEPT_COLUMNS.map((column) => [`kept.${column}`, kept[column]])),
    ...Object.fromEntries(REFRESH_TOKEN_COLUMNS.map((column) => [`successor.${column}`, successor[column]]))
  }
}

/**
 * SessionsRepository.rotate on PostgreSQL: one statement of data-modifying CTEs, where the
 * steps one by one cost five round trips to the database, and a transaction around them three
 * more, most of a refresh's time (docs/performance.md, "Sessions: refreshes and revocations").
 * It takes the same locks in the same order: the account's row, the session's, then the
 * token's; each later step runs only if the one before found its row, and nothing is written
 * unless the token is spent here, the rotation's audit entries included.
 * Its values are Placeholders (rotationValues), so that it is built and compiled once.
 * `audited`: the statement stores the entries too. Without any, it has no insert into
 * audit_logs at all, whose statement trigger (migration 0010) would update the table's count
 * even for no row. Exported for the test that checks its plan.
 */
export function rotationStatement (db: Db, audited: boolean) {
  const rotating = db
    .with('account', (qb) => qb.selectFrom('users').select('id').where('id', '=', placeholder('userId')).forNoKeyUpdate())
    .with('session', (qb) => qb.selectFrom('sessions').select('id')
      .where('id', '=', placeholder('sessionId')).where('revoked_at', 'is', null)
      .where((eb) => eb.exists(eb.selectFrom('account').select('id')))
      .forNoKeyUpdate())
    .with('spent', (qb) => qb.updateTable('refresh_tokens').set({ spent_at: placeholder('now') })
      .where('jti', '=', placeholder('spentJti')).where('spent_at', 'is', null).where('revoked_at', 'is', null)
      .where((eb) => eb.exists(eb.selectFrom('session').select('id')))
      .returning('jti'))
    .with('kept', (qb) => qb.updateTable('sessions')
      .set(placeholders(KEPT_COLUMNS, 'kept'))
      .where('id', '=', placeholder('sessionId')).where((eb) => eb.exists(eb.selectFrom('spent').select('jti')))
      .returning('id'))
    .with('successor', (qb) => qb.insertInto('refresh_tokens').columns(REFRESH_TOKEN_COLUMNS)
      .expression(qb.selectNoFrom((eb) => REFRESH_TOKEN_COLUMNS.map((column) => eb.val(placeholder(`successor.${column}`)).as(column)))
        .where((eb) => eb.exists(eb.selectFrom('spent').select('jti'))))
      .returning('jti'))
  // The entries as one JSON array, so that the statement is the same for any number of them.
  // The cast: the CTE adds a name the final select does not read.
  const steps = audited
    ? rotating.with('audited', (qb) => qb.insertInto('audit_logs').columns(AUDIT_LOG_COLUMNS)
      .expression(sql`select ${sql.join(AUDIT_LOG_COLUMNS.map((column) => sql.ref(column)))}
        from json_populate_recordset(null::audit_logs, ${placeholder('entries')})
        where exists (select 1 from successor)`)
      .returning('id')) as unknown as typeof rotating
    : rotating
  return steps
    .selectNoFrom((eb) => [
      eb.exists(eb.selectFrom('session').select('id')).as('live'),
      eb.exists(eb.selectFrom('successor').select('jti')).as('rotated')
    ])
}

/**
 * SessionsRepository.rotate on SQLite: the steps of rotationStatement one by one, in one
 * transaction, which holding the account's row makes the database's write lock. Each step is
 * built and compiled once (rotationSteps): building them with Kysely at every refresh cost a
 * tenth to a fifth of its CPU (docs/performance.md, "Sessions: refreshes and revocations").
 */
async function rotateInTransaction (db: Db, rotation: Rotation, steps: RotationSteps): Promise<'rotated' | 'lost' | 'ended'> {
  const values = rotationValues(rotation)
  return await atomically(db, async (trx) => {
    const run = async (step: CompiledQuery, stepValues = values) => await trx.executeQuery(bindNamed(step, stepValues))
    if ((await run(steps.hold)).numAffectedRows === 0n) return 'ended'
    if ((await run(steps.live)).rows.length === 0) return 'ended'
    if ((await run(steps.spend)).numAffectedRows === 0n) return 'lost'
    await run(steps.successor)
    await run(steps.kept)
    for (const entry of rotation.entries) {
      await run(steps.entry, Object.fromEntries(AUDIT_LOG_COLUMNS.map((column) => [`entry.${column}`, entry[column]])))
    }
    return 'rotated'
  })
}

/** rotateInTransaction's statements, with Placeholders for rotationValues' names (an entry's: `entry.<column>`). */
export function rotationSteps (db: Db) {
  return {
    hold: userRowHold(db, placeholder('userId')).compile(),
    live: db.selectFrom('sessions').select('id').where('id', '=', placeholder('sessionId')).where('revoked_at', 'is', null).compile(),
    spend: db.updateTable('refresh_tokens').set({ spent_at: placeholder('now') })
      .where('jti', '=', placeholder('spentJti')).where('spent_at', 'is', null).where('revoked_at', 'is', null).compile(),
    successor: db.insertInto('refresh_tokens').values(placeholders(REFRESH_TOKEN_COLUMNS, 'successor')).compile(),
    // Replaces the rotation kept before: the token it names has just had its successor spent.
    kept: db.updateTable('sessions').set(placeholders(KEPT_COLUMNS, 'kept')).where('id', '=', placeholder('sessionId')).compile(),
    entry: db.insertInto('audit_logs').values(placeholders(AUDIT_LOG_COLUMNS, 'entry')).compile()
  }
}

type RotationSteps = ReturnType<typeof rotationSteps>

/** SessionsRepository.rotate on either database, each statement compiled at its first use. */
export class Rotations {
  /** PostgreSQL's statement, with and without its entries. */
  readonly #statements = new Map<boolean, CompiledQuery<{ live: boolean, rotated: boolean }>>()
  #steps: RotationSteps | undefined

  constructor (private readonly db: Db, private readonly dialect: Dialect) {}

  /** Rotates on `db`, this repository's database or a transaction on it. */
  async rotate (rotation: Rotation, db: Db): Promise<'rotated' | 'lost' | 'ended'> {
    if (this.dialect === 'sqlite') {
      this.#steps ??= rotationSteps(this.db)
      return await rotateInTransaction(db, rotation, this.#steps)
    }
    const audited = rotation.entries.length > 0
    const statement = this.#statements.get(audited) ?? rotationStatement(this.db, audited).compile()
    this.#statements.set(audited, statement)
    const { rows } = await db.executeQuery(bindNamed(statement, rotationValues(rotation)))
    return rows[0]?.rotated === true ? 'rotated' : rows[0]?.live === true ? 'lost' : 'ended'
  }
}
