import { DEVICE_FIELDS, type DeviceBody } from '../../../schemas/devices.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, rethrowServiceError } from '../../errors.js'
import type { DevicesRepository } from '../../store/devices.js'
import type { UsersRepository } from '../../store/users.js'
import { assertMayManage } from '../accounts/index.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'

export interface DeviceServiceDependencies {
  devices: DevicesRepository
  users: UsersRepository
  audit: AuditTrail
  cursors: CursorCodec
}

/**
 * A user's trusted devices, at most five (docs/api.md, "Trusted devices"): what zero trust
 * counts as known. `caller` acts on its own devices, or on another account's as one holding
 * `manage_users`.
 */
export class DeviceService {
  constructor (private readonly deps: DeviceServiceDependencies) {}

  async list (context: RequestContext, userId: string, query: CollectionQueryInput) {
    const caller = callerOf(context)
    await assertMayManage(this.deps.users, caller, userId)
    return await collectionPage(query, { ...DEVICE_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `devices:${userId}:${caller.id}` }, this.deps.cursors,
      async (request) => await this.deps.devices.list(userId, request))
  }

  /** Trusts a device; the sixth is refused (409). */
  async add (context: RequestContext, userId: string, { device_id: deviceId, name }: DeviceBody) {
    // A trusted device passes the zero-trust check: it outlives a key or an impersonation.
    const caller = holderOf(context, 'trusting a device')
    await assertMayManage(this.deps.users, caller, userId)
    return await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.devices.add(userId, deviceId, name, trx).catch(rethrowServiceError),
      (device) => [{ event: 'device.added', outcome: 'success', targetId: userId, details: { device_id: device.device_id, name: device.name } }])
  }

  /** Stops trusting a device, named by its record id or its device_id. */
  async remove (context: RequestContext, userId: string, deviceId: string): Promise<void> {
    const caller = callerOf(context)
    await assertMayManage(this.deps.users, caller, userId)
    const removed = await this.deps.audit.recorded(context, [{ event: 'device.removed', outcome: 'success', targetId: userId, details: { device: deviceId } }])(
      async (trx) => await this.deps.devices.remove(userId, deviceId, trx), (result) => result)
    if (!removed) throw new Errors.NOT_FOUND('Device')
  }
}
