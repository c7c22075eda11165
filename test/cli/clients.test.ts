import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient as generateHeyApiClient } from '@hey-api/openapi-ts'
import type { FastifyInstance } from 'fastify'
import openapiTS, { astToString } from 'openapi-typescript'
import t, { type Test } from 'tap'
import ts from 'typescript'
import { buildOpenApiDocument } from '../../src/cli/openapi-document.js'
import { build } from '../helpers/app.js'

/**
 * Clients generated from the exported document, as a client's author would generate them
 * (docs/api.md, "Typed clients"): each one a short program that signs up, signs in, lists and
 * refreshes, type-checked (a wrong variant must not compile) and run against the service.
 */
type Json = Record<string, any>

/** A fresh directory under test/.generated (git-ignored) for one generator's output. */
function generatedDirectory (name: string): string {
  const directory = join(import.meta.dirname, '..', '.generated', name)
  rmSync(directory, { recursive: true, force: true })
  mkdirSync(directory, { recursive: true })
  return directory
}

function typeErrors (file: string): string[] {
  return ts.getPreEmitDiagnostics(ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext
  })).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
}

async function listeningService (t: Test): Promise<{ app: FastifyInstance, baseUrl: string }> {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  return { app, baseUrl: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}` }
}

/** Runs `generate` with every fetch recorded and refused: generators must work offline. */
async function offline (generate: () => Promise<unknown>): Promise<string[]> {
  const outbound: string[] = []
  const realFetch = globalThis.fetch
  globalThis.fetch = async (input) => {
    outbound.push(input instanceof Request ? input.url : String(input))
    throw new Error('no network while generating a client')
  }
  try {
    await generate()
  } finally {
    globalThis.fetch = realFetch
  }
  return outbound
}

t.test('openapi-typescript types and openapi-fetch: sign up, sign in, list, refresh', async (t) => {
  const generated = generatedDirectory('openapi-fetch')
  const document = await buildOpenApiDocument()
  t.same(await offline(async () => writeFileSync(join(generated, 'api.d.ts'), astToString(await openapiTS(document as never)))), [], 'nothing fetched')

  const program = `import createClient from 'openapi-fetch'
import type { components, paths } from './api.js'

type ErrorCode = components['schemas']['Error']['error']['code']

export async function run (baseUrl: string, email: string, verify: (id: string) => Promise<void>) {
  const api = createClient<paths>({ baseUrl })
  const created = await api.POST('/api/v1/users', { body: { email, name: 'Typed Client', password: 'typed-password' } })
  if (created.data === undefined) throw new Error('sign-up failed')
  await verify(created.data.data.id)
  const login = await api.POST('/api/v1/auth/login', { body: { email, password: 'typed-password' } })
  const signedIn = login.data?.data
  if (signedIn === undefined || signedIn.mfa_required) throw new Error('no token pair')
  const headers = { Authorization: \`Bearer \${signedIn.access_token}\` }
  const users = await api.GET('/api/v1/users', { params: { query: { sort: ['-created_at', 'email'], fields: ['email'], limit: 5 } }, headers })
  const meta = users.data?.meta
  const total: number | undefined = meta?.kind === 'offset' ? meta.total : undefined
  const refreshed = await api.POST('/api/v1/auth/refresh', { body: { refresh_token: signedIn.refresh_token } })
  const missing = await api.GET('/api/v1/users/{id}', { params: { path: { id: '01890000-0000-7000-8000-000000000000' } }, headers })
  const code: ErrorCode | undefined = missing.error?.error.code
  const organization = await api.POST('/api/v1/organizations', { body: { name: 'Typed Org', slug: 'typed-org' }, headers })
  const organizations = await api.GET('/api/v1/organizations', { headers })
  return {
    location: created.response.headers.get('location'),
    emails: users.data?.data.map((user) => user.email),
    refreshed: refreshed.data?.data.token_type,
    total,
    code,
    organization: organization.data?.data,
    organizations: organizations.data?.data.map(({ slug, role }) => ({ slug, role }))
  }
}
`
  writeFileSync(join(generated, 'program.ts'), program)
  t.same(typeErrors(join(generated, 'program.ts')), [], 'the program type-checks')
  const wrong = {
    'an unknown body property': program.replace("{ email, name: 'Typed Client',", "{ emial: email, name: 'Typed Client',"),
    'a sort key outside the enumeration': program.replace("sort: ['-created_at', 'email']", "sort: ['-password_hash']"),
    'offset meta read without its kind': program.replace("meta?.kind === 'offset' ? meta.total : undefined", 'meta?.total'),
    'an error code outside the table': program.replace('const code: ErrorCode | undefined = missing.error?.error.code', "const code = missing.error?.error.code === 'NO_SUCH_CODE' ? undefined : missing.error?.error.code")
  }
  for (const [name, text] of Object.entries(wrong)) {
    t.not(text, program, name)
    writeFileSync(join(generated, 'wrong.ts'), text)
    t.ok(typeErrors(join(generated, 'wrong.ts')).length > 0, `${name} does not compile`)
  }

  const { app, baseUrl } = await listeningService(t)
  type Run = (baseUrl: string, email: string, verify: (id: string) => Promise<void>) => Promise<Json>
  const { run } = await import(join(generated, 'program.ts')) as { run: Run }
  const email = `typed-${process.pid}@example.com`
  // Organizations are for proven addresses: the test proves it in the store, as the mailed token would.
  const result = await run(baseUrl, email, async (id) => { await app.repositories.users.markEmailVerified(id, email) })
  t.match(result.location, /^\/api\/v1\/users\/[0-9a-f-]{36}$/)
  t.same(result.emails, [`typed-${process.pid}@example.com`])
  t.equal(result.refreshed, 'Bearer')
  t.equal(result.total, 1)
  t.equal(result.code, 'NOT_FOUND')
  t.match(result.organization, { id: /^[0-9a-f-]{36}$/, name: 'Typed Org', slug: 'typed-org', role: 'owner' })
  t.same(result.organizations, [{ slug: 'typed-org', role: 'owner' }], 'the list holds the one organization made')
})

t.test('@hey-api/openapi-ts names each function by its operationId: usersCreate, authLogin, usersList, organizationsList, authRefresh', async (t) => {
  const generated = generatedDirectory('hey-api')
  const document = await buildOpenApiDocument()
  t.same(await offline(async () => await generateHeyApiClient({
    input: document as never,
    output: { path: generated },
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent' }
  })), [], 'nothing fetched')

  const program = `import { client } from './client.gen.js'
import { authLogin, authRefresh, organizationsList, usersCreate, usersList } from './sdk.gen.js'

export async function run (baseUrl: string, email: string) {
  client.setConfig({ baseUrl })
  const created = await usersCreate({ body: { email, name: 'Generated SDK', password: 'sdk-password' } })
  if (created.data === undefined) throw new Error('sign-up failed')
  const login = await authLogin({ body: { email, password: 'sdk-password' } })
  const signedIn = login.data?.data
  if (signedIn === undefined || signedIn.mfa_required) throw new Error('no token pair')
  const users = await usersList({ query: { sort: ['-created_at'], limit: 5 }, headers: { Authorization: \`Bearer \${signedIn.access_token}\` } })
  const organizations = await organizationsList({ headers: { Authorization: \`Bearer \${signedIn.access_token}\` } })
  const refreshed = await authRefresh({ body: { refresh_token: signedIn.refresh_token } })
  return {
    id: created.data.data.id,
    emails: users.data?.data.map((user) => user.email),
    organizations: organizations.data?.data,
    refreshed: refreshed.data?.data.token_type
  }
}
`
  writeFileSync(join(generated, 'program.ts'), program)
  t.same(typeErrors(join(generated, 'program.ts')), [], 'the program type-checks')
  writeFileSync(join(generated, 'wrong.ts'), program.replace("sort: ['-created_at']", "sort: ['-password_hash']"))
  t.ok(typeErrors(join(generated, 'wrong.ts')).length > 0, 'a sort key outside the enumeration does not compile')

  const { baseUrl } = await listeningService(t)
  const { run } = await import(join(generated, 'program.ts')) as { run: (baseUrl: string, email: string) => Promise<Json> }
  const result = await run(baseUrl, `sdk-${process.pid}@example.com`)
  t.match(result.id, /^[0-9a-f-]{36}$/)
  t.same(result.emails, [`sdk-${process.pid}@example.com`])
  t.same(result.organizations, [], 'a new account belongs to no organization')
  t.equal(result.refreshed, 'Bearer')
})
