import type { FastifyReply } from 'fastify'
import { escapeHtml } from '../authorization-server/pages.js'
import { ACCOUNT_PATH, CONSOLE_PATH } from '../authorization-server/paths.js'
import { say, type StringKey } from './strings.js'

/**
 * The console's pages (docs/console.md): server-rendered HTML, every value escaped, no inline
 * script or style (the CSP forbids both), one layout, one table and one form style for every
 * screen. Every string comes from the string table.
 */

/** The console's CSP: the service's own stylesheet and nothing else; forms post only to the service. */
export const CONSOLE_CSP = "default-src 'none';style-src 'self';img-src 'self';form-action 'self';frame-ancestors 'none';base-uri 'none'"

/** The CSP of a page with the service's own scripts (the account page's passkeys), which call the service alone. */
export const CONSOLE_SCRIPT_CSP = `${CONSOLE_CSP};script-src 'self';connect-src 'self'`

export const CONSOLE_STYLESHEET_PATH = `${CONSOLE_PATH}/console.css`
export const ACCOUNT_SCRIPT_PATH = `${CONSOLE_PATH}/account.js`

/**
 * The account page's script: adding a passkey, and proving it is you with one, shown only where
 * the browser has WebAuthn. Each asks the console for options (the form's token in a header),
 * lets the authenticator answer through @simplewebauthn/browser (served by the authorization
 * server), and posts the answer with the form (whose proof fields the person filled, for adding).
 */
export const ACCOUNT_SCRIPT = `'use strict'
const form = document.getElementById('passkey-form')
const problem = document.getElementById('passkey-problem')
if (form !== null && window.PublicKeyCredential !== undefined) {
  form.hidden = false
  document.getElementById('passkey-needs-script').hidden = true
  form.addEventListener('submit', async (event) => {
    if (form.elements.response.value !== '') return
    event.preventDefault()
    problem.hidden = true
    try {
      const answer = await fetch(form.dataset.options, { method: 'POST', headers: { 'x-csrf-token': form.elements._csrf.value } })
      if (!answer.ok) throw new Error('no options')
      const { data } = await answer.json()
      const response = await SimpleWebAuthnBrowser.startRegistration({ optionsJSON: data })
      form.elements.response.value = JSON.stringify(response)
      form.submit()
    } catch {
      problem.hidden = false
    }
  })
}
const stepUp = document.getElementById('step-up-form')
if (stepUp !== null && window.PublicKeyCredential !== undefined) {
  const stepUpProblem = document.getElementById('step-up-problem')
  stepUp.hidden = false
  document.getElementById('step-up-needs-script').hidden = true
  stepUp.addEventListener('submit', async (event) => {
    if (stepUp.elements.response.value !== '') return
    event.preventDefault()
    stepUpProblem.hidden = true
    try {
      const answer = await fetch(stepUp.dataset.options, { method: 'POST', headers: { 'x-csrf-token': stepUp.elements._csrf.value } })
      if (!answer.ok) throw new Error('no options')
      const { data } = await answer.json()
      const response = await SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: data.options })
      stepUp.elements.challenge_id.value = data.challenge_id
      stepUp.elements.response.value = JSON.stringify(response)
      stepUp.submit()
    } catch {
      stepUpProblem.hidden = false
    }
  })
}
`

