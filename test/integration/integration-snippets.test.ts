import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import t from 'tap'
import { generateKeyPair } from '../../src/security/signing-keys.js'
import { createAccount } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'

const run = promisify(execFile)

/** The issuer the snippets name. */
const ISSUER = 'https://users.example.com'
const ALGORITHMS = ['EdDSA', 'ES256', 'RS256'] as const

/** The Python code blocks of a document that verify tokens with PyJWT. */
function pythonSnippets (file: string): string[] {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
  return [...text.matchAll(/```python\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').filter((code) => code.includes('PyJWKClient'))
}

/**
 * The first Python with PyJWT: Debian's `python3-jwt` (which `.ci/run` installs) is Debian's
 * /usr/bin/python3, which need not be the first `python3` on the path.
 */
async function pythonWithPyJwt (): Promise<string | undefined> {
  for (const python of ['python3', '/usr/bin/python3']) {
    try {
      await run(python, ['-c', 'import jwt, cryptography'])
      return python
    } catch {}
  }
  return undefined
}

t.test('the PyJWT snippet of docs/integration.md runs as written and accepts our access tokens', async (t) => {
  const snippets = pythonSnippets('docs/integration.md').map((code) => ({ file: 'docs/integration.md', code }))
  t.equal(snippets.length, 1, 'the document has it')
  const python = await pythonWithPyJwt()
  if (python === undefined) {
    t.comment('not run: no Python with PyJWT here (Debian: apt-get install python3-jwt); .ci/run installs it')
    return
  }
  const { stdout: version } = await run(python, ['-c', 'import jwt; print(jwt.__version__)'])
  t.comment(`PyJWT ${version.trim()} (${python})`)
  for (const algorithm of ALGORITHMS) {
    const app = await build(t, {
      env: { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: generateKeyPair(algorithm).privateKey, JWT_ISSUER: ISSUER }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const jwks = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/.well-known/jwks.json`
    const account = await createAccount(app)
    for (const { file, code } of snippets) {
      // As a reader adapts it: our address for the JWKS, the algorithm configured, the token given.
      const adapted = code.replace(`${ISSUER}/.well-known/jwks.json`, jwks).replaceAll('"EdDSA"', `"${algorithm}"`)
      const program = `import json, sys\nimport jwt\ntoken = sys.argv[1]\n${adapted}\n` +
        'print(json.dumps(verify(token)))\n'
      const { stdout } = await run(python, ['-c', program, account.token])
      t.match(JSON.parse(stdout), { sub: account.id, iss: ISSUER, type: 'access' }, `${file}, ${algorithm}`)
    }
  }
})
