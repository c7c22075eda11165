import { AUDIT_FIELDS } from '../../../schemas/audit.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import type { AuditLogsRepository } from '../../store/audit-logs.js'

/** Reading the audit log (docs/api.md, "Audit log"): newest first by default, filtered by event and actor. */
export class AuditLogService {
  constructor (private readonly deps: { auditLogs: AuditLogsRepository, cursors: CursorCodec }) {}

  async list ({ event, actor_id: actorId, ...query }: CollectionQueryInput & { event?: string, actor_id?: string }) {
    const filters = {
      ...(event !== undefined && { event }),
      ...(actorId !== undefined && { actor_id: actorId })
    }
    return await collectionPage(query, { ...AUDIT_FIELDS, defaultSort: [{ field: 'created_at', descending: true }], scope: 'audit-logs' }, this.deps.cursors,
      async (request) => await this.deps.auditLogs.list(request), filters)
  }
}
