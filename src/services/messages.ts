import type { OutgoingMessage } from '../store/outbox.js'

/** What a security notice tells the account holder happened. */
export type NoticeKind = 'password_changed' | 'password_reset' | 'email_changed' | 'mfa_enabled' | 'mfa_disabled' | 'passkey_added'

const NOTICES: Record<NoticeKind, string> = {
  password_changed: 'The password of your account was changed',
  password_reset: 'The password of your account was reset',
  email_changed: 'The e-mail address of your account was changed',
  mfa_enabled: 'Two-factor authentication was enabled on your account',
  mfa_disabled: 'Two-factor authentication was disabled on your account',
  passkey_added: 'A passkey was added to your account'
}

function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
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

  notice (to: string, kind: NoticeKind): OutgoingMessage {
    const what = NOTICES[kind]
    const advice = 'If this was not you, reset your password and contact your administrator.'
    return { channel: 'email', recipient: to, subject: what, text: `${what}.\n\n${advice}\n`, html: page([escapeHtml(`${what}.`), escapeHtml(advice)]) }
  }

  signInCode (channel: 'email' | 'sms', to: string, code: string, validMinutes: number): OutgoingMessage {
    const text = `Your ${this.options.productName} sign-in code is ${code}. It is good for ${validMinutes} minutes, once.`
    return { channel, recipient: to, subject: `Your ${this.options.productName} sign-in code`, text, html: channel === 'email' ? page([escapeHtml(text)]) : null }
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
