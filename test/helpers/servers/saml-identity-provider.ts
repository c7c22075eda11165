/**
 * An identity provider in the test's process (samlify's IdP role), with its own key and
 * certificate: it answers the service's AuthnRequests with signed responses the test shapes
 * (audience, recipient, destination, times, InResponseTo, NameID, attributes), and gives the
 * raw XML for the attacks no honest IdP makes (an unsigned assertion, signature wrapping).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inflateRawSync } from 'node:zlib'
import samlify from 'samlify'

// samlify checks the XML it reads against the SAML schemas only through a validator one
// installs; this IdP reads nothing but the requests of the service under test.
samlify.setSchemaValidator({ validate: async () => 'skipped' })

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'

/** A self-signed RSA key pair, as an IdP signs with: PEM key and certificate. */
export function signingKeyPair (): { key: string, certificate: string } {
  const home = mkdtempSync(join(tmpdir(), 'saml-key-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=idp.test',
      '-keyout', join(home, 'key.pem'), '-out', join(home, 'cert.pem')], { stdio: 'ignore' })
    return { key: readFileSync(join(home, 'key.pem'), 'utf8'), certificate: readFileSync(join(home, 'cert.pem'), 'utf8') }
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

/** What a response says; each field defaults to what an honest IdP answering the request would send. */
export interface ResponseShape {
  nameId: string
  attributes?: Record<string, string[]>
  inResponseTo?: string
  audience?: string
  recipient?: string
  destination?: string
  issuer?: string
  /** Seconds from now: the assertion's validity (default -30 s to 5 min). */
  notBefore?: number
  notOnOrAfter?: number
  /** The assertion's ID (a fresh one by default). */
  assertionId?: string
  /** Raw XML for the NameID element's content (a comment inside, say), instead of `nameId` escaped. */
  nameIdXml?: string
}

const escape = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** The AuthnRequest of a redirect to the IdP: its ID and the RelayState to send back. */
export function authnRequestOf (location: string): { id: string, relayState: string, acsUrl: string | null } {
  const url = new URL(location)
  const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8')
  return {
    id: /\sID="([^"]+)"/.exec(xml)?.[1] ?? '',
    relayState: url.searchParams.get('RelayState') ?? '',
    acsUrl: /AssertionConsumerServiceURL="([^"]+)"/.exec(xml)?.[1] ?? null
  }
}

export class TestIdentityProvider {
  readonly entityId = `https://idp-${randomBytes(4).toString('hex')}.test/saml`
  readonly ssoUrl = 'https://idp.test/sso'
  readonly #keys = signingKeyPair()
  readonly #idp = samlify.IdentityProvider({
    entityID: this.entityId,
    privateKey: this.#keys.key,
    signingCert: this.#keys.certificate,
    nameIDFormat: [EMAIL_FORMAT],
    singleSignOnService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: this.ssoUrl }],
    singleLogoutService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${this.ssoUrl}/logout` }]
  })

  get certificate (): string { return this.#keys.certificate }

  /** The IdP's metadata, as an owner pastes it into a connection. */
  metadata (): string { return this.#idp.getMetadata() }

  /**
   * A response to the service provider of `spMetadata` (its entity ID and ACS), its assertion
   * signed as the metadata asks (WantAssertionsSigned): the SAMLResponse form field, base64.
   */
  async respond (spMetadata: string, shape: ResponseShape): Promise<string> {
    const sp = samlify.ServiceProvider({ metadata: spMetadata })
    const acs = sp.entityMeta.getAssertionConsumerService('post') as string
    const now = Date.now()
    const at = (seconds: number) => new Date(now + seconds * 1000).toISOString()
    const attributes = Object.entries(shape.attributes ?? {}).map(([name, values]) =>
      `<saml:Attribute Name="${escape(name)}">${values.map((value) => `<saml:AttributeValue>${escape(value)}</saml:AttributeValue>`).join('')}</saml:Attribute>`)
    const values = {
      ID: `_${randomBytes(16).toString('hex')}`,
      AssertionID: shape.assertionId ?? `_${randomBytes(16).toString('hex')}`,
      IssueInstant: at(0),
      Destination: shape.destination ?? acs,
      InResponseTo: shape.inResponseTo ?? '',
      Issuer: shape.issuer ?? this.entityId,
      StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
      NameIDFormat: EMAIL_FORMAT,
      NameID: shape.nameIdXml ?? escape(shape.nameId),
      SubjectConfirmationDataNotOnOrAfter: at(shape.notOnOrAfter ?? 300),
      SubjectRecipient: shape.recipient ?? acs,
      ConditionsNotBefore: at(shape.notBefore ?? -30),
      ConditionsNotOnOrAfter: at(shape.notOnOrAfter ?? 300),
      Audience: shape.audience ?? sp.entityMeta.getEntityID(),
      AuthnStatement: `<saml:AuthnStatement AuthnInstant="${at(0)}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`,
      AttributeStatement: attributes.length === 0 ? '' : `<saml:AttributeStatement>${attributes.join('')}</saml:AttributeStatement>`
    }
    const { context } = await this.#idp.createLoginResponse(sp, { extract: {} } as never, 'post', {}, (template: string) => ({
      id: values.ID,
      context: template.replace(/\{(\w+)\}/g, (tag, name: string) => Object.hasOwn(values, name) ? values[name as keyof typeof values] : tag)
    }))
    return context
  }
}

/** A response's XML, to edit for an attack, and back. */
export const decoded = (samlResponse: string) => Buffer.from(samlResponse, 'base64').toString('utf8')
export const encoded = (xml: string) => Buffer.from(xml, 'utf8').toString('base64')
