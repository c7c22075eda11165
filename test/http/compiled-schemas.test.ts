import t from 'tap'
import { compilePending, rememberingCompilers } from '../../src/http/compiled-schemas.js'
import { build } from '../helpers/app.js'

/** A compiler factory counting what it builds and compiles; its validators refuse anything but 'ok'. */
function countingFactory () {
  const counts = { factories: 0, compiled: 0 }
  const factory = (_shared: Record<string, unknown>, _options: unknown) => {
    counts.factories++
    return (_route: { schema?: unknown, httpPart?: string }) => {
      counts.compiled++
      const validate = (data: unknown) => {
        validate.errors = data === 'ok' ? null : [{ message: 'not ok' }]
        return data === 'ok'
      }
      validate.errors = null as unknown
      return validate
    }
  }
  return { counts, factory }
}

t.test('a route schema compiles once per process, on first use, whatever the instance asking', async (t) => {
  const { counts, factory } = countingFactory()
  const remembering = rememberingCompilers(factory)
  const shared = { User: { $id: 'User', type: 'object' } }
  const first = remembering({ ...shared }, { strict: true })({ schema: { type: 'string' }, httpPart: 'body' })
  const second = remembering({ ...shared }, { strict: true })({ schema: { type: 'string' }, httpPart: 'body' })
  t.equal(second, first, 'the same function for the same schema, part, shared schemas and options')
  t.equal(counts.factories, 1)
  t.equal(counts.compiled, 0, 'nothing compiled before the first call')
  t.equal(first('ok'), true)
  t.equal(second('ok'), true)
  t.equal(counts.compiled, 1, 'compiled once')

  t.not(remembering({ ...shared }, { strict: true })({ schema: { type: 'string' }, httpPart: 'querystring' }), first, 'another part: another function')
  t.not(remembering({ ...shared }, { strict: false })({ schema: { type: 'string' }, httpPart: 'body' }), first, 'other options: another compiler')
  t.not(remembering({ Other: { $id: 'Other' } }, { strict: true })({ schema: { type: 'string' }, httpPart: 'body' }), first, 'other shared schemas: another compiler')
  t.equal(counts.factories, 3)

  const sameText = remembering({ User: { $id: 'User', type: 'object' } }, { strict: true })
  t.equal(sameText({ schema: { type: 'string' }, httpPart: 'body' }), first, 'shared schemas of the same text, as other objects: the same compiler')
  t.not(sameText({ schema: { type: 'number' }, httpPart: 'body' }), first, 'another route schema: another function')
  t.not(remembering({ User: { $id: 'User', type: 'array' } }, { strict: true })({ schema: { type: 'string' }, httpPart: 'body' }), first, 'a shared schema changed: another compiler')
  t.equal(counts.factories, 4)
})

t.test('a validation\'s problems are read where Fastify reads them, on the function called', async (t) => {
  const { factory } = countingFactory()
  const validate = rememberingCompilers(factory)({}, {})({ schema: { const: 'ok' } }) as ((data: unknown) => boolean) & { errors?: unknown }
  t.equal(validate('no'), false)
  t.same(validate.errors, [{ message: 'not ok' }])
  t.equal(validate('ok'), true)
  t.equal(validate.errors, null)
})

t.test('every schema of every route compiles (a schema that cannot compile would throw here)', async (t) => {
  await build(t)
  t.ok(compilePending() > 100, 'the routes\' validators and serializers were waiting for their first use')
  t.equal(compilePending(), 0, 'nothing left')
  await build(t)
  t.equal(compilePending(), 0, 'a second instance reuses them')
})
