import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { redactUrl } from '../../security/redaction.js'
import { prependPreHandler } from '../../http/route-options.js'

/**
 * Zero trust for admin operations, by ZERO_TRUST_MODE: `monitor` records each evaluation in
 * the audit log, `enforce` also refuses the ones not allowed (AccessService.screen).
 */
export default fp(async (fastify) => {
  const mode = fastify.config.zeroTrustMode
  if (mode === 'off') return
  const { access } = fastify.services
  const checkAdminOperation = async (request: FastifyRequest) => {
    const deviceId = request.headers['x-device-id']
    await access.screen(request.serviceContext, { ...(typeof deviceId === 'string' && { deviceId }), method: request.method, url: redactUrl(request.url) }, mode)
  }
  fastify.addHook('onRoute', (route) => {
    if (route.config?.adminOperation !== true) return
    prependPreHandler(route, checkAdminOperation)
  })
}, { name: 'zero-trust', dependencies: ['services', 'audit', 'authentication'] })
