import { type Device, SESSION_FIELDS, type TokenPair } from '../../schemas/auth.js'
import type { CursorCodec } from '../collection/cursor.js'
import { collectionPage } from '../collection/envelope.js'
import type { CollectionQueryInput } from '../collection/query.js'
import type { Config } from '../config.js'
import { Errors } from '../errors.js'
import { ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S, type TokenService, TokenVerificationError, hashToken } from '../security/tokens.js'
import type { IssuedAccessToken, LivenessCutoffs, PresentedRefreshToken, RevocationReason, SessionsRepository } from '../store/sessions.js'
import type { UsersRepository } from '../store/users.js'

export interface SessionServiceDependencies {
  tokens: TokenService
  sessions: SessionsRepository
  users: UsersRepository
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  policy: Config['session']
  cursors: CursorCodec
  now?: () => number
}

/** The answer to a refresh token of an ended session: reuse says so (docs/api.md, "Sessions"), anything else is just invalid. */
function endedSessionError (token: PresentedRefreshToken): Error {
  return token.sessionRevokedReason === 'reuse' ? new Errors.TOKEN_REUSED() : new Errors.INVALID_TOKEN()
}

/** Access tokens issued after this instant may not have expired at `now`. */
function accessIssuedAfter (now: string): string {
  return new Date(Date.parse(now) - ACCESS_TOKEN_TTL_S * 1000).toISOString()
}

function tokenPair (accessToken: string, refreshToken: string): TokenPair {
  return {
    access_token: accessToken,
    refresh_token: refreshToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_S,
    refresh_expires_in: REFRESH_TOKEN_TTL_S
  }
}

/** Sign-in sessions (docs/api.md, "Sessions"): opening, rotating, timing out, ending. */
export class SessionService {
  readonly #deps: SessionServiceDependencies
  readonly #now: () => number

