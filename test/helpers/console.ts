/** The console's pages from outside (docs/console.md): a signed-in browser, the forms' token, a given-up delivery. */
import type { FastifyInstance } from 'fastify'
import { deliveryRow } from '../../src/services/webhooks/publisher.js'
import type { Account } from './accounts.js'
import { authorizeWithPassword, CookieBrowser } from './authorization-server.js'

/** The forms' token of a console page. */
export function pageToken (html: string): string {
  return /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
}

/**
 * A browser signed in as `account` through the authorization server's pages, from `start` (the
 * console's sign-in, or the account page's), with its authenticator app's `code` when given;
 * where it landed, and that page.
 */
export async function signedInBrowser (issuer: string, account: Account, start = '/console/sign-in', code?: () => string) {
  const browser = new CookieBrowser(issuer)
  const landed = await authorizeWithPassword(browser, start, account, code)
  const { response } = await browser.follow(landed)
  return { browser, landed, response, html: await response.text() }
}

/** A delivery stored as given up after its last try (the tries themselves have tests of their own): its id. */
export async function givenUpDelivery (app: FastifyInstance, endpointId: string): Promise<string> {
  const row = deliveryRow(endpointId, { type: 'webhook.test', data: { webhook_id: endpointId } }, new Date().toISOString())
  await app.repositories.webhooks.addDeliveries([{
    ...row, status: 'failed', attempts: 8, next_attempt_at: null, last_status: 500, last_error: 'answered 500'
  }])
  return row.id
}
