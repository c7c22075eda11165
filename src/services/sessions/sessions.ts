import { type SignInDevice, SESSION_FIELDS, type TokenPair } from '../../../schemas/auth.js'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import type { Config } from '../../config/index.js'
import { Errors } from '../../errors.js'
import type { SecretBox } from '../../security/secret-box.js'
import { ACCESS_TOKEN_TTL_S, type TokenService, TokenVerificationError, hashToken } from '../../security/tokens.js'
import { apiKeyRevocationId } from '../../security/api-keys.js'
import type { ApiKeysRepository } from '../../store/api-keys.js'
import type { AuthorizationArtifactsRepository } from '../../store/authorization-artifacts.js'
import type { ImpersonationsRepository } from '../../store/impersonations.js'
import type { SessionAccessToken, LivenessCutoffs, PresentedRefreshToken, RevocationReason, SessionsRepository } from '../../store/sessions.js'
import type { Db } from '../../store/types.js'
import type { Recorded } from '../audit/index.js'
import { assertAccountHolder, type Caller, callerOf, type RequestContext } from '../context.js'
import { TokenPairs } from './pairs.js'

export interface SessionServiceDependencies {
  tokens: TokenService
  sessions: SessionsRepository
  /** The user's impersonations' access tokens end with the user's sessions. */
  impersonations: ImpersonationsRepository
  /** The authorization server's sessions, consents and tokens of an account, ended with its sessions. */
  authorizationArtifacts: Pick<AuthorizationArtifactsRepository, 'endAccount'>
  /** A new password deletes the person's API keys with the sessions (docs/api.md, "API keys"). */
  apiKeys: Pick<ApiKeysRepository, 'deleteOwnedBy'>
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  policy: Config['session']
  cursors: CursorCodec
  /** Seals the pairs kept for refresh retries, under a key derived from the signing secret. */
  retryBox: SecretBox
  /**
   * The user's role in the organization, read at every refresh of a session that selected one,
   * in the rotation's transaction with the account's row held (OrganizationsRepository.roleForRotation).
   */
  organizationRoleFor: (organizationId: string, userId: string, trx: Db) => Promise<OrganizationRole | undefined>
  now?: () => number
}

/**
 * The answer to a refresh token of an ended session: reuse says
 * so (docs/api.md, "Sessions"), anything else is just invalid.
 */
function endedSessionError (token: PresentedRefreshToken): Error {
  return token.sessionRevokedReason === 'reuse' ? new Errors.TOKEN_REUSED() : new Errors.INVALID_TOKEN()
}

/** How a session opened at the authorization server's pages is listed (GET /auth/sessions). */
export const AUTHORIZATION_SERVER_DEVICE = { id: 'authorization-server', name: 'Sign-in at the authorization server' } as const

/** Access tokens issued after this instant may not have expired at `now`. */
function accessIssuedAfter (now: string): string {
  return new Date(Date.parse(now) - ACCESS_TOKEN_TTL_S * 1000).toISOString()
}

/**
 * What a refresh does with the session's organization: keep it (undefined), or select another
 * (null: none), as POST /auth/organization does.
 */
export type OrganizationSelection = { organizationId: string | null } | undefined

/** Sign-in sessions (docs/api.md, "Sessions"): opening, rotating, timing out, ending. */
export class SessionService {
  readonly #deps: SessionServiceDependencies
  readonly #pairs: TokenPairs
  readonly #now: () => number

  constructor (deps: SessionServiceDependencies) {
    this.#deps = deps
    const { tokens, retryBox, policy } = deps
    this.#pairs = new TokenPairs({ tokens, retryBox, retryWindowS: policy.refreshRetryWindowS })
    this.#now = deps.now ?? Date.now
  }

