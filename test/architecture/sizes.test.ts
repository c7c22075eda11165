import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import t from 'tap'
import ts from 'typescript'

/**
 * The sizes of docs/architecture.md ("Sizes"): a file of src/ under 400 lines, a function under
 * 80, except the declarative tables it names.
 */
const ROOT = resolve(import.meta.dirname, '..', '..')
const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 80
const TABLE_FILES = new Set(['src/store/types.ts'])
const TABLE_FUNCTIONS = new Set(['jobTable', 'createAuthorizationServer', 'loadConfig'])

function sourcesUnder (folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name)
    return statSync(path).isDirectory() ? sourcesUnder(path) : name.endsWith('.ts') ? [path] : []
  })
}

/** A route file's plugin (its one parameter `fastify`): its list of routes. */
function isRoutePlugin (file: string, node: ts.SignatureDeclaration, source: ts.SourceFile): boolean {
  return file.startsWith('src/routes/') && node.parameters[0]?.name.getText(source) === 'fastify'
}

const tooLong: string[] = []
for (const path of sourcesUnder(join(ROOT, 'src'))) {
  const file = relative(ROOT, path)
  const text = readFileSync(path, 'utf8')
  const lines = text.split('\n').length - 1
  if (lines > MAX_FILE_LINES && !TABLE_FILES.has(file)) tooLong.push(`${file}: ${lines} lines`)
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line
      const length = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1
      const name = node.name?.getText(source) ?? '(anonymous)'
      if (length > MAX_FUNCTION_LINES && !TABLE_FUNCTIONS.has(name) && !isRoutePlugin(file, node, source)) {
        tooLong.push(`${file}:${first + 1} ${name}: ${length} lines`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

t.same(tooLong, [], `no file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}, but the tables named`)
