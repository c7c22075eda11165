import fp from 'fastify-plugin'
import { ensureSuperAdmin } from '../../services/accounts.js'

/** Start-up: the ADMIN_EMAIL account exists and holds super_admin (docs/operations.md, "The first administrator"). */
export default fp(async (fastify) => {
  const { admin, passwordPolicy } = fastify.config
  if (admin === null) return
  const outcome = await ensureSuperAdmin(
    { users: fastify.repositories.users, passwords: fastify.passwords, passwordPolicy },
    admin.email,
    admin.password
  )
  fastify.log.info({ email: admin.email, outcome }, 'bootstrap super_admin ensured')
}, { name: 'admin-bootstrap', dependencies: ['repositories', 'security'] })
