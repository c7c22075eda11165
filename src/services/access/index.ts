import { trustedNetworks } from '../../security/zero-trust.js'
import { RecentSecurityEventsDetector } from '../audit/index.js'
import type { ServiceDependencies } from '../dependencies.js'
import { AccessService } from './access.js'
import { DeviceService } from './devices.js'

/** Zero trust: the access decision for each request, and the trusted devices it weighs. */
export function accessServices ({ config, repositories, audit, cursors }: ServiceDependencies) {
  return {
    devices: new DeviceService({ devices: repositories.devices, users: repositories.users, audit, cursors }),
    access: new AccessService({
      devices: repositories.devices,
      detector: new RecentSecurityEventsDetector(repositories.signInFailures, repositories.sessions),
      trustedNetworks: trustedNetworks(config.trustedNetworks),
      audit
    })
  }
}