  cutoffs (): LivenessCutoffs {
    const now = this.#now()
    return {
      idleBefore: new Date(now - this.#deps.policy.idleTimeoutS * 1000).toISOString(),
      createdBefore: new Date(now - this.#deps.policy.absoluteTimeoutS * 1000).toISOString()
    }
  }

  /**
   * Opens a session and answers its first pair; beyond the concurrency limit the oldest other
   * sessions end, and their access tokens are revoked before the pair is answered (this
   * session, in turn, is ended by whichever later sign-in finds it the oldest). An account
   * deleted as it signs in fails like an unknown one. The session is stored through
   * `recorded`, with the entry of the sign-in. `amr` says how the sign-in was proved (RFC 8176
   * values); it and the instant, `auth_time`, go into every access token of the session.
   */
  async start (
    user: { id: string, roles: string[] },
    device: SignInDevice | undefined,
    amr: string[],
    recorded: Recorded
  ): Promise<TokenPair> {
    const { sessions, policy } = this.#deps
    const nowMs = this.#now()
    const now = new Date(nowMs).toISOString()
    const deviceInfo = device === undefined ? {} : { ...device }
    const authentication = { authTime: now, amr }
    const { access, refresh } = this.#pairs.sign(user, deviceInfo, authentication, nowMs)
    const ended = await recorded(async (trx) => {
      const opened = await sessions.open({
        userId: user.id,
        device: deviceInfo,
        firstPair: { refresh, accessJti: access.jti },
        authorizationSessionUid: null,
        now,
        authentication,
        cutoffs: this.cutoffs(),
        maxConcurrent: policy.maxConcurrent,
        accessIssuedAfter: accessIssuedAfter(now)
      }, trx)
      if (opened === undefined) throw new Errors.INVALID_CREDENTIALS()
      return opened.ended
    })
    await this.#revokeAccessTokens(ended)
    return this.#pairs.of(access.token, refresh.token)
  }

  /**
   * Opens the session of a sign-in at the authorization server's pages (docs/api.md,
   * "Authorization server"), once the provider signed the browser in with its session `uid`: a
   * session like any, under the same limit and timeouts, listed and ended like any, which gives
   * out no token of the API; the provider's session lives only while it does. A session that
   * was that browser's before (a new sign-in there, `prompt=login`) ends first. Nothing is
   * opened for an account deleted meanwhile (the provider's session is then not found).
   */
  async openAtAuthorizationServer (userId: string, amr: string[], uid: string): Promise<void> {
    const now = new Date(this.#now()).toISOString()
    const opened = await this.#deps.sessions.open({
      userId,
      device: { ...AUTHORIZATION_SERVER_DEVICE },
      firstPair: null,
      authorizationSessionUid: uid,
      now,
      authentication: { authTime: now, amr },
      cutoffs: this.cutoffs(),
      maxConcurrent: this.#deps.policy.maxConcurrent,
      accessIssuedAfter: accessIssuedAfter(now)
    })
    if (opened !== undefined) await this.#revokeAccessTokens(opened.ended)
  }

  /** Whether the authorization server's session `uid` of the user still is a live session; a use of it. */
  async useAuthorizationSession (userId: string, uid: string): Promise<boolean> {
    const now = new Date(this.#now()).toISOString()
    return await this.#deps.sessions.useAuthorizationSession(userId, uid, this.cutoffs(), now)
  }

  /** A sign-out at the authorization server (RP-initiated logout) ends the session its session was. */
  async endAuthorizationSession (uid: string): Promise<void> {
    const sessionIds = await this.#deps.sessions.ofAuthorizationSession(uid)
    await this.#endSessions(sessionIds, 'logout', new Date(this.#now()).toISOString())
  }

  /**
   * Rotates: the presented token is spent, a new pair is issued in the same session. A spent
   * token presented again within the retry window of its rotation, before the new refresh
   * token is spent, gets that same pair (`retry`), and nothing is written. A rotation is
   * stored through what `recordedFor` gives for the account.
   */
  async refresh (
    refreshToken: string,
    recordedFor: (userId: string) => Recorded,
    selection?: OrganizationSelection
  ): Promise<{ pair: TokenPair, userId: string, retry: boolean }> {
    const { tokens, sessions } = this.#deps
    let claims
    try {
      claims = tokens.verify(refreshToken, 'refresh')
    } catch (error) {
      if (error instanceof TokenVerificationError && error.reason === 'expired') throw new Errors.SESSION_EXPIRED()
      throw new Errors.INVALID_TOKEN()
    }
    const tokenHash = hashToken(refreshToken)
    const presented = await sessions.findByTokenHash(tokenHash)
    if (presented === undefined || presented.userId !== claims.sub) throw new Errors.INVALID_TOKEN()
    const now = new Date(this.#now()).toISOString()
    if (presented.sessionRevokedAt !== null) throw endedSessionError(presented)
    const { idleBefore, createdBefore } = this.cutoffs()
    if (presented.sessionLastUsedAt < idleBefore || presented.sessionCreatedAt < createdBefore) {
      await this.#endSessions([presented.sessionId], 'expired', now)
      throw new Errors.SESSION_EXPIRED()
    }
    let spent = presented
    if (presented.spentAt === null) {
      // The account exists: its tokens go with it (refresh_tokens.user_id cascades), and the
      // rotation holds its row, answering 'ended' for an account deleted meanwhile.
      const user = { id: presented.userId, roles: presented.userRoles }
      const organization = selection === undefined
        ? { id: presented.sessionOrganizationId, selected: false }
        : { id: selection.organizationId, selected: true }
      const pair = await this.#rotate(user, presented, claims.device, organization, now, recordedFor(user.id))
      if (pair !== null) return { pair, userId: user.id, retry: false }
      // Read unspent, yet not spent here: a concurrent refresh spent it, and its pair was
      // committed with the spend; or the session ended meanwhile (a logout is no reuse).
      const current = await sessions.findByTokenHash(tokenHash)
      if (current === undefined) throw new Errors.INVALID_TOKEN()
      if (current.sessionRevokedAt !== null) throw endedSessionError(current)
      spent = current
    }
    // Spent already. Within the window of its rotation, before its successor was spent, it
    // gets the pair it was rotated into: a client retrying a request whose answer was lost,
    // or two tabs refreshing at once, get one pair, and instances answering them alike.
    const kept = this.#pairs.kept(spent, now)
    if (kept !== null) return { pair: kept, userId: spent.userId, retry: true }
    // Otherwise a spent token is reuse, however it came to be spent (a concurrent refresh
    // included, with retries off): the whole session ends (docs/api.md, "Sessions").
    await this.#endSessions([spent.sessionId], 'reuse', now)
    throw new Errors.TOKEN_REUSED()
  }

  /** Erases the pairs kept for refresh retries whose window has passed. */
  async eraseLapsedRetries (): Promise<void> {
    await this.#deps.sessions.eraseLapsedRetries(new Date(this.#now()).toISOString())
  }

  /**
   * Revokes the access token and ends its session, and the given refresh token's when it is
   * the caller's; the sessions end through `recorded`.
   */
  async logout (
    caller: Pick<Caller, 'id' | 'jti' | 'tokenExpiresAt' | 'impersonatorId' | 'apiKey'>,
    refreshToken: string | undefined,
    recorded: Recorded
  ): Promise<void> {
    // A key has no session: deleting it is how it stops.
    if (caller.apiKey !== undefined) throw new Errors.API_KEY_RESTRICTED('signing out (delete the key instead)')
    // An impersonation ends its own token; the person's sessions are theirs to end.
    if (refreshToken !== undefined) assertAccountHolder(caller, 'ending the account\'s sessions')
    const { sessions, revokeAccessToken } = this.#deps
    await revokeAccessToken(caller.jti, caller.tokenExpiresAt)
    const presented = refreshToken === undefined ? undefined : await sessions.findByTokenHash(hashToken(refreshToken))
    const sessionIds = new Set<string>()
    const own = await sessions.sessionOfAccessToken(caller.id, caller.jti)
    if (own !== undefined) sessionIds.add(own)
    if (presented?.userId === caller.id) sessionIds.add(presented.sessionId)
    await this.#endSessions([...sessionIds], 'logout', new Date(this.#now()).toISOString(), caller.jti, recorded)
  }

  /** The caller's live sessions, oldest first by default. */
  async list (context: RequestContext, query: CollectionQueryInput) {
    const { id } = callerOf(context)
    return await this.listOf(id, query, id)
  }

  /** A user's live sessions, oldest first by default, as `viewerId` sees them (the user, or an operator). */
  async listOf (userId: string, query: CollectionQueryInput, viewerId: string) {
    const { sessions, cursors } = this.#deps
    return await collectionPage(query, { ...SESSION_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `sessions:${userId}:${viewerId}` }, cursors,
      async (request) => await sessions.list(userId, this.cutoffs(), request))
  }

  /** The session the caller's access token belongs to (undefined for an API key's request). */
  async currentOf (context: RequestContext): Promise<string | undefined> {
    const caller = callerOf(context)
    if (caller.apiKey !== undefined) return undefined
    return await this.#deps.sessions.sessionOfAccessToken(caller.id, caller.jti)
  }

  /** Ends one of the caller's own sessions; 404 when it is not one of theirs or already over. */
  async end (context: RequestContext, sessionId: string): Promise<void> {
    const caller = callerOf(context)
    assertAccountHolder(caller, 'ending the account\'s sessions')
    await this.#endLive(caller.id, sessionId, 'ended_by_user')
  }

  /**
   * Ends one of a user's sessions for an operator (the caller holds the rank rule), with the
   * audit entry `recorded` writes; 404 when it is not the user's or already over.
   */
  async endFor (userId: string, sessionId: string, recorded: Recorded): Promise<void> {
    await this.#endLive(userId, sessionId, 'ended_by_administrator', recorded)
  }

  async #endLive (userId: string, sessionId: string, reason: RevocationReason, recorded?: Recorded): Promise<void> {
    if (!await this.#deps.sessions.isLive(userId, sessionId, this.cutoffs())) throw new Errors.NOT_FOUND('Session')
    await this.#endSessions([sessionId], reason, new Date(this.#now()).toISOString(), undefined, recorded)
  }

  /**
   * Ends every session of the user in `trx`, the transaction of the change that ends them (a
   * new password, which deletes their API keys too), so that the change is never kept without
   * it. The answer revokes their
   * access tokens: to be called once that transaction committed.
   */
  async endAllWithin (userId: string, reason: RevocationReason, trx: Db): Promise<() => Promise<void>> {
    const { sessions, impersonations, authorizationArtifacts, apiKeys } = this.#deps
    const now = new Date(this.#now()).toISOString()
    await authorizationArtifacts.endAccount(userId, trx)
    // A key made with a stolen password goes when its owner sets a new one.
    const keys = reason === 'password_changed' || reason === 'password_reset' ? await apiKeys.deleteOwnedBy({ userId }, trx) : []
    const accessTokens = [
      ...await sessions.revoke(await sessions.unrevokedIds(userId, trx), reason, now, accessIssuedAfter(now), trx),
      ...await impersonations.accessTokens(userId, now, trx),
      ...keys.map((id) => ({ jti: apiKeyRevocationId(id), issuedAt: now }))
    ]
    return async () => { await this.#revokeAccessTokens(accessTokens) }
  }

  /**
   * After a membership change in `trx` (a removal, a new role, the organization's deletion):
   * the access tokens issued for the organization to `userId` (to anyone when undefined) carry
   * the old membership. With `forget`, the sessions that speak for it forget it (the member is
   * gone); otherwise their next refresh reads the new role. The answer revokes those tokens: to
   * be called once that transaction committed.
   */
  async organizationChangedWithin (
    organizationId: string,
    userId: string | undefined,
    { forget }: { forget: boolean },
    trx: Db
  ): Promise<() => Promise<void>> {
    const { sessions } = this.#deps
    const now = new Date(this.#now()).toISOString()
    const accessTokens = await sessions.organizationAccessTokens(organizationId, userId, accessIssuedAfter(now), trx)
    if (forget) await sessions.forgetOrganization(organizationId, userId, trx)
    return async () => { await this.#revokeAccessTokens(accessTokens) }
  }

  /**
   * Ends sessions with their refresh tokens, and revokes the access tokens they issued that
   * have not expired: an ended session lets no request through, not even for 15 minutes.
   */
  async #endSessions (
    sessionIds: string[],
    reason: RevocationReason,
    now: string,
    revokedAlready?: string,
    recorded?: Recorded
  ): Promise<void> {
    const revoke = async (trx?: Db) =>
      await this.#deps.sessions.revoke(sessionIds, reason, now, accessIssuedAfter(now), trx)
    const accessTokens = recorded === undefined ? await revoke() : await recorded(revoke)
    await this.#revokeAccessTokens(accessTokens.filter(({ jti }) => jti !== revokedAlready))
  }

  /** Revokes access tokens of ended sessions until they expire. */
  async #revokeAccessTokens (accessTokens: SessionAccessToken[]): Promise<void> {
    await Promise.all(accessTokens.map(async ({ jti, issuedAt }) => {
      await this.#deps.revokeAccessToken(jti, new Date(Date.parse(issuedAt) + ACCESS_TOKEN_TTL_S * 1000))
    }))
  }

  /**
   * Spends the presented token for a new pair in the session, kept sealed for retries while
   * they are on; null when the token was spent by another request or the session ended
   * meanwhile (a logout), or the account is gone. With an organization, the pair speaks for it
   * with the role read in the rotation's transaction: one the user selected must be theirs (404,
   * the token unspent); the session's own is forgotten once they are no member.
   */
  async #rotate (
    user: { id: string, roles: string[] },
    presented: PresentedRefreshToken,
    device: Record<string, unknown>,
    organization: { id: string | null, selected: boolean },
    now: string,
    recorded: Recorded
  ): Promise<TokenPair | null> {
    const { sessions, organizationRoleFor } = this.#deps
    const organizationId = organization.id
    if (organizationId === null) {
      const { pair, rotation } = this.#pairs.rotation(user, presented, device, null, now)
      // Its entries are stored by the rotation itself when they bring nothing else to store: a
      // transaction around it would cost three round trips more (SessionsRepository.rotate).
      const alone = recorded.alone?.()
      const outcome = alone === undefined
        ? await recorded(async (trx) => await sessions.rotate({ ...rotation, entries: [] }, trx), (result) => result === 'rotated')
        : await sessions.rotate({ ...rotation, entries: alone.rows })
      if (outcome !== 'rotated') return null
      alone?.stored()
      return pair
    }
    const rotated = await recorded(async (trx) => {
      const role = await organizationRoleFor(organizationId, user.id, trx)
      if (role === undefined && organization.selected) return 'not_member'
      const speaksFor = role === undefined ? null : { id: organizationId, role }
      const { pair, rotation } = this.#pairs.rotation(user, presented, device, speaksFor, now)
      return await sessions.rotate({ ...rotation, entries: [] }, trx) === 'rotated' ? pair : null
    }, (result) => typeof result === 'object' && result !== null)
    if (rotated === 'not_member') throw new Errors.NOT_FOUND('Organization')
    return rotated
  }
}
