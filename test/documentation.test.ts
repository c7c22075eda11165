import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import openapiTS, { astToString } from 'openapi-typescript'
import t from 'tap'
import ts from 'typescript'
import { CANONICAL_UUID, IdSchema } from '../schemas/common.js'
import { buildOpenApiDocument, standaloneSchemas } from '../src/documentation.js'
import { build } from './helper.js'

type Json = Record<string, any>

t.test('the three documentation paths answer under the security headers, from local assets', async (t) => {
  const app = await build(t)
  const json = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.equal(json.statusCode, 200)
  t.equal(json.json().openapi, '3.1.0')
  const docs = await app.inject({ method: 'GET', url: '/api/docs' })
  t.equal(docs.statusCode, 200)
  t.match(docs.headers['content-type'], /text\/html/)
  t.match(docs.headers['content-security-policy'], /default-src 'self'/)
  for (const src of [...docs.body.matchAll(/src="([^"]+)"/g)].map((match) => match[1] ?? '')) {
    t.notMatch(src, /^https?:/, `no remote script: ${src}`)
    const asset = await app.inject({ method: 'GET', url: new URL(src, 'http://local/api/docs/').pathname })
    t.equal(asset.statusCode, 200, `Swagger UI asset ${src}`)
  }
  const redoc = await app.inject({ method: 'GET', url: '/api/redoc' })
  t.equal(redoc.statusCode, 200)
  t.match(redoc.body, /<redoc spec-url="\/api\/openapi.json">/)
  t.notMatch(redoc.body, /https?:\/\//, 'nothing fetched from the internet')
  const bundle = await app.inject({ method: 'GET', url: '/api/redoc/redoc.standalone.js' })
  t.equal(bundle.statusCode, 200)
  t.ok(bundle.body.length > 100_000, 'the ReDoc bundle is served from the package')
})

t.test('the document: 3.1, version 1.0.0, bearer scheme, tags, named components used by $ref', async (t) => {
  const document = await buildOpenApiDocument() as Json
  t.equal(document.openapi, '3.1.0')
  t.equal(document.info.version, '1.0.0')
  t.same(document.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  for (const name of ['User', 'UserResponse', 'UserCollection', 'Post', 'PostResponse', 'PostCollection', 'Comment', 'CommentCollection',
    'Error', 'TokenPair', 'TokenPairResponse', 'OffsetMeta', 'CursorMeta', 'MfaChallenge']) {
    t.ok(document.components.schemas[name], `component ${name}`)
  }
  const user = document.paths['/api/v1/users/{id}'].get
  t.same(user.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/UserResponse' })
  t.same(user.responses['404'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
  t.same(user.security, [{ bearerAuth: [] }])
  t.same(user.tags, ['users'])
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      const statuses = Object.keys(operation.responses ?? {})
      t.ok(statuses.some((status) => status.startsWith('2') || status === '302'), `${method} ${path} documents its success`)
      t.ok(statuses.includes('500'), `${method} ${path} documents 500`)
      t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${method} ${path} is tagged`)
    }
  }
  t.notOk(document.paths['/api/openapi.json'], 'the documentation routes are not in the document')
})

t.test('the document is valid OpenAPI 3.1 (Redocly)', async (t) => {
  const document = await buildOpenApiDocument()
  const problems = await lintFromString({
    source: JSON.stringify(document),
    absoluteRef: 'openapi.json',
    config: await createConfig({ extends: ['minimal'] })
  })
  const errors = problems.filter((problem) => problem.severity === 'error')
  t.same(errors.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer ?? ''}`), [])
})

t.test('no response schema anywhere has a password or hash property', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const offending: string[] = []
  const walk = (value: unknown, where: string) => {
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${where}/${index}`))
    else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (key === 'properties') {
          for (const name of Object.keys(item as Json)) if (/password|hash/i.test(name)) offending.push(`${where}/properties/${name}`)
        }
        walk(item, `${where}/${key}`)
      }
    }
  }
  walk(document.components.schemas, '#/components/schemas')
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) walk(operation.responses, `${method} ${path}`)
  }
  t.same(offending, [])
  t.ok(Object.keys(document.components.schemas).length >= 30)
})

t.test('each named schema exports as a standalone JSON Schema', async (t) => {
  await buildOpenApiDocument()
  const schemas = standaloneSchemas()
  const userResponse = schemas.UserResponse as Json
  t.equal(userResponse.$schema, 'https://json-schema.org/draft/2020-12/schema')
  t.same(userResponse.properties.data, { $ref: '#/$defs/User' })
  t.same(Object.keys(userResponse.$defs), ['User'])
  t.notMatch(JSON.stringify(schemas), /"\$ref":"(?!#\/\$defs\/)/, 'every reference is internal')
})

t.test('the published documents leave out the validator\'s mark on ids, which clients\' validators would refuse', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const userParameter = (document.paths['/api/v1/users/{id}'].get.parameters as Json[]).find((parameter) => parameter.name === 'id')
  t.same(userParameter?.schema, { type: 'string', format: 'uuid' }, 'the id parameter, as a client sees it')
  t.notMatch(JSON.stringify(document), CANONICAL_UUID)
  t.notMatch(JSON.stringify(standaloneSchemas()), CANONICAL_UUID)
  t.ok(JSON.stringify(IdSchema).includes(CANONICAL_UUID), 'stripping does not change the shared IdSchema the validators compile')
})

t.test('a client generated from the document type-checks and talks to the service', async (t) => {
  const generated = join(import.meta.dirname, '.generated')
  mkdirSync(generated, { recursive: true })
  const document = await buildOpenApiDocument()
  writeFileSync(join(generated, 'api.d.ts'), astToString(await openapiTS(document as never)))

  const client = `import createClient from 'openapi-fetch'
import type { paths } from './api.js'

export async function run (baseUrl: string, email: string) {
  const api = createClient<paths>({ baseUrl })
  const created = await api.POST('/api/v1/users', { body: { email, name: 'Typed Client', password: 'typed-password' } })
  if (created.data === undefined) throw new Error('registration failed')
  const login = await api.POST('/api/v1/auth/login', { body: { email, password: 'typed-password' } })
  const pair = login.data?.data
  if (pair === undefined || !('access_token' in pair)) throw new Error('sign-in failed')
  const headers = { Authorization: \`Bearer \${pair.access_token}\` }
  const user = await api.GET('/api/v1/users/{id}', { params: { path: { id: created.data.data.id } }, headers })
  const post = await api.POST('/api/v1/posts', { body: { title: 'Typed', body: 'From a generated client', status: 'published' }, headers })
  const posts = await api.GET('/api/v1/posts', { params: { query: { limit: 5, sort: '-created_at' } } })
  const missing = await api.GET('/api/v1/users/{id}', { params: { path: { id: '01890000-0000-7000-8000-000000000000' } }, headers })
  const name: string | undefined = user.data?.data.name
  const code: string | undefined = missing.error?.error.code
  return { name, code, post: post.data?.data, titles: posts.data?.data.map((item) => item.title) }
}
`
  writeFileSync(join(generated, 'client.ts'), client)
  writeFileSync(join(generated, 'wrong.ts'), client.replace("{ email, name: 'Typed Client', password: 'typed-password' }", "{ emial: email, name: 'Typed Client', password: 'typed-password' }"))

  const typeCheck = (file: string) => ts.getPreEmitDiagnostics(ts.createProgram([join(generated, file)], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext
  })).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
  t.same(typeCheck('client.ts'), [], 'the typed client compiles')
  t.ok(typeCheck('wrong.ts').length > 0, 'and a wrong body does not: the types are real')

  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const { run } = await import(join(generated, 'client.ts')) as { run: (baseUrl: string, email: string) => Promise<Json> }
  const result = await run(`http://127.0.0.1:${port}`, `typed-${process.pid}@example.com`)
  t.equal(result.name, 'Typed Client')
  t.equal(result.code, 'NOT_FOUND')
  t.match(result.post, { title: 'Typed', status: 'published' })
  t.same(result.titles, ['Typed'])
})
