import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto'

/**
 * A software WebAuthn authenticator for the tests: ES256 keys from node:crypto, attestation
 * `none` or `packed` (self attestation, signed with the credential's own key), and assertions
 * signed with the credential's key, encoded as a browser's `PublicKeyCredential.toJSON()`.
 * Every part a test may want wrong (origin, RP ID, counter, user verification) is a parameter.
 */

type Cbor = number | Buffer | string | Cbor[] | Map<number | string, Cbor>

/** CBOR for the types WebAuthn uses, each length in its shortest form; map entries in the order given. */
function cbor (value: Cbor): Buffer {
  const head = (major: number, length: number): Buffer => {
    if (length < 24) return Buffer.from([(major << 5) | length])
    if (length < 0x100) return Buffer.from([(major << 5) | 24, length])
    if (length < 0x10000) return Buffer.from([(major << 5) | 25, length >> 8, length & 0xff])
    const bytes = Buffer.alloc(5)
    bytes[0] = (major << 5) | 26
    bytes.writeUInt32BE(length, 1)
    return bytes
  }
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value])
  if (typeof value === 'string') {
    const text = Buffer.from(value, 'utf8')
    return Buffer.concat([head(3, text.length), text])
  }
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(cbor)])
  return Buffer.concat([head(5, value.size), ...[...value].flatMap(([key, item]) => [cbor(key), cbor(item)])])
}

const FLAG_USER_PRESENT = 0x01
const FLAG_USER_VERIFIED = 0x04
const FLAG_ATTESTED_CREDENTIAL = 0x40
/** COSE algorithm ES256. */
const ES256 = -7

export interface Credential {
  id: Buffer
  privateKey: KeyObject
  publicKey: KeyObject
  /** The user handle the registration options gave (base64url). */
  userHandle: string
  counter: number
}

export interface CeremonyOptions {
  origin?: string
  rpId?: string
  userVerified?: boolean
}

export interface RegistrationCredentialJSON {
  id: string
  rawId: string
  type: 'public-key'
  clientExtensionResults: Record<string, unknown>
  authenticatorAttachment?: 'platform' | 'cross-platform'
  response: { clientDataJSON: string, attestationObject: string, transports?: string[] }
}

export interface AuthenticationCredentialJSON {
  id: string
  rawId: string
  type: 'public-key'
  clientExtensionResults: Record<string, unknown>
  authenticatorAttachment?: 'platform' | 'cross-platform'
  response: { clientDataJSON: string, authenticatorData: string, signature: string, userHandle?: string }
}

function coseKey (publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' })
  return cbor(new Map<number, Cbor>([[1, 2], [3, ES256], [-1, 1], [-2, Buffer.from(jwk.x ?? '', 'base64url')], [-3, Buffer.from(jwk.y ?? '', 'base64url')]]))
}

function clientData (type: 'webauthn.create' | 'webauthn.get', challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
}

/** What a browser's PublicKeyCredential says of itself, besides its response. */
function publicKeyCredential (credential: Credential) {
  return { id: credential.id.toString('base64url'), rawId: credential.id.toString('base64url'), type: 'public-key' as const, clientExtensionResults: {}, authenticatorAttachment: 'platform' as const }
}

export class SoftwareAuthenticator {
  readonly credentials: Credential[] = []

  constructor (readonly defaults: { origin: string, rpId: string } = { origin: 'http://localhost:3000', rpId: 'localhost' }) {}

  #authData (rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4)
    count.writeUInt32BE(counter)
    return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), count, ...(attested === undefined ? [] : [attested])])
  }

  /** Answers registration options (as from the service) with a new credential. */
  register (options: { challenge: string, user: { id: string } }, { attestation = 'none', ...ceremony }: CeremonyOptions & { attestation?: 'none' | 'packed' } = {}): RegistrationCredentialJSON {
    const { origin = this.defaults.origin, rpId = this.defaults.rpId, userVerified = true } = ceremony
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const credential: Credential = {
      id: randomBytes(32),
      privateKey,
      publicKey,
      userHandle: options.user.id,
      counter: 0
    }
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(credential.id.length)
    const attested = Buffer.concat([Buffer.alloc(16), idLength, credential.id, coseKey(publicKey)])
    const authData = this.#authData(
      rpId,
      FLAG_USER_PRESENT | (userVerified ? FLAG_USER_VERIFIED : 0) | FLAG_ATTESTED_CREDENTIAL,
      credential.counter,
      attested
    )
    const clientDataJSON = clientData('webauthn.create', options.challenge, origin)
    const attStmt = attestation === 'none'
      ? new Map<string, Cbor>()
      : new Map<string, Cbor>([['alg', ES256], ['sig', sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]), privateKey)]])
    const attestationObject = cbor(new Map<string, Cbor>([['fmt', attestation], ['attStmt', attStmt], ['authData', authData]]))
    this.credentials.push(credential)
    return {
      ...publicKeyCredential(credential),
      response: { clientDataJSON: clientDataJSON.toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['internal'] }
    }
  }

  /**
   * Answers authentication options with a credential (the first allowed one this authenticator
   * holds, or `credential`): the counter goes up by one unless `counter` says what to send.
   */
  assert (
    options: { challenge: string, allowCredentials?: Array<{ id: string }> },
    ceremony: CeremonyOptions & { credential?: Credential, counter?: number } = {}
  ): AuthenticationCredentialJSON {
    const { origin = this.defaults.origin, rpId = this.defaults.rpId, userVerified = true } = ceremony
    const allowed = new Set((options.allowCredentials ?? []).map((allow) => allow.id))
    const credential = ceremony.credential ?? this.credentials.find((held) => allowed.size === 0 || allowed.has(held.id.toString('base64url')))
    if (credential === undefined) throw new Error('the authenticator holds none of the allowed credentials')
    credential.counter = ceremony.counter ?? credential.counter + 1
    const authData = this.#authData(
      rpId,
      FLAG_USER_PRESENT | (userVerified ? FLAG_USER_VERIFIED : 0),
      credential.counter
    )
    const clientDataJSON = clientData('webauthn.get', options.challenge, origin)
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]), credential.privateKey)
    return {
      ...publicKeyCredential(credential),
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        userHandle: credential.userHandle
      }
    }
  }
}
