import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import { createAccount, TEST_PASSWORD, withToken } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { integrationSnippet } from '../helpers/integration-guide.js'
import { runCommand } from '../helpers/process.js'

/**
 * docs/integration.md, "API keys in CI", run as written: the key is made with curl, then the
 * GitHub Actions step's script reads the organization's members with it.
 */

/** The key with its last character changed (to another one: a key may end in 'x' already). */
function mistyped (key: string): string {
  return `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`
}

t.test('the CI example of docs/integration.md makes an organization\'s key and reads with it', async (t) => {
  if ((await runCommand('bash', ['-c', 'command -v curl'])).code !== 0) {
    t.comment('not run: no curl here; .ci/run installs Debian\'s')
    return
  }
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await build(t)
  await app.listen({ port, host: '127.0.0.1' })
  const owner = await createAccount(app, { reauthenticated: false })
  const created = await app.inject(withToken(owner.token, { method: 'POST', url: '/api/v1/organizations', payload: { name: 'Acme', slug: 'acme-ci' } }))
  const orgId = created.json().data.id as string

  const make = integrationSnippet('sh', 'Access report').replaceAll('https://id.example.com', origin).replace('"…"', JSON.stringify(TEST_PASSWORD))
  const made = await runCommand('bash', ['-euo', 'pipefail', '-c', make], { ...process.env, ORG_ID: orgId, ACCESS_TOKEN: owner.token })
  t.equal(made.code, 0, made.stderr)
  const key = JSON.parse(made.stdout).data as { key: string, role: string, scopes: string[] }
  t.match(key, { role: 'member', scopes: ['org:read', 'members:read'] })
  t.match(key.key, /^uak_/)

  const workflow = integrationSnippet('yaml', 'USERS_API_KEY')
  const script = workflow.slice(workflow.indexOf('run: |') + 'run: |'.length).split('\n').map((line) => line.replace(/^ {4}/, '')).join('\n')
  const env = { ...process.env, USERS_API_URL: origin, USERS_API_KEY: key.key, ORG_ID: orgId }
  const ran = await runCommand('bash', ['-euo', 'pipefail', '-c', `cd "$(mktemp -d)"\n${script}\ncat members.json`], env)
  t.equal(ran.code, 0, ran.stderr)
  t.same(JSON.parse(ran.stdout).data.map((member: { id: string }) => member.id), [owner.id], 'the members, read with the key')

  const denied = await runCommand('bash', ['-euo', 'pipefail', '-c', `cd "$(mktemp -d)"\nif ! (\n${script}\n); then cat members.json; exit 1; fi`], { ...env, USERS_API_KEY: mistyped(key.key) })
  t.not(denied.code, 0, 'a mistyped key fails the step')
  t.match(denied.stdout, /INVALID_TOKEN/, 'its answer saying why')
})
