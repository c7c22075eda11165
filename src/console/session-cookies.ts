import { randomBytes } from 'node:crypto'
import { type KeyMaterial, SecretBox } from '../security/secret-box.js'

/**
 * The console's cookies (docs/console.md), sealed (AES-256-GCM under a key of their own derived
 * from the sealing key ring), so that neither their tokens nor their values can be read or made
 * by the browser or anyone between:
 * - the session: the access and refresh tokens of the API session the console signed in to,
 *   and `binding`, which the forms' tokens are bound to, the same for the session's life; while
 *   its operator acts as a user, `acting`, the impersonation's access token (docs/console.md);
 * - the sign-in under way: the authorization request's `state` and PKCE verifier.
 * `__Host-`: sent only to this host over HTTPS (or loopback), from path /, set by no subdomain.
 */
export const SESSION_COOKIE = '__Host-console-session'
export const SIGN_IN_COOKIE = '__Host-console-sign-in'
export const CSRF_COOKIE = '__Host-console-csrf'

/** The cookies' attributes: `__Host-` needs Secure and path /; browsers keep Secure cookies of loopback over http. */
export const COOKIE_OPTIONS = { path: '/', httpOnly: true, secure: true, sameSite: 'lax' } as const

export interface ConsoleSession { access: string, refresh: string, binding: string, acting?: string }
/** Where a sign-in goes once done: the console, or the person's own page. */
export type Destination = 'console' | 'account'
export interface SignInUnderWay { state: string, verifier: string, to: Destination }

const PURPOSE = 'console-cookies'

function isRecordOf<Key extends string> (value: unknown, keys: Key[]): value is Record<Key, string> {
  return typeof value === 'object' && value !== null && keys.every((key) => typeof (value as Record<string, unknown>)[key] === 'string')
}

export class ConsoleCookies {
  readonly #box: SecretBox

  constructor (keys: KeyMaterial | readonly KeyMaterial[]) {
    this.#box = new SecretBox(keys, PURPOSE)
  }

  /** A new session's cookie value for its first token pair. */
  newSession (access: string, refresh: string): string {
    return this.seal({ access, refresh, binding: randomBytes(16).toString('base64url') })
  }

  newSignIn (to: Destination): { value: string, signIn: SignInUnderWay } {
    const signIn = { state: randomBytes(16).toString('base64url'), verifier: randomBytes(32).toString('base64url'), to }
    return { value: this.#box.seal(JSON.stringify(signIn)), signIn }
  }

  seal (session: ConsoleSession): string {
    return this.#box.seal(JSON.stringify(session))
  }

  session (value: string | undefined): ConsoleSession | null {
    const opened = this.#open(value)
    if (!isRecordOf(opened, ['access', 'refresh', 'binding'])) return null
    const { access, refresh, binding } = opened
    const acting = (opened as { acting?: unknown }).acting
    return { access, refresh, binding, ...(typeof acting === 'string' && { acting }) }
  }

  /** The session as its operator's own again: the impersonation is over. */
  withoutActing ({ access, refresh, binding }: ConsoleSession): string {
    return this.seal({ access, refresh, binding })
  }

  signIn (value: string | undefined): SignInUnderWay | null {
    const opened = this.#open(value)
    if (!isRecordOf(opened, ['state', 'verifier', 'to'])) return null
    return { state: opened.state, verifier: opened.verifier, to: opened.to === 'account' ? 'account' : 'console' }
  }

  #open (value: string | undefined): unknown {
    if (value === undefined || value.length > 4096) return null
    const plaintext = this.#box.open(value)
    if (plaintext === null) return null
    try {
      return JSON.parse(plaintext)
    } catch {
      return null
    }
  }
}
