import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import autocannon from 'autocannon'
import type { Report } from './algorithms.js'
import { freePort } from './free-port.js'
import {
  CONNECTIONS, cpuMicros, cpuShare, json, machine, type Measured, median, medians, perCore, ROUNDS, SECONDS, serviceEnv,
  START_FLAGS, start, stop, WARM_UP_SECONDS
} from './harness.js'

/**
 * The authorization server's token endpoint (docs/performance.md, "Authorization server"): the
 * service compiled, with JWT_ISSUER its own address (on SQLite when run alone, on each back
 * end as part of the sizing, sizing.ts), and two clients registered through the admin API.
 * Measured in ROUNDS interleaved rounds, medians:
 * - `POST /oidc/token` with `grant_type=client_credentials` (HTTP Basic), for a machine client;
 * - `POST /oidc/token` redeeming an authorization code (PKCE, HTTP Basic). Codes are single-use
 *   and live 60 s, so each round's are made just before it: one person signed in once through
 *   the pages (sign-in form, consent form), then, with that browser's cookies, each
 *   `GET /oidc/auth` (a fresh PKCE pair) answers a redirect with a new code at once.
 * Each row gives the server's CPU per request, and from it requests per second per core of the
 * server (1 s of CPU ÷ CPU per request), beside Keycloak's published sizing figure.
 */

/**
 * Keycloak's documentation, "Concepts for sizing CPU and memory resources" (High Availability
 * guide): "For each 120 client credential grants per second, 1 vCPU to the cluster".
 */
export const KEYCLOAK_GRANTS_PER_VCPU = 120

const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-passphrase-1' }
const PERSON = { email: 'person@example.com', name: 'Signing Person', password: 'bench-password-1' }
/** Never answered: the redirect is read, not followed. */
const REDIRECT_URI = 'http://127.0.0.1:9/callback'
const PERSON_SCOPE = 'openid email profile'
/** How many `GET /oidc/auth` run at once while a round's codes are made. */
const PREPARING_CONCURRENCY = 8
/** Of each round's codes, this many are made one at a time: the latency of one alone. */
const ALONE = 30

/** A code ready to redeem, with its PKCE verifier. */
interface Code { code: string, verifier: string }

/** A browser without a browser: fetch with a cookie jar, redirects by hand. */
class Browser {
  readonly #cookies = new Map<string, string>()
  constructor (private readonly base: string) {}

  async request (url: string, form?: Record<string, string>): Promise<Response> {
    const headers: Record<string, string> = { cookie: [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(new URL(url, this.base), {
      method: form === undefined ? 'GET' : 'POST',
      headers,
      body: form === undefined ? undefined : new URLSearchParams(form).toString(),
      redirect: 'manual'
    })
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';')
      const at = pair.indexOf('=')
      const value = pair.slice(at + 1)
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(cookie)) this.#cookies.delete(pair.slice(0, at))
      else this.#cookies.set(pair.slice(0, at), value)
    }
    return response
  }

  /** Follows redirects within the service; stops at a page, or at a redirect out of it. */
  async follow (url: string, form?: Record<string, string>): Promise<{ response: Response, url: string }> {
    let response = await this.request(url, form)
    let at = new URL(url, this.base).href
    while (response.status >= 300 && response.status < 400) {
      at = new URL(response.headers.get('location') ?? '', at).href
      if (!at.startsWith(`${this.base}/`)) return { response, url: at }
      await response.body?.cancel()
      response = await this.request(at)
    }
    return { response, url: at }
  }
}

function basic (id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
}

/** An authorization request of the web client, with a fresh PKCE pair. */
function authorization (base: string, clientId: string): { url: string, verifier: string } {
  const verifier = randomBytes(32).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: PERSON_SCOPE,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(12).toString('base64url')
  })
  return { url: `${base}/oidc/auth?${query.toString()}`, verifier }
}

/**
 * Signs the person in through the pages (the sign-in form, then the consent form) and answers the
 * first code; the browser then holds the session at the authorization server.
 */
async function signInThroughPages (browser: Browser, base: string, clientId: string): Promise<void> {
  let { response, url } = await browser.follow(authorization(base, clientId).url)
  for (let step = 0; step < 3 && url.includes('/oidc/interaction/'); step++) {
    const html = await response.text()
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
    const next = html.includes('name="password"')
      ? await browser.follow(`${url}/login`, { csrf, email: PERSON.email, password: PERSON.password })
      : await browser.follow(`${url}/consent`, { csrf })
    response = next.response
    url = next.url
  }
  if (!url.startsWith(`${REDIRECT_URI}?code=`)) throw new Error(`signing in through the pages ended at ${url} (${response.status})`)
}

/** One code from `GET /oidc/auth` with the signed-in browser's cookies, and how long it took in ms. */
async function oneCode (browser: Browser, base: string, clientId: string): Promise<Code & { ms: number }> {
  const request = authorization(base, clientId)
  const began = performance.now()
  const response = await browser.request(request.url)
  const ms = performance.now() - began
  await response.body?.cancel()
  const location = response.headers.get('location') ?? ''
  const code = location.startsWith(`${REDIRECT_URI}?`) ? new URL(location).searchParams.get('code') : null
  if (code === null) throw new Error(`GET /oidc/auth answered ${response.status} to ${location}, not a code: was the consent remembered?`)
  return { code, verifier: request.verifier, ms }
}

