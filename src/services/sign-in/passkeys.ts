import { randomBytes } from 'node:crypto'
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON
} from '@simplewebauthn/server'
import { PASSKEY_FIELDS, type PasskeyAuthenticationBody, type PasskeyRegistrationBody } from '../../../schemas/passkeys.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import type { Config } from '../../config/index.js'
import { Errors, rethrowServiceError, validationFailed } from '../../errors.js'
import type { Passkey, PasskeysRepository } from '../../store/passkeys.js'
import type { PendingChallenge, SingleUseStore } from '../../store/single-use.js'
import type { UsersRepository } from '../../store/users.js'
import { claimedAccount } from './account-claims.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { InlineProof, ReauthenticationService } from './reauthentication.js'

/** A ceremony's challenge is good this long, once (docs/api.md, "Passkeys"). */
export const PASSKEY_CHALLENGE_TTL_MS = 5 * 60_000

/**
 * @simplewebauthn/server, loaded at the first ceremony rather than at start, as oidc-provider is
 * loaded only when on: it is the largest load passkeys alone need (docs/performance.md, "Start-up").
 * With it, the key algorithms a passkey may use: those every supported runtime verifies. The
 * library offers ML-DSA first where the runtime has it (Node.js 24): such a passkey would not sign
 * in on an instance of an older runtime, and its signatures outgrow the assertion's size limit.
 */
async function webAuthn () {
  const [library, { COSEALG }] = await Promise.all([import('@simplewebauthn/server'), import('@simplewebauthn/server/helpers')])
  return { ...library, algorithms: [COSEALG.EdDSA, COSEALG.ES256, COSEALG.RS256] }
}

/** A passkey's name when the registration gives none. */
const DEFAULT_NAME = 'Passkey'

export interface PasskeyDependencies {
  passkeys: PasskeysRepository
  users: UsersRepository
  challenges: SingleUseStore<PendingChallenge>
  relyingParty: Config['webauthn']
  cursors: CursorCodec
  notices: Notices
  audit: AuditTrail
  /**
   * Adding, renaming or removing a passkey is a sensitive change:
   * it needs a proof (docs/security.md, "Sensitive changes").
   */
  reauthentication: ReauthenticationService
}

/** A sign-in a passkey proved: whose, with which passkey, and whether the authenticator verified the user. */
export interface VerifiedAssertion {
  userId: string
  passkeyId: string
  userVerified: boolean
}

/** The WebAuthn user handle: the user's id, as bytes; browsers hand it back base64url-encoded. */
function userHandle (userId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(userId, 'utf8'))
}

/**
 * The caller's passkeys, and the two WebAuthn ceremonies with @simplewebauthn/server
 * (docs/api.md, "Passkeys"): registration for a signed-in caller, and the assertion that
 * SignInService.withPasskey turns into a session.
 */
export class PasskeyService {
  constructor (private readonly deps: PasskeyDependencies) {}

