import fp from 'fastify-plugin'

/** Start-up: the ADMIN_EMAIL account exists and holds super_admin (docs/operations.md, "The first administrator"). */
export default fp(async (fastify) => {
  const { admin } = fastify.config
  if (admin === null) return
  // No request: the audit entries name the start-up as where the change came from.
  const outcome = await fastify.services.accounts.ensureSuperAdmin({ ip: 'start-up', userAgent: null, caller: null }, admin.email, admin.password)
  fastify.log.info({ email: admin.email, outcome }, 'bootstrap super_admin ensured')
}, { name: 'admin-bootstrap', dependencies: ['services'] })
