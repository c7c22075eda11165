import { randomBytes } from 'node:crypto'
import type { CacheProvider, SAML } from '@node-saml/node-saml'
import xpath from 'xpath'
import { type SamlIdentityProvider, wellFormed } from './saml-metadata.js'
import { IdpRefusal } from './refusal.js'

/** The service as a SAML service provider for one connection: its entity ID and its ACS. */
export interface SamlServiceProvider {
  entityId: string
  acsUrl: string
}

/** What a valid response's signed assertion says: what the service reads of it, and nothing from outside it. */
export interface SamlAssertion {
  id: string
  issuer: string
  nameId: string
  nameIdFormat: string | null
  /** When the assertion stops being valid (ms since the epoch): its ID is kept until then, against replay. */
  notOnOrAfter: number
  attributes: Record<string, string[]>
}

/** A SAML response the service refuses. */
export class SamlRefusal extends IdpRefusal {}

/** The clock skew accepted between the identity provider and the service (docs/security.md, "SAML"). */
export const SAML_CLOCK_SKEW_MS = 60_000

const NAMESPACES = { saml: 'urn:oasis:names:tc:SAML:2.0:assertion', samlp: 'urn:oasis:names:tc:SAML:2.0:protocol' }
const select = xpath.useNamespaces(NAMESPACES)
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer'

/**
 * node-saml's checks of InResponseTo ask its cache for the request ID: this one knows the
 * single request the flow made (null: none, an unsolicited response), and stores nothing.
 */
function oneRequest (requestId: string | null): CacheProvider {
  return {
    saveAsync: async () => null,
    getAsync: async (key) => key === requestId ? new Date().toISOString() : null,
    removeAsync: async () => null
  }
}

/**
 * node-saml is loaded when a SAML connection is first used, not at start, as oidc-provider and
 * the WebAuthn library are (docs/performance.md, "Start-up").
 */