/** What making a round's codes cost: one alone (median ms), and `PREPARING_CONCURRENCY` at once. */
interface Preparation { aloneMs: number, codesPerSecond: number, cpuUs: number }

/**
 * `count` codes: the first `ALONE` one at a time, the rest `PREPARING_CONCURRENCY` at a time
 * (the server's CPU per code counted over all of them).
 */
async function prepareCodes (browser: Browser, base: string, clientId: string, count: number, pid: number | undefined) {
  const codes: Code[] = []
  const alone: number[] = []
  const cpuBefore = cpuMicros(pid)
  const began = performance.now()
  while (codes.length < Math.min(ALONE, count)) {
    const made = await oneCode(browser, base, clientId)
    alone.push(made.ms)
    codes.push(made)
  }
  const concurrentBegan = performance.now()
  const concurrentFrom = codes.length
  await Promise.all(Array.from({ length: PREPARING_CONCURRENCY }, async () => {
    while (codes.length < count) codes.push(await oneCode(browser, base, clientId))
  }))
  const seconds = (performance.now() - concurrentBegan) / 1000
  const preparation: Preparation = {
    aloneMs: median(alone),
    codesPerSecond: seconds > 0 ? (codes.length - concurrentFrom) / seconds : 0,
    cpuUs: (cpuMicros(pid) - cpuBefore) / codes.length
  }
  return { codes, preparation, seconds: (performance.now() - began) / 1000 }
}

/** One autocannon run (for `duration` seconds, or `amount` requests), every answer 200. */
async function measure (options: autocannon.Options, pid: number | undefined): Promise<Measured> {
  const cpuBefore = cpuMicros(pid)
  const result = await autocannon({ connections: CONNECTIONS, ...options })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  const total = result.requests.total
  return {
    rps: result.duration > 0 ? total / result.duration : 0,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUs: total > 0 ? (cpuMicros(pid) - cpuBefore) / total : 0
  }
}

/** Listens on `port` as the authorization server at its own address, with the bench's admin. */
export function authorizationServerEnv (port: number): Record<string, string> {
  return {
    PORT: String(port),
    JWT_ISSUER: `http://127.0.0.1:${port}`,
    AUTHORIZATION_SERVER_SCOPES: 'api:read',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password
  }
}

/** Per core of the server: client-credential grants, and sign-ins at a relying party (code made and redeemed). */
export interface AuthorizationServerCapacity { grantsPerCore: number, signInsPerCore: number }

/** The token endpoint on SQLite, alone (BENCH_ONLY=authorization-server). */
export async function benchAuthorizationServer (dir: string, report: Report): Promise<void> {
  const port = await freePort()
  const env = { ...serviceEnv(join(dir, 'authorization-server.db')), ...authorizationServerEnv(port) }
  const service = await start([...START_FLAGS, 'dist/src/server.js'], env, join(dir, 'authorization-server.log'))
  process.stdout.write(`authorization server on ${service.base}; ${machine()}\n`)
  try {
    await measureAuthorizationServer(service.base, service.child.pid, report, '')
  } finally {
    await stop(service.child)
  }
}

/**
 * The measurements on a service started with authorizationServerEnv at `base` (process `pid`);
 * `suffix` ends each row's name (the back end, say).
 */
