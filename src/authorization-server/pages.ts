import { createHash } from 'node:crypto'

/**
 * The authorization server's pages (docs/api.md, "Authorization server"): plain HTML forms, no
 * inline script or style, so that the pages' CSP can forbid both; every value is escaped. Only
 * the sign-in page loads a script, the service's own, for passkeys; without it the page works.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] ?? character)
}

/**
 * The pages' CSP: nothing but the service's own stylesheet, no script at all, no framing.
 * `form-action` is not restricted: a form's answer redirects to the application's address,
 * which browsers check against it.
 */
export const PAGE_CSP = "default-src 'none';style-src 'self';img-src 'self';frame-ancestors 'none';base-uri 'none'"

/**
 * The CSP of a page oidc-provider wrote: the pages' own, and its one inline script, if any (the
 * self-submitting form of response_mode=form_post), allowed by its hash alone.
 */
export function providerPageCsp (html: string): string {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)]
    .map(([, script = '']) => `'sha256-${createHash('sha256').update(script).digest('base64')}'`)
  return hashes.length === 0 ? PAGE_CSP : `${PAGE_CSP};script-src ${hashes.join(' ')}`
}

/** The sign-in page's: the service's own scripts (the passkey button), and requests to it (the passkey options). */
export const SIGN_IN_PAGE_CSP = `${PAGE_CSP};script-src 'self';connect-src 'self'`

/**
 * The sign-in page's script: the passkey button, shown when the browser has WebAuthn. It asks
 * the API for a challenge, lets the authenticator answer it through @simplewebauthn/browser
 * (served beside it), and posts the answer with the page's form.
 */
