/**
 * A real SAML identity provider on 127.0.0.1: SimpleSAMLphp 1.19 from Debian (packages
 * simplesamlphp and php8.2-xml), served by `php -S`, configured by test/saml-idp/ (a fixed entity
 * ID, static users: alice / alice-pass), with a fresh key pair in a temporary home. And a browser
 * stand-in to sign in through its pages: manual redirects, one cookie jar, 127.0.0.1 only.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { freePort } from '../../../bench/free-port.js'
import type { TestContext } from '../context.js'
import { signingKeyPair } from './saml-identity-provider.js'

export const SIMPLESAMLPHP = '/usr/share/simplesamlphp'
const CONFIG_DIR = fileURLToPath(new URL('../../saml-idp/config', import.meta.url))
/** The entity ID test/saml-idp/metadata/saml20-idp-hosted.php gives the IdP. */
const ENTITY_ID = 'urn:test:idp'
const START_WITHIN_MS = 10_000

/** The IdP before it runs: its address and signing certificate, known before the SP it trusts is. */
export interface PlannedIdp {
  url: string
  entityId: string
  /** Its SingleSignOnService (HTTP-Redirect). */
  ssoUrl: string
  /** PEM. */
  certificate: string
  /** Starts `php -S`, the IdP trusting the one SP given; answers once its metadata does. */
  start: (options: SimpleSamlPhpOptions) => Promise<SimpleSamlPhp>
}

export interface SimpleSamlPhpOptions {
  /** The SP's entity ID (the key of its entry in saml20-sp-remote.php). */
  spEntityId: string
  /** Where the IdP posts its responses to that SP. */
  acsUrl: string
  /** alice's address is alice@<userDomain>. */
  userDomain: string
}

export interface SimpleSamlPhp extends Omit<PlannedIdp, 'start'> {
  /** The IdP's metadata, as served at /saml2/idp/metadata.php. */
  metadata: string
  /** What php -S wrote: its access log and SimpleSAMLphp's own (where the real errors are). */
  log: () => string
}

/**
 * Plans a SimpleSAMLphp IdP: a free port, a temporary home with a fresh RSA key and certificate
 * (openssl). The SP's entity ID and ACS are fixed when php starts (environment variables), and
 * a connection is made knowing the IdP's address and certificate: hence two steps, plan then start.
 * At teardown the php process is killed by its PID and the home removed. Fails, never skips,
 * when SimpleSAMLphp or PHP's DOM extension is missing.
 */
export async function planSimpleSamlPhp (t: TestContext): Promise<PlannedIdp> {
  requireInstalled()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const home = await mkdtemp(join(tmpdir(), 'saml-idp-'))
  let php: ChildProcess | null = null
  let exited: Promise<unknown> = Promise.resolve()
  t.teardown(async () => {
    if (php !== null && php.exitCode === null && php.signalCode === null) {
      php.kill('SIGTERM')
      await exited
    }
    await rm(home, { recursive: true, force: true })
  })
  for (const dir of ['cert', 'tmp', 'sessions']) await mkdir(join(home, dir))
  const keys = signingKeyPair()
  await writeFile(join(home, 'cert/idp.key'), keys.key)
  await writeFile(join(home, 'cert/idp.crt'), keys.certificate)
  const planned = {
    url, entityId: ENTITY_ID, ssoUrl: `${url}/saml2/idp/SSOService.php`, certificate: keys.certificate
  }

  const start = async ({ spEntityId, acsUrl, userDomain }: SimpleSamlPhpOptions): Promise<SimpleSamlPhp> => {
    if (php !== null) throw new Error('the IdP is started already')
    const child = spawn('php', ['-S', `127.0.0.1:${port}`, '-t', join(SIMPLESAMLPHP, 'www')], {
      env: {
        ...process.env,
        SIMPLESAMLPHP_CONFIG_DIR: CONFIG_DIR,
        IDP_HOME: home,
        IDP_PORT: String(port),
        SP_ENTITY_ID: spEntityId,
        SP_ACS_URL: acsUrl,
        IDP_USER_DOMAIN: userDomain
      },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    php = child
    exited = new Promise((resolve) => child.once('exit', resolve))
    let output = ''
    const keep = (chunk: Buffer) => { output += chunk.toString() }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const log = () => output

    // Polled only while php comes up; it ends early when php does (a port taken meanwhile, say).
    const deadline = Date.now() + START_WITHIN_MS
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`php -S stopped before the IdP answered:\n${log()}`)
      const answer = await fetch(`${url}/saml2/idp/metadata.php`).catch(() => null)
      if (answer?.status === 200) return { ...planned, metadata: await answer.text(), log }
      if (answer !== null) throw new Error(`the IdP's metadata answered ${answer.status}: ${await answer.text()}\n${log()}`)
      if (Date.now() > deadline) throw new Error(`the IdP did not answer within ${START_WITHIN_MS} ms:\n${log()}`)
      await Promise.race([delay(50), exited])
    }
  }
  return { ...planned, start }
}

