import type { CursorCodec } from '../collection/cursor.js'
import type { Config } from '../config/index.js'
import type { PasswordHasher } from '../security/passwords.js'
import type { TokenService } from '../security/tokens.js'
import type { Repositories } from '../store/repositories.js'
import type { SingleUseStores } from '../store/single-use.js'
import type { AuditTrail } from './audit/trail.js'
import type { DeliveryLog, Mailer, SmsSender } from './messaging/ports.js'
import type { TxtResolver } from './organizations/txt-records.js'
import type { Resolver } from '../security/outbound-http.js'

/**
 * What the services are built from: each feature's index takes these, and the services of the
 * features it builds on.
 */
export interface ServiceDependencies {
  config: Config
  repositories: Repositories
  cursors: CursorCodec
  passwords: PasswordHasher
  tokens: TokenService
  audit: AuditTrail
  /** Revokes an access token on every instance until it expires. */
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  singleUse: SingleUseStores
  mailer: Mailer
  sms: SmsSender
  /** Where message delivery reports what happened. */
  log: DeliveryLog
  /**
   * The clock one-time tokens and message codes are issued and checked by, and webhook
   * deliveries scheduled by (Date.now by default).
   */
  now?: () => number
  /** How webhook endpoints' host names are resolved (the system's resolver by default). */
  resolve?: Resolver
  /** How claimed domains' TXT records are looked up (the system's resolvers by default). */
  resolveTxt?: TxtResolver
}
