/**
 * The authorization server's pages (docs/api.md, "Authorization server"): plain HTML forms,
 * no script and no inline style, so that the pages' CSP can forbid both; every value is escaped.
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

/** The pages' stylesheet, served by the service (`style-src 'self'`). */
export const PAGE_STYLESHEET = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
label{display:block;margin:.75rem 0}input{display:block;width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button{padding:.5rem 1rem;font-size:1rem;margin:.75rem .5rem 0 0}.error{color:#a00}ul{padding-left:1.25rem}`

/** A whole page: its title, and its body, already HTML. */
export function page (title: string, body: string, stylesheet: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="stylesheet" href="${escapeHtml(stylesheet)}"></head>
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

export function signInForm ({ action, csrf, clientName, error }: FormPage, email: string): string {
  return `<p>Sign in to continue to <strong>${escapeHtml(clientName)}</strong>.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/login">
${hidden('csrf', csrf)}
<label>E-mail <input type="email" name="email" autocomplete="username" required value="${escapeHtml(email)}" autofocus></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Cancel</button></form>`
}

export function mfaForm ({ action, csrf, clientName, error }: FormPage, mfaToken: string): string {
  return `<p>Enter the code from your authenticator app, or a backup code, to continue to <strong>${escapeHtml(clientName)}</strong>.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/mfa">
${hidden('csrf', csrf)}${hidden('mfa_token', mfaToken)}
<label>Code <input name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus></label>
<button type="submit">Continue</button>
</form>
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Cancel</button></form>`
}

/** What each scope lets the application see or do, as the consent page says it. */
const SCOPE_DESCRIPTIONS: Record<string, string> = {
  openid: 'Know who you are (your account id)',
  profile: 'See your name',
  email: 'See your e-mail address and whether it is verified',
  offline_access: 'Stay signed in when you are away (a refresh token)'
}

export function consentForm ({ action, csrf, clientName, error }: FormPage, scopes: string[]): string {
  const items = scopes.map((scope) => `<li>${escapeHtml(SCOPE_DESCRIPTIONS[scope] ?? scope)}</li>`).join('')
  return `<p><strong>${escapeHtml(clientName)}</strong> asks to:</p>
<ul>${items}</ul>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}/consent">${hidden('csrf', csrf)}<button type="submit">Allow</button></form>
<form method="post" action="${escapeHtml(action)}/abort">${hidden('csrf', csrf)}<button type="submit">Deny</button></form>`
}
