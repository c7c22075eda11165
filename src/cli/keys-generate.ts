import { parseArgs } from 'node:util'
import { type AsymmetricAlgorithm, generateKeyPair, JWT_ALGORITHMS, privateKey } from '../security/signing-keys.js'

/**
 * `npm run keys:generate -- --algorithm EdDSA|ES256|RS256`: prints a new key pair as PEM, the
 * private key for JWT_PRIVATE_KEY(_FILE), the public one for JWT_PREVIOUS_KEYS after the
 * next rotation (docs/operations.md, "Signing keys").
 */
const ASYMMETRIC = JWT_ALGORITHMS.filter((algorithm): algorithm is AsymmetricAlgorithm => algorithm !== 'HS256')
const { values } = parseArgs({ options: { algorithm: { type: 'string', default: 'EdDSA' } } })
const algorithm = ASYMMETRIC.find((name) => name === values.algorithm)
if (algorithm === undefined) {
  process.stderr.write(`--algorithm must be one of ${ASYMMETRIC.join(', ')} (got "${values.algorithm ?? ''}"); HS256 uses JWT_SECRET\n`)
  process.exit(2)
}
const pair = generateKeyPair(algorithm)
const { kid } = privateKey(pair.privateKey, algorithm).verification
// The note goes to stderr, so stdout is only PEM and can be written to a file as it is.
process.stderr.write(`${algorithm} key pair, kid ${kid}\n`)
process.stdout.write(`${pair.privateKey}${pair.publicKey}`)
