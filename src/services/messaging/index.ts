import type { ServiceDependencies } from '../dependencies.js'
import { MessageCodes } from './codes.js'
import { Notices } from './notices.js'
import { MessageOutbox } from './outbox.js'
import { MessageTemplates } from './templates.js'

export { MESSAGE_CODE_TTL_MS, type MessageCodes } from './codes.js'
export type { Notices } from './notices.js'
export type { DeliveryLog, Mailer, SmsSender } from './ports.js'
export type { MessageTemplates } from './templates.js'

export type Messaging = ReturnType<typeof messagingServices>

/** The message outbox and what other features put in it: templates, notices of changes, one-time codes. */
export function messagingServices ({ config, repositories, mailer, sms, log, now }: ServiceDependencies) {
  const outbox = new MessageOutbox({ outbox: repositories.outbox, mailer, sms, retryMs: config.messages.retryMs, log })
  const deliver = () => { outbox.kick() }
  const templates = new MessageTemplates({ appUrl: config.messages.appUrl, productName: config.mfa.issuer })
  return {
    outbox,
    deliver,
    templates,
    notices: new Notices({ outbox: repositories.outbox, templates, deliver }),
    messageCodes: new MessageCodes(repositories.mfa, config.jwtSecret, now)
  }
}
