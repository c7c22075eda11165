import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from '../context.js'

/** A password's SHA-1 as the range API spells it: upper-case hex. */
export function sha1Hex (password: string): string {
  return createHash('sha1').update(password).digest('hex').toUpperCase()
}

/**
 * Have I Been Pwned's range API on 127.0.0.1, answering as the real one does: for
 * `GET /range/<5 hex>`, every known suffix of that prefix with its count, and with
 * `Add-Padding: true`, random suffixes with a count of 0 besides. Records every request, so a
 * test can say what left the service.
 */
export class PwnedPasswordsServer {
  readonly requests: Array<{ url: string, headers: IncomingHttpHeaders }> = []
  /** Breached passwords: their counts, by full SHA-1. */
  readonly breached = new Map<string, number>()
  /** Never answer (a timeout), from now on. */
  hang = false
  /** Answer every request with a redirect (302) to this address, from now on. */
  redirectTo: string | null = null
  readonly #hanging: ServerResponse[] = []
  readonly #server: Server
  url = ''

  constructor () {
    this.#server = createServer((request, response) => {
      this.requests.push({ url: request.url ?? '', headers: request.headers })
      if (this.hang) {
        this.#hanging.push(response)
        return
      }
      if (this.redirectTo !== null) {
        response.writeHead(302, { location: `${this.redirectTo}${request.url ?? ''}` }).end()
        return
      }
      const prefix = /^\/range\/([0-9A-F]{5})(\?mode=sha1)?$/.exec(request.url ?? '')?.[1]
      if (prefix === undefined) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end('The hash prefix was not in a valid format')
        return
      }
      const lines = [...this.breached].filter(([hash]) => hash.startsWith(prefix)).map(([hash, count]) => `${hash.slice(5)}:${count}`)
      if (request.headers['add-padding'] === 'true') {
        for (let index = 0; index < 800; index++) lines.push(`${randomBytes(18).toString('hex').slice(0, 35).toUpperCase()}:0`)
      }
      response.writeHead(200, { 'content-type': 'text/plain' }).end(lines.join('\r\n'))
    })
  }

  /** Marks `password` as seen `count` times in breaches. */
  add (password: string, count: number): void {
    this.breached.set(sha1Hex(password), count)
  }

  async start (): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
    return this
  }

  /** Stops answering (and accepting connections); stopping again does nothing. */
  async stop (): Promise<void> {
    if (!this.#server.listening) return
    for (const response of this.#hanging) response.destroy()
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}

/** A range API for one test, stopped at its end. */
export async function pwnedPasswordsServer (t: TestContext): Promise<PwnedPasswordsServer> {
  const server = await new PwnedPasswordsServer().start()
  t.teardown(async () => { await server.stop() })
  return server
}