/** One visual language: the layout, the tables, the forms and the notices; contrast at least 4.5:1. */
export const CONSOLE_STYLESHEET = `*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.5}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:1}
header{display:flex;align-items:center;gap:1.5rem;padding:.75rem 1.5rem;background:#1f3a5f;color:#fff}
header a{color:#fff}header .acting{padding:.25rem .5rem;background:#fff;color:#7a3d00;font-weight:600}header nav{flex:1}header nav a{margin-right:1rem}header form{margin:0}
main{max-width:64rem;margin:1.5rem auto;padding:0 1.5rem}
a{color:#0b57d0}a:focus,button:focus,input:focus{outline:3px solid #f0b400;outline-offset:2px}
table{border-collapse:collapse;width:100%;margin:1rem 0}th,td{text-align:left;padding:.5rem;border-bottom:1px solid #c4c4c4}
th{background:#eef2f7}
form.inline{display:flex;gap:.5rem;align-items:flex-end;flex-wrap:wrap}
label{display:block;margin:.5rem 0}input,select{display:block;padding:.4rem;font-size:1rem;border:1px solid #6b6b6b;min-width:16rem}
button{padding:.45rem 1rem;font-size:1rem;border:1px solid #1f3a5f;background:#1f3a5f;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1f3a5f}
.notice{padding:.75rem;border-left:4px solid #1f7a3a;background:#eef7f0}.error{padding:.75rem;border-left:4px solid #a00;background:#fbeeee}
textarea{display:block;width:100%;max-width:40rem;font:inherit;padding:.4rem;border:1px solid #6b6b6b}
label.choice{display:flex;gap:.5rem;align-items:center}label.choice input{min-width:0}fieldset{border:1px solid #c4c4c4;margin:.75rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}
`

/** Who is signed in, and the form token of the page's forms. */
export interface Viewer {
  name: string
  email: string
  /** The console's screens the viewer's permissions open (the routes check them again). */
  screens: Record<Screen, boolean>
  csrf: string
  /** An operator acting as this person (an impersonation): the header says so and ends it. */
  acting: boolean
}

/** The console's screens, in the order the header lists them, with their titles. */
const SCREENS = { overview: 'overview', users: 'users', organizations: 'organizations', oauthClients: 'oauthClients', webhooks: 'webhooks', auditLog: 'auditLog' } as const
type Screen = keyof typeof SCREENS
const SCREEN_PATHS: Record<Screen, string> = {
  overview: `${CONSOLE_PATH}/overview`,
  users: `${CONSOLE_PATH}/users`,
  organizations: `${CONSOLE_PATH}/organizations`,
  oauthClients: `${CONSOLE_PATH}/oauth-clients`,
  webhooks: `${CONSOLE_PATH}/webhooks`,
  auditLog: `${CONSOLE_PATH}/audit-log`
}

function hiddenToken (csrf: string): string {
  return `<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">`
}

/** A form that posts to the console with the page's token. `body` is HTML. */
export function postForm (action: string, csrf: string, body: string, className = ''): string {
  const classAttribute = className === '' ? '' : ` class="${className}"`
  return `<form method="post" action="${escapeHtml(action)}"${classAttribute}>${hiddenToken(csrf)}${body}</form>`
}

function navigation (viewer: Viewer): string {
  const screens = (Object.keys(SCREENS) as Screen[]).filter((screen) => viewer.screens[screen])
    .map((screen) => `<a href="${SCREEN_PATHS[screen]}">${escapeHtml(say(SCREENS[screen]))}</a>`)
  return [...screens, `<a href="${ACCOUNT_PATH}">${escapeHtml(say('yourAccount'))}</a>`].join('')
}

/** Who the pages are for, and how it ends: signing out, or an operator's acting as them. */
function viewerControls (viewer: Viewer): string {
  const who = viewer.name === '' ? viewer.email : viewer.name
  return viewer.acting
    ? `<span role="status" class="acting">${escapeHtml(say('actingAs', who))}</span>
${postForm(`${CONSOLE_PATH}/impersonation/end`, viewer.csrf, button('stopActing', 'secondary'))}`
    : `<span>${escapeHtml(say('signedInAs', who))}</span>
${postForm(`${CONSOLE_PATH}/sign-out`, viewer.csrf, button('signOut', 'secondary'))}`
}

/** A whole page of the console: the header (with the viewer's sign-out), the title, the body (HTML), its scripts. */
export function consolePage (title: string, body: string, viewer: Viewer | null, scripts: string[] = []): string {
  const header = viewer === null
    ? `<header><strong>${escapeHtml(say('console'))}</strong></header>`
    : `<header><strong>${escapeHtml(say('console'))}</strong><nav aria-label="${escapeHtml(say('console'))}">${navigation(viewer)}</nav>
${viewerControls(viewer)}</header>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · ${escapeHtml(say('console'))}</title><link rel="stylesheet" href="${CONSOLE_STYLESHEET_PATH}">${scripts.map((src) => `<script src="${escapeHtml(src)}" defer></script>`).join('')}</head>
<body><a class="skip" href="#main">${escapeHtml(say('skipToContent'))}</a>
${header}
<main id="main"><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>`
}

