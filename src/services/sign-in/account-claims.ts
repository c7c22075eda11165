import type { User } from '../../../schemas/user.js'
import { Errors } from '../../errors.js'
import type { Db } from '../../store/types.js'
import type { ReleasedAttachments, UsersRepository } from '../../store/users.js'
import type { AuditChange } from '../audit/index.js'
import type { Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'

/** How an address was proved: what of the account the proof leaves in place. */
export interface Proof {
  /** A provider that verified the address: its identity stays linked. */
  keepIdentity?: { provider: string, subject: string }
  /** The password goes too: the proof (a provider's) did not come with one. */
  removePassword: boolean
}

/**
 * An address proved: the account, what its claim removed (null when
 * it was claimed before), and the revocation to run after commit.
 */
export interface ProvedAddress {
  user: User
  released: ReleasedAttachments | null
  /** Revokes the access tokens of the sessions the claim ended: call once the transaction committed. */
  revokeAccess: () => Promise<void>
  /** The audit entries of the claim, to record with the change. */
  entries: AuditChange[]
}

function removedAnything (released: ReleasedAttachments): boolean {
  return released.password || released.totp ||
    released.identities + released.passkeys + released.trustedDevices + released.messageFactors.length > 0
}

/** What a claim removed, in words for the owner's notice. */
function describeRelease (released: ReleasedAttachments): string {
  const parts = [
    ...(released.password ? ['the password'] : []),
    ...(released.identities > 0 ? [`${released.identities} linked sign-in provider(s)`] : []),
    ...(released.passkeys > 0 ? [`${released.passkeys} passkey(s)`] : []),
    ...(released.totp ? ['the authenticator app (TOTP) and its backup codes'] : []),
    ...released.messageFactors.map((factor) => factor === 'email' ? 'sign-in codes by e-mail' : 'sign-in codes by SMS and the phone number'),
    ...(released.trustedDevices > 0 ? [`${released.trustedDevices} trusted device(s)`] : [])
  ]
  return `Removed, since they were added before the address was proved: ${parts.join(', ')}. Every session open before now was ended.`
}

/**
 * The account-claiming rule (docs/security.md, "Account claiming"): an account whose address
 * was never proved is unclaimed, and whatever was attached to it then is removed in the
 * transaction that first proves the address (a verification link, a reset link, a provider
 * that verified it). Nothing the first registrant attached survives the owner's claim.
 */
export class AccountClaims {
  constructor (private readonly deps: { users: UsersRepository, sessions: SessionService, notices: Notices }) {}

  /**
   * In `trx`, the transaction of the proof: marks `email` verified when it is still the
   * account's (else undefined); on the first proof, removes what was attached before, ends every
   * session and stores the owner's notice.
   */
  async prove (userId: string, email: string, proof: Proof, trx: Db): Promise<ProvedAddress | undefined> {
    const { users, sessions, notices } = this.deps
    const verified = await users.markEmailVerified(userId, email, trx)
    if (verified === undefined) return undefined
    const { claimedNow, ...user } = verified
    if (!claimedNow) return { user, released: null, revokeAccess: async () => {}, entries: [] }
    const released = await users.releaseForClaim(userId, {
      ...(proof.keepIdentity !== undefined && { keepIdentity: proof.keepIdentity }), password: proof.removePassword
    }, trx)
    const revokeAccess = await sessions.endAllWithin(userId, 'account_claimed', trx)
    // An owner proving the address of the account they registered, with nothing attached yet, is told nothing new.
    if (removedAnything(released)) await notices.add(user.email, 'account_claimed', trx, describeRelease(released))
    // Named so that the audit's redaction (of names like password, key, otp) leaves them readable.
    const details = {
      identities: released.identities,
      webauthn_credentials: released.passkeys,
      authenticator_app: released.totp,
      message_factors: released.messageFactors,
      trusted_devices: released.trustedDevices,
      credential_removed: released.password
    }
    return { user, released, revokeAccess, entries: [{ event: 'account.claimed', outcome: 'success', targetId: userId, details }] }
  }

  /** Starts delivering the notices stored. */
  deliver (): void {
    this.deps.notices.deliver()
  }
}

/**
 * The account, when its address was ever proved; else 403 EMAIL_NOT_VERIFIED: an unclaimed
 * account gets no second factor or passkey, which would outlive its owner's claim, and creates
 * no webhook endpoint, whose notices go to its address.
 */
export async function claimedAccount (users: UsersRepository, userId: string): Promise<User> {
  const [user, principal] = await Promise.all([users.findById(userId), users.findPrincipal(userId)])
  if (user === undefined || principal === undefined) throw new Errors.INVALID_TOKEN()
  if (!principal.claimed) throw new Errors.EMAIL_NOT_VERIFIED()
  return user
}
