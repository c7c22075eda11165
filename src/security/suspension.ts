import type { Suspension } from '../../schemas/suspension.js'
import { Errors } from '../errors.js'

/** How a suspended account's sign-in is refused: with the end, or saying an administrator must lift it. */
export function suspendedError (suspension: Pick<Suspension, 'until'>): Error {
  return new Errors.ACCOUNT_SUSPENDED(suspension.until ?? 'an administrator lifts it')
}

/** The principal's suspension if it is in force at `now`: one past its end is none. */
export function suspensionInForce (
  principal: { suspension: Pick<Suspension, 'until'> | null },
  now: number
): Pick<Suspension, 'until'> | undefined {
  const { suspension } = principal
  if (suspension === null) return undefined
  return suspension.until !== null && Date.parse(suspension.until) <= now ? undefined : suspension
}
