// `npm start` runs the compiled service: it builds first only when there is no build, or a
// source file changed since the last one, so a start after the first answers in about a second.
import { execSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const BUILT = 'dist/src/server.js'
/** Written after each build this script runs: the compiler leaves unchanged outputs untouched. */
const STAMP = 'dist/.built'
const SOURCES = ['src', 'schemas', 'bench', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']

function newest (path) {
  const stats = statSync(path)
  if (!stats.isDirectory()) return stats.mtimeMs
  return Math.max(0, ...readdirSync(path).map((entry) => newest(join(path, entry))))
}

const builtAt = existsSync(BUILT) && existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0
if (Math.max(...SOURCES.map(newest)) >= builtAt) {
  execSync('npm run --silent build', { stdio: 'inherit' })
  writeFileSync(STAMP, `${new Date().toISOString()}\n`)
}
