import { createHmac, hkdfSync, randomInt, timingSafeEqual } from 'node:crypto'
import type { EmailSignInRequestBody, EmailSignInVerifyBody } from '../../../schemas/email-sign-in.js'
import type { Config } from '../../config/index.js'
import { Errors, rethrowServiceError, validationFailed } from '../../errors.js'
import { hashToken, newOneTimeToken } from '../../security/tokens.js'
import type { EmailSignInsRepository } from '../../store/email-sign-ins.js'
import { uuidv7 } from '../../store/ids.js'
import { normalizeEmail, type UsersRepository } from '../../store/users.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'
import type { MessageTemplates } from '../messaging/index.js'
import type { AccountClaims } from './account-claims.js'
import { displayName, type FederatedSignInService } from './federated-sign-in.js'
import type { SignInGuard } from './sign-in-guard.js'

const MINUTE = 60 * 1000
/** A code and its link are good this long (docs/api.md, "Signing in by e-mail"). */
export const EMAIL_SIGN_IN_TTL_MS = 10 * MINUTE
/** Wrong codes a message takes before its code and link are spent. */
export const EMAIL_SIGN_IN_ATTEMPTS = 5
/** Messages one address is sent in an hour, and in a day. */
export const EMAIL_SIGN_INS_PER_HOUR = 5
export const EMAIL_SIGN_INS_PER_DAY = 20
/** The token a confirmed link hands the application is exchanged within this. */
const CONFIRMED_TTL_MS = MINUTE

export interface EmailSignInDependencies {
  emailSignIns: EmailSignInsRepository
  users: UsersRepository
  claims: AccountClaims
  /** Wrong codes for an account count toward its sign-in lockout, as wrong passwords do. */
  guard: SignInGuard
  templates: MessageTemplates
  audit: AuditTrail
  /** Which URLs a confirmed link may send the browser to (OAUTH_REDIRECT_URLS). */
  federation: Pick<FederatedSignInService, 'admittedReturn'>
  mode: Config['messages']['emailSignIn']
  /** Where the application signs people in when a request named no `redirect_to` (APP_URL); null: none. */
  appUrl: string | null
  /** The service's own address: the link goes to its confirmation page. */
  publicUrl: string
  /** The secret the codes' keyed hashes derive from. */
  secret: string
  /** Whether an address's domain signs in through its organization's IdP only. */
  ssoRequired: (email: string) => Promise<boolean>
  deliver: () => void
  now?: () => number
}

/** What a spent code or confirmed link proves: the address, and the account it had when the message was sent. */
export interface ProvedEmail { email: string, userId: string | null }

/**
 * Sign-in by a code or link sent by e-mail (docs/api.md, "Signing in by e-mail"): one message,
 * a six-digit code and a link, each good once for 10 minutes, stored as keyed hashes; the link
 * only opens a page asking to confirm (a mail scanner's GET spends nothing), and the
 * confirmation hands the application a one-time token; neither is bound to the browser that
 * asked. Spending one proves the address: the account is claimed, or made where EMAIL_SIGN_IN=on.
 */
export class EmailSignInService {
  readonly #key: Buffer
  readonly #now: () => number

  constructor (private readonly deps: EmailSignInDependencies) {
    this.#key = Buffer.from(hkdfSync('sha256', deps.secret, 'users-api', 'email-sign-in-code', 32))
    this.#now = deps.now ?? Date.now
  }

  get enabled (): boolean {
    return this.deps.mode !== 'off'
  }

