import { X509Certificate } from 'node:crypto'
import { DOMParser } from '@xmldom/xmldom'
import xpath from 'xpath'

/** What the service needs of a SAML identity provider: who it is, where it signs people in, and its signing keys. */
export interface SamlIdentityProvider {
  entityId: string
  /** Its SingleSignOnService for the HTTP-Redirect binding (docs/integration.md, "SAML"). */
  ssoUrl: string
  /** Its signing certificates, DER in base64 (as metadata holds them). */
  certificates: string[]
}

const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect'
const METADATA_NAMESPACE = 'urn:oasis:names:tc:SAML:2.0:metadata'
const select = xpath.useNamespaces({
  md: METADATA_NAMESPACE,
  ds: 'http://www.w3.org/2000/09/xmldsig#'
})

/** Signing certificates a connection holds at most: the current one and the next (a rollover), with room to spare. */
export const MAX_SIGNING_CERTIFICATES = 5

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]']

/** Whether a URL names this machine (a service run for development). */
export function isLoopbackUrl (url: string): boolean {
  return URL.canParse(url) && LOOPBACK_HOSTS.includes(new URL(url).hostname)
}

/**
 * An IdP's sign-in URL, where the service sends browsers from its own origin: https without
 * credentials, or http to this machine when the service itself runs there (`loopbackHttp`: an
 * IdP run beside it in development), never to the machines of the people it sends.
 */
export function ssoUrlProblem (url: string, loopbackHttp: boolean): string | null {
  const parsed = URL.canParse(url) ? new URL(url) : null
  if (parsed === null || parsed.username !== '' || parsed.password !== '') return 'the identity provider\'s SingleSignOnService must be an https URL without credentials'
  if (parsed.protocol === 'https:') return null
  if (parsed.protocol === 'http:' && loopbackHttp && LOOPBACK_HOSTS.includes(parsed.hostname)) return null
  return 'the identity provider\'s SingleSignOnService must be an https URL without credentials'
}

/** An identity provider's metadata or certificate the service cannot use: the message says why. */
export class SamlMetadataError extends Error {}

/** A certificate as DER in base64, from PEM or bare base64; refused unless it parses as X.509. */
export function certificateBody (certificate: string): string {
  const body = certificate.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '')
  try {
    return new X509Certificate(Buffer.from(body, 'base64')).raw.toString('base64')
  } catch {
    throw new SamlMetadataError('a certificate is not an X.509 certificate in PEM or base64')
  }
}

/** The SHA-256 fingerprint of a certificate, as IdP consoles show it (upper-case hex pairs, colons). */
export function certificateFingerprint (body: string): string {
  return new X509Certificate(Buffer.from(body, 'base64')).fingerprint256
}

/** The document, or null unless it is well-formed XML (xmldom's errors, not only its warnings). */
export function wellFormed (xml: string): Document | null {
  let failed = false
  const document = new DOMParser({ errorHandler: (level) => { if (level !== 'warning') failed = true } }).parseFromString(xml, 'text/xml')
  return failed || document.documentElement === null ? null : document
}

/**
 * The first EntityDescriptor holding an IDPSSODescriptor, in one pass over the document: the
 * XPath `(//md:EntityDescriptor[md:IDPSSODescriptor])[1]` cost the square of the document's
 * size (20 s for 1 MB of empty descriptors, on the event loop).
 */
function firstIdentityProvider (document: Document): Element | undefined {
  const descriptors = document.getElementsByTagNameNS(METADATA_NAMESPACE, 'EntityDescriptor')
  for (let index = 0; index < descriptors.length; index++) {
    const descriptor = descriptors.item(index)
    if (descriptor === null) continue
    for (let child = descriptor.firstChild; child !== null; child = child.nextSibling) {
      const element = child as Element
      if (element.nodeType === element.ELEMENT_NODE && element.namespaceURI === METADATA_NAMESPACE &&
        element.localName === 'IDPSSODescriptor') return descriptor
    }
  }
  return undefined
}

/**
 * Reads an IdP's metadata (an EntityDescriptor, or the first IdP of an EntitiesDescriptor):
 * its entityID, its HTTP-Redirect SingleSignOnService and the certificates of its signing keys
 * (KeyDescriptors with `use="signing"` or no `use`); `loopbackHttp` as for `ssoUrlProblem`. The
 * metadata's own signature is not checked: an owner who pastes it vouches for it, as for the
 * certificate itself.
 */
export function readIdpMetadata (xml: string, loopbackHttp: boolean): SamlIdentityProvider {
  const document = wellFormed(xml)
  if (document === null) throw new SamlMetadataError('the metadata is not well-formed XML')
  const descriptor = firstIdentityProvider(document)
  if (descriptor === undefined) throw new SamlMetadataError('the metadata describes no identity provider (no IDPSSODescriptor)')
  const entityId = descriptor.getAttribute('entityID') ?? ''
  const sso = select(`md:IDPSSODescriptor/md:SingleSignOnService[@Binding='${REDIRECT_BINDING}']/@Location`, descriptor, true) as Attr | undefined
  const certificates = (select(
    "md:IDPSSODescriptor/md:KeyDescriptor[not(@use) or @use='signing']/ds:KeyInfo/ds:X509Data/ds:X509Certificate", descriptor
  ) as Element[]).map((element) => certificateBody(element.textContent ?? ''))
  if (entityId === '') throw new SamlMetadataError('the metadata has no entityID')
  if (sso === undefined) throw new SamlMetadataError('the identity provider has no SingleSignOnService for the HTTP-Redirect binding')
  const problem = ssoUrlProblem(sso.value, loopbackHttp)
  if (problem !== null) throw new SamlMetadataError(problem)
  if (certificates.length === 0) throw new SamlMetadataError('the identity provider has no signing certificate')
  const distinct = [...new Set(certificates)]
  // Each is tried in turn on every response: a long list would make one response cost minutes.
  if (distinct.length > MAX_SIGNING_CERTIFICATES) {
    throw new SamlMetadataError(`the identity provider lists more than ${MAX_SIGNING_CERTIFICATES} signing certificates`)
  }
  return { entityId, ssoUrl: sso.value, certificates: distinct }
}
