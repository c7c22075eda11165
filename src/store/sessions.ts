import type { ExportSession } from '../../schemas/account-export.js'
import type { Session } from '../../schemas/auth.js'
import type { Role } from '../../schemas/rbac.js'
import type { CollectionRequest } from '../collection/query.js'
import type { IssuedRefreshToken } from '../security/tokens.js'
import { uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { prepare } from './prepared.js'
import { refreshTokenRow, type Rotation, Rotations } from './session-rotation.js'
import { type Db, atomically } from './types.js'
import { holdUserRow, toRoles } from './users.js'

/** A refresh token as found by its hash, with its session. */
export interface PresentedRefreshToken {
  jti: string
  userId: string
  /** The account's roles, read with the token: what the rotated access token carries. */
  userRoles: Role[]
  sessionId: string
  spentAt: string | null
  tokenRevokedAt: string | null
  sessionCreatedAt: string
  sessionLastUsedAt: string
  sessionRevokedAt: string | null
  sessionRevokedReason: string | null
  /** The session's last rotation, while kept for retries (SessionsRepository.rotate). */
  sessionRetry: KeptRotation | null
  /** How the session's sign-in was proved, for the access tokens its refreshes issue. */
  sessionAuthentication: SignInProof
  /** The organization the session's tokens speak for, if one was selected. */
  sessionOrganizationId: string | null
}

/** When a session's sign-in was proved, and how (RFC 8176 `amr` values): its access tokens' `auth_time` and `amr`. */
export interface SignInProof { authTime: string, amr: string[] }

/**
 * A rotation kept for retries of its spent token: that token's
 * jti, the pair it was rotated into (sealed), and until when.
 */
export interface KeptRotation { jti: string, pair: string, until: string }

/** The instants before which a session counts as ended (docs/api.md, "Sessions"). */
export interface LivenessCutoffs {
  /** Sessions last used before this have passed the idle timeout. */
  idleBefore: string
  /** Sessions created before this have passed the absolute timeout. */
  createdBefore: string
}

/** An access token issued with a refresh token of a session. */
export interface SessionAccessToken { jti: string, issuedAt: string }

/** What opening a session records (SessionsRepository.open). */
export interface SessionOpening {
  userId: string
  device: Record<string, unknown>
  /**
   * The session's first refresh token, and the access token issued with it; null for a session
   * at the authorization server's pages, which gives out no token of the API.
   */
  firstPair: { refresh: IssuedRefreshToken, accessJti: string } | null
  /**
   * The authorization server's session (its uid) this session is, for one opened at its pages;
   * a session that was it before (an earlier sign-in in that browser) ends first.
   */
  authorizationSessionUid: string | null
  now: string
  authentication: SignInProof
  cutoffs: LivenessCutoffs
  maxConcurrent: number
  accessIssuedAfter: string
}

export type RevocationReason = 'logout' | 'reuse' | 'expired' | 'ended_by_user' | 'ended_by_administrator' | 'concurrency_limit' | 'password_changed' | 'password_reset' | 'account_claimed' | 'suspended' | 'deletion_requested'

function parseDevice (text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text)
  return typeof value === 'object' && value !== null ? value as Record<string, unknown> : {}
}

const SESSION_COLUMNS = ['id', 'device', 'created_at', 'last_used_at'] as const

/**
 * Sessions and their refresh-token families. Refresh tokens are kept only as SHA-256
 * hashes; a token is spent by a conditional update, so of two concurrent refreshes with
 * one token exactly one wins, and it records the new pair in the same transaction.
 */
export class SessionsRepository {
  readonly #pages
  readonly #rotations
  /**
   * A refresh's one read before its rotation: the token, its session and its account's roles
   * (one row per role), compiled once (prepared.ts).
   */
  readonly #selectByTokenHash

