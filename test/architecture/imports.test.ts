import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

/** The layering rules of docs/architecture.md, read off the import statements of src/ and schemas/. */
const ROOT = resolve(import.meta.dirname, '..', '..')

function sourcesUnder (folder: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(folder)) {
    const path = join(folder, name)
    if (statSync(path).isDirectory()) found.push(...sourcesUnder(path))
    else if (/\.(ts|mjs)$/.test(name)) found.push(path)
  }
  return found
}

/** `import … from`, `export … from`, a bare `import '…'` and a dynamic `import('…')`. */
const IMPORT = /(?:(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+|(?:^|\n)\s*import\s+|\bimport\(\s*)'([^']+)'/g

/** Each file (relative to the repository) with what it imports: relative paths resolved, packages as named. */
const imports = new Map<string, string[]>()
for (const file of [...sourcesUnder(join(ROOT, 'src')), ...sourcesUnder(join(ROOT, 'schemas'))]) {
  const specifiers = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) => match[1] ?? '')
  imports.set(relative(ROOT, file), specifiers.map((specifier) => {
    if (!specifier.startsWith('.')) return specifier
    const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts')
    return relative(ROOT, existsSync(target) ? target : resolve(dirname(file), specifier))
  }))
}

function importersOf (files: (file: string) => boolean, imported: (target: string) => boolean): string[] {
  return [...imports].filter(([file]) => files(file))
    .flatMap(([file, targets]) => targets.filter(imported).map((target) => `${file} imports ${target}`))
}

t.test('no import cycle in src/ and schemas/', async (t) => {
  const cycles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    path.push(file)
    for (const target of imports.get(file) ?? []) {
      if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' -> '))
      else if (!state.has(target) && imports.has(target)) visit(target)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of imports.keys()) if (!state.has(file)) visit(file)
  t.same(cycles, [])
})

t.test('schemas/ imports nothing of src/', async (t) => {
  t.same(importersOf((file) => file.startsWith('schemas/'), (target) => target.startsWith('src/')), [])
})

t.test('services and pure modules know nothing of Fastify', async (t) => {
  const pure = (file: string) => ['src/services/', 'src/security/', 'src/jobs/'].some((folder) => file.startsWith(folder))
  t.same(importersOf(pure, (target) => target === 'fastify' || target.startsWith('@fastify/') ||
    target.startsWith('src/plugins/') || target.startsWith('src/routes/') || target.startsWith('src/http/')), [])
})

t.test('the store throws store errors, not the service\'s HTTP errors', async (t) => {
  t.same(importersOf((file) => file.startsWith('src/store/'), (target) => target === 'src/errors.ts'), [])
})

t.test('no route imports another route folder', async (t) => {
  const folderOf = (file: string) => file.split('/').slice(0, 3).join('/')
  t.same([...imports].filter(([file]) => file.startsWith('src/routes/'))
    .flatMap(([file, targets]) => targets
      .filter((target) => target.startsWith('src/routes/') && folderOf(target) !== folderOf(file))
      .map((target) => `${file} imports ${target}`)), [])
})

t.test('a feature of src/services/ reaches another feature only through its index', async (t) => {
  const featureOf = (file: string) => /^src\/services\/([^/]+)\//.exec(file)?.[1]
  t.same([...imports].filter(([file]) => featureOf(file) !== undefined)
    .flatMap(([file, targets]) => targets
      .filter((target) => {
        const feature = featureOf(target)
        return feature !== undefined && feature !== featureOf(file) && target !== `src/services/${feature}/index.ts`
      })
      .map((target) => `${file} imports ${target}`)), [])
})

t.test('a feature of src/services/ imports no feature that comes after it in the order createServices builds them', async (t) => {
  // docs/architecture.md, "The service layer"; a new feature takes its place here.
  const order = ['audit', 'overview', 'messaging', 'sessions', 'sign-in', 'accounts', 'account-lifecycle', 'organizations', 'api-keys', 'sso', 'scim',
    'webhooks', 'authorization-server', 'access', 'posts']
  const folders = readdirSync(join(ROOT, 'src', 'services')).filter((name) => statSync(join(ROOT, 'src', 'services', name)).isDirectory())
  t.same(folders.filter((folder) => !order.includes(folder)), [], 'every feature has its place in the order')
  const featureOf = (file: string) => /^src\/services\/([^/]+)\//.exec(file)?.[1]
  t.same([...imports].flatMap(([file, targets]) => {
    const feature = featureOf(file)
    if (feature === undefined) return []
    return targets.filter((target) => {
      const other = featureOf(target)
      return other !== undefined && order.indexOf(other) > order.indexOf(feature)
    }).map((target) => `${file} imports ${target}`)
  }), [])
})
