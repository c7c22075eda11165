import t from 'tap'
import { CursorCodec } from '../../src/collection/cursor.js'
import { type CollectionOptions, parseCollectionQuery, queryFingerprint } from '../../src/collection/query.js'

const cursors = new CursorCodec('cursor-test-secret-of-32-characters!')
const options: CollectionOptions = {
  sortable: ['name', 'created_at'],
  selectable: ['name', 'email'],
  searchIn: 'the name',
  defaultSort: [{ field: 'created_at', descending: false }],
  scope: 'users'
}

function issuesOf (fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return (error as { details?: unknown }).details
  }
  return undefined
}

t.test('defaults: offset page 1, default sort with id as tie-breaker, all fields', async (t) => {
  const request = parseCollectionQuery({ limit: 20 }, options, cursors)
  t.same(request.pagination, { kind: 'offset', page: 1, limit: 20 })
  t.same(request.sort, [{ field: 'created_at', descending: false }, { field: 'id', descending: false }])
  t.equal(request.fields, null)
})

t.test('multi-field sort with - for descending', async (t) => {
  const request = parseCollectionQuery({ limit: 5, sort: ['-name', 'created_at'] }, options, cursors)
  t.same(request.sort, [
    { field: 'name', descending: true },
    { field: 'created_at', descending: false },
    { field: 'id', descending: false }
  ])
  t.same(parseCollectionQuery({ limit: 5, sort: ['-id'] }, options, cursors).sort, [{ field: 'id', descending: true }])
})

t.test('unknown or repeated sort fields and unknown fields are refused by name', async (t) => {
  t.same(issuesOf(() => parseCollectionQuery({ limit: 5, sort: ['password_hash'] }, options, cursors)),
    [{ path: '/sort', message: 'unknown sort field "password_hash"; allowed: id, name, created_at' }])
  t.match(issuesOf(() => parseCollectionQuery({ limit: 5, sort: ['name', '-name'] }, options, cursors)),
    [{ path: '/sort', message: /given twice/ }])
  t.match(issuesOf(() => parseCollectionQuery({ limit: 5, fields: ['name', 'password_hash'] }, options, cursors)),
    [{ path: '/fields', message: /unknown fields: password_hash/ }])
})

t.test('fields: id is implied, duplicates collapse', async (t) => {
  t.same(parseCollectionQuery({ limit: 5, fields: ['id', 'name', 'name'] }, options, cursors).fields, ['name'])
})

t.test('createdAfter accepts ISO dates and date-times and refuses impossible dates', async (t) => {
  t.equal(parseCollectionQuery({ limit: 5, createdAfter: '2026-02-28' }, options, cursors).createdAfter, '2026-02-28T00:00:00.000Z')
  t.equal(parseCollectionQuery({ limit: 5, createdAfter: '2026-01-01T00:30:00+01:00' }, options, cursors).createdAfter,
    '2025-12-31T23:30:00.000Z')
  for (const bad of ['2026-02-30', '2026-13-01', '2026-00-10', '2026-01-01T25:00:00Z']) {
    t.match(issuesOf(() => parseCollectionQuery({ limit: 5, createdAfter: bad }, options, cursors)), [{ path: '/createdAfter' }], bad)
  }
})

t.test('cursor mode: empty cursor is the first page; a cursor is bound to its query', async (t) => {
  const first = parseCollectionQuery({ limit: 5, cursor: '' }, options, cursors)
  t.same(first.pagination, { kind: 'cursor', limit: 5, after: null })
  const cursor = cursors.encode(queryFingerprint(first), ['2026-01-01T00:00:00.000Z', 'some-id'])
  t.same(parseCollectionQuery({ limit: 5, cursor }, options, cursors).pagination,
    { kind: 'cursor', limit: 5, after: ['2026-01-01T00:00:00.000Z', 'some-id'] })
  t.match(issuesOf(() => parseCollectionQuery({ limit: 5, cursor, sort: ['-name'] }, options, cursors)), [{ path: '/cursor' }],
    'another sort')
  t.match(issuesOf(() => parseCollectionQuery({ limit: 5, cursor, search: 'x' }, options, cursors)), [{ path: '/cursor' }],
    'another filter')
  t.match(issuesOf(() => parseCollectionQuery({ limit: 5, cursor, page: 2 }, options, cursors)), [{ path: '/page' }],
    'page and cursor together')
})

t.test('a cursor is bound to its collection and viewer (the scope)', async (t) => {
  const cursor = cursors.encode(queryFingerprint(parseCollectionQuery({ limit: 5, cursor: '' }, { ...options, scope: 'sessions:user-a' }, cursors)), ['2026-01-01T00:00:00.000Z', 'id-1'])
  t.same(parseCollectionQuery({ limit: 5, cursor }, { ...options, scope: 'sessions:user-a' }, cursors).pagination.kind, 'cursor', 'accepted in its own scope')
  for (const scope of ['sessions:user-b', 'users', 'passkeys:user-a', 'sessions:user-a ']) {
    t.same(issuesOf(() => parseCollectionQuery({ limit: 5, cursor }, { ...options, scope }, cursors)),
      [{ path: '/cursor', message: 'is not a cursor issued for this collection, sort and filter' }], `refused in ${scope}`)
  }
  t.equal(parseCollectionQuery({ limit: 5 }, options, cursors).scope, 'users', 'the request carries its scope to the store, which signs the next cursor with it')
})

t.test('forged and corrupt cursors are refused', async (t) => {
  const fingerprint = queryFingerprint(parseCollectionQuery({ limit: 5, cursor: '' }, options, cursors))
  const genuine = cursors.encode(fingerprint, ['2026-01-01T00:00:00.000Z', 'id-1'])
  const [body] = genuine.split('.')
  const edited = Buffer.from(JSON.stringify({ q: fingerprint, v: ['2000-01-01T00:00:00.000Z', 'id-1'] })).toString('base64url')
  const other = new CursorCodec('another-secret-another-secret-12345')
  for (const cursor of [
    `${edited}.${genuine.split('.')[1]}`,
    `${body}.AAAAAAAAAAAAAAAAAAAAAA`,
    other.encode(fingerprint, ['2026-01-01T00:00:00.000Z', 'id-1']),
    'garbage',
    `${genuine}.extra`,
    cursors.encode(fingerprint, ['only-one-value'])
  ]) {
    t.match(issuesOf(() => parseCollectionQuery({ limit: 5, cursor }, options, cursors)), [{ path: '/cursor' }], cursor)
  }
})
