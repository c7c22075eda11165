import { parseArgs } from 'node:util'
import { ConfigError, configuredAlgorithm } from '../config/index.js'
import { type AsymmetricAlgorithm, generateKeyPair, JWT_ALGORITHMS, privateKey } from '../security/signing-keys.js'

/**
 * `npm run --silent keys:generate [-- --algorithm EdDSA|ES256|RS256]`: prints a new key pair as
 * PEM, the private key for JWT_PRIVATE_KEY(_FILE), the public one for JWT_PREVIOUS_KEYS after
 * the next rotation (docs/operations.md, "Signing keys"). Without `--algorithm`, the key is for
 * JWT_ALGORITHM when it is set, else EdDSA.
 */
const ASYMMETRIC = JWT_ALGORITHMS.filter((algorithm): algorithm is AsymmetricAlgorithm => algorithm !== 'HS256')

const USAGE = `Usage: npm run --silent keys:generate [-- --algorithm ${ASYMMETRIC.join('|')}] > signing.pem

Prints a new key pair as PEM on stdout, the private key then the public key: the file is a
JWT_PRIVATE_KEY_FILE, and its public key a JWT_PREVIOUS_KEYS entry for a rotation. The key's
kid goes to stderr. (--silent keeps npm's own lines out of the file.)

  --algorithm ALG   one of ${ASYMMETRIC.join(', ')} (default: JWT_ALGORITHM when it is one of
                    them, else EdDSA; HS256 signs with JWT_SECRET and needs no key pair)
  --help            this text
`

function fail (message: string): never {
  process.stderr.write(`${message}\n`)
  process.exit(2)
}

let values: { algorithm?: string, help?: boolean }
try {
  values = parseArgs({ options: { algorithm: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }).values
} catch (error) {
  // An unknown option or a missing value: the reason and the usage, not a stack trace.
  fail(`${(error as Error).message}\n\n${USAGE}`)
}
if (values.help === true) {
  process.stdout.write(USAGE)
  process.exit(0)
}
let requested: string
if (values.algorithm !== undefined) {
  requested = values.algorithm
} else {
  try {
    requested = configuredAlgorithm() ?? 'EdDSA'
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    fail(`${error.problems.join('; ')}; or pass --algorithm ${ASYMMETRIC.join('|')}`)
  }
  if (requested === 'HS256') fail(`JWT_ALGORITHM is HS256, which signs with JWT_SECRET and needs no key pair; pass --algorithm ${ASYMMETRIC.join('|')} for one`)
}
const algorithm = ASYMMETRIC.find((name) => name === requested)
if (algorithm === undefined) fail(`--algorithm must be one of ${ASYMMETRIC.join(', ')} (got "${requested}"); HS256 uses JWT_SECRET`)
const pair = generateKeyPair(algorithm)
const { kid } = privateKey(pair.privateKey, algorithm).verification
// The note goes to stderr, so stdout is only PEM and can be written to a file as it is.
process.stderr.write(`${algorithm} key pair, kid ${kid}\n`)
process.stdout.write(`${pair.privateKey}${pair.publicKey}`)