  /**
   * Options for `navigator.credentials.create`, with a challenge good for 5 minutes, once. An
   * unclaimed account (its address never proved) gets no passkey (docs/security.md, "Account
   * claiming"): it would outlive the owner's claim as a way in.
   */
  async registrationOptions (context: RequestContext): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const caller = callerOf(context)
    const { passkeys, challenges, relyingParty } = this.deps
    const user = await claimedAccount(this.deps.users, caller.id)
    const { generateRegistrationOptions, algorithms } = await webAuthn()
    const options = await generateRegistrationOptions({
      rpName: relyingParty.rpName,
      rpID: relyingParty.rpId,
      userName: user.email,
      userID: userHandle(user.id),
      userDisplayName: user.name,
      timeout: PASSKEY_CHALLENGE_TTL_MS,
      attestationType: 'none',
      supportedAlgorithmIDs: algorithms,
      // The same authenticator is not registered twice.
      excludeCredentials: await passkeys.credentialsOf(user.id),
      // Discoverable: the passkey signs in without an e-mail address being typed first.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' }
    })
    await challenges.put(`registration:${options.challenge}`, { challenge: options.challenge, userId: user.id }, PASSKEY_CHALLENGE_TTL_MS)
    return options
  }

  /**
   * Verifies the browser's answer to the caller's registration options and stores the new
   * passkey. The challenge is found by the one the client data carries, and spent then: it
   * must be one issued to this caller.
   */
  async register (context: RequestContext, { response, name, ...proof }: PasskeyRegistrationBody): Promise<Passkey> {
    const caller = callerOf(context)
    const { passkeys, challenges, relyingParty, notices, audit, reauthentication } = this.deps
    const user = await claimedAccount(this.deps.users, caller.id)
    await reauthentication.require(context, proof, { firstEnrolment: true })
    const { verifyRegistrationResponse, algorithms } = await webAuthn()
    let verification
    try {
      verification = await verifyRegistrationResponse({
        response: response as RegistrationResponseJSON,
        expectedChallenge: async (challenge) => (await challenges.take(`registration:${challenge}`))?.userId === caller.id,
        expectedOrigin: relyingParty.origins,
        expectedRPID: relyingParty.rpId,
        supportedAlgorithmIDs: algorithms,
        // The caller is signed in already; user verification matters when the passkey signs in.
        requireUserVerification: false
      })
    } catch {
      verification = { verified: false as const }
    }
    if (!verification.verified) {
      throw validationFailed([{ path: '/response', message: 'The passkey could not be verified: answer fresh registration options (valid 5 minutes, once) from an allowed origin' }])
    }
    const { credential } = verification.registrationInfo
    const passkey = await audit.recordChange(context, async (trx) => {
      const added = await passkeys.add(caller.id, {
        credentialId: credential.id,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: response.response.transports ?? [],
        name: name ?? DEFAULT_NAME
      }, trx).catch(rethrowServiceError)
      await notices.add(user.email, 'passkey_added', trx)
      return added
    }, (added) => [{ event: 'passkey.added', outcome: 'success', targetId: caller.id, details: { id: added.id, name: added.name } }])
    notices.deliver()
    return passkey
  }

  async list (context: RequestContext, query: CollectionQueryInput) {
    const caller = callerOf(context)
    return await collectionPage(query, { ...PASSKEY_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `passkeys:${caller.id}` }, this.deps.cursors,
      async (request) => await this.deps.passkeys.list(caller.id, request))
  }

  /** Renames one of the caller's passkeys (a sensitive change: the name is what its owner recognizes it by). */
  async rename (
    context: RequestContext,
    id: string,
    { name, ...proof }: { name: string } & InlineProof
  ): Promise<Passkey> {
    const caller = callerOf(context)
    const { passkeys, audit, reauthentication } = this.deps
    await reauthentication.require(context, proof)
    const passkey = await (await this.deps.notices.toAccount(this.deps.users, caller.id, 'passkey_renamed', audit.recorded(context, [{ event: 'passkey.renamed', outcome: 'success', targetId: caller.id, details: { id, name } }])))(
      async (trx) => await passkeys.rename(caller.id, id, name, trx), (renamed) => renamed !== undefined)
    if (passkey === undefined) throw new Errors.NOT_FOUND('Passkey')
    return passkey
  }

  /** Removes one of the caller's passkeys; the account's last way to sign in stays (409). */
  async remove (context: RequestContext, id: string, proof: InlineProof): Promise<void> {
    const caller = callerOf(context)
    const { passkeys, audit, reauthentication } = this.deps
    await reauthentication.require(context, proof)
    const refusal = await (await this.deps.notices.toAccount(this.deps.users, caller.id, 'passkey_removed', audit.recorded(context, [{ event: 'passkey.removed', outcome: 'success', targetId: caller.id, details: { id } }])))(
      async (trx) => await passkeys.remove(caller.id, id, trx), (result) => result === null)
    if (refusal === 'not_found') throw new Errors.NOT_FOUND('Passkey')
    if (refusal === 'last_sign_in_method') {
      throw new Errors.CONFLICT('This passkey is the account\'s last way to sign in: set a password or add another passkey first')
    }
  }

  /**
   * Options for `navigator.credentials.get`, the same whatever the e-mail address: no
   * credential is listed (discoverable passkeys only), so the answer does not tell whether an
   * address has an account or passkeys (docs/api.md, "Passkeys"). With an address, the
   * challenge is bound to its account and only its passkeys are accepted; an address without
   * an account is bound to an id no account has, so no passkey is. Without one, any
   * discoverable passkey of this site may answer.
   */
  async authenticationOptions (
    email: string | undefined
  ): Promise<{ challenge_id: string, options: PublicKeyCredentialRequestOptionsJSON }> {
    const { users, challenges, relyingParty } = this.deps
    const userId = email === undefined ? null : (await users.findByEmail(email))?.id ?? ''
    const { generateAuthenticationOptions } = await webAuthn()
    const options = await generateAuthenticationOptions({
      rpID: relyingParty.rpId,
      allowCredentials: [],
      timeout: PASSKEY_CHALLENGE_TTL_MS,
      userVerification: 'preferred'
    })
    const challengeId = randomBytes(16).toString('base64url')
    await challenges.put(`authentication:${challengeId}`, { challenge: options.challenge, userId }, PASSKEY_CHALLENGE_TTL_MS)
    return { challenge_id: challengeId, options }
  }

  /**
   * Verifies an assertion against its challenge (spent here, whatever the outcome) and the
   * stored passkey, and records the new signature counter. Every refusal is 401
   * INVALID_CREDENTIALS, audited with its reason.
   */
  async verifyAssertion (
    context: RequestContext,
    { challenge_id: challengeId, response }: PasskeyAuthenticationBody
  ): Promise<VerifiedAssertion> {
    const { passkeys, challenges, relyingParty } = this.deps
    const pending = await challenges.take(`authentication:${challengeId}`)
    if (pending === null) return await this.#refuse(context, null, 'unknown_challenge')
    const stored = await passkeys.findByCredentialId(response.id)
    if (stored === undefined) return await this.#refuse(context, null, 'unknown_passkey')
    if (pending.userId !== null && pending.userId !== stored.userId) return await this.#refuse(context, stored.userId, 'passkey_of_another_account')
    const handle = response.response.userHandle
    if (handle !== undefined && handle !== '' && handle !== Buffer.from(userHandle(stored.userId)).toString('base64url')) {
      return await this.#refuse(context, stored.userId, 'user_handle_mismatch')
    }
    const { verifyAuthenticationResponse } = await webAuthn()
    let verification
    try {
      verification = await verifyAuthenticationResponse({
        response: response as AuthenticationResponseJSON,
        expectedChallenge: pending.challenge,
        expectedOrigin: relyingParty.origins,
        expectedRPID: relyingParty.rpId,
        credential: { id: stored.credentialId, publicKey: new Uint8Array(Buffer.from(stored.publicKey, 'base64url')), counter: stored.counter, transports: stored.transports },
        // Without user verification the passkey is one factor: SignInService applies the MFA rules then.
        requireUserVerification: false
      })
    } catch (error) {
      const reason = error instanceof Error && /counter/i.test(error.message) ? 'counter_went_backwards' : 'not_verified'
      return await this.#refuse(context, stored.userId, reason)
    }
    if (!verification.verified) return await this.#refuse(context, stored.userId, 'not_verified')
    const { newCounter, userVerified } = verification.authenticationInfo
    // Checked again as it is written: two sign-ins with one counter value (a cloned authenticator) get one success.
    if (!await passkeys.recordUse(stored.id, newCounter, new Date().toISOString())) return await this.#refuse(context, stored.userId, 'counter_went_backwards')
    return { userId: stored.userId, passkeyId: stored.id, userVerified }
  }

  async #refuse (context: RequestContext, userId: string | null, reason: string): Promise<never> {
    await this.deps.audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: userId, targetId: userId, details: { method: 'passkey', reason } })
    throw new Errors.INVALID_CREDENTIALS()
  }
}
