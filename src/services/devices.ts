import { DEVICE_FIELDS, type DeviceBody } from '../../schemas/security.js'
import type { CursorCodec } from '../collection/cursor.js'
import { collectionPage } from '../collection/envelope.js'
import type { CollectionQueryInput } from '../collection/query.js'
import { Errors } from '../errors.js'
import type { DevicesRepository } from '../store/devices.js'
import type { UsersRepository } from '../store/users.js'
import type { AuditTrail } from './audit-trail.js'
import type { RequestContext } from './context.js'

export interface DeviceServiceDependencies {
  devices: DevicesRepository
  users: UsersRepository
  audit: AuditTrail
  cursors: CursorCodec
}

/** A user's trusted devices, at most five (docs/api.md, "Trusted devices"): what zero trust counts as known. */
export class DeviceService {
  constructor (private readonly deps: DeviceServiceDependencies) {}

  async list (userId: string, query: CollectionQueryInput) {
    await this.#assertUser(userId)
    return await collectionPage(query, { ...DEVICE_FIELDS, defaultSort: [{ field: 'created_at', descending: false }] }, this.deps.cursors,
      async (request) => await this.deps.devices.list(userId, request))
  }

  /** Trusts a device; the sixth is refused (409). */
  async add (context: RequestContext, userId: string, { device_id: deviceId, name }: DeviceBody) {
    await this.#assertUser(userId)
    return await this.deps.audit.recordChange(context, async (trx) => await this.deps.devices.add(userId, deviceId, name, trx),
      (device) => [{ event: 'device.added', outcome: 'success', targetId: userId, details: { device_id: device.device_id, name: device.name } }])
  }

  /** Stops trusting a device, named by its record id or its device_id. */
  async remove (context: RequestContext, userId: string, deviceId: string): Promise<void> {
    const removed = await this.deps.audit.recorded(context, [{ event: 'device.removed', outcome: 'success', targetId: userId, details: { device: deviceId } }])(
      async (trx) => await this.deps.devices.remove(userId, deviceId, trx), (result) => result)
    if (!removed) throw new Errors.NOT_FOUND('Device')
  }

  async #assertUser (id: string): Promise<void> {
    if (await this.deps.users.findById(id) === undefined) throw new Errors.NOT_FOUND('User')
  }
}