  constructor (deps: SessionServiceDependencies) {
    this.#deps = deps
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
   * deleted as it signs in fails like an unknown one.
   */
  async start (user: { id: string, roles: string[] }, device: Device | undefined): Promise<TokenPair> {
    const { sessions, policy } = this.#deps
    const nowMs = this.#now()
    const now = new Date(nowMs).toISOString()
    const deviceInfo = device === undefined ? {} : { ...device }
    const { access, refresh } = this.#sign(user, deviceInfo, nowMs)
    const ended = await sessions.open({
      userId: user.id, device: deviceInfo, refresh, accessJti: access.jti, now, cutoffs: this.cutoffs(), maxConcurrent: policy.maxConcurrent, accessIssuedAfter: accessIssuedAfter(now)
    })
    if (ended === undefined) throw new Errors.INVALID_CREDENTIALS()
    await this.#revokeAccessTokens(ended)
    return tokenPair(access.token, refresh.token)
  }

  /**
   * Rotates: the presented token is spent, a new pair is issued in the same session.
   * `receivedAt` (when the request arrived, in ms) tells a replay from a race: a request
   * that arrived before the token was spent ran concurrently with the one that spent it.
   */
  async refresh (refreshToken: string, receivedAt: number): Promise<{ pair: TokenPair, userId: string }> {
    const { tokens, sessions, users } = this.#deps
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
    if (presented.spentAt === null && await sessions.spend(presented.jti, now)) {
      const principal = await users.findPrincipal(presented.userId)
      if (principal === undefined) throw new Errors.INVALID_TOKEN()
      return { pair: await this.#issue(principal, presented.sessionId, claims.device, now), userId: principal.id }
    }
    if (presented.spentAt === null) {
      // Read unspent, yet not spent here: a concurrent refresh spent it (the race below), or a
      // concurrent logout revoked it, which is no reuse.
      const current = await sessions.findByTokenHash(tokenHash)
      if (current === undefined) throw new Errors.INVALID_TOKEN()
      if (current.spentAt === null) throw endedSessionError(current)
    }
    // Spent already. Sent again after it was spent: stolen or replayed, so the whole
    // session ends. Sent while it was being spent (two tabs refreshing at once): the loser
    // of that race is refused, but the session lives on, so a client racing itself is not
    // logged out. A request that read the token unspent ran while it was being spent; one
    // that read it spent is a replay only if it arrived in a later millisecond than the
    // spend (the spend's time is kept to the millisecond, the arrival's is finer).
    const replayed = presented.spentAt !== null && Math.floor(receivedAt) > Date.parse(presented.spentAt)
    if (replayed) await this.#endSessions([presented.sessionId], 'reuse', now)
    throw new Errors.TOKEN_REUSED()
  }

  /** Revokes the access token and ends its session, and the given refresh token's when it is the caller's. */
  async logout (caller: { id: string, jti: string, tokenExpiresAt: Date }, refreshToken?: string): Promise<void> {
    const { sessions, revokeAccessToken } = this.#deps
    await revokeAccessToken(caller.jti, caller.tokenExpiresAt)
    const presented = refreshToken === undefined ? undefined : await sessions.findByTokenHash(hashToken(refreshToken))
    const sessionIds = new Set<string>()
    const own = await sessions.sessionOfAccessToken(caller.id, caller.jti)
    if (own !== undefined) sessionIds.add(own)
    if (presented?.userId === caller.id) sessionIds.add(presented.sessionId)
    await this.#endSessions([...sessionIds], 'logout', new Date(this.#now()).toISOString(), caller.jti)
  }

  /** The user's live sessions, oldest first by default. */
  async list (userId: string, query: CollectionQueryInput) {
    const { sessions, cursors } = this.#deps
    return await collectionPage(query, { ...SESSION_FIELDS, defaultSort: [{ field: 'created_at', descending: false }] }, cursors,
      async (request) => await sessions.list(userId, this.cutoffs(), request))
  }

  /** Ends one of the caller's own sessions; 404 when it is not one of theirs or already over. */
  async end (userId: string, sessionId: string): Promise<void> {
    const { sessions } = this.#deps
    if (!await sessions.isLive(userId, sessionId, this.cutoffs())) throw new Errors.NOT_FOUND('Session')
    await this.#endSessions([sessionId], 'ended_by_user', new Date(this.#now()).toISOString())
  }

  /** Ends every session of the user (a new password). */
  async endAll (userId: string, reason: RevocationReason): Promise<void> {
    await this.#endSessions(await this.#deps.sessions.unrevokedIds(userId), reason, new Date(this.#now()).toISOString())
  }

  /**
   * Ends sessions with their refresh tokens, and revokes the access tokens they issued that
   * have not expired: an ended session lets no request through, not even for 15 minutes.
   */
  async #endSessions (sessionIds: string[], reason: RevocationReason, now: string, revokedAlready?: string): Promise<void> {
    const accessTokens = await this.#deps.sessions.revoke(sessionIds, reason, now, accessIssuedAfter(now))
    await this.#revokeAccessTokens(accessTokens.filter(({ jti }) => jti !== revokedAlready))
  }

  /** Revokes access tokens of ended sessions until they expire. */
  async #revokeAccessTokens (accessTokens: IssuedAccessToken[]): Promise<void> {
    await Promise.all(accessTokens.map(async ({ jti, issuedAt }) => {
      await this.#deps.revokeAccessToken(jti, new Date(Date.parse(issuedAt) + ACCESS_TOKEN_TTL_S * 1000))
    }))
  }

  /**
   * Signs a pair as of `issuedAtMs`, which must be the instant it is recorded under: an ended
   * session's access tokens are revoked until that instant + 15 minutes, which must not come
   * before they expire.
   */
  #sign (user: { id: string, roles: string[] }, device: Record<string, unknown>, issuedAtMs: number) {
    const { tokens } = this.#deps
    return {
      access: tokens.issueAccessToken({ sub: user.id, roles: [...user.roles] }, ACCESS_TOKEN_TTL_S, issuedAtMs),
      refresh: tokens.issueRefreshToken(user.id, device, issuedAtMs)
    }
  }

  /** A new pair in the session; INVALID_TOKEN when the session has ended meanwhile (a logout), or the account gone. */
  async #issue (user: { id: string, roles: string[] }, sessionId: string, device: Record<string, unknown>, now: string): Promise<TokenPair> {
    const { access, refresh } = this.#sign(user, device, Date.parse(now))
    if (!await this.#deps.sessions.addTokenIfLive(sessionId, user.id, refresh, access.jti, device, now)) throw new Errors.INVALID_TOKEN()
    return tokenPair(access.token, refresh.token)
  }
}
