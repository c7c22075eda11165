import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/index.js'
import { type CommandRun, runCli } from '../helpers/process.js'

/** `npm run keys:generate` as an operator runs it, with JWT_ALGORITHM as given (unset when undefined). */
async function generate (args: string[], jwtAlgorithm?: string): Promise<CommandRun> {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.JWT_ALGORITHM
  if (jwtAlgorithm !== undefined) env.JWT_ALGORITHM = jwtAlgorithm
  return await runCli('keys-generate', args, env)
}

/** The private and the public key the output holds, in that order, and nothing else. */
function keysOf (t: Test, stdout: string): { privateKey: KeyObject, publicKey: KeyObject } {
  const blocks = [...stdout.matchAll(/-----BEGIN ([A-Z ]+)-----\n[A-Za-z0-9+/=\n]+-----END \1-----\n/g)]
  t.same(blocks.map(([, label]) => label), ['PRIVATE KEY', 'PUBLIC KEY'], 'a PKCS#8 private key, then an SPKI public key')
  t.equal(blocks.map(([block]) => block).join(''), stdout, 'nothing but the two PEM blocks on stdout')
  return { privateKey: createPrivateKey(blocks[0]?.[0] ?? ''), publicKey: createPublicKey(blocks[1]?.[0] ?? '') }
}

const EXPECTED = {
  EdDSA: (key: KeyObject) => key.asymmetricKeyType === 'ed25519',
  ES256: (key: KeyObject) => key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1',
  RS256: (key: KeyObject) => key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048
}

for (const algorithm of ['EdDSA', 'ES256', 'RS256'] as const) {
  t.test(`keys:generate --algorithm ${algorithm}: a matching key pair that the service loads`, async (t) => {
    const run = await generate(['--algorithm', algorithm])
    t.equal(run.code, 0, run.stderr)
    const { privateKey, publicKey } = keysOf(t, run.stdout)
    t.ok(EXPECTED[algorithm](privateKey), `a ${algorithm} private key (${privateKey.asymmetricKeyType ?? '?'})`)
    t.ok(createPublicKey(privateKey).export({ type: 'spki', format: 'der' }).equals(publicKey.export({ type: 'spki', format: 'der' })), 'the public key is the private key\'s')

    const file = join(t.testdir({}), 'signing.pem')
    writeFileSync(file, run.stdout)
    const config = loadConfig({ JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY_FILE: file, JWT_ISSUER: 'https://users.example.com' })
    t.equal(config.jwt.current.algorithm, algorithm, 'the whole output, as a file, is a JWT_PRIVATE_KEY_FILE for the algorithm')
    t.match(run.stderr, new RegExp(`^${algorithm} key pair, kid ${config.jwt.current.kid}\\n$`), 'the note on stderr names the kid the service will use')
    t.equal(loadConfig({ JWT_ALGORITHM: algorithm, JWT_ISSUER: 'https://users.example.com', JWT_PREVIOUS_KEYS: run.stdout.slice(run.stdout.indexOf('-----BEGIN PUBLIC KEY')) }).jwt.previous[0]?.kid, config.jwt.current.kid,
      'the public key is a JWT_PREVIOUS_KEYS entry with the same kid')
  })
}

t.test('keys:generate without --algorithm: for JWT_ALGORITHM when set, else EdDSA', async (t) => {
  const unset = await generate([])
  t.equal(unset.code, 0, unset.stderr)
  t.ok(EXPECTED.EdDSA(keysOf(t, unset.stdout).privateKey), 'EdDSA when JWT_ALGORITHM is unset')
  const es = await generate([], 'ES256')
  t.equal(es.code, 0, es.stderr)
  t.ok(EXPECTED.ES256(keysOf(t, es.stdout).privateKey), 'ES256 when JWT_ALGORITHM is ES256')
  const flag = await generate(['--algorithm', 'EdDSA'], 'ES256')
  t.ok(EXPECTED.EdDSA(keysOf(t, flag.stdout).privateKey), '--algorithm wins over JWT_ALGORITHM')

  const hs = await generate([], 'HS256')
  t.equal(hs.code, 2)
  t.match(hs.stderr, /^JWT_ALGORITHM is HS256, which signs with JWT_SECRET and needs no key pair/)
  t.equal(hs.stdout, '', 'no key printed')
  const bogus = await generate([], 'HS512')
  t.equal(bogus.code, 2)
  t.match(bogus.stderr, /^JWT_ALGORITHM must be one of HS256, EdDSA, ES256, RS256 \(got "HS512"\)/)
  const wrong = await generate(['--algorithm', 'HS256'])
  t.equal(wrong.code, 2)
  t.match(wrong.stderr, /^--algorithm must be one of EdDSA, ES256, RS256 \(got "HS256"\)/)
  const unknown = await generate(['--bits', '1024'])
  t.equal(unknown.code, 2)
  t.notMatch(unknown.stderr, /\n\s+at /, 'an unknown option: no stack trace')
})

t.test('keys:generate --help: the usage on stdout, exit 0, no key', async (t) => {
  const help = await generate(['--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage: npm run --silent keys:generate \[-- --algorithm EdDSA\|ES256\|RS256\] > signing\.pem\n/)
  t.notMatch(help.stdout, /BEGIN/)
  t.equal(help.stderr, '')
})
