import { type AccountExport, EXPORT_LIMITS, EXPORT_SECTIONS, type ExportSection } from '../../../schemas/account-export.js'
import { Errors } from '../../errors.js'
import type { AuditLogsRepository } from '../../store/audit-logs.js'
import type { DevicesRepository } from '../../store/devices.js'
import type { IdentitiesRepository } from '../../store/identities.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { PasskeysRepository } from '../../store/passkeys.js'
import type { CommentsRepository, PostsRepository } from '../../store/posts.js'
import type { SessionsRepository } from '../../store/sessions.js'
import type { UsersRepository } from '../../store/users.js'
import { describeAccount } from '../accounts/index.js'
import type { AuditTrail } from '../audit/index.js'
import { assertAccountHolder, callerOf, type RequestContext } from '../context.js'

export interface AccountExportDependencies {
  users: UsersRepository
  sessions: SessionsRepository
  devices: DevicesRepository
  identities: IdentitiesRepository
  passkeys: PasskeysRepository
  organizations: OrganizationsRepository
  posts: PostsRepository
  comments: CommentsRepository
  auditLogs: AuditLogsRepository
  audit: AuditTrail
  now?: () => number
}

type Lists = Omit<AccountExport, 'exported_at' | 'user' | 'truncated'>

/**
 * The account export (docs/api.md, "Account export"; GDPR art. 20): everything the service
 * stores about the caller, and only the caller, as one document. Each list is read with one
 * more item than its limit, which tells whether it was cut; each item is what the API shows of
 * it elsewhere, and the response schema serializes the document, so no secret can leave.
 * Every export is audited (`user.exported`).
 */
export class AccountExportService {
  readonly #now: () => number

  constructor (private readonly deps: AccountExportDependencies) {
    this.#now = deps.now ?? Date.now
  }

  async export (context: RequestContext): Promise<AccountExport> {
    const caller = callerOf(context)
    // The holder's own: an administrator acting as them sees what they see, not all of it at once.
    assertAccountHolder(caller, 'exporting the account')
    const { id } = caller
    const { users, audit } = this.deps
    const exportedAt = new Date(this.#now()).toISOString()
    const [described, read] = await Promise.all([describeAccount(users, id), this.#lists(id)])
    // Deleted while this ran: the caller is gone, as every request of theirs now answers.
    if (described === undefined) throw new Errors.INVALID_TOKEN()
    const truncated = EXPORT_SECTIONS.filter((section) => read[section].length > EXPORT_LIMITS[section])
    const lists = Object.fromEntries(EXPORT_SECTIONS.map((section) =>
      [section, read[section].slice(0, EXPORT_LIMITS[section])])) as unknown as Lists
    const { suspension } = described.principal
    const document: AccountExport = {
      exported_at: exportedAt,
      user: {
        ...described.account,
        suspension: suspension === null ? null : { suspended_at: suspension.at, until: suspension.until }
      },
      ...lists,
      truncated
    }
    // Stored before the answer, as every audited event is: an export handed out has its entry.
    const items = EXPORT_SECTIONS.reduce((sum, section) => sum + lists[section].length, 0)
    await audit.recordIn(context, 'user.exported', { outcome: 'success', targetId: id, details: { items, truncated } })
    return document
  }

  /** Each list, with one item beyond its limit when the account has more: that one says it was cut. */
  async #lists (id: string): Promise<Lists> {
    const { sessions, devices, identities, passkeys, organizations, posts, comments, auditLogs } = this.deps
    const beyond = (section: ExportSection) => EXPORT_LIMITS[section] + 1
    const read = await Promise.all([
      sessions.latestOf(id, beyond('sessions')),
      devices.latestOf(id, beyond('devices')),
      identities.linkedTo(id, beyond('identities')),
      passkeys.latestOf(id, beyond('passkeys')),
      organizations.membershipsOf(id, beyond('memberships')),
      posts.latestByAuthor(id, beyond('posts')),
      comments.latestByAuthor(id, beyond('comments')),
      auditLogs.latestOfActor(id, beyond('audit_entries'))
    ])
    return {
      sessions: read[0],
      devices: read[1],
      identities: read[2],
      passkeys: read[3],
      memberships: read[4],
      posts: read[5],
      comments: read[6],
      audit_entries: read[7]
    }
  }
}