export const PAGE_SCRIPT = `'use strict'
const form = document.getElementById('passkey-form')
const button = document.getElementById('passkey-button')
const problem = document.getElementById('passkey-error')
if (form !== null && button !== null && window.PublicKeyCredential !== undefined) {
  button.hidden = false
  button.addEventListener('click', async () => {
    problem.hidden = true
    try {
      const answer = await fetch(form.dataset.options, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      if (!answer.ok) throw new Error('no challenge')
      const { data } = await answer.json()
      const response = await SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: data.options })
      form.elements.response.value = JSON.stringify({ challenge_id: data.challenge_id, response })
      form.submit()
    } catch {
      problem.hidden = false
    }
  })
}
`
/** The pages' stylesheet, served by the service (`style-src 'self'`). */
export const PAGE_STYLESHEET = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
label{display:block;margin:.75rem 0}input{display:block;width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button{padding:.5rem 1rem;font-size:1rem;margin:.75rem .5rem 0 0}.error{color:#a00}ul{padding-left:1.25rem}
fieldset{margin:.75rem 0}input[type=radio]{display:inline;width:auto;margin-right:.5rem}`

/** Where a page finds the service's assets. */
export interface PageAssets { stylesheet: string, scripts?: string[] }

/** A whole page: its title, and its body, already HTML. */
export function page (title: string, body: string, { stylesheet, scripts = [] }: PageAssets): string {
  const scriptTags = scripts.map((src) => `<script src="${escapeHtml(src)}" defer></script>`).join('')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="stylesheet" href="${escapeHtml(stylesheet)}">${scriptTags}</head>
<body><main><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>`
}

function errorLine (error: string | null): string {
  return error === null ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`
}

function hidden (name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}

export interface FormPage {
  /** Where the forms post to: the interaction's address. */
  action: string
  /** The interaction's anti-forgery token. */
  csrf: string
  /** The application asking, by its registered name. */
  clientName: string
  error: string | null
}

/**
 * The sign-in form, and the passkey form the page's script fills and posts (with its button
 * hidden until the script finds WebAuthn). `passkeyOptions`: where the script asks for a challenge.
 */
/** A provider the sign-in page offers: its name as shown, and where its sign-in starts. */
export interface ProviderLink { name: string, href: string }

export function signInForm (
  { action, csrf, clientName, error }: FormPage,
  email: string,
  passkeyOptions: string,
  providers: ProviderLink[],
  emailSignIn: boolean
): string {
  const links = providers.length === 0
    ? ''
    : `<ul class="providers">${providers.map(({ name, href }) => `<li><a href="${escapeHtml(href)}">Continue with ${escapeHtml(name)}</a></li>`).join('')}</ul>\n`
  return `<p>Sign in to continue to <strong>${escapeHtml(clientName)}</strong>.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/login">
${hidden('csrf', csrf)}
<label>E-mail <input type="email" name="email" autocomplete="username" required value="${escapeHtml(email)}" autofocus></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
<button type="submit" formaction="${escapeHtml(action)}/sso" formnovalidate>Continue with single sign-on</button>
${emailSignIn ? `<button type="submit" formaction="${escapeHtml(action)}/email-code" formnovalidate>E-mail me a sign-in code</button>\n` : ''}</form>
<form id="passkey-form" method="post" action="${escapeHtml(action)}/passkey" data-options="${escapeHtml(passkeyOptions)}">
${hidden('csrf', csrf)}${hidden('response', '')}
<button type="button" id="passkey-button" hidden>Sign in with a passkey</button>
<p id="passkey-error" class="error" role="alert" hidden>The passkey did not sign you in. Try again, or use your password.</p>
</form>
${links}<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Cancel</button></form>`
}

/**
 * The page after a sign-in code was sent by e-mail: the code, for the address it was sent to; the
 * message's link, opened in this browser, comes back here too.
 */
export function emailCodeForm ({ action, csrf, clientName, error }: FormPage, email: string): string {
  return `<p>If <strong>${escapeHtml(email)}</strong> may sign in, a message with a code and a link is on its way. Enter the code, or open the link in this browser, to continue to <strong>${escapeHtml(clientName)}</strong>.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/email">
${hidden('csrf', csrf)}${hidden('email', email)}
<label>Code <input name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus></label>
<button type="submit">Continue</button>
</form>
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Cancel</button></form>`
}

/** The second factors a challenge offers (`MfaChallenge['methods']`), as the MFA page names them. */
const FACTOR_NAMES: Record<string, string> = {
  totp: 'the code from your authenticator app', backup_code: 'a backup code', email: 'a code sent by e-mail', sms: 'a code sent by SMS'
}

/**
 * The second-factor page: a code for the challenge `mfaToken`, and for each factor sent by message
 * a button that sends one. `sent` says a code just went out. An account whose only second factor
 * is a passkey is told to sign in with it.
 */
export function mfaForm (
  { action, csrf, clientName, error }: FormPage,
  challenge: { mfaToken: string, methods: string[] },
  sent: string | null = null
): string {
  const { mfaToken, methods } = challenge
  const carried = `${hidden('csrf', csrf)}${hidden('mfa_token', mfaToken)}${hidden('methods', methods.join(','))}`
  const ways = methods.flatMap((method) => FACTOR_NAMES[method] ?? [])
  const intro = ways.length === 0
    ? '<p>This account signs in with a passkey as its second step: go back and sign in with the passkey.</p>'
    : `<p>Enter ${escapeHtml(ways.join(', or '))} to continue to <strong>${escapeHtml(clientName)}</strong>.</p>`
  const senders = methods.filter((method) => method === 'email' || method === 'sms').map((method) => `<form method="post" action="${escapeHtml(action)}/mfa/code">
${carried}${hidden('method', method)}<button type="submit">Send a code by ${method === 'email' ? 'e-mail' : 'SMS'}</button>
</form>`).join('\n')
  return `${intro}
${errorLine(error)}${sent === null ? '' : `<p role="status">${escapeHtml(sent)}</p>`}
<form method="post" action="${escapeHtml(action)}/mfa">
${carried}
<label>Code <input name="code" autocomplete="one-time-code" required autofocus></label>
<button type="submit">Continue</button>
</form>
${senders}
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Cancel</button></form>`
}

/** What each scope lets the application see or do, as the consent page says it. */
const SCOPE_DESCRIPTIONS: Record<string, string> = {
  openid: 'Know who you are (your account id)',
  profile: 'See your name',
  email: 'See your e-mail address and whether it is verified',
  offline_access: 'Stay signed in when you are away (a refresh token)',
  organization: 'Know which organization you chose, and your role in it'
}

export function consentForm (
  { action, csrf, clientName, error }: FormPage,
  scopes: string[],
  organizations: Array<{ id: string, name: string }> = []
): string {
  const items = scopes.map((scope) => `<li>${escapeHtml(SCOPE_DESCRIPTIONS[scope] ?? scope)}</li>`).join('')
  // The `organization` scope: the application's tokens speak for the one organization chosen here.
  const choice = organizations.length === 0
    ? ''
    : `<fieldset><legend>For which organization?</legend>
${organizations.map(({ id, name }, index) => `<label><input type="radio" name="organization" value="${escapeHtml(id)}" required${index === 0 ? ' checked' : ''}> ${escapeHtml(name)}</label>`).join('\n')}
</fieldset>`
  return `<p><strong>${escapeHtml(clientName)}</strong> asks to:</p>
<ul>${items}</ul>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/consent">${hidden('csrf', csrf)}${choice}<button type="submit">Allow</button></form>
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Deny</button></form>`
}

/**
 * A form oidc-provider hands a page of its own to render (device code, sign-out): where it posts
 * and its hidden fields (the anti-forgery token), so that the page builds its own form around
 * them, with its labels and buttons inside it and no inline handler.
 */
/** A form of oidc-provider's, read: where it posts, its hidden fields, and a device code it was filled with. */
export interface ProviderForm { action: string, fields: Record<string, string>, userCode: string }

export function providerForm (html: string): ProviderForm {
  const action = /<form[^>]*\saction="([^"]*)"/.exec(html)?.[1] ?? ''
  const fields = [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)]
    .map(([, name = '', value = '']) => [name, unescapeHtml(value)])
  // The device page's code field, filled when the address carried the code.
  const codeField = /<input[^>]*name="user_code"[^>]*>/.exec(html)?.[0] ?? ''
  const userCode = /\svalue="([^"]*)"/.exec(codeField)?.[1] ?? ''
  return { action, fields: Object.fromEntries(fields), userCode: unescapeHtml(userCode) }
}

function unescapeHtml (text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => ({ '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" })[entity] ?? entity)
}

function formOf (form: ProviderForm, body: string): string {
  const fields = Object.entries(form.fields).map(([name, value]) => hidden(name, value)).join('')
  return `<form method="post" action="${escapeHtml(form.action)}">${fields}
${body}
</form>`
}

/** The device page: the code the device shows, typed in (`error`: the last one was wrong). */
export function deviceCodeForm (form: ProviderForm, error: boolean): string {
  return `${error ? errorLine('That code is not right, or no longer valid. Try again.') : '<p>Enter the code your device shows.</p>'}
${formOf(form, `<label>Code <input name="user_code" value="${escapeHtml(form.userCode)}" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus></label>
<button type="submit">Continue</button>`)}`
}

/** The device page's confirmation: the application and the code, to compare with the device's. */
export function deviceConfirmForm (form: ProviderForm, clientName: string, userCode: string): string {
  return `<p>Connect <strong>${escapeHtml(clientName)}</strong> with the code <code>${escapeHtml(userCode)}</code>?
Continue only if your device shows this code.</p>
${formOf(form, `<button type="submit">Continue</button>
<button type="submit" name="abort" value="yes">Cancel</button>`)}`
}

/**
 * The sign-out page of RP-initiated logout: signing out ends the browser's session here. Staying
 * changes nothing here: the application's address (with its state), when it gave one, is a link.
 */
export function signOutForm (form: ProviderForm, host: string, stay: string | null): string {
  return `<p>Sign out of ${escapeHtml(host)}?</p>
${formOf(form, '<button type="submit" name="logout" value="yes">Sign out</button>')}
${stay === null ? '<p>To stay signed in, close this page.</p>' : `<p><a href="${escapeHtml(stay)}">Stay signed in</a> and go back to the application.</p>`}`
}
