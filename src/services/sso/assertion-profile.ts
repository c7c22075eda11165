import type { OrganizationRole } from '../../../schemas/organizations.js'
import type { SsoAttributeMapping } from '../../../schemas/sso.js'
import type { SamlAssertion } from '../../federation/saml.js'
import { isUserEmail } from '../../federation/providers.js'
import { IdpRefusal } from '../../federation/refusal.js'
import { rankOf } from '../../security/organization-permissions.js'
import { emailDomain } from '../../store/organization-domains.js'

/**
 * The attribute names the common IdPs send (docs/integration.md, "Enterprise sign-in"), looked
 * for in this order when a connection names none: Entra ID's and ADFS's claim URIs, Okta's and
 * Google Workspace's plain names, and the LDAP OIDs (urn:oid) of SimpleSAMLphp and Shibboleth.
 */
const DEFAULT_ATTRIBUTES = {
  email: ['email', 'mail', 'emailaddress', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress', 'urn:oid:0.9.2342.19200300.100.1.3'],
  name: ['displayName', 'name', 'http://schemas.microsoft.com/identity/claims/displayname', 'urn:oid:2.16.840.1.113730.3.1.241', 'cn'],
  givenName: ['firstName', 'givenName', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname', 'urn:oid:2.5.4.42'],
  surname: ['lastName', 'sn', 'surname', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname', 'urn:oid:2.5.4.4'],
  groups: ['groups', 'memberOf', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role', 'eduPersonAffiliation', 'urn:oid:1.3.6.1.4.1.5923.1.1.1.1']
} as const

const TRANSIENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient'

/** What the service takes from an assertion: who, at which address, named how, in which groups. */
export interface AssertedPerson {
  /** Stable across sign-ins: the NameID, or the address when the NameID is transient. */
  subject: string
  email: string
  name: string | null
  groups: string[]
}

function first (attributes: Record<string, string[]>, names: readonly string[]): string[] | undefined {
  for (const name of names) {
    const values = attributes[name]?.filter((value) => value !== '')
    if (values !== undefined && values.length > 0) return values
  }
  return undefined
}

/** The person an assertion names, through the connection's mapping; null when it gives no usable address. */
export function assertedPerson (assertion: SamlAssertion, mapping: SsoAttributeMapping): AssertedPerson | null {
  const { attributes } = assertion
  const named = (key: keyof SsoAttributeMapping, defaults: readonly string[]) =>
    first(attributes, mapping[key] === undefined ? defaults : [mapping[key]])
  const email = (named('email', DEFAULT_ATTRIBUTES.email)?.[0] ?? assertion.nameId).toLowerCase()
  if (!isUserEmail(email)) return null
  const whole = named('name', DEFAULT_ATTRIBUTES.name)?.[0]
  const parts = [DEFAULT_ATTRIBUTES.givenName, DEFAULT_ATTRIBUTES.surname]
    .map((names) => first(attributes, names)?.[0]).filter((part) => part !== undefined)
  return {
    subject: assertion.nameIdFormat === TRANSIENT || assertion.nameId === '' ? email : assertion.nameId,
    email,
    name: whole ?? (parts.length > 0 ? parts.join(' ') : null),
    groups: named('groups', DEFAULT_ATTRIBUTES.groups) ?? []
  }
}

/** The role a person's groups map to: the highest of those mapped, else the connection's default. */
export function mappedRole (
  groups: string[], roleMapping: Record<string, OrganizationRole>, defaultRole: OrganizationRole
): OrganizationRole {
  const roles = groups.flatMap((group) => {
    const role = Object.hasOwn(roleMapping, group) ? roleMapping[group] : undefined
    return role === undefined ? [] : [role]
  })
  return roles.reduce((highest, role) => rankOf(role) > rankOf(highest) ? role : highest, roles[0] ?? defaultRole)
}

/** A claim's strings: itself when a non-empty string, its non-empty strings when an array. */
function claimValues (value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value]
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string' && entry !== '') : []
}

/**
 * The person an OpenID provider's validated ID token names, through the connection's mapping
 * (else the standard claims `email` and `name`, given_name and family_name, and `groups`, as
 * Entra ID, Okta and Keycloak name them); null when it gives no usable address.
 */
export function claimedPerson (
  claims: Record<string, unknown> & { sub: string }, mapping: SsoAttributeMapping
): AssertedPerson | null {
  const named = (key: keyof SsoAttributeMapping, fallback: string) => claimValues(claims[mapping[key] ?? fallback])
  const email = named('email', 'email')[0]?.toLowerCase()
  if (email === undefined || !isUserEmail(email)) return null
  const parts = ['given_name', 'family_name'].flatMap((claim) => claimValues(claims[claim]).slice(0, 1))
  return {
    subject: claims.sub,
    email,
    name: named('name', 'name')[0] ?? (parts.length > 0 ? parts.join(' ') : null),
    groups: named('groups', 'groups')
  }
}

/**
 * Google's issuer, shared by every Google account: a Google Workspace account names its
 * organization's domain in `hd`, a consumer account (which may hold an address of any domain) none.
 */
const GOOGLE_ISSUER = 'https://accounts.google.com'

/**
 * The person an OpenID provider's claims name (claimedPerson), unless the provider itself says it
 * does not vouch for the address: refused (IdpRefusal) with the reason.
 */
export function openIdPerson (
  issuer: string, claims: Record<string, unknown> & { sub: string }, mapping: SsoAttributeMapping
): AssertedPerson {
  const person = claimedPerson(claims, mapping)
  if (person === null) throw new IdpRefusal('the ID token names no usable e-mail address')
  // Absent, the provider vouches as a SAML IdP does; false (or "false"), it says it does not.
  if (claims.email_verified === false || claims.email_verified === 'false') {
    throw new IdpRefusal('the provider says the address is not verified')
  }
  if (issuer === GOOGLE_ISSUER && claims.hd !== emailDomain(person.email)) {
    throw new IdpRefusal('a Google account outside the address\'s Google Workspace domain (hd)')
  }
  return person
}
