import type { BlockList } from 'node:net'
import type { AccessCheckBody } from '../../../schemas/zero-trust.js'
import { Errors } from '../../errors.js'
import { type AccessDecision, evaluateAccess } from '../../security/zero-trust.js'
import { authorize } from '../../security/permissions.js'
import type { DevicesRepository } from '../../store/devices.js'
import type { AnomalyDetector, AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'

export interface AccessServiceDependencies {
  devices: DevicesRepository
  detector: AnomalyDetector
  trustedNetworks: BlockList
  audit: AuditTrail
}

/**
 * Zero trust (docs/api.md, "Zero-trust access check"): the pure evaluator
 * fed with the user's trusted devices and the anomaly detector.
 */
export class AccessService {
  constructor (private readonly deps: AccessServiceDependencies) {}

  async evaluate (input: AccessCheckBody): Promise<AccessDecision> {
    const { devices, detector, trustedNetworks } = this.deps
    const userId = input.user_id
    const [deviceTrusted, anomalies] = userId === undefined
      ? [false, 0]
      : await Promise.all([
        input.device_id === undefined ? false : devices.isTrusted(userId, input.device_id),
        detector.count(userId, new Date())
      ])
    return evaluateAccess(input, { trustedNetworks, deviceTrusted, anomalies })
  }

  /** The access-check endpoint: a user's devices and recent security events are theirs to probe, or a manager's. */
  async check (context: RequestContext, input: AccessCheckBody): Promise<AccessDecision> {
    const caller = callerOf(context)
    // Another user's devices and events: a manager's to probe (the route admits every reader).
    if (input.user_id !== undefined && input.user_id !== caller.id) authorize(caller, 'manage_users')
    const decision = await this.evaluate(input)
    await this.deps.audit.recordIn(context, 'access.evaluated', {
      outcome: decision.allowed ? 'success' : 'failure',
      targetId: input.user_id ?? null,
      details: { source: 'access-check', ...decision }
    })
    return decision
  }

  /**
   * An admin operation screened by the caller's device, address, user agent and recent
   * events: the evaluation is audited with the mode; `enforce` refuses one not allowed (403).
   */
  async screen (context: RequestContext, operation: { deviceId?: string, method: string, url: string }, mode: 'monitor' | 'enforce'): Promise<void> {
    const decision = await this.evaluate({
      client_ip: context.ip,
      ...(operation.deviceId !== undefined && { device_id: operation.deviceId }),
      ...(context.userAgent !== null && { user_agent: context.userAgent }),
      ...(context.caller !== null && { user_id: context.caller.id })
    })
    await this.deps.audit.recordIn(context, 'access.evaluated', {
      outcome: decision.allowed ? 'success' : 'failure',
      details: { mode, method: operation.method, url: operation.url, ...decision }
    })
    if (mode === 'enforce' && !decision.allowed) throw new Errors.ACCESS_DENIED()
  }
}
