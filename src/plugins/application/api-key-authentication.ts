import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Role } from '../../../schemas/rbac.js'
import { Errors } from '../../errors.js'
import type { ApiKeyGrant, Caller } from '../../services/context.js'
import { apiKeyId } from '../../security/api-key-format.js'
import { apiKeyRevocationId, keyMatches } from '../../security/api-keys.js'
import { mustEnrolMfa } from '../../security/permissions.js'
import { suspensionInForce } from '../../security/suspension.js'
import { LAST_USED_PRECISION_MS, type StoredApiKey } from '../../store/api-keys.js'
import type { UserPrincipal } from '../../store/users.js'

/** How far off a key that never expires says its "token" expires, for the revocation of its jti: never. */
const NEVER = new Date('9999-12-31T00:00:00Z')

/**
 * What a key grants any request, worked out once per cached copy of the key rather than per
 * request (the read by key was measured 40 % slower than by token without it: docs/performance.md).
 */
interface KeyStanding {
  grant: ApiKeyGrant
  /** The stored SHA-256, as bytes to compare with. */
  hash: Buffer
  jti: string
  tokenExpiresAt: Date
  authTime: number
  expiresAtMs: number
  /** When its use was last recorded, as far as this instance knows. */
  lastUsedMs: number
}
const standings = new WeakMap<StoredApiKey, KeyStanding>()

function standingOf (key: StoredApiKey): KeyStanding {
  let standing = standings.get(key)
  if (standing === undefined) {
    const organization = key.organizationId !== null && key.role !== null
      ? { id: key.organizationId, role: key.role }
      : null
    standing = {
      grant: { id: key.id, scopes: key.scopes, organization },
      hash: Buffer.from(key.keyHash, 'base64url'),
      jti: apiKeyRevocationId(key.id),
      tokenExpiresAt: key.expiresAt === null ? NEVER : new Date(key.expiresAt),
      authTime: Math.floor(Date.parse(key.createdAt) / 1000),
      expiresAtMs: key.expiresAt === null ? Infinity : Date.parse(key.expiresAt),
      lastUsedMs: key.lastUsedAt === null ? -Infinity : Date.parse(key.lastUsedAt)
    }
    standings.set(key, standing)
  }
  return standing
}

/**
 * The caller a matched API key makes (docs/api.md, "API keys"), or the error that refuses it:
 * the key must be unexpired; an organization's key calls its organization's routes only; a
 * person's key acts as the person while they may sign in (not deleted, not suspended, MFA
 * enrolled where their role requires it), with their permissions that the key's scopes name.
 */
function keyCaller (
  request: FastifyRequest,
  key: StoredApiKey,
  principal: UserPrincipal | undefined | null,
  mfaRequiredRoles: readonly Role[]
): Caller | Error {
  const now = Date.now()
  const { grant, jti, tokenExpiresAt, authTime, expiresAtMs } = standingOf(key)
  if (expiresAtMs <= now) return new Errors.INVALID_TOKEN()
  // Written out, not spread from a shared object: the spread took 3 µs a request.
  if (grant.organization !== null) {
    const access = request.routeOptions.config.access
    if (typeof access !== 'object' || !('organization' in access)) {
      return new Errors.API_KEY_RESTRICTED('an organization\'s key calls only its organization\'s routes')
    }
    const { id } = key
    const roles: Role[] = []
    return { id, roles, mfaEnabled: false, jti, tokenExpiresAt, authTime, amr: [], impersonatorId: null, apiKey: grant }
  }
  if (principal == null || suspensionInForce(principal, now) !== undefined) return new Errors.INVALID_TOKEN()
  if (request.routeOptions.config.allowWithoutMfa !== true && mustEnrolMfa(principal, mfaRequiredRoles)) {
    return new Errors.MFA_ENROLLMENT_REQUIRED()
  }
  const { id, roles, mfaEnabled } = principal
  return { id, roles, mfaEnabled, jti, tokenExpiresAt, authTime, amr: [], impersonatorId: null, apiKey: grant }
}

/**
 * The authentication hook's path for a bearer credential shaped as an API key (docs/api.md,
 * "API keys"): a bad checksum is refused before any read, a deleted key by the revocation list,
 * and the key and its person are read through their caches, without a promise when both are held.
 */
export function apiKeyAuthentication ({ repositories, revocations, mfaRequiredRoles, log }: {
  repositories: FastifyInstance['repositories']
  revocations: Pick<FastifyInstance['revocations'], 'isRevoked'>
  mfaRequiredRoles: readonly Role[]
  log: FastifyBaseLogger
}) {
  /**
   * Keys already matched to their stored hash, by their exact text, while that copy of the key is
   * the cached one: a client repeats its key on every request, as the token service keeps the
   * tokens it verified (src/security/tokens.ts). Only a key that matched enters it.
   */
  const matched = new Map<string, StoredApiKey>()

  function matches (key: StoredApiKey, credential: string): boolean {
    if (matched.get(credential) === key) return true
    if (!keyMatches(standingOf(key).hash, credential)) return false
    if (matched.size >= 10_000) matched.clear()
    matched.set(credential, key)
    return true
  }

  /** Records the key's use at most once a minute: the cached copy says when it was last recorded. */
  function used (key: StoredApiKey): void {
    const now = Date.now()
    const standing = standingOf(key)
    if (standing.lastUsedMs > now - LAST_USED_PRECISION_MS) return
    standing.lastUsedMs = now
    repositories.apiKeys.touch(key, now).catch((error: unknown) => { log.warn({ err: error }, 'recording an API key\'s use failed') })
  }

  /** `authenticate` for a bearer credential shaped as an API key: a bad checksum is refused before any read. */
  function authenticateKey (request: FastifyRequest, credential: string, done: HookHandlerDoneFunction): void {
    const id = matched.get(credential)?.id ?? apiKeyId(credential)
    if (id === undefined || revocations.isRevoked(apiKeyRevocationId(id))) {
      done(new Errors.INVALID_TOKEN())
      return
    }
    const admitKey = (key: StoredApiKey | undefined, principal: UserPrincipal | undefined | null): void => {
      if (key === undefined || !matches(key, credential)) {
        done(new Errors.INVALID_TOKEN())
        return
      }
      const caller = keyCaller(request, key, principal, mfaRequiredRoles)
      if (caller instanceof Error) {
        done(caller)
        return
      }
      request.user = caller
      used(key)
      done()
    }
    const withPrincipal = (key: StoredApiKey | undefined): void => {
      const principal = key?.userId == null ? null : repositories.users.cachedPrincipal(key.userId)
      if (principal instanceof Promise) principal.then((found) => { admitKey(key, found) }, done)
      else admitKey(key, principal)
    }
    const key = repositories.apiKeys.cachedKey(id)
    if (key instanceof Promise) key.then(withPrincipal, done)
    else withPrincipal(key)
  }
  return authenticateKey
}