  constructor (private readonly db: Db, pages: PageStore) {
    this.#rotations = new Rotations(db, pages.dialect)
    this.#selectByTokenHash = prepare(pages.read, db.selectFrom('refresh_tokens')
      .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .leftJoin('user_roles', 'user_roles.user_id', 'refresh_tokens.user_id')
      .select(['user_roles.role',
        'refresh_tokens.jti', 'refresh_tokens.user_id', 'refresh_tokens.session_id', 'refresh_tokens.spent_at',
        'refresh_tokens.revoked_at as token_revoked_at', 'sessions.created_at', 'sessions.last_used_at',
        'sessions.revoked_at as session_revoked_at', 'sessions.revoked_reason', 'sessions.retry_jti', 'sessions.retry_pair', 'sessions.retry_until',
        'sessions.auth_time', 'sessions.amr', 'sessions.organization_id'
      ])
      .where('refresh_tokens.token_hash', '=', ''))
    this.#pages = new PageQueries<Omit<Session, 'device'> & { device: string }, { userId: string, idleBefore: string, createdBefore: string }>(
      ({ userId, ...cutoffs }) => liveSessions(db, userId, cutoffs), SESSION_COLUMNS, pages)
  }

  /**
   * Opens a session with its first token pair and ends the user's oldest other live sessions
   * beyond `maxConcurrent`: one transaction holding the account's row, so that simultaneous
   * sign-ins of one account run one after another and each counts the sessions the others
   * opened. Answers the access tokens the ended sessions issued after `accessIssuedAfter`, for
   * the caller to revoke, and the session's id; undefined when the account is gone.
   */
  async open (
    opening: SessionOpening,
    db: Db = this.db
  ): Promise<{ id: string, ended: SessionAccessToken[] } | undefined> {
    const { userId, device, now, cutoffs, maxConcurrent } = opening
    return await atomically(db, async (trx) => {
      if (!await holdUserRow(trx, userId)) return undefined
      const uid = opening.authorizationSessionUid
      const replaced = uid === null
        ? []
        : await revokeSessions(trx, await this.ofAuthorizationSession(uid, trx), 'logout', now, opening.accessIssuedAfter)
      const sessionId = uuidv7()
      await trx.insertInto('sessions').values({
        id: sessionId,
        user_id: userId,
        device: JSON.stringify(device),
        created_at: now,
        last_used_at: now,
        revoked_at: null,
        revoked_reason: null,
        auth_time: opening.authentication.authTime,
        amr: JSON.stringify(opening.authentication.amr),
        authorization_session_uid: uid
      }).execute()
      const { firstPair } = opening
      if (firstPair !== null) {
        const first = { issued: firstPair.refresh, accessJti: firstPair.accessJti, organizationId: null }
        await trx.insertInto('refresh_tokens').values(refreshTokenRow(sessionId, userId, first, device, now)).execute()
      }
      const others = (await liveSessionsOldestFirst(trx, userId, cutoffs).execute())
        .map((row) => row.id).filter((id) => id !== sessionId)
      const excess = others.slice(0, Math.max(0, others.length + 1 - maxConcurrent))
      const excessEnded = await revokeSessions(trx, excess, 'concurrency_limit', now, opening.accessIssuedAfter)
      return { id: sessionId, ended: [...replaced, ...excessEnded] }
    })
  }

  /**
   * Spends the presented token and records the pair it is rotated into, with the rotation kept
   * for retries and the rotation's audit entries (`entries`), all or nothing, holding the
   * account's row and locking the session's.
   * Answers 'rotated'; 'lost' when another request spent the token first (its pair, and the
   * rotation kept with it, are committed by then: this waited on the rows that one held); or
   * 'ended' when the session has ended or the account is gone. No row of the session or its
   * tokens changes, and no entry is stored, unless the token is spent here. On PostgreSQL the
   * steps are one statement; on SQLite, where a statement costs no round trip, they run one by
   * one in a transaction (session-rotation.ts). A concurrent revoke either commits first or
   * waits for this one and then finds, and revokes, the new access token: a refresh racing a
   * logout never answers a pair no revocation lists. The account's row is held first, as
   * opening a session holds it, so that deleting the account (which locks that row, then its
   * sessions) cannot deadlock with this on PostgreSQL; the session's row before the token's, in
   * the order a revoke takes them.
   */
  async rotate (rotation: Rotation, db: Db = this.db): Promise<'rotated' | 'lost' | 'ended'> {
    return await this.#rotations.rotate(rotation, db)
  }

  async findByTokenHash (tokenHash: string): Promise<PresentedRefreshToken | undefined> {
    const rows = await this.#selectByTokenHash(tokenHash)
    const row = rows[0]
    if (row === undefined) return undefined
    return {
      jti: row.jti,
      userId: row.user_id,
      userRoles: toRoles(rows.map((row) => row.role)),
      sessionId: row.session_id,
      spentAt: row.spent_at,
      tokenRevokedAt: row.token_revoked_at,
      sessionCreatedAt: row.created_at,
      sessionLastUsedAt: row.last_used_at,
      sessionRevokedAt: row.session_revoked_at,
      sessionRevokedReason: row.revoked_reason,
      sessionRetry: row.retry_jti === null || row.retry_pair === null || row.retry_until === null
        ? null
        : { jti: row.retry_jti, pair: row.retry_pair, until: row.retry_until },
      // Sessions opened before sign-ins were recorded count from their start, proof unknown.
      sessionAuthentication: {
        authTime: row.auth_time ?? row.created_at, amr: row.amr === null ? [] : JSON.parse(row.amr) as string[]
      },
      sessionOrganizationId: row.organization_id
    }
  }

  /**
   * Lets the live session that issued the access token make sensitive changes until `until`
   * (docs/security.md, "Sensitive changes"); false when that session has ended.
   */
  async grantReauthentication (userId: string, accessJti: string, until: string, db: Db = this.db): Promise<boolean> {
    const sessionId = await this.sessionOfAccessToken(userId, accessJti, db)
    if (sessionId === undefined) return false
    const granted = await db.updateTable('sessions').set({ reauthenticated_until: until })
      .where('id', '=', sessionId).where('revoked_at', 'is', null).executeTakeFirst()
    return granted.numUpdatedRows > 0n
  }

  /** Until when the live session that issued the access token may make sensitive changes; null without a step-up. */
  async reauthenticatedUntil (userId: string, accessJti: string): Promise<string | null> {
    return (await stepUpOf(this.db, userId, accessJti).executeTakeFirst())?.reauthenticated_until ?? null
  }

  /** Erases the rotations kept for retries whose window ended at `now` or before. */
  async eraseLapsedRetries (now: string): Promise<void> {
    await this.db.updateTable('sessions').set({ retry_jti: null, retry_pair: null, retry_until: null })
      .where('retry_until', '<=', now).execute()
  }

  /**
   * Ends the sessions and their refresh tokens. Answers the access tokens the sessions issued
   * after `accessIssuedAfter` (those that may not have expired yet), for the caller to revoke.
   */
  async revoke (
    sessionIds: string[],
    reason: RevocationReason,
    now: string,
    accessIssuedAfter: string,
    db: Db = this.db
  ): Promise<SessionAccessToken[]> {
    if (sessionIds.length === 0) return []
    return await atomically(db, async (trx) => await revokeSessions(trx, sessionIds, reason, now, accessIssuedAfter))
  }

  /** The user's sessions not yet ended. */
  async unrevokedIds (userId: string, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('sessions').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
    return rows.map((row) => row.id)
  }

  /** Sessions of the user ended for refresh-token reuse after `since`. */
  async reusesSince (userId: string, since: string): Promise<number> {
    const row = await this.db.selectFrom('sessions').select((eb) => eb.fn.countAll().as('count'))
      .where('user_id', '=', userId).where('revoked_reason', '=', 'reuse').where('revoked_at', '>', since)
      .executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /** The session that issued an access token, if it belongs to the user. */
  async sessionOfAccessToken (userId: string, accessJti: string, db: Db = this.db): Promise<string | undefined> {
    const row = await db.selectFrom('refresh_tokens').select('session_id')
      .where('access_jti', '=', accessJti).where('user_id', '=', userId).executeTakeFirst()
    return row?.session_id
  }

  /**
   * The access tokens issued for the organization after `accessIssuedAfter` (to `userId`, or to
   * anyone when undefined): those that may still carry a membership that changed, for the
   * caller to revoke.
   */
  async organizationAccessTokens (
    organizationId: string,
    userId: string | undefined,
    accessIssuedAfter: string,
    db: Db = this.db
  ): Promise<SessionAccessToken[]> {
    let query = db.selectFrom('refresh_tokens').select(['access_jti', 'created_at'])
      .where('organization_id', '=', organizationId)
    if (userId !== undefined) query = query.where('user_id', '=', userId)
    const rows = await query.where('created_at', '>', accessIssuedAfter).where('access_jti', 'is not', null).execute()
    return rows.map((row) => ({ jti: row.access_jti ?? '', issuedAt: row.created_at }))
  }

  /**
   * Makes the sessions of `userId` (of every member when undefined) that speak for the
   * organization forget it: their next refresh issues tokens without it.
   */
  async forgetOrganization (organizationId: string, userId: string | undefined, db: Db = this.db): Promise<void> {
    let query = db.updateTable('sessions').set({ organization_id: null }).where('organization_id', '=', organizationId)
    if (userId !== undefined) query = query.where('user_id', '=', userId)
    await query.execute()
  }

  /** The sessions not yet ended that are the authorization server's session `uid`. */
  async ofAuthorizationSession (uid: string, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('sessions').select('id')
      .where('authorization_session_uid', '=', uid).where('revoked_at', 'is', null).execute()
    return rows.map((row) => row.id)
  }

  /**
   * Whether the authorization server's session `uid` of the user is live (not ended, within
   * both timeouts); a use, so its idle time starts again at `now`. One statement, through the
   * index of the uid (migration 0021).
   */
  async useAuthorizationSession (userId: string, uid: string, cutoffs: LivenessCutoffs, now: string): Promise<boolean> {
    const used = await this.db.updateTable('sessions').set({ last_used_at: now })
      .where('authorization_session_uid', '=', uid).where('user_id', '=', userId).where('revoked_at', 'is', null)
      .where('last_used_at', '>=', cutoffs.idleBefore).where('created_at', '>=', cutoffs.createdBefore)
      .executeTakeFirst()
    return used.numUpdatedRows > 0n
  }

  async isLive (userId: string, sessionId: string, cutoffs: LivenessCutoffs): Promise<boolean> {
    return await liveSessions(this.db, userId, cutoffs).select('id').where('id', '=', sessionId).executeTakeFirst() !== undefined
  }

  async list (
    userId: string,
    cutoffs: LivenessCutoffs,
    request: CollectionRequest
  ): Promise<CollectionResult<Session>> {
    const page = await this.#pages.run(request, { userId, ...cutoffs })
    return { ...page, items: page.items.map((row) => ({ ...row, device: parseDevice(row.device) })) }
  }

  /**
   * The latest `limit` of the user's sessions, ended ones too, newest first (an account's
   * export, docs/api.md, "Account export"): read backwards through sessions_user_id_created_at,
   * which gives the order. Never their tokens, hashes or kept pairs.
   */
  async latestOf (userId: string, limit: number): Promise<ExportSession[]> {
    const rows = await this.db.selectFrom('sessions')
      .select(['id', 'device', 'created_at', 'last_used_at', 'revoked_at', 'revoked_reason'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc').orderBy('id', 'desc')
      .limit(limit).execute()
    return rows.map((row) => ({ ...row, device: parseDevice(row.device) }))
  }
}

/**
 * The step-up of the live session that issued an access token: found by the token's jti through
 * the index of access tokens (migration 0002), then the session by its key. Exported for the
 * test that checks that plan.
 */
export function stepUpOf (db: Db, userId: string, accessJti: string) {
  return db.selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select('sessions.reauthenticated_until')
    .where('refresh_tokens.access_jti', '=', accessJti).where('refresh_tokens.user_id', '=', userId).where('sessions.revoked_at', 'is', null)
}

/** A user's sessions that have not ended, by revocation or timeout. */
function liveSessions (db: Db, userId: string, { idleBefore, createdBefore }: LivenessCutoffs) {
  return db.selectFrom('sessions')
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('last_used_at', '>=', idleBefore)
    .where('created_at', '>=', createdBefore)
}

/**
 * The identifiers of a user's live sessions, oldest first: what a sign-in reads to end those
 * beyond the limit. Served by the partial index of live sessions (migration 0008), so it does
 * not read past the user's ended ones; exported for the test that checks that plan.
 */
export function liveSessionsOldestFirst (db: Db, userId: string, cutoffs: LivenessCutoffs) {
  return liveSessions(db, userId, cutoffs).select('id').orderBy('created_at').orderBy('id')
}

/**
 * Ends the sessions and their refresh tokens within `trx`; answers the access tokens they issued
 * after `accessIssuedAfter`, and those of impersonations begun from them (docs/api.md, "Impersonation").
 */
async function revokeSessions (
  trx: Db,
  sessionIds: string[],
  reason: RevocationReason,
  now: string,
  accessIssuedAfter: string
): Promise<SessionAccessToken[]> {
  if (sessionIds.length === 0) return []
  await trx.updateTable('sessions').set({ revoked_at: now, revoked_reason: reason, retry_jti: null, retry_pair: null, retry_until: null })
    .where('id', 'in', sessionIds).where('revoked_at', 'is', null).execute()
  await trx.updateTable('refresh_tokens').set({ revoked_at: now })
    .where('session_id', 'in', sessionIds).where('revoked_at', 'is', null).execute()
  const rows = await trx.selectFrom('refresh_tokens').select(['access_jti', 'created_at'])
    .where('session_id', 'in', sessionIds).where('created_at', '>', accessIssuedAfter).where('access_jti', 'is not', null).execute()
  const impersonations = await trx.selectFrom('impersonations').select(['access_jti', 'created_at'])
    .where('impersonator_session_id', 'in', sessionIds).where('expires_at', '>', now).execute()
  return [...rows, ...impersonations].map((row) => ({ jti: row.access_jti ?? '', issuedAt: row.created_at }))
}
