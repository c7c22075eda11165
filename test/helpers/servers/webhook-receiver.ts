import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from '../context.js'

/** One POST the receiver was sent. */
export interface ReceivedDelivery {
  path: string
  headers: IncomingHttpHeaders
  body: string
  /** The parsed body: `{ type, timestamp, data }`. */
  payload: { type: string, timestamp: string, data: Record<string, unknown> }
}

/** How the receiver answers a request: a status (with a Location for 3xx), or never. */
export type Answer = number | 'hang'

/**
 * A webhook receiver on 127.0.0.1, as an application runs one: records every JSON POST and
 * answers each as `answer` says, by default with the next of `answers` (200 once they run out).
 * A hanging answer is ended when the receiver stops.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = []
  readonly answers: Answer[] = []
  /** Connections opened to the receiver, so a test can say none was. */
  connections = 0
  readonly #waiting: Array<{ count: number, resolve: () => void }> = []
  readonly #hanging: ServerResponse[] = []
  readonly #server: Server
  url = ''

  constructor (private readonly options: { path?: string, answer?: (received: ReceivedDelivery) => Answer } = {}) {
    this.#server = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => { body += chunk.toString() })
      request.on('end', () => {
        const received: ReceivedDelivery = {
          path: request.url ?? '', headers: request.headers, body, payload: JSON.parse(body) as ReceivedDelivery['payload']
        }
        this.received.push(received)
        const answer = this.options.answer?.(received) ?? this.answers.shift() ?? 200
        if (answer === 'hang') this.#hanging.push(response)
        else if (answer >= 300 && answer < 400) response.writeHead(answer, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
        else response.writeHead(answer).end()
        for (const waiter of this.#waiting.filter((waiting) => this.received.length >= waiting.count)) {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1)
          waiter.resolve()
        }
      })
    })
    this.#server.on('connection', () => { this.connections++ })
  }

  async start (): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}${this.options.path ?? '/hooks'}`
    return this
  }

  get port (): number {
    return (this.#server.address() as AddressInfo).port
  }

  /** Resolves once `count` deliveries in all have been received. */
  async receivedCount (count: number): Promise<void> {
    if (this.received.length >= count) return
    await new Promise<void>((resolve) => this.#waiting.push({ count, resolve }))
  }

  async stop (): Promise<void> {
    for (const response of this.#hanging) response.destroy()
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}

/** A receiver for one test, stopped at its end. */
export async function webhookReceiver (t: TestContext): Promise<WebhookReceiver> {
  const receiver = await new WebhookReceiver().start()
  t.teardown(async () => { await receiver.stop() })
  return receiver
}