const PACKAGES = ['simplesamlphp', 'php8.2-xml']

/** Whether SimpleSAMLphp is there, with PHP's DOM extension (without it every sign-in fails, said only in its log). */
function installed (): boolean {
  if (!existsSync(join(SIMPLESAMLPHP, 'www'))) return false
  try {
    execFileSync('php', ['-r', 'exit(class_exists("DOMDocument") ? 0 : 1);'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/**
 * SimpleSAMLphp from Debian, installed when missing (as .ci/run does; about 2 minutes), so that
 * `npm test` needs nothing installed by hand; a host where that cannot be done (not root, no
 * package mirror) fails the test, saying what to install.
 */
function requireInstalled (): void {
  if (installed()) return
  const install = `install it: apt-get install ${PACKAGES.join(' ')}`
  if (process.getuid?.() !== 0) throw new Error(`SimpleSAMLphp is not installed (no ${SIMPLESAMLPHP}); ${install}`)
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 180_000 })
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...PACKAGES], { stdio: 'ignore', env, timeout: 300_000 })
  } catch (error) {
    throw new Error(`SimpleSAMLphp could not be installed from Debian (${String(error)}); ${install}`)
  }
  if (!installed()) throw new Error(`SimpleSAMLphp is still missing after its install; ${install}`)
}

/** A page the browser ended on, after the redirects. */
export interface Page { url: string, status: number, html: string }

/**
 * A browser stand-in for the IdP's pages: follows redirects itself, keeps the cookies of the one
 * host it talks to (SimpleSAMLphp's session is in them), and refuses any address but 127.0.0.1
 * (the redirect back to the service, say: the test hands the auto-posting form to the ACS itself).
 */
export function browser (): (url: string, form?: Record<string, string>) => Promise<Page> {
  const jar = new Map<string, string>()
  const go = async (url: string, form?: Record<string, string>, redirects = 0): Promise<Page> => {
    if (new URL(url).hostname !== '127.0.0.1') throw new Error(`the browser stand-in goes to 127.0.0.1 only, not ${url}`)
    const response = await fetch(url, {
      redirect: 'manual',
      ...(form !== undefined && { method: 'POST', body: new URLSearchParams(form) }),
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') }
    })
    for (const cookie of response.headers.getSetCookie()) {
      const pair = cookie.split(';')[0] ?? ''
      const at = pair.indexOf('=')
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim())
    }
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel()
      if (redirects >= 10) throw new Error(`too many redirects, the last to ${location}`)
      return await go(new URL(location, url).href, undefined, redirects + 1)
    }
    return { url, status: response.status, html: await response.text() }
  }
  return async (url, form) => await go(url, form)
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'', '#039': '\'', '#39': '\'' }
const unescaped = (value: string) => value.replace(/&(amp|lt|gt|quot|apos|#0?39);/g, (entity, name: string) => ENTITIES[name] ?? entity)

function attributesOf (tag: string): Record<string, string> {
  const attributes: Record<string, string> = {}
  for (const [, name = '', value = ''] of tag.matchAll(/([\w:-]+)\s*=\s*"([^"]*)"/g)) attributes[name.toLowerCase()] = unescaped(value)
  return attributes
}

/** The value of the input `name` in a page (SimpleSAMLphp's forms carry hidden ones); undefined when none. */
export function formField (html: string, name: string): string | undefined {
  for (const [tag] of html.matchAll(/<input\b[^>]*>/gi)) {
    const attributes = attributesOf(tag)
    if (attributes.name === name) return attributes.value ?? ''
  }
  return undefined
}

/** The action of the first form in a page; undefined when there is none. */
export function formAction (html: string): string | undefined {
  const tag = /<form\b[^>]*>/i.exec(html)?.[0]
  return tag === undefined ? undefined : attributesOf(tag).action
}
