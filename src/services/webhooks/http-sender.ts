import { lookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { addressRefusal, refusedAddress, type OutboundPolicy } from '../../security/outbound-addresses.js'

/** How a host name becomes addresses: the system's resolver by default; tests inject one. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string, family: number }>>

export const systemResolver: Resolver = async (hostname) => await lookup(hostname, { all: true, verbatim: true })

export interface WebhookRequest { url: string, headers: Record<string, string>, body: string }

export interface WebhookResponse { status: number }

/**
 * A send that was refused before any connection (SSRF rule) or failed: `message` says why, for the
 * delivery's last_error.
 */
export class WebhookSendError extends Error {
  constructor (message: string, readonly refused = false) {
    super(message)
    this.name = 'WebhookSendError'
  }
}

export interface WebhookHttpSenderOptions {
  policy: OutboundPolicy
  /** The whole send: resolving, connecting, and reading the answer. */
  timeoutMs: number
  /** Read this much of an answer's body at most (default 64 KiB); only the status counts. */
  maxResponseBytes?: number
  resolve?: Resolver
}

const DEFAULT_MAX_RESPONSE_BYTES = 65_536
const USER_AGENT = 'users-api-webhooks/1'

/** The address a send connects to, checked against the policy. */
interface Pinned { address: string, family: 4 | 6 }

/** A URL's host without the brackets of an IPv6 literal. */
function bareHost (hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}

/** The error's code (ECONNREFUSED, CERT_HAS_EXPIRED, ...) rather than a message that may name addresses. */
function networkFailure (error: unknown): WebhookSendError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (typeof code === 'string' && code !== '') return new WebhookSendError(`connection failed: ${code}`)
  return new WebhookSendError(`connection failed: ${error instanceof Error ? error.message : String(error)}`)
}

/**
 * Always answers the checked address: the socket must reach what was checked, not what a second
 * resolution (DNS rebinding) returns. Node asks with `all: true` when it may try several families.
 */
function pinnedLookup (pinned: Pinned): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) callback(null, [{ address: pinned.address, family: pinned.family }])
    else callback(null, pinned.address, pinned.family)
  }
}

/**
 * POSTs webhook deliveries to operator-entered URLs, connecting only to addresses the outbound
 * policy allows (docs/security.md, "Webhooks").
 */
export class WebhookHttpSender {
  readonly timeoutMs: number
  private readonly policy: OutboundPolicy
  private readonly maxResponseBytes: number
  private readonly resolve: Resolver

  constructor (options: WebhookHttpSenderOptions) {
    this.policy = options.policy
    this.timeoutMs = options.timeoutMs
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    this.resolve = options.resolve ?? systemResolver
  }

  /**
   * POSTs once: resolves with the status whatever it is (3xx are never followed, the caller counts
   * non-2xx as failure); rejects with WebhookSendError on refusal, timeout, or a network error.
   */
  async post (request: WebhookRequest): Promise<WebhookResponse> {
    const deadline = Date.now() + this.timeoutMs
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      throw new WebhookSendError('refused: not a valid URL', true)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new WebhookSendError(`refused: ${url.protocol} is neither http nor https`, true)
    }
    const pinned = await this.pin(bareHost(url.hostname), deadline)
    return await this.send(url, pinned, request, deadline)
  }

  /** The address to connect to, every address the host has checked first: one refused refuses the host. */
  private async pin (host: string, deadline: number): Promise<Pinned> {
    if (isIP(host) !== 0) {
      const refusal = addressRefusal(host, this.policy)
      if (refusal !== null) {
        throw new WebhookSendError(`refused: ${host} is ${refusedAddress(refusal)} (WEBHOOK_ALLOWED_NETWORKS does not allow it)`, true)
      }
    }
    // An address is resolved too (the system's resolver answers it as itself), so that an
    // injected resolver sees every host a send would reach.
    const addresses = await this.beforeDeadline(this.resolve(host), deadline, (error) => {
      const code = (error as NodeJS.ErrnoException | undefined)?.code
      return new WebhookSendError(`cannot resolve ${host}${typeof code === 'string' ? `: ${code}` : ''}`)
    })
    const [first] = addresses
    if (first === undefined) throw new WebhookSendError(`cannot resolve ${host}: no address`)
    for (const { address } of addresses) {
      const refusal = addressRefusal(address, this.policy)
      if (refusal !== null) {
        throw new WebhookSendError(`refused: ${host} resolves to ${refusedAddress(refusal)} (WEBHOOK_ALLOWED_NETWORKS does not allow it)`, true)
      }
    }
    return { address: first.address, family: isIP(first.address) === 6 ? 6 : 4 }
  }

  /** `work`, or a timeout once the deadline passes (a system lookup cannot be cancelled; its answer is dropped). */
  private async beforeDeadline<T> (
    work: Promise<T>, deadline: number, failure: (error: unknown) => WebhookSendError
  ): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(this.timedOut()) }, Math.max(0, deadline - Date.now()))
    })
    try {
      return await Promise.race([work.catch((error: unknown) => { throw failure(error) }), expired])
    } finally {
      clearTimeout(timer)
    }
  }

  private timedOut (): WebhookSendError {
    return new WebhookSendError(`no answer within ${this.timeoutMs} ms`)
  }

  private async send (url: URL, pinned: Pinned, request: WebhookRequest, deadline: number): Promise<WebhookResponse> {
    const host = bareHost(url.hostname)
    const secure = url.protocol === 'https:'
    const options: https.RequestOptions = {
      method: 'POST',
      host,
      path: url.pathname + url.search,
      headers: {
        ...request.headers,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(request.body),
        'user-agent': USER_AGENT
      },
      agent: false,
      lookup: pinnedLookup(pinned)
    }
    if (url.port !== '') options.port = Number(url.port)
    if (secure && isIP(host) === 0) options.servername = host
    return await new Promise<WebhookResponse>((resolve, reject) => {
      const outgoing = (secure ? https : http).request(options)
      let settled = false
      // Settling destroys the socket: nothing more is read, and an endless answer holds nothing.
      const settle = (outcome: WebhookResponse | WebhookSendError): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        outgoing.destroy()
        if (outcome instanceof WebhookSendError) reject(outcome)
        else resolve(outcome)
      }
      const timer = setTimeout(() => { settle(this.timedOut()) }, Math.max(0, deadline - Date.now()))
      outgoing.on('error', (error) => { settle(networkFailure(error)) })
      outgoing.on('response', (response) => {
        const status = response.statusCode ?? 0
        let received = 0
        response.on('data', (chunk: Buffer) => {
          received += chunk.length
          if (received >= this.maxResponseBytes) settle({ status })
        })
        response.on('end', () => { settle({ status }) })
        response.on('error', (error) => { settle(networkFailure(error)) })
      })
      outgoing.end(request.body)
    })
  }
}