  #assertEnabled (): void {
    if (!this.enabled) throw new Errors.NOT_FOUND('E-mail sign-in')
  }

  /**
   * Sends a code and a link to the address, answering the same whether it has an account or not
   * (and whether or not it is sent: beyond EMAIL_SIGN_INS_PER_HOUR, or for an address without an
   * account where accounts are not made this way), in about the same time: the same reads, and
   * the entry recording the request, either way.
   */
  async request (
    context: RequestContext, { email: given, redirect_to: redirect }: EmailSignInRequestBody
  ): Promise<void> {
    this.#assertEnabled()
    const { users, emailSignIns, templates, audit, ssoRequired } = this.deps
    const email = normalizeEmail(given)
    const redirectTo = redirect === undefined ? null : this.deps.federation.admittedReturn(redirect)
    if (redirect !== undefined && redirectTo === null) {
      throw validationFailed([{ path: '/redirect_to', message: 'must be one of the allowed redirect URLs or a path below one' }])
    }
    // Told for any address of the domain, account or not, as a password sign-in tells it.
    if (await ssoRequired(email)) throw new Errors.SSO_REQUIRED()
    const user = await users.findByEmail(email)
    const now = this.#now()
    const id = uuidv7(now)
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    const link = newOneTimeToken()
    const sent = user !== undefined || this.deps.mode === 'on'
    // A link only where the application has a page to take its token: the code alone otherwise.
    const destination = redirectTo ?? (this.deps.appUrl === null ? null : `${this.deps.appUrl}/email-sign-in`)
    const linkUrl = destination === null ? null : `${this.deps.publicUrl}/api/v1/auth/email-sign-in/confirm?token=${link.token}`
    const message = sent ? templates.emailSignIn(email, code, linkUrl, EMAIL_SIGN_IN_TTL_MS / MINUTE) : null
    const issued = await audit.recordChange(context, async (trx) => await emailSignIns.issue({
      id,
      email,
      user_id: user?.id ?? null,
      code_hash: this.#codeHash(email, code),
      link_hash: link.hash,
      redirect_to: destination,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + EMAIL_SIGN_IN_TTL_MS).toISOString()
    }, message, [
      { max: EMAIL_SIGN_INS_PER_HOUR, since: new Date(now - 60 * MINUTE).toISOString() },
      { max: EMAIL_SIGN_INS_PER_DAY, since: new Date(now - 24 * 60 * MINUTE).toISOString() }
    ], trx),
    (stored): AuditChange[] => [{
      event: 'auth.email_sign_in_requested',
      outcome: stored && sent ? 'success' : 'failure',
      ...(user !== undefined && { targetId: user.id }),
      details: { email, ...(!stored ? { reason: 'too_many_requests' } : !sent ? { reason: 'unknown_email' } : {}) }
    }])
    if (issued && sent) this.deps.deliver()
  }

  /**
   * Spends the code of one of the address's messages: what it proves. A wrong code counts
   * against every message the address holds, each spent at its EMAIL_SIGN_IN_ATTEMPTS-th, and,
   * for an account, toward its sign-in lockout (423 while locked), audited as a failed sign-in.
   */
  async #acceptCode (context: RequestContext, email: string, code: string): Promise<ProvedEmail> {
    this.#assertEnabled()
    const { emailSignIns, users, guard } = this.deps
    const address = normalizeEmail(email)
    const now = new Date(this.#now()).toISOString()
    const live = await emailSignIns.live(address, now)
    const candidate = Buffer.from(this.#codeHash(address, code), 'hex')
    let match: (typeof live)[number] | undefined
    const check = async () => {
      // Every message is compared, so the time taken says nothing of which one matched.
      for (const request of live) {
        if (timingSafeEqual(Buffer.from(request.codeHash, 'hex'), candidate)) match = request
      }
      return match !== undefined
    }
    const account = await users.findByEmail(address)
    const right = account === undefined
      ? await check()
      : await guard.checkSecret(context, account.id, 'auth.login_failed', { email: address, method: 'email', reason: 'wrong_email_code' }, check)
    if (!right || match === undefined) {
      await emailSignIns.failedAttempt(live.map((request) => request.id), EMAIL_SIGN_IN_ATTEMPTS, now)
      throw new Errors.INVALID_ONE_TIME_TOKEN()
    }
    if (!await emailSignIns.spend(match.id, now)) throw new Errors.INVALID_ONE_TIME_TOKEN()
    return { email: match.email, userId: match.userId }
  }

  /** The account a code (with its address) or a confirmed link's token signs in. */
  async signedIn (context: RequestContext, { email, code, token }: EmailSignInVerifyBody): Promise<string> {
    const byCode = token === undefined && email !== undefined && code !== undefined
    const byToken = token !== undefined && email === undefined && code === undefined
    if (!byCode && !byToken) throw validationFailed([{ path: '/code', message: 'give `email` and `code`, or `token`' }])
    const proved = token !== undefined ? await this.#acceptLinkToken(token) : await this.#acceptCode(context, email ?? '', code ?? '')
    return await this.#accountFor(context, proved)
  }

  /** The address a link signs in, while it is unspent: for the page that asks to confirm. */
  async linkAddress (token: string): Promise<string> {
    this.#assertEnabled()
    const email = await this.deps.emailSignIns.linkFor(hashToken(token), new Date(this.#now()).toISOString())
    if (email === undefined) throw new Errors.INVALID_ONE_TIME_TOKEN()
    return email
  }

  /**
   * The person confirmed the link on the service's page (a form of that page: a post from
   * another site, which would sign the browser into the account whose link it holds, is
   * refused): the browser goes to the application with a one-time token it exchanges within a
   * minute. The message signs in once, by that token or its code, whichever comes first.
   */
  async confirmLink (
    token: string, from: { origin: string | undefined, fetchSite: string | undefined }
  ): Promise<string> {
    this.#assertEnabled()
    // A browser that hides the origin (`null`) still says where the post came from in Sec-Fetch-Site.
    const ownOrigin = from.origin === undefined || from.origin === new URL(this.deps.publicUrl).origin ||
      (from.origin === 'null' && from.fetchSite === 'same-origin')
    if (!ownOrigin || (from.fetchSite !== undefined && from.fetchSite !== 'same-origin')) {
      throw new Errors.FORBIDDEN('the confirmation page of the service')
    }
    const exchange = newOneTimeToken()
    const now = new Date(this.#now()).toISOString()
    const confirmed = await this.deps.emailSignIns.confirmLink(hashToken(token), exchange.hash, now)
    if (confirmed?.redirectTo == null) throw new Errors.INVALID_ONE_TIME_TOKEN()
    const back = new URL(confirmed.redirectTo)
    back.searchParams.set('token', exchange.token)
    return back.href
  }

  /** Spends the token a confirmed link handed the application: what it proves. */
  async #acceptLinkToken (token: string): Promise<ProvedEmail> {
    this.#assertEnabled()
    const now = this.#now()
    const proved = await this.deps.emailSignIns.spendConfirmed(
      hashToken(token), new Date(now).toISOString(), new Date(now - CONFIRMED_TTL_MS).toISOString()
    )
    if (proved === undefined) throw new Errors.INVALID_ONE_TIME_TOKEN()
    return proved
  }

  /**
   * The account a proved address signs in: the one that has it now, or a new one where
   * EMAIL_SIGN_IN=on. Proving the address claims the account (AccountClaims): what was attached
   * before, the password included (this proof came with none), is removed. An account claimed
   * under another address that changed to this one without proving it is refused (409).
   */
  async #accountFor (context: RequestContext, { email, userId }: ProvedEmail): Promise<string> {
    const { users, claims, audit, ssoRequired } = this.deps
    // The domain may have come to require its IdP since the message was sent.
    if (await ssoRequired(email)) throw new Errors.SSO_REQUIRED()
    const holder = await users.findByEmail(email)
    if (holder === undefined) {
      if (userId !== null || this.deps.mode !== 'on') throw new Errors.INVALID_ONE_TIME_TOKEN()
      const created = await audit.recordChange(context, async (trx) => await users.create({
        email, name: displayName({ name: null }, email), passwordHash: null, roles: ['user'], emailVerified: true
      }, trx).catch(rethrowServiceError), (user) => [
        { event: 'user.created', outcome: 'success', actorId: user.id, targetId: user.id, details: { method: 'email_sign_in' } }
      ])
      return created.id
    }
    // An account that holds the address unproved after changing to it (it was claimed under
    // another) is not the mailbox's to enter: the provider sign-in refuses it alike.
    if ((await users.findPrincipal(holder.id))?.claimed === true && !holder.email_verified) {
      throw new Errors.EMAIL_ALREADY_REGISTERED()
    }
    const proved = await audit.recordChange(context,
      async (trx) => await claims.prove(holder.id, email, { removePassword: true }, trx),
      (proved): AuditChange[] => proved?.released === null || proved === undefined
        ? []
        : [{ event: 'email.verified', outcome: 'success', actorId: holder.id, targetId: holder.id, details: { method: 'email_sign_in' } }, ...proved.entries])
    if (proved === undefined) throw new Errors.INVALID_ONE_TIME_TOKEN()
    claims.deliver()
    await proved.revokeAccess()
    return holder.id
  }

  #codeHash (email: string, code: string): string {
    return createHmac('sha256', this.#key).update(`${email}:${code}`).digest('hex')
  }
}
