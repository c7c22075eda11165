import type { FastifyReply, FastifyRequest } from 'fastify'
import { decodeJwt } from 'jose'
import { type Permission, type Role, ROLES } from '../../schemas/rbac.js'
import { ACCOUNT_PATH, CONSOLE_PATH } from '../authorization-server/paths.js'
import { Errors } from '../errors.js'
import { hasPermission } from '../security/permissions.js'
import { callerOf } from '../services/context.js'
import type { Services } from '../services/index.js'
import type { Viewer } from './pages.js'

/** The console is for operators: moderators and up, who hold `manage_roles` (docs/console.md). */
export const OPERATOR_PERMISSION: Permission = 'manage_roles'

/**
 * Where a signed-in browser lands: the person's own page, or for an operator (by the roles its
 * access token was issued with: only where to go, which the screens' guards check again) the
 * users screen.
 */
export function landingOf (accessToken: string, asked: 'console' | 'account'): string {
  if (asked === 'account') return ACCOUNT_PATH
  const { roles } = decodeJwt(accessToken)
  const known: readonly unknown[] = ROLES
  const held = Array.isArray(roles) ? roles.filter((role): role is Role => known.includes(role)) : []
  return hasPermission({ id: '', roles: held }, OPERATOR_PERMISSION) ? `${CONSOLE_PATH}/users` : ACCOUNT_PATH
}

/** Who is signed in, for the page's header, and its forms' token (bound to the console session). */
export async function viewerOf (accounts: Pick<Services['accounts'], 'get'>, request: FastifyRequest, reply: FastifyReply): Promise<Viewer> {
  const caller = callerOf(request.serviceContext)
  const me = await accounts.get(caller.id)
  return {
    name: me.name,
    email: me.email,
    screens: {
      overview: hasPermission(caller, 'view_audit_logs'),
      users: hasPermission(caller, OPERATOR_PERMISSION),
      organizations: hasPermission(caller, OPERATOR_PERMISSION),
      oauthClients: hasPermission(caller, 'admin'),
      webhooks: hasPermission(caller, 'admin'),
      auditLog: hasPermission(caller, 'view_audit_logs')
    },
    csrf: reply.generateCsrf({ userInfo: request.consoleSession?.binding ?? '' }),
    acting: caller.impersonatorId !== null
  }
}

/**
 * What `read` answers, or null where the service refuses it to the viewer (403: the rank rule,
 * an organization role): the page then says so rather than failing whole.
 */
export async function unlessRefused<T> (read: Promise<T>): Promise<T | null> {
  try {
    return await read
  } catch (error) {
    if (error instanceof Errors.FORBIDDEN) return null
    throw error
  }
}
