import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { lintFromString, loadConfig } from '@redocly/openapi-core'
import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import t from 'tap'
import { parse } from 'yaml'
import { sortKeys } from '../../schemas/collection.js'
import { CANONICAL_UUID, IdSchema } from '../../schemas/common.js'
import { EMAIL_PATTERN, USER_FIELDS } from '../../schemas/user.js'
import { buildOpenApiDocument } from '../../src/cli/openapi-document.js'
import { standaloneSchemas } from '../../src/cli/standalone-schemas.js'
import { Errors } from '../../src/errors.js'
import { passwordPolicyProblems } from '../../src/security/password-policy.js'
import { schemaCheck } from '../../src/http/validation.js'
import { build, SECURITY_HEADERS } from '../helpers/app.js'
import { runCli } from '../helpers/process.js'

type Json = Record<string, any>

t.test('the three documentation paths answer under the security headers, from local assets', async (t) => {
  const app = await build(t)
  const json = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.equal(json.statusCode, 200)
  t.equal(json.json().openapi, '3.1.0')
  const docs = await app.inject({ method: 'GET', url: '/api/docs' })
  t.equal(docs.statusCode, 200)
  t.match(docs.headers['content-type'], /text\/html/)
  t.equal(docs.headers['content-security-policy'], "default-src 'self';frame-ancestors 'none';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:",
    'Swagger UI: scripts and images from the service only')
  for (const src of [...docs.body.matchAll(/src="([^"]+)"/g)].map((match) => match[1] ?? '')) {
    t.notMatch(src, /^https?:/, `no remote script: ${src}`)
    const asset = await app.inject({ method: 'GET', url: new URL(src, 'http://local/api/docs/').pathname })
    t.equal(asset.statusCode, 200, `Swagger UI asset ${src}`)
  }
  const redoc = await app.inject({ method: 'GET', url: '/api/redoc' })
  t.equal(redoc.statusCode, 200)
  t.match(redoc.body, /<redoc spec-url="\/api\/openapi.json">/)
  t.equal(redoc.headers['content-security-policy'], "default-src 'self';frame-ancestors 'none';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:;worker-src blob:",
    'ReDoc: the same, and its search worker from a blob: URL')
  t.equal(json.headers['content-security-policy'], SECURITY_HEADERS['content-security-policy'], 'the API keeps the specification\'s CSP')
  t.notMatch(redoc.body, /https?:\/\//, 'nothing fetched from the internet')
  const bundle = await app.inject({ method: 'GET', url: '/api/redoc/redoc.standalone.js' })
  t.equal(bundle.statusCode, 200)
  t.ok(bundle.body.length > 100_000, 'the ReDoc bundle is served from the package')
  t.notMatch(bundle.body, /cdn\.redoc\.ly/, 'without the logo it would fetch from Redocly\'s CDN')
})

t.test('the root points to the documentation: a browser is sent to Swagger UI, another client told where things are', async (t) => {
  const app = await build(t)
  const browser = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
  t.same([browser.statusCode, browser.headers.location], [302, '/api/docs'])
  const client = await app.inject({ method: 'GET', url: '/' })
  t.equal(client.statusCode, 200)
  t.same(client.json(), { documentation: '/api/docs', reference: '/api/redoc', openapi: '/api/openapi.json', health: '/health' })
  t.equal(client.headers['content-security-policy'], SECURITY_HEADERS['content-security-policy'], 'under the API\'s headers')
})

t.test('the document: 3.1, version 1.0.0, bearer scheme, tags, named components used by $ref', async (t) => {
  const document = await buildOpenApiDocument() as Json
  t.equal(document.openapi, '3.1.0')
  t.equal(document.info.version, '1.0.0')
  t.same(document.components.securitySchemes.bearerAuth, {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token (a JWT), or an API key (uak_…) on the routes its scopes allow'
  })
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
      t.ok(statuses.some((status) => status.startsWith('2') || status === '302' || status === '303'), `${method} ${path} documents its success`)
      t.ok(statuses.includes('500'), `${method} ${path} documents 500`)
      t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${method} ${path} is tagged`)
    }
  }
  t.notOk(document.paths['/api/openapi.json'], 'the documentation routes are not in the document')
})

t.test('the document passes Redocly\'s lint (redocly.yaml: recommended-strict) with no problem at all', async (t) => {
  const document = await buildOpenApiDocument()
  const problems = await lintFromString({
    source: JSON.stringify(document),
    absoluteRef: 'openapi.json',
    config: await loadConfig({ configPath: join(import.meta.dirname, '..', '..', 'redocly.yaml') })
  })
  t.same(problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer ?? ''}`), [])
})

/** Every operation of the document, as `METHOD /path` and its object. */
function operationsOf (document: Json): Array<[string, Json]> {
  return Object.entries(document.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, operation]): [string, Json] => [`${method.toUpperCase()} ${path}`, operation]))
}

