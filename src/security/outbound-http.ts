import { lookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { addressRefusal, bareHost, refusedAddress, type OutboundPolicy } from './outbound-addresses.js'

/** How a host name becomes addresses: the system's resolver by default; tests inject one. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string, family: number }>>

export const systemResolver: Resolver = async (hostname) => await lookup(hostname, { all: true, verbatim: true })

export interface OutboundRequest {
  method: 'GET' | 'POST'
  url: string
  headers: Record<string, string>
  body?: string
}

export interface OutboundResponse {
  status: number
  /** The answer's body, up to the client's limit. */
  body: Buffer
  /** False when the answer was longer than the limit: `body` is its beginning. */
  complete: boolean
}

/**
 * A request refused before any connection (`refused`: the outbound rule) or failed: `message`
 * says why, without the addresses a message of the network stack may name.
 */
export class OutboundRequestError extends Error {
  constructor (message: string, readonly refused = false) {
    super(message)
    this.name = 'OutboundRequestError'
  }
}

export interface OutboundHttpOptions {
  policy: OutboundPolicy
  /** The whole request: resolving, connecting, and reading the answer. */
  timeoutMs: number
  /** Read this much of an answer's body at most. */
  maxResponseBytes: number
  userAgent: string
  resolve?: Resolver
}

/** The address a request connects to, checked against the policy. */
interface Pinned { address: string, family: 4 | 6 }

/** The error's code (ECONNREFUSED, CERT_HAS_EXPIRED, ...) rather than a message that may name addresses. */
function networkFailure (error: unknown): OutboundRequestError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (typeof code === 'string' && code !== '') return new OutboundRequestError(`connection failed: ${code}`)
  return new OutboundRequestError(`connection failed: ${error instanceof Error ? error.message : String(error)}`)
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
 * Requests to URLs someone entered (webhook endpoints, an IdP's metadata), connecting only to
 * addresses the outbound policy allows (docs/security.md, "Outbound requests"). Redirects are
 * never followed: a 3xx is an answer like any other.
 */
export class OutboundHttp {
  readonly timeoutMs: number
  readonly #options: OutboundHttpOptions
  readonly #resolve: Resolver

  constructor (options: OutboundHttpOptions) {
    this.#options = options
    this.timeoutMs = options.timeoutMs
    this.#resolve = options.resolve ?? systemResolver
  }

  /**
   * Sends once: resolves with the answer whatever its status; rejects with OutboundRequestError on
   * refusal, timeout, or a network error.
   */
  async request (request: OutboundRequest): Promise<OutboundResponse> {
    const deadline = Date.now() + this.timeoutMs
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      throw new OutboundRequestError('refused: not a valid URL', true)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new OutboundRequestError(`refused: ${url.protocol} is neither http nor https`, true)
    }
    const pinned = await this.#pin(bareHost(url.hostname), deadline)
    return await this.#send(url, pinned, request, deadline)
  }

  /** The address to connect to, every address the host has checked first: one refused refuses the host. */
  async #pin (host: string, deadline: number): Promise<Pinned> {
    const { policy } = this.#options
    if (isIP(host) !== 0) {
      const refusal = addressRefusal(host, policy)
      if (refusal !== null) {
        throw new OutboundRequestError(`refused: ${host} is ${refusedAddress(refusal)} (${policy.setting} does not allow it)`, true)
      }
    }
    // An address is resolved too (the system's resolver answers it as itself), so that an
    // injected resolver sees every host a request would reach.
    const addresses = await this.#beforeDeadline(this.#resolve(host), deadline, (error) => {
      const code = (error as NodeJS.ErrnoException | undefined)?.code
      return new OutboundRequestError(`cannot resolve ${host}${typeof code === 'string' ? `: ${code}` : ''}`)
    })
    const [first] = addresses
    if (first === undefined) throw new OutboundRequestError(`cannot resolve ${host}: no address`)
    for (const { address } of addresses) {
      const refusal = addressRefusal(address, policy)
      if (refusal !== null) {
        throw new OutboundRequestError(`refused: ${host} resolves to ${refusedAddress(refusal)} (${policy.setting} does not allow it)`, true)
      }
    }
    return { address: first.address, family: isIP(first.address) === 6 ? 6 : 4 }
  }

  /** `work`, or a timeout once the deadline passes (a system lookup cannot be cancelled; its answer is dropped). */
  async #beforeDeadline<T> (
    work: Promise<T>, deadline: number, failure: (error: unknown) => OutboundRequestError
  ): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(this.#timedOut()) }, Math.max(0, deadline - Date.now()))
    })
    try {
      return await Promise.race([work.catch((error: unknown) => { throw failure(error) }), expired])
    } finally {
      clearTimeout(timer)
    }
  }

  #timedOut (): OutboundRequestError {
    return new OutboundRequestError(`no answer within ${this.timeoutMs} ms`)
  }

  async #send (url: URL, pinned: Pinned, request: OutboundRequest, deadline: number): Promise<OutboundResponse> {
    const host = bareHost(url.hostname)
    const secure = url.protocol === 'https:'
    const { maxResponseBytes, userAgent } = this.#options
    const headers: http.OutgoingHttpHeaders = { ...request.headers, 'user-agent': userAgent }
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body)
    const options: https.RequestOptions = {
      method: request.method,
      host,
      path: url.pathname + url.search,
      headers,
      agent: false,
      lookup: pinnedLookup(pinned)
    }
    if (url.port !== '') options.port = Number(url.port)
    if (secure && isIP(host) === 0) options.servername = host
    return await new Promise<OutboundResponse>((resolve, reject) => {
      const outgoing = (secure ? https : http).request(options)
      let settled = false
      // Settling destroys the socket: nothing more is read, and an endless answer holds nothing.
      const settle = (outcome: OutboundResponse | OutboundRequestError): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        outgoing.destroy()
        if (outcome instanceof OutboundRequestError) reject(outcome)
        else resolve(outcome)
      }
      const timer = setTimeout(() => { settle(this.#timedOut()) }, Math.max(0, deadline - Date.now()))
      outgoing.on('error', (error) => { settle(networkFailure(error)) })
      outgoing.on('response', (response) => {
        const status = response.statusCode ?? 0
        const chunks: Buffer[] = []
        let received = 0
        response.on('data', (chunk: Buffer) => {
          const room = maxResponseBytes - received
          received += chunk.length
          chunks.push(room < chunk.length ? chunk.subarray(0, room) : chunk)
          if (received > maxResponseBytes) settle({ status, body: Buffer.concat(chunks), complete: false })
        })
        response.on('end', () => { settle({ status, body: Buffer.concat(chunks), complete: true }) })
        response.on('error', (error) => { settle(networkFailure(error)) })
      })
      outgoing.end(request.body)
    })
  }
}
