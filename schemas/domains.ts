import { type Static, Type } from '@sinclair/typebox'
import { CollectionEnvelope, ListItem } from './collection.js'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'

/**
 * How a claimed domain was verified (docs/api.md, "Verified domains"): by the TXT record its
 * claimant published, or by an operator who checked otherwise.
 */
export const DOMAIN_VERIFICATION_METHODS = ['dns', 'operator'] as const
export type DomainVerificationMethod = typeof DOMAIN_VERIFICATION_METHODS[number]

/** Where the proof of a claim is published: `<prefix>.<domain>`, holding `<value prefix><token>`. */
export const DOMAIN_CHALLENGE_PREFIX = '_users-api-challenge'
export const DOMAIN_CHALLENGE_VALUE_PREFIX = 'users-api-domain-verification='

/**
 * An e-mail domain in ASCII (an internationalized one in its xn-- form), two labels at least,
 * each a DNS label; any case, stored in lower case.
 */
export const DomainNameSchema = Type.String({
  minLength: 3,
  maxLength: 253,
  pattern: '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$',
  examples: ['acme.com'],
  description: 'An e-mail domain, in ASCII (xn-- form for an internationalized one)'
})

export const OrganizationDomainSchema = Type.Object({
  id: IdSchema,
  domain: Type.String({ description: 'Lower case' }),
  verified_at: Type.Union([TimestampSchema, Type.Null()], { description: 'Null while the claim waits for its proof' }),
  verified_by: Type.Union([
    Type.Unsafe<DomainVerificationMethod>(Type.String({ enum: [...DOMAIN_VERIFICATION_METHODS] })), Type.Null()
  ], {
    description: '`dns`: the TXT record was found; `operator`: a super_admin verified it'
  }),
  sso_required: Type.Boolean({
    description: 'While verified: its addresses sign in through the organization\'s identity provider only, never with a password'
  }),
  txt_record_name: Type.String({ description: 'Where to publish the TXT record that proves the claim', examples: [`${DOMAIN_CHALLENGE_PREFIX}.acme.com`] }),
  txt_record_value: Type.String({ description: 'The TXT record\'s value', examples: [`${DOMAIN_CHALLENGE_VALUE_PREFIX}3q2-7wE…`] }),
  created_at: TimestampSchema
}, { title: 'OrganizationDomain' })
export type OrganizationDomain = Static<typeof OrganizationDomainSchema>

export const DomainClaimSchema = Type.Object({ domain: DomainNameSchema }, { additionalProperties: false })
export type DomainClaim = Static<typeof DomainClaimSchema>

export const DomainVerificationSchema = Type.Object({
  method: Type.Optional(Type.Unsafe<DomainVerificationMethod>(Type.String({
    enum: [...DOMAIN_VERIFICATION_METHODS],
    default: 'dns',
    description: '`dns` (default): look up the TXT record now; `operator`: verified without DNS, by a super_admin only'
  })))
}, { additionalProperties: false })
export type DomainVerification = Static<typeof DomainVerificationSchema>

export const DomainUpdateSchema = Type.Object({
  sso_required: Type.Boolean({ description: 'Sign-in with a password refused for the domain\'s addresses while it is verified' })
}, { additionalProperties: false })
export type DomainUpdate = Static<typeof DomainUpdateSchema>

export const DomainParamsSchema = Type.Object({ id: IdSchema, domainId: IdSchema }, { additionalProperties: false })

export const DOMAIN_FIELDS = {
  sortable: ['domain', 'created_at'],
  selectable: ['domain', 'verified_at', 'verified_by', 'sso_required', 'txt_record_name', 'txt_record_value', 'created_at'],
  searchIn: null
} as const

export const OrganizationDomainResponseSchema = DataEnvelope(OrganizationDomainSchema)
export const OrganizationDomainCollectionSchema = CollectionEnvelope(ListItem(OrganizationDomainSchema, 'OrganizationDomainListItem'))