t.test('every operation has an operationId (resource and verb), a summary, tags, security and described responses', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const operations = operationsOf(document)
  t.ok(operations.length >= 50)
  const ids = operations.map(([, operation]) => operation.operationId)
  t.same(ids.filter((id, index) => ids.indexOf(id) !== index), [], 'operationIds are unique')
  for (const [key, operation] of operations) {
    t.match(operation.operationId, /^[a-z][a-zA-Z]*(\.[a-z][a-zA-Z]*)+$/, `${key}: operationId ${String(operation.operationId)}`)
    t.ok(typeof operation.summary === 'string' && operation.summary.length > 0, `${key}: summary`)
    t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${key}: tags`)
    t.ok(Array.isArray(operation.security), `${key}: security (empty when public)`)
    for (const [status, response] of Object.entries(operation.responses as Json)) {
      t.ok(typeof response.description === 'string' && response.description !== '' && response.description !== 'Default Response', `${key} ${status}: description`)
      t.ok(response.headers?.['Cache-Control'] !== undefined, `${key} ${status}: Cache-Control`)
    }
  }
  const byId = new Map(operations.map(([key, operation]) => [operation.operationId, key]))
  t.equal(byId.get('users.list'), 'GET /api/v1/users')
  t.equal(byId.get('auth.login'), 'POST /api/v1/auth/login')
  t.equal(byId.get('posts.comments.create'), 'POST /api/v1/posts/{id}/comments')
})

t.test('responses name their headers; bearer operations say so, public ones too', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const users = document.paths['/api/v1/users']
  t.same(Object.keys(users.post.responses['201'].headers).sort(), ['Cache-Control', 'Location', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
  t.ok(document.paths['/api/v1/posts'].post.responses['201'].headers.Location)
  t.ok(document.paths['/api/v1/auth/oauth/{provider}/authorize'].get.responses['302'].headers.Location)
  t.ok(users.get.responses['401'].headers['WWW-Authenticate'])
  t.ok(users.get.responses['429'].headers['Retry-After'])
  t.ok(users.get.responses['503'].headers['Retry-After'])
  t.same(document.paths['/.well-known/jwks.json'].get.responses['200'].headers['Cache-Control'].schema, { const: 'public, max-age=300', type: 'string' })
  t.same(document.components.headers['Cache-Control'].schema, { type: 'string', const: 'no-store' })
  t.notOk(document.paths['/health'].get.responses['429'], 'the probes are not rate limited')
  t.same(users.get.security, [{ bearerAuth: [] }])
  t.same(users.post.security, [])
  t.same(document.paths['/api/v1/posts'].get.security, [{}, { bearerAuth: [] }], 'a token is optional')
})

t.test('error codes are the enumeration of the error table; each error status names its codes', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const table = Object.values(Errors).map((ServiceError) => new ServiceError())
  const codes = document.components.schemas.Error.properties.error.properties.code.enum as string[]
  t.same([...codes].sort(), [...new Set(table.map((error) => error.code))].sort())
  t.ok(codes.includes('METHOD_NOT_ALLOWED') && codes.includes('HEADERS_TOO_LARGE') && codes.includes('REQUEST_TIMEOUT'))
  for (const [key, operation] of operationsOf(document)) {
    for (const [status, response] of Object.entries(operation.responses as Json)) {
      if (Number(status) < 400) continue
      const expected = table.filter((error) => String(error.statusCode) === status).map((error) => error.code)
      t.ok(expected.length > 0 && expected.every((code) => response.description.includes(code)), `${key} ${status} names its codes`)
    }
    t.ok(operation.responses['431'] && operation.responses['408'], `${key}: 408 and 431`)
  }
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
  t.same((schemas.UserCollection as Json).properties.meta.discriminator.mapping, { offset: '#/$defs/OffsetMeta', cursor: '#/$defs/CursorMeta' }, 'discriminator mappings too')
})

t.test('the published documents leave out the validator\'s mark on ids, which clients\' validators would refuse', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const userParameter = (document.paths['/api/v1/users/{id}'].get.parameters as Json[]).find((parameter) => parameter.name === 'id')
  t.same(userParameter?.schema, { type: 'string', format: 'uuid' }, 'the id parameter, as a client sees it')
  t.notMatch(JSON.stringify(document), CANONICAL_UUID)
  t.notMatch(JSON.stringify(standaloneSchemas()), CANONICAL_UUID)
  t.ok(JSON.stringify(IdSchema).includes(CANONICAL_UUID), 'stripping does not change the shared IdSchema the validators compile')
})

t.test('/api/openapi.yaml serves the same document as YAML', async (t) => {
  const app = await build(t)
  const yaml = await app.inject({ method: 'GET', url: '/api/openapi.yaml' })
  t.equal(yaml.statusCode, 200)
  t.match(yaml.headers['content-type'], /^application\/yaml/)
  const json = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.same(parse(yaml.body), json.json())
})

t.test('the e-mail pattern in the document is what the `email` format checks: a dot in the domain', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const email = document.paths['/api/v1/users'].post.requestBody.content['application/json'].schema.properties.email
  t.equal(email.pattern, EMAIL_PATTERN)
  const pattern = new RegExp(EMAIL_PATTERN, 'u')
  const format = schemaCheck(Type.String({ format: 'email' }))
  const samples = [
    ...fc.sample(fc.emailAddress(), { numRuns: 300, seed: 42 }),
    ...fc.sample(fc.string({ maxLength: 30 }), { numRuns: 300, seed: 42 }),
    'user@localhost', 'user@example.com', 'User.Name+tag@Sub.Example.ORG', 'a@b.c', 'a@b..c', 'a@-b.c', '.a@b.c', 'a b@c.d', 'ü@example.com', 'a@example.com.']
  for (const sample of samples) t.equal(pattern.test(sample), format(sample), JSON.stringify(sample))
  t.notOk(pattern.test('user@localhost'), 'no dot in the domain: refused')
})

t.test('the Password component states the configured PASSWORD_POLICY, as the check applies it', async (t) => {
  const basic = (await buildOpenApiDocument() as Json).components.schemas.Password
  t.match(basic, { type: 'string', minLength: 8, maxLength: 128 })
  t.notOk('pattern' in basic)
  const strong = (await buildOpenApiDocument({ PASSWORD_POLICY: 'strong' }) as Json).components.schemas.Password
  t.match(strong, { type: 'string', minLength: 12, maxLength: 128, description: /PASSWORD_POLICY=strong/ })
  const pattern = new RegExp(strong.pattern, 'u')
  const samples = [...fc.sample(fc.string({ minLength: 8, maxLength: 20 }), { numRuns: 500, seed: 7 }), 'Abcdefgh1234!', 'abcdefgh1234!', 'ABCDEFGH1234!', 'Abcdefghijkl!', 'Abcdefgh1234x', 'Ab1!', 'Ab1!\nxxxxxxxxx']
  for (const sample of samples) {
    const documented = [...sample].length >= strong.minLength && pattern.test(sample)
    t.equal(documented, passwordPolicyProblems(sample, 'strong').length === 0, JSON.stringify(sample))
  }
})

t.test('createdAfter\'s pattern refuses impossible months, days and times', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const parameter = (document.paths['/api/v1/posts'].get.parameters as Json[]).find((item) => item.name === 'createdAfter')
  const pattern = new RegExp(parameter?.schema.pattern, 'u')
  for (const good of ['2026-02-28', '2024-02-29', '2026-04-30', '2026-12-31T23:59:59.999Z', '2026-01-01T00:30+01:00']) t.ok(pattern.test(good), good)
  for (const bad of ['2026-02-30', '2026-04-31', '2026-13-01', '2026-00-10', '2026-01-00', '2026-01-01T24:00:00Z', '2026-01-01T23:60Z', '2026-01-01T12:00:00+25:00']) {
    t.notOk(pattern.test(bad), bad)
  }
})

t.test('sign-in results and collection metas are discriminated unions', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const { schemas } = document.components
  t.same(schemas.SignInResult.discriminator, { propertyName: 'mfa_required', mapping: { false: '#/components/schemas/SignedIn', true: '#/components/schemas/MfaChallenge' } })
  t.same(schemas.SignedIn.properties.mfa_required.enum, [false])
  t.same(schemas.MfaChallenge.properties.mfa_required.enum, [true])
  const meta = schemas.UserCollection.properties.meta
  t.same(meta.discriminator, { propertyName: 'kind', mapping: { offset: '#/components/schemas/OffsetMeta', cursor: '#/components/schemas/CursorMeta' } })
  for (const [name, kind] of [['OffsetMeta', 'offset'], ['CursorMeta', 'cursor']] as const) {
    t.same(schemas[name].properties.kind.enum, [kind])
    t.ok(schemas[name].required.includes('kind'), `${name} requires kind`)
  }
})

t.test('sort and fields enumerate the collection\'s own names', async (t) => {
  const document = await buildOpenApiDocument() as Json
  const parameters = document.paths['/api/v1/users'].get.parameters as Json[]
  const sort = parameters.find((item) => item.name === 'sort')
  t.same(sort?.schema.items.enum, sortKeys(USER_FIELDS))
  t.same(sort?.schema.items.enum.slice(0, 4), ['id', '-id', 'email', '-email'])
  t.same(parameters.find((item) => item.name === 'fields')?.schema.items.enum, ['id', ...USER_FIELDS.selectable])
})

t.test('npm run export:openapi: --help, a refused option without a stack trace, --out', async (t) => {
  const cli = async (...args: string[]) => await runCli('export-openapi', args)
  const help = await cli('--help')
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage: npm run export:openapi/)
  const refused = await cli('--bogus')
  t.equal(refused.code, 2)
  t.match(refused.stderr, /Unknown option '--bogus'/)
  t.notMatch(refused.stderr, /\n\s+at /, 'no stack trace')
  const out = t.testdir({})
  const written = await cli('--out', out)
  t.equal(written.code, 0, written.stderr)
  const json = JSON.parse(readFileSync(join(out, 'openapi.json'), 'utf8')) as Json
  t.same(parse(readFileSync(join(out, 'openapi.yaml'), 'utf8')), json)
  t.same(json, await buildOpenApiDocument())
})
