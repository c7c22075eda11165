import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope, TimestampSchema } from './common.js'

/** How far the overview's counts go: each reads at most this many index entries (docs/api.md, "Overview"). */
export const OVERVIEW_COUNT_CAP = 10_000

function count (description: string) {
  return Type.Integer({ minimum: 0, maximum: OVERVIEW_COUNT_CAP, description: `${description}; counted up to 10,000 (10000: at least that many)` })
}

/** What an operator checks first (docs/api.md, "Overview"). */
export const OverviewSchema = Type.Object({
  at: TimestampSchema,
  since: Type.String({ format: 'date-time', description: 'The start of the last day, which the sign-in counts cover' }),
  sign_ins: Type.Object({
    succeeded: count('Sign-ins since `since` (audit events auth.login and auth.oauth_login)'),
    failed: count('Refused passwords and sign-in codes since `since` (auth.login_failed)'),
    second_factor_failed: count('Refused second factors since `since` (auth.mfa_failed)')
  }),
  locked_accounts: count('Accounts under a brute-force lockout now, for every address or for one'),
  webhooks: Type.Union([Type.Object({
    endpoints_disabled: Type.Integer({ minimum: 0, description: 'Endpoints the service disabled for failing' }),
    endpoints_retrying: count('Endpoints with a delivery waiting for a retry after a failed try (among the first 10,000 such deliveries)'),
    deliveries_retrying: count('Deliveries waiting for a retry after a failed try'),
    deliveries_overdue: count('Deliveries due and not sent yet')
  }), Type.Null()], { description: 'The webhooks\' health; null unless the caller holds `admin`' }),
  outbox: Type.Union([Type.Object({
    overdue: count('Messages (e-mail, SMS) due and not delivered yet'),
    due_since: Type.Union([TimestampSchema, Type.Null()], { description: 'When the earliest of them fell due; null when none is' })
  }), Type.Null()], { description: 'The outbox\'s backlog; null unless the caller holds `admin`' })
}, { title: 'Overview' })
export type Overview = Static<typeof OverviewSchema>

export const OverviewResponseSchema = DataEnvelope(OverviewSchema)
