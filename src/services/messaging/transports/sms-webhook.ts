import type { SmsSender } from '../ports.js'

/** The whole request, the answer's headers included. */
const WEBHOOK_TIMEOUT_MS = 10_000

/** SMS through a provider's webhook: `POST SMS_WEBHOOK_URL` with JSON `{ to, body }`; any 2xx is delivered. */
export class WebhookSmsSender implements SmsSender {
  readonly timeoutMs = WEBHOOK_TIMEOUT_MS

  constructor (private readonly url: string) {}

  async send (message: { to: string, body: string }): Promise<void> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(message),
      redirect: 'error',
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)
    })
    await response.body?.cancel()
    if (!response.ok) throw new Error(`SMS webhook answered ${response.status}`)
  }
}
