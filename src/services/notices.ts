import type { OutboxRepository } from '../store/outbox.js'
import type { MessageTemplates, NoticeKind } from './messages.js'

/**
 * Security notices (a new password, an e-mail change, a second factor turned on or off) to the
 * account's address: stored in the outbox with the change, delivered right after.
 */
export class Notices {
  constructor (private readonly deps: { outbox: OutboxRepository, templates: MessageTemplates, deliver: () => void, now?: () => number }) {}

  async send (to: string, kind: NoticeKind): Promise<void> {
    const now = new Date((this.deps.now ?? Date.now)()).toISOString()
    await this.deps.outbox.add(this.deps.templates.notice(to, kind), now)
    this.deps.deliver()
  }
}