/** A paragraph of the string table, as a notice, an error or plain text. */
export function paragraph (text: string, kind: 'notice' | 'error' | 'plain' = 'plain'): string {
  if (kind === 'plain') return `<p>${escapeHtml(text)}</p>`
  return `<p class="${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${escapeHtml(text)}</p>`
}

export function link (href: string, key: StringKey): string {
  return `<a href="${escapeHtml(href)}">${escapeHtml(say(key))}</a>`
}

/** A table: its caption, column headings (string keys) and rows of cells already HTML. */
export function table (caption: string, headings: StringKey[], rows: string[][]): string {
  const head = headings.map((key) => `<th scope="col">${escapeHtml(say(key))}</th>`).join('')
  const body = rows.map((cells) => `<tr>${cells.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('\n')
  return `<table><caption class="skip">${escapeHtml(caption)}</caption><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table>`
}

/** A labelled text field. */
export function field (label: StringKey, name: string, value = '', attributes = ''): string {
  return `<label>${escapeHtml(say(label))} <input name="${escapeHtml(name)}" value="${escapeHtml(value)}"${attributes === '' ? '' : ` ${attributes}`}></label>`
}

export function button (label: StringKey, className = ''): string {
  return `<button type="submit"${className === '' ? '' : ` class="${className}"`}>${escapeHtml(say(label))}</button>`
}

/** A list screen's search form, sent to `action` as its query; its field labelled `label`. */
export function searchForm (action: string, label: StringKey, search: string): string {
  return `<form method="get" action="${escapeHtml(action)}" class="inline" role="search">${field(label, 'search', search, 'type="search" maxlength="100"')}${button('search')}</form>`
}

/** A list screen's links: to the next page while there is one, and from a later page back to the first. */
export function pageLinks (action: string, search: string, cursor: string, nextCursor: string | null): string {
  const searched: Record<string, string> = search === '' ? {} : { search }
  const next = nextCursor === null ? '' : `<p>${link(`${action}?${new URLSearchParams({ ...searched, cursor: nextCursor }).toString()}`, 'nextPage')}</p>`
  const first = cursor === '' ? '' : `<p>${link(search === '' ? action : `${action}?${new URLSearchParams(searched).toString()}`, 'firstPage')}</p>`
  return `${next}${first}`
}

/** A submit button whose accessible name says which row it acts on. */
export function rowButton (label: StringKey, describedAs: string): string {
  return `<button type="submit" class="secondary" aria-label="${escapeHtml(describedAs)}">${escapeHtml(say(label))}</button>`
}

/** A session as the pages list it: the device its sign-in named, when it began and was last used. */
interface ListedSession { id?: string, device?: unknown, created_at?: string, last_used_at?: string }

/**
 * The table of someone's sessions. The device's name (else its id) is what the signing-in client
 * sent, if anything: escaped like every value. `action` is the last cell's HTML, given the session and that name.
 */
export function sessionTable (
  sessions: ListedSession[],
  action: (session: ListedSession, device: string) => string
): string {
  const rows = sessions.map((session) => {
    const device = session.device as { name?: unknown, id?: unknown } | undefined
    const given = typeof device?.name === 'string' ? device.name : typeof device?.id === 'string' ? device.id : ''
    const name = given === '' ? say('unnamedDevice') : given
    return [escapeHtml(name), escapeHtml(session.created_at ?? ''), escapeHtml(session.last_used_at ?? ''), action(session, name)]
  })
  return table(say('sessions'), ['device', 'signedInAt', 'lastUsed', 'status'], rows)
}

/** An HTML page of the console; never cached, as it shows what the session may see. */
export function sendPage (reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html)
}

export { escapeHtml }
