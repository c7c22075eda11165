import type { OutgoingMessage } from '../../store/outbox.js'

/** What a security notice tells the account holder happened. */
export type NoticeKind = 'password_changed' | 'password_reset' | 'email_changed' | 'phone_changed' | 'mfa_enabled' | 'mfa_disabled' | 'backup_codes_replaced' |
  'passkey_added' | 'passkey_removed' | 'passkey_renamed' | 'identity_unlinked' | 'account_claimed' | 'account_deleted' |
  'organization_role_changed' | 'organization_membership_removed' | 'webhook_disabled' | 'impersonated' |
  'account_deletion_scheduled' | 'api_key_created'

/**
 * Notices of what others did in an organization, or of what the service did: no sign of an
 * attack on the account, so no advice to reset its password.
 */
const NOTICES_WITHOUT_ADVICE: ReadonlySet<NoticeKind> = new Set(['organization_role_changed', 'organization_membership_removed', 'webhook_disabled', 'impersonated'])

const NOTICES: Record<NoticeKind, string> = {
  password_changed: 'The password of your account was changed',
  password_reset: 'The password of your account was reset',
  email_changed: 'The e-mail address of your account was changed',
  phone_changed: 'The phone number of your account was changed',
  mfa_enabled: 'Two-factor authentication was enabled on your account',
  mfa_disabled: 'Two-factor authentication was disabled on your account',
  backup_codes_replaced: 'New backup codes were made for your account; the old ones no longer work',
  passkey_added: 'A passkey was added to your account',
  passkey_removed: 'A passkey was removed from your account',
  passkey_renamed: 'A passkey of your account was renamed',
  identity_unlinked: 'A sign-in provider was unlinked from your account',
  account_claimed: 'Your e-mail address was confirmed for your account',
  account_deleted: 'Your account was deleted',
  organization_role_changed: 'Your role in an organization was changed',
  organization_membership_removed: 'You were removed from an organization',
  webhook_disabled: 'A webhook endpoint you created was disabled: its deliveries kept failing for a day',
  impersonated: 'An administrator used your account as you, with your permissions',
  account_deletion_scheduled: 'Your account is to be deleted, as you asked',
  api_key_created: 'An API key was made for your account'
}

function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
}

/**
 * A name others chose (an organization's), as a message quotes it: in quotation marks, and with
 * a zero-width space after each `.`, `:`, `/` and `@`, so that no mail client makes a link or an
 * address of it (`restore it at https://evil.example/login` stays text).
 */
export function quotedName (name: string): string {
  return `“${name.replace(/[.:/@]/g, '$&\u200b')}”`
}

function page (paragraphs: string[]): string {
  return `<!doctype html><html><body>${paragraphs.map((paragraph) => `<p>${paragraph}</p>`).join('')}</body></html>`
}

/**
 * Every message the service sends, in one place: plain text and HTML bodies, with links to
 * the application (APP_URL) when set, and the bare token always (for clients without pages).
 */
export class MessageTemplates {
  constructor (private readonly options: { appUrl: string | null, productName: string }) {}

  emailVerification (to: string, token: string, validHours: number): OutgoingMessage {
    return this.#withToken(to, `Verify your e-mail address for ${this.options.productName}`, 'verify-email', token,
      `Confirm that this address is yours. The link is good for ${validHours} hours.`)
  }

  passwordReset (to: string, token: string, validMinutes: number): OutgoingMessage {
    return this.#withToken(to, `Reset your ${this.options.productName} password`, 'reset-password', token,
      `Someone asked to reset the password of the account with this address. If it was you, choose a new password within ${validMinutes} minutes; if not, ignore this message.`)
  }

  /**
   * An invitation to join an organization, with the role it gives. The organization's name is
   * its members' words, not the service's: never in the subject, quoted as data in the body
   * (docs/security.md, "Organization access").
   */
  organizationInvitation (
    to: string, organization: string, role: string, token: string, validDays: number
  ): OutgoingMessage {
    const { productName } = this.options
    return this.#withToken(to, `An invitation to an organization on ${productName}`, 'accept-invitation', token,
      `You are invited to join an organization on ${productName} as ${role === 'admin' ? 'an' : 'a'} ${role}. ` +
      `Its name, as its members wrote it: ${quotedName(organization)}. ${productName} does not check what the name says. ` +
      `Sign in with this address to accept; the invitation is good for ${validDays} days, once.`)
  }

  /** A security notice; `detail` says more of what happened (what a claim removed). */
  notice (to: string, kind: NoticeKind, detail?: string): OutgoingMessage {
    const what = NOTICES[kind]
    const advice = NOTICES_WITHOUT_ADVICE.has(kind) ? [] : ['If this was not you, reset your password and contact your administrator.']
    const paragraphs = [`${what}.`, ...(detail === undefined ? [] : [detail]), ...advice]
    return { channel: 'email', recipient: to, subject: what, text: `${paragraphs.join('\n\n')}\n`, html: page(paragraphs.map(escapeHtml)) }
  }

  /**
   * A sign-in by e-mail: its code, and its link to the service's page that asks to confirm
   * (docs/api.md, "Signing in by e-mail"); either signs in, once.
   */
  emailSignIn (to: string, code: string, link: string | null, validMinutes: number): OutgoingMessage {
    const { productName } = this.options
    const intro = link === null
      ? `Your ${productName} sign-in code is ${code}. It is good for ${validMinutes} minutes, once.`
      : `Your ${productName} sign-in code is ${code}. Or sign in with the link below. Either is good for ${validMinutes} minutes, once.`
    const warning = 'If you did not ask to sign in, ignore this message: nobody can sign in without it.'
    return {
      channel: 'email',
      recipient: to,
      subject: `Your ${productName} sign-in code: ${code}`,
      text: [intro, ...(link === null ? [] : ['', link]), '', warning, ''].join('\n'),
      html: page([
        escapeHtml(intro), ...(link === null ? [] : [`<a href="${escapeHtml(link)}">Sign in to ${escapeHtml(productName)}</a>`]), escapeHtml(warning)
      ])
    }
  }

  signInCode (channel: 'email' | 'sms', to: string, code: string, validMinutes: number): OutgoingMessage {
    return this.#code(channel, to, code, validMinutes, 'sign-in code', '')
  }

  /** A code that confirms a change to how the account signs in (a step-up). */
  confirmationCode (channel: 'email' | 'sms', to: string, code: string, validMinutes: number): OutgoingMessage {
    return this.#code(channel, to, code, validMinutes, 'confirmation code', ' It confirms a change to how your account signs in; if you did not ask for it, reset your password.')
  }

  #code (channel: 'email' | 'sms', to: string, code: string, validMinutes: number, what: string, warning: string): OutgoingMessage {
    const text = `Your ${this.options.productName} ${what} is ${code}. It is good for ${validMinutes} minutes, once.${warning}`
    return { channel, recipient: to, subject: `Your ${this.options.productName} ${what}`, text, html: channel === 'email' ? page([escapeHtml(text)]) : null }
  }

  #withToken (to: string, subject: string, path: string, token: string, intro: string): OutgoingMessage {
    const link = this.options.appUrl === null ? null : `${this.options.appUrl}/${path}?token=${token}`
    const text = [intro, ...(link === null ? [] : ['', link]), '', `Token: ${token}`, ''].join('\n')
    const html = page([
      escapeHtml(intro),
      ...(link === null ? [] : [`<a href="${escapeHtml(link)}">${escapeHtml(link)}</a>`]),
      `Token: <code>${escapeHtml(token)}</code>`
    ])
    return { channel: 'email', recipient: to, subject, text, html }
  }
}
