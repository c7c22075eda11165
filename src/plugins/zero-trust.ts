import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Errors } from '../errors.js'
import { type AccessDecision, type AccessRequest, evaluateAccess, trustedNetworks } from '../security/zero-trust.js'
import { redactUrl } from '../security/redaction.js'
import { type AnomalyDetector, RecentSecurityEventsDetector } from '../services/anomalies.js'
import { prependPreHandler } from './route-hooks.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Spec 5.10 with the real device lookup and anomaly detector. */
    evaluateAccess: (input: AccessRequest) => Promise<AccessDecision>
  }
}

/**
 * Zero trust: the pure evaluator fed with the user's trusted devices and the anomaly
 * detector; and, for admin operations, ZERO_TRUST_MODE: `monitor` records each evaluation
 * in the audit log, `enforce` also refuses the ones not allowed (403 ACCESS_DENIED).
 */
export default fp(async (fastify) => {
  const { config, repositories } = fastify
  const networks = trustedNetworks(config.trustedNetworks)
  const detector: AnomalyDetector = new RecentSecurityEventsDetector(repositories.signInFailures, repositories.sessions)

  async function evaluate (input: AccessRequest): Promise<AccessDecision> {
    const userId = input.user_id
    const [deviceTrusted, anomalies] = userId === undefined
      ? [false, 0]
      : await Promise.all([
        input.device_id === undefined ? false : repositories.devices.isTrusted(userId, input.device_id),
        detector.count(userId, new Date())
      ])
    return evaluateAccess(input, { trustedNetworks: networks, deviceTrusted, anomalies })
  }
  fastify.decorate('evaluateAccess', evaluate)

  if (config.zeroTrustMode === 'off') return
  const enforce = config.zeroTrustMode === 'enforce'
  async function checkAdminOperation (request: FastifyRequest) {
    const deviceId = request.headers['x-device-id']
    const userAgent = request.headers['user-agent']
    const decision = await evaluate({
      client_ip: request.ip,
      ...(typeof deviceId === 'string' && { device_id: deviceId }),
      ...(userAgent !== undefined && { user_agent: userAgent }),
      ...(request.user !== null && { user_id: request.user.id })
    })
    request.audit('access.evaluated', {
      outcome: decision.allowed ? 'success' : 'failure',
      details: { mode: config.zeroTrustMode, method: request.method, url: redactUrl(request.url), ...decision }
    })
    if (enforce && !decision.allowed) throw new Errors.ACCESS_DENIED()
  }
  fastify.addHook('onRoute', (route) => {
    if (route.config?.adminOperation !== true) return
    prependPreHandler(route, checkAdminOperation)
  })
}, { name: 'zero-trust', dependencies: ['repositories', 'audit', 'authentication'] })
