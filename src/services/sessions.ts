import type { Device, TokenPair } from '../../schemas/auth.js'
import type { Role } from '../../schemas/rbac.js'
import { ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S, type TokenService } from '../security/tokens.js'
import { uuidv7 } from '../store/ids.js'
import type { RefreshTokensRepository } from '../store/refresh-tokens.js'

export interface SessionDependencies {
  tokens: TokenService
  refreshTokens: RefreshTokensRepository
}

/** Opens a session (a new refresh-token family) and answers its first token pair. */
export async function startSession (
  { tokens, refreshTokens }: SessionDependencies,
  user: { id: string, roles: Role[] },
  device: Device | undefined
): Promise<TokenPair> {
  const deviceInfo = device === undefined ? {} : { ...device }
  const access = tokens.issueAccessToken({ sub: user.id, roles: [...user.roles] })
  const refresh = tokens.issueRefreshToken(user.id, deviceInfo)
  await refreshTokens.insert({ userId: user.id, sessionId: uuidv7(), issued: refresh, device: deviceInfo })
  return {
    access_token: access.token,
    refresh_token: refresh.token,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_S,
    refresh_expires_in: REFRESH_TOKEN_TTL_S
  }
}
