import QRCode from 'qrcode'
import type { SignInMethods } from '../../schemas/account-support.js'
import type { ProofMethod } from '../../schemas/proof.js'
import type { Identity } from '../../schemas/auth.js'
import type { TotpSetup } from '../../schemas/mfa.js'
import { ACCOUNT_PATH } from '../authorization-server/paths.js'
import { proofFields } from './forms.js'
import { button, escapeHtml, field, link, paragraph, postForm, table } from './pages.js'
import { say } from './strings.js'

/**
 * The account page's sign-in sections (docs/console.md): the address, the authenticator app with
 * its backup codes, the linked providers. Each form posts to a route that calls the API's own
 * service, whose rules decide (a proof where the API asks one).
 */

const CODE_ATTRIBUTES = 'required inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6"'

function heading (text: string): string {
  return `<h2>${escapeHtml(text)}</h2>`
}

export function addressSection (email: string, csrf: string): string {
  return `${heading(say('emailAddress'))}${paragraph(say('currentAddress', email))}${paragraph(say('changeAddressIntro'))}` +
    postForm(`${ACCOUNT_PATH}/email`, csrf,
      `${field('newEmail', 'email', '', 'type="email" required maxlength="254" autocomplete="email"')}${proofFields()}${button('changeAddress')}`)
}

/**
 * Proving it is you once for the next 5 minutes (`POST /auth/reauthenticate`), for the proofs
 * a form's fields cannot carry: a passkey (with the page's script), or a code sent by e-mail or
 * SMS to be entered in the form's code field. Absent where the fields hold every proof the
 * account can give (a password, an authenticator app's code).
 */
export function stepUpSection (offers: readonly ProofMethod[], csrf: string): string {
  const messages = offers.filter((offer): offer is 'email' | 'sms' => offer === 'email' || offer === 'sms')
  if (!offers.includes('passkey') && messages.length === 0) return ''
  const passkey = !offers.includes('passkey')
    ? ''
    : `<p id="step-up-needs-script">${escapeHtml(say('stepUpNeedsScript'))}</p>
<form id="step-up-form" method="post" action="${ACCOUNT_PATH}/reauthenticate" data-options="${ACCOUNT_PATH}/reauthenticate/options" hidden>
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}"><input type="hidden" name="challenge_id" value=""><input type="hidden" name="response" value="">
${button('proveWithPasskey')}<p id="step-up-problem" class="error" role="alert" hidden>${escapeHtml(say('passkeyProblem'))}</p></form>`
  const codes = messages.map((method) => postForm(`${ACCOUNT_PATH}/reauthenticate/code`, csrf,
    `<input type="hidden" name="method" value="${method}">${button(method === 'email' ? 'sendCodeByEmail' : 'sendCodeBySms', 'secondary')}`)).join('')
  return `${heading(say('proveItIsYou'))}${paragraph(say('stepUpIntro'))}${passkey}${codes}`
}

/** The authenticator app: its set-up when off; new backup codes and turning off when on. */
export function twoStepSection (methods: SignInMethods, csrf: string): string {
  if (!methods.second_factors.includes('totp')) {
    return `${heading(say('twoStep'))}${paragraph(say('totpOffIntro'))}${postForm(`${ACCOUNT_PATH}/totp/setup`, csrf, button('setUpTotp'))}`
  }
  return `${heading(say('twoStep'))}${paragraph(say('totpOn', String(methods.backup_codes_left)))}
<h3>${escapeHtml(say('newBackupCodes'))}</h3>${paragraph(say('backupCodesIntro'))}${postForm(`${ACCOUNT_PATH}/backup-codes`, csrf,
    `${field('totpCode', 'code', '', CODE_ATTRIBUTES)}${button('newBackupCodes')}`)}
<h3>${escapeHtml(say('turnOffTotp'))}</h3>${postForm(`${ACCOUNT_PATH}/totp/disable`, csrf,
    `${field('codeOrBackupCode', 'code', '', CODE_ATTRIBUTES)}${button('turnOffTotp', 'secondary')}`)}`
}

/**
 * The set-up of an authenticator app: the key as a QR code (inline SVG, drawn from the key's
 * URI: the CSP allows no image but the service's own) and as text, and the form that turns it on.
 */
export async function totpSetupBody (setup: TotpSetup, csrf: string): Promise<string> {
  const svg = await QRCode.toString(setup.otpauth_url, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 })
  const figure = svg.replace('<svg ', `<svg role="img" aria-label="${escapeHtml(say('qrCode'))}" width="200" height="200" `)
  const key = setup.secret.replace(/(.{4})/g, '$1 ').trim()
  return `${paragraph(say('totpSetupIntro'))}<figure>${figure}</figure>
<dl><dt>${escapeHtml(say('totpKey'))}</dt><dd><code>${escapeHtml(key)}</code></dd></dl>
${postForm(`${ACCOUNT_PATH}/totp/enable`, csrf, `${field('totpCode', 'code', '', CODE_ATTRIBUTES)}${proofFields()}${button('turnOnTotp')}`)}`
}

/** Backup codes, shown once (the page is not cached). */
export function backupCodesBody (codes: string[]): string {
  return `${paragraph(say('backupCodesShownOnce'), 'notice')}<ul>${codes.map((code) => `<li><code>${escapeHtml(code)}</code></li>`).join('')}</ul>
<p>${link(ACCOUNT_PATH, 'backToAccount')}</p>`
}

/** The linked providers, and unlinking one with a proof. */
export function identitiesSection (identities: Identity[], csrf: string): string {
  if (identities.length === 0) return `${heading(say('linkedIdentities'))}${paragraph(say('noIdentities'))}`
  const rows = identities.map((identity) => [escapeHtml(identity.provider), escapeHtml(identity.created_at)])
  const options = identities.map((identity) => `<option value="${escapeHtml(identity.id)}">${escapeHtml(`${identity.provider} (${identity.created_at})`)}</option>`).join('')
  return `${heading(say('linkedIdentities'))}${table(say('linkedIdentities'), ['provider', 'linked'], rows)}${paragraph(say('unlinkIntro'))}` +
    postForm(`${ACCOUNT_PATH}/identities/unlink`, csrf,
      `<label>${escapeHtml(say('identityToUnlink'))} <select name="identity" required>${options}</select></label>${proofFields()}${button('unlink')}`)
}
