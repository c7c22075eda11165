import type pg from 'pg'
import { TEST_PASSWORD, uniqueEmail } from '../helpers/accounts.js'

/** A request and what became of it. */
export interface Answer {
  sentAt: number
  answeredAt: number
  /** null: no HTTP answer (see `failure`). */
  status: number | null
  /** Why there was no answer: `timeout`, or the network error's code (ECONNRESET, ECONNREFUSED, …). */
  failure: string | null
  headers: Headers | null
  /** The parsed JSON body, when there was one. */
  body: any
}

/** One request of a load. */
export interface Exchange extends Answer {
  /** The stream it belongs to. */
  stream: string
  /** Its number within the stream. */
  n: number
}

/** The header that names each request of a load (`<stream>#<n>`), so the service's log lines can be matched to it. */
export const LOAD_ID_HEADER = 'x-load-id'

/** A kind of request sent over and over by some workers. */
export interface Stream {
  name: string
  workers: number
  /** The n-th request of the stream. */
  request: (n: number) => { url: string, init?: RequestInit }
}

export interface LoadOptions {
  /** A request unanswered after this long counts as hung (`failure: 'timeout'`). */
  answerWithinMs: number
  /** Each worker sends at most one request per this many milliseconds, so a fast error does not become a flood. */
  paceMs: number
}

/** Sends a request and records its answer, or why none came within `answerWithinMs`; never throws. */
export async function send (url: string, init: RequestInit = {}, answerWithinMs = 10_000): Promise<Answer> {
  const sentAt = Date.now()
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(answerWithinMs) })
    const text = await response.text()
    let body: unknown = null
    try {
      body = text === '' ? null : JSON.parse(text)
    } catch {
      body = text
    }
    return { sentAt, answeredAt: Date.now(), status: response.status, failure: null, headers: response.headers, body }
  } catch (error) {
    const { name, cause } = error as { name?: string, cause?: { code?: string, name?: string } }
    const failure = name === 'TimeoutError' ? 'timeout' : cause?.code ?? cause?.name ?? String(error)
    return { sentAt, answeredAt: Date.now(), status: null, failure, headers: null, body: null }
  }
}

/**
 * A steady stream of requests from several workers, every exchange recorded, until stopped.
 * Conditions on what has been recorded are awaited with `until`.
 */
export class Load {
  readonly exchanges: Exchange[] = []
  readonly #workers: Array<Promise<void>>
  readonly #waiters = new Set<() => void>()
  #running = true

  constructor (streams: Stream[], options: LoadOptions) {
    this.#workers = streams.flatMap((stream) => {
      let next = 0
      return Array.from({ length: stream.workers }, async () => {
        while (this.#running) {
          const n = next++
          const { url, init = {} } = stream.request(n)
          const headers = new Headers(init.headers)
          headers.set(LOAD_ID_HEADER, `${stream.name}#${n}`)
          const done = { stream: stream.name, n, ...await send(url, { ...init, headers }, options.answerWithinMs) }
          this.exchanges.push(done)
          for (const check of this.#waiters) check()
          const rest = options.paceMs - (done.answeredAt - done.sentAt)
          if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest))
        }
      })
    })
  }

  /** The exchanges sent at or after `from` and answered by `to`. */
  between (from: number, to = Infinity): Exchange[] {
    return this.exchanges.filter((e) => e.sentAt >= from && e.answeredAt <= to)
  }

  /** Resolves once `holds` is true of the exchanges recorded; rejects after `withinMs`. */
  async until (what: string, withinMs: number, holds: (exchanges: Exchange[]) => boolean): Promise<void> {
    if (holds(this.exchanges)) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check)
        reject(new Error(`not within ${withinMs} ms: ${what}`))
      }, withinMs)
      const check = () => {
        if (!holds(this.exchanges)) return
        clearTimeout(timer)
        this.#waiters.delete(check)
        resolve()
      }
      this.#waiters.add(check)
    })
  }

  /** Lets each worker finish its request in flight and stops. */
  async stop (): Promise<void> {
    this.#running = false
    await Promise.all(this.#workers)
  }
}

/** A JSON request's options, with a bearer token when given. */
export function json (method: string, body?: unknown, token?: string): RequestInit {
  const headers: Record<string, string> = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  return { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }
}

/** Polls `check` every 50 ms until it gives a value other than undefined; rejects after `withinMs`. */
export async function waitFor<T> (what: string, withinMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + withinMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The first answer of the service at `base` to `/health/ready` with `status`, polled for up to `withinMs`. */
export async function readinessAnswer (base: string, status: 200 | 503, withinMs: number): Promise<Answer> {
  return await waitFor(`/health/ready answers ${status}`, withinMs, async () => {
    const answer = await send(`${base}/health/ready`)
    return answer.status === status ? answer : undefined
  })
}

/** Counts by status (or failure), e.g. `{ 201: 40, 503: 12 }`. */
export function byStatus (exchanges: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const e of exchanges) {
    const key = String(e.status ?? e.failure)
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

/** Registers an account over HTTP and signs it in. */
export async function signUp (base: string, email: string): Promise<{ id: string, token: string }> {
  const created = await send(`${base}/api/v1/users`, json('POST', { email, name: 'Fault Test', password: TEST_PASSWORD }))
  if (created.status !== 201) throw new Error(`registration: ${created.status ?? created.failure} ${JSON.stringify(created.body)}`)
  const login = await send(`${base}/api/v1/auth/login`, json('POST', { email, password: TEST_PASSWORD }))
  if (login.status !== 200) throw new Error(`sign-in: ${login.status ?? login.failure} ${JSON.stringify(login.body)}`)
  return { id: created.body.data.id, token: login.body.data.access_token }
}

/** A stream named `register`: each request registers a new account on the service at `base`. */
export function registrations (base: string, workers: number): Stream {
  return {
    name: 'register',
    workers,
    request: (n) => ({ url: `${base}/api/v1/users`, init: json('POST', { email: uniqueEmail(`load-${n}`), name: 'Load', password: TEST_PASSWORD }) })
  }
}

/** The ids of the registrations acknowledged (201) among `exchanges`, and those of them the users table holds. */
export async function acknowledgedRegistrations (
  client: pg.ClientBase,
  exchanges: Exchange[]
): Promise<{ acknowledged: string[], stored: Set<string> }> {
  const acknowledged = exchanges.filter((e) => e.stream === 'register' && e.status === 201).map((e) => String(e.body.data.id))
  const { rows } = await client.query<{ id: string }>('select id from users where id = any($1)', [acknowledged])
  return { acknowledged, stored: new Set(rows.map((row) => row.id)) }
}

/** How many user.created audit entries name one of `ids`. */
export async function userCreatedAudits (client: pg.ClientBase, ids: string[]): Promise<number> {
  const { rows } = await client.query<{ count: string }>("select count(*) from audit_logs where event = 'user.created' and target_id = any($1)", [ids])
  return Number(rows[0]?.count)
}
