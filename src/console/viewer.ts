import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Permission } from '../../schemas/rbac.js'
import { hasPermission } from '../security/permissions.js'
import { callerOf } from '../services/context.js'
import type { Services } from '../services/index.js'
import type { Viewer } from './pages.js'

/** The console is for operators: moderators and up, who hold `manage_roles` (docs/console.md). */
export const OPERATOR_PERMISSION: Permission = 'manage_roles'

/** Who is signed in, for the page's header, and its forms' token (bound to the console session). */
export async function viewerOf (accounts: Pick<Services['accounts'], 'get'>, request: FastifyRequest, reply: FastifyReply): Promise<Viewer> {
  const caller = callerOf(request.serviceContext)
  const me = await accounts.get(caller.id)
  return {
    name: me.name,
    email: me.email,
    screens: {
      users: hasPermission(caller, OPERATOR_PERMISSION),
      oauthClients: hasPermission(caller, 'admin'),
      webhooks: hasPermission(caller, 'admin'),
      auditLog: hasPermission(caller, 'view_audit_logs')
    },
    csrf: reply.generateCsrf({ userInfo: request.consoleSession?.binding ?? '' })
  }
}
