import * as client from 'openid-client'
import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import { build } from '../helpers/app.js'
import { sqliteFile } from '../helpers/database.js'
import { integrationSnippet } from '../helpers/integration-guide.js'
import { type CommandRun, runCli, runCommand } from '../helpers/process.js'

/** The docs' shell snippet run as an operator runs it, in the repository, with `env` over the environment. */
async function run (command: string, args: string[], env: Record<string, string>): Promise<CommandRun> {
  return await runCommand(command, args, { ...process.env, LOG_LEVEL: 'error', ...env })
}

const clientCreate = async (args: string[], env: Record<string, string>) =>
  await runCli('client-create', args, { ...process.env, LOG_LEVEL: 'error', ...env })

t.test('the set-up of docs/integration.md runs as written: an operator and an application, with no token and no second factor', async (t) => {
  const setup = integrationSnippet('sh', 'client:create')
  const { url } = sqliteFile(t)
  const env = { DATABASE_URL: url, JWT_SECRET: 'a'.repeat(40), JWT_ISSUER: 'https://id.example.com' }
  const ran = await run('bash', ['-euo', 'pipefail', '-c', setup], env)
  t.equal(ran.code, 0, 'both commands succeed')
  const created = JSON.parse(ran.stdout.slice(ran.stdout.indexOf('{'))) as Record<string, any>
  t.match(created, {
    name: 'Wiki',
    confidential: true,
    redirect_uris: ['https://wiki.example.com/protected/redirect_uri'],
    grant_types: ['authorization_code', 'refresh_token'],
    scopes: ['openid', 'email', 'profile'],
    id_token_signed_response_alg: 'RS256'
  })
  t.match(created.client_secret, /^[A-Za-z0-9_-]{43}$/, 'the secret, shown this once')

  const app = await build(t, { databaseUrl: url, env })
  const stored = await app.repositories.oauthClients.findById(created.id)
  t.not(stored?.secret_hash, created.client_secret, 'kept as its hash')
  t.equal(stored?.created_by, null, 'made by no account')
  await app.auditTrail.flush()
  const audited = await app.database.db.selectFrom('audit_logs').select(['actor_id', 'ip', 'user_agent', 'details'])
    .where('event', '=', 'oauth_client.created').executeTakeFirstOrThrow()
  t.match(audited, { actor_id: null, ip: 'command-line', user_agent: 'npm run client:create' })
  t.match(JSON.parse(audited.details), { client_id: created.id, through: 'command_line' })
})

t.test('client:create holds a machine client to the admin API\'s rules; it works at the token endpoint', async (t) => {
  const { url } = sqliteFile(t)
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const env = { DATABASE_URL: url, JWT_SECRET: 'a'.repeat(40), JWT_ISSUER: issuer, AUTHORIZATION_SERVER_SCOPES: 'reports:read' }
  const machine = await clientCreate(['--name', 'Nightly report', '--scope', 'reports:read'], env)
  t.equal(machine.code, 0)
  const created = JSON.parse(machine.stdout) as Record<'id' | 'client_secret', string> & Record<'grant_types' | 'redirect_uris', string[]>
  t.same([created.grant_types, created.redirect_uris], [['client_credentials'], []], 'without a redirect URI: a machine client')

  const app = await build(t, { databaseUrl: url, env })
  await app.listen({ port, host: '127.0.0.1' })
  const secret = client.ClientSecretBasic(created.client_secret)
  const insecure = { execute: [client.allowInsecureRequests] }
  const config = await client.discovery(new URL(issuer), created.id, undefined, secret, insecure)
  t.equal((await client.clientCredentialsGrant(config, { scope: 'reports:read' })).scope, 'reports:read')

  const refused = await clientCreate(['--name', 'Bad', '--redirect-uri', 'http://evil.example/cb'], env)
  t.equal(refused.code, 1)
  t.equal(refused.stderr.trim().split('\n').at(-1), 'Validation failed: /redirect_uris/0 http: only to a loopback host (127.0.0.1, [::1], localhost): use https:')
  const unknownScope = await clientCreate(['--name', 'Bad', '--scope', 'bogus'], env)
  t.match(unknownScope.stderr, /\/scopes\/0 "bogus" is not a scope of this service/)
  const badAlgorithm = await clientCreate(['--name', 'Bad', '--redirect-uri', 'https://app.example.com/cb', '--id-token-alg', 'HS256'], env)
  t.match(badAlgorithm.stderr, /Validation failed: \/id_token_signed_response_alg/)
})

t.test('client:create --help on stdout with exit 0; bad usage: the reason and the usage, exit 2', async (t) => {
  const env = { DATABASE_URL: sqliteFile(t).url }
  const help = await clientCreate(['--help'], env)
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage: npm run --silent client:create -- --name NAME/)
  const missing = await clientCreate([], env)
  t.equal(missing.code, 2)
  t.match(missing.stderr, /^--name is required\n\nUsage:/)
  const noScope = await clientCreate(['--name', 'Job'], env)
  t.equal(noScope.code, 2)
  t.match(noScope.stderr, /^--scope is required for a client without a redirect URI/)
})