async function samlFor (sp: SamlServiceProvider, idp: SamlIdentityProvider, requestId: string | null): Promise<SAML> {
  const { SAML, ValidateInResponseTo } = await import('@node-saml/node-saml')
  return new SAML({
    entryPoint: idp.ssoUrl,
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    audience: sp.entityId,
    idpIssuer: idp.entityId,
    idpCert: idp.certificates.map((body) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----`),
    // The IdP chooses the NameID format it was set up with: asking for one some refuse breaks sign-in.
    identifierFormat: null,
    // Signed assertions, whether or not the response around them is signed (Entra ID signs only the assertion).
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    validateInResponseTo: ValidateInResponseTo.always,
    cacheProvider: oneRequest(requestId),
    acceptedClockSkewMs: SAML_CLOCK_SKEW_MS,
    disableRequestedAuthnContext: true,
    generateUniqueId: () => requestId ?? `_${randomBytes(20).toString('hex')}`
  })
}

/** An AuthnRequest for the HTTP-Redirect binding: the IdP's URL to send the browser to, and the request's ID. */
export async function authnRequestUrl (
  sp: SamlServiceProvider, idp: SamlIdentityProvider, relayState: string
): Promise<{ url: string, requestId: string }> {
  const requestId = `_${randomBytes(20).toString('hex')}`
  const url = await (await samlFor(sp, idp, requestId)).getAuthorizeUrlAsync(relayState, undefined, {})
  return { url, requestId }
}

/** The service provider's metadata, for the IdP's administrator: its entity ID, ACS, and signed assertions wanted. */
export async function serviceProviderMetadata (sp: SamlServiceProvider, idp: SamlIdentityProvider): Promise<string> {
  return (await samlFor(sp, idp, null)).generateServiceProviderMetadata(null, null)
}

function parse (xml: string): Document {
  const document = wellFormed(xml)
  if (document === null) throw new SamlRefusal('the response is not well-formed XML')
  return document
}

/**
 * Bounds on a response's shape, far above any IdP's (a few namespaces, a dozen levels, some 400
 * elements for Entra ID's 150 groups): the check costs about 0.1 ms per element and certificate.
 */
const MAX_NAMESPACE_DECLARATIONS = 50
const MAX_DEPTH = 32
const MAX_ELEMENTS = 1000

/**
 * Refuses a response whose shape would make its signature check dear (canonicalization walks
 * every namespace in scope of every element, and runs synchronously): deep nesting and many
 * namespace declarations, and many elements, counted in one pass over the text before any
 * parser sees it (docs/security.md, "SAML").
 */
function assertBoundedShape (xml: string): void {
  if ((xml.match(/\sxmlns(?::[^\s=]+)?\s*=/g)?.length ?? 0) > MAX_NAMESPACE_DECLARATIONS) {
    throw new SamlRefusal('the response declares more namespaces than any IdP sends')
  }
  let depth = 0
  let elements = 0
  for (const [, closing, selfClosing] of xml.matchAll(/<(\/?)[A-Za-z_][^>]*?(\/?)>/g)) {
    if (closing === '/') {
      depth -= 1
      continue
    }
    elements += 1
    if (selfClosing !== '/') depth += 1
    if (depth > MAX_DEPTH) throw new SamlRefusal('the response nests elements deeper than any IdP does')
    if (elements > MAX_ELEMENTS) throw new SamlRefusal('the response holds more elements than any IdP sends')
  }
}

/**
 * Validates a response to the request `requestId` made (null: none), as posted to the ACS:
 * node-saml (on xml-crypto) checks the assertion's signature against the IdP's certificates,
 * the issuer, the audience, the time conditions with a small skew, and InResponseTo; then
 * this reads the signed assertion alone, as canonicalized for its signature (never the bytes
 * around it, and no comment: one inside a NameID cannot cut what is read), and checks what node-saml
 * leaves: the Issuer, a bearer confirmation whose Recipient is the ACS and whose InResponseTo is
 * the request's (both signed), and, when the response names one, a Destination that is the ACS
 * (docs/security.md, "SAML").
 */
export async function validateResponse (
  sp: SamlServiceProvider, idp: SamlIdentityProvider, samlResponse: string, requestId: string | null
): Promise<SamlAssertion> {
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8')
  assertBoundedShape(xml)
  const saml = await samlFor(sp, idp, requestId)
  let profile
  try {
    ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse }))
  } catch (error) {
    throw new SamlRefusal(error instanceof Error ? error.message : String(error))
  }
  if (profile === null) throw new SamlRefusal('the response holds no assertion')
  const destination = parse(xml).documentElement?.getAttribute('Destination') ?? ''
  if (destination !== '' && destination !== sp.acsUrl) throw new SamlRefusal('the response\'s Destination is not this ACS')
  const signed = profile.getAssertionXml?.()
  const assertion = signed === undefined ? null : parse(signed).documentElement
  if (assertion === null) throw new SamlRefusal('the response holds no signed assertion')
  // node-saml reads the Issuer but checks it only on logout messages.
  if (profile.issuer !== idp.entityId) throw new SamlRefusal('the assertion\'s Issuer is not the connection\'s IdP')
  const confirmations = select(`saml:Subject/saml:SubjectConfirmation[@Method='${BEARER}']/saml:SubjectConfirmationData`, assertion) as Element[]
  if (!confirmations.some((data) => data.getAttribute('Recipient') === sp.acsUrl)) {
    throw new SamlRefusal('no bearer confirmation of the assertion names this ACS as its Recipient')
  }
  // The Response's InResponseTo, which node-saml checks, is outside the signature: the signed
  // confirmation must answer the request too, or an IdP-initiated assertion could be rewrapped.
  if (!confirmations.some((data) => data.getAttribute('Recipient') === sp.acsUrl && data.getAttribute('InResponseTo') === requestId)) {
    throw new SamlRefusal('no bearer confirmation of the assertion answers this sign-in\'s request')
  }
  const nameIdElement = select('saml:Subject/saml:NameID', assertion, true) as Element | undefined
  if (nameIdElement === undefined) throw new SamlRefusal('the assertion has no NameID')
  const nameId = nameIdElement.textContent?.trim() ?? ''
  const attributes: Record<string, string[]> = {}
  for (const attribute of select('saml:AttributeStatement/saml:Attribute', assertion) as Element[]) {
    const name = attribute.getAttribute('Name') ?? ''
    attributes[name] = (select('saml:AttributeValue', attribute) as Element[]).map((value) => value.textContent?.trim() ?? '')
  }
  const notOnOrAfter = Math.min(...[
    (select('saml:Conditions/@NotOnOrAfter', assertion, true) as Attr | undefined)?.value,
    ...confirmations.map((data) => data.getAttribute('NotOnOrAfter') ?? undefined)
  ].filter((value) => value !== undefined).map((value) => Date.parse(value)).filter(Number.isFinite))
  const id = assertion.getAttribute('ID') ?? ''
  if (id === '') throw new SamlRefusal('the assertion has no ID')
  if (!Number.isFinite(notOnOrAfter)) throw new SamlRefusal('the assertion does not say when it expires')
  return { id, issuer: profile.issuer, nameId, nameIdFormat: nameIdElement.getAttribute('Format'), notOnOrAfter, attributes }
}
