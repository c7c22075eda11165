/** The out-of-band MFA channels (docs/api.md, "Method identifiers and messages"); `totp` needs none. */
export type MessageChannel = 'sms' | 'email' | 'push'

/**
 * How the service reaches a user out of band (security notices, and codes for SMS, e-mail
 * or push methods). Deployments plug in their provider; the default writes to the log.
 */
export interface MessageSender {
  send: (channel: MessageChannel, to: string, subject: string, body: string) => Promise<void>
}

export class LoggingMessageSender implements MessageSender {
  constructor (private readonly log: (entry: Record<string, unknown>, message: string) => void) {}

  async send (channel: MessageChannel, to: string, subject: string, body: string): Promise<void> {
    this.log({ channel, to, subject, body }, 'message not delivered: the logging sender only records it')
  }
}