export async function measureAuthorizationServer (
  base: string,
  pid: number | undefined,
  report: Report,
  suffix: string
): Promise<AuthorizationServerCapacity> {
  const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify(ADMIN) })
  const admin = { authorization: `Bearer ${String(login.data.access_token)}` }
  const register = async (client: Record<string, unknown>) => {
    const { data } = await json(`${base}/api/v1/oauth-clients`, { method: 'POST', headers: admin, body: JSON.stringify(client) })
    return { id: String(data.id), secret: String(data.client_secret) }
  }
  const machineClient = await register({ name: 'Bench machine client', redirect_uris: [], grant_types: ['client_credentials'], scopes: ['api:read'] })
  const webClient = await register({ name: 'Bench web client', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code'], scopes: PERSON_SCOPE.split(' ') })
  await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify(PERSON) })
  const browser = new Browser(base)
  await signInThroughPages(browser, base, webClient.id)

  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const credentialsHeaders = { ...form, authorization: basic(machineClient.id, machineClient.secret) }
  const credentialsBody = 'grant_type=client_credentials&scope=api%3Aread'
  const clientCredentials: autocannon.Options = { url: `${base}/oidc/token`, method: 'POST', headers: credentialsHeaders, body: credentialsBody }
  const codeGrant = (codes: Code[]): autocannon.Options => {
    let next = 0
    return {
      url: `${base}/oidc/token`,
      method: 'POST',
      headers: { ...form, authorization: basic(webClient.id, webClient.secret) },
      requests: [{
        setupRequest: (request) => {
          // Called once per request sent (`amount` in all): each code once, the spare ones a margin.
          const { code, verifier } = codes[next++] ?? { code: 'exhausted', verifier: '' }
          const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier })
          return { ...request, body: body.toString() }
        }
      }]
    }
  }

  // Each grant once by hand: the answer is the tokens it should be.
  const issued = await fetch(`${base}/oidc/token`, { method: 'POST', headers: credentialsHeaders, body: credentialsBody })
  const issuedBody = await issued.json() as Record<string, unknown>
  if (issued.status !== 200 || issuedBody.scope !== 'api:read') throw new Error(`client credentials: ${issued.status} ${JSON.stringify(issuedBody)}`)
  const sample = await oneCode(browser, base, webClient.id)
  const redeemed = await fetch(`${base}/oidc/token`, {
    method: 'POST',
    headers: { ...form, authorization: basic(webClient.id, webClient.secret) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: sample.code, redirect_uri: REDIRECT_URI, code_verifier: sample.verifier }).toString()
  })
  const redeemedBody = await redeemed.json() as Record<string, unknown>
  if (redeemed.status !== 200 || typeof redeemedBody.id_token !== 'string') throw new Error(`authorization code: ${redeemed.status} ${JSON.stringify(redeemedBody)}`)

  // A run of the code grant takes as many requests as it has codes (autocannon's `amount`:
  // exactly that many are built), at least a few per connection. Codes expire 60 s after they
  // are made, so a round's are made just before it.
  const redeem = async (amount: number) => {
    const { codes, preparation, seconds } = await prepareCodes(browser, base, webClient.id, amount + CONNECTIONS, pid)
    return { run: await measure({ ...codeGrant(codes), amount }, pid), preparation, seconds }
  }
  const enough = (rate: number, seconds: number) => Math.max(CONNECTIONS * 4, Math.ceil(rate * seconds))
  // Warm-up, which also estimates the code grant's rate: each round then has codes for SECONDS.
  await autocannon({ ...clientCredentials, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
  let codeRate = (await redeem(CONNECTIONS * 10)).run.rps
  codeRate = (await redeem(enough(codeRate, WARM_UP_SECONDS))).run.rps

  const credentialRuns: Measured[] = []
  const codeRuns: Measured[] = []
  const preparations: Preparation[] = []
  const preparedSeconds: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in the other order from the last: the machine's speed drifts.
    for (const side of round % 2 === 0 ? ['credentials', 'code'] : ['code', 'credentials']) {
      if (side === 'credentials') {
        credentialRuns.push(await measure({ ...clientCredentials, duration: SECONDS }, pid))
        continue
      }
      const { run, preparation, seconds } = await redeem(enough(codeRate, SECONDS))
      preparations.push(preparation)
      preparedSeconds.push(seconds)
      codeRuns.push(run)
      codeRate = run.rps
    }
  }

  const row = (name: string, runs: Measured[], unit: string) => {
    const side = medians(runs)
    report(name, perCore(side.cpuUs) / KEYCLOAK_GRANTS_PER_VCPU, `reported (per core, against Keycloak's ${KEYCLOAK_GRANTS_PER_VCPU} client credential grants/s per vCPU)`, true,
      `${side.rps.toFixed(0)} req/s; p50 ${side.p50} ms, p99 ${side.p99} ms; ${cpuShare(side, unit)}`)
    return side
  }
  const grants = row(`POST /oidc/token, client_credentials (Basic)${suffix}`, credentialRuns, 'grants')
  const code = row(`POST /oidc/token, authorization_code + PKCE (Basic)${suffix}`, codeRuns, 'codes redeemed')
  const made = {
    aloneMs: median(preparations.map((preparation) => preparation.aloneMs)),
    codesPerSecond: median(preparations.map((preparation) => preparation.codesPerSecond)),
    cpuUs: median(preparations.map((preparation) => preparation.cpuUs))
  }
  const signIn = made.cpuUs + code.cpuUs
  report(`GET /oidc/auth (signed in, consent remembered) + the code's POST /oidc/token: a sign-in at a relying party${suffix}`, perCore(signIn) / KEYCLOAK_GRANTS_PER_VCPU,
    `reported (per core, against Keycloak's ${KEYCLOAK_GRANTS_PER_VCPU} client credential grants/s per vCPU)`, true,
    `GET /oidc/auth: ${made.aloneMs.toFixed(1)} ms for one code alone (median), ${made.codesPerSecond.toFixed(0)} codes/s ${PREPARING_CONCURRENCY} at a time, ` +
    `server CPU per code ${made.cpuUs.toFixed(0)} µs; with the token request ${signIn.toFixed(0)} µs, so ${perCore(signIn).toFixed(0)} sign-ins/s per core ` +
    `(a round's codes made in ${median(preparedSeconds).toFixed(1)} s)`)
  return { grantsPerCore: perCore(grants.cpuUs), signInsPerCore: perCore(signIn) }
}
