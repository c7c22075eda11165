import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import type { AccountClaims, ReauthenticationService } from '../sign-in/index.js'
import { AccountService } from './accounts.js'
import { BreachedPasswords } from './breached-passwords.js'
import { EmailVerificationService } from './email-verification.js'
import { PasswordResetService } from './password-reset.js'
import { RoleService } from './roles.js'

export { describeAccount, eraseAccount } from './accounts.js'
export { assertMayManage } from './management.js'

/** Accounts: registration, profiles, addresses and their verification, passwords and their reset, roles. */
export function accountServices (
  deps: ServiceDependencies,
  { sessions, messaging, claims, reauthentication }: {
    sessions: SessionService
    messaging: Messaging
    claims: AccountClaims
    reauthentication: ReauthenticationService
  }
) {
  const { config, repositories, passwords, audit, now } = deps
  const { users } = repositories
  const { notices, templates, deliver } = messaging
  const breachedPasswords = new BreachedPasswords({ ...config.passwordBreachCheck, audit, log: deps.log })
  const emailVerification = new EmailVerificationService({
    users,
    tokens: repositories.oneTimeTokens,
    templates,
    audit,
    claims,
    mode: config.messages.emailVerification,
    deliver,
    now
  })
  return {
    emailVerification,
    passwordReset: new PasswordResetService({
      users,
      tokens: repositories.oneTimeTokens,
      passwords,
      passwordPolicy: config.passwordPolicy,
      breachedPasswords,
      sessions,
      claims,
      templates,
      notices,
      audit,
      deliver,
      now
    }),
    accounts: new AccountService({
      users,
      passwords,
      passwordPolicy: config.passwordPolicy,
      breachedPasswords,
      sessions,
      claims,
      reauthentication,
      audit,
      cursors: deps.cursors,
      verification: emailVerification,
      notices,
      erasure: repositories.accountErasure
    }),
    roles: new RoleService({ users, audit })
  }
}
