import type { Config } from '../../../config/index.js'
import type { DeliveryLog, Mailer, SmsSender } from '../ports.js'
import { LogMailer, LogSmsSender } from './log-mailer.js'
import { WebhookSmsSender } from './sms-webhook.js'
import { SmtpMailer } from './smtp-mailer.js'

/** The configured ways out: SMTP_URL and SMS_WEBHOOK_URL, or the log when they are unset. */
export function createDelivery (messages: Config['messages'], log: DeliveryLog): { mailer: Mailer, sms: SmsSender } {
  return {
    mailer: messages.smtpUrl === null ? new LogMailer(log) : new SmtpMailer(messages.smtpUrl, messages.from),
    sms: messages.smsWebhookUrl === null ? new LogSmsSender(log) : new WebhookSmsSender(messages.smsWebhookUrl)
  }
}
