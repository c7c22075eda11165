import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { buildSync } from 'esbuild'

/** The repository's root. */
export const ROOT = join(import.meta.dirname, '..', '..')

/**
 * The service's sources transpiled for the processes tests start (the service, its cluster, the
 * command-line entries): file by file with esbuild, as tsx transpiles them when it loads them,
 * but once for the whole run, so that each process loads plain JavaScript. Through tsx's loader
 * a process took 1.5–1.7 s to load the service's modules, compiled 0.8–0.9 s (docs/testing.md).
 */
const OUT = join(ROOT, 'node_modules', '.cache', 'users-api-tests')
const SOURCES = ['src', 'schemas']
/** Written after each build: its time is the build's. */
const STAMP = join(OUT, '.built')
/** Held while one test process builds; the others wait for it. */
const LOCK = `${OUT}.lock`
/** A lock older than this was left by a process that died building. */
const STALE_LOCK_MS = 60_000

function sourceFiles (): string[] {
  return SOURCES.flatMap((folder) => readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .map((file) => join(folder, file))
    .filter((file) => !statSync(join(ROOT, file)).isDirectory()))
}

function fresh (files: string[]): boolean {
  if (!existsSync(STAMP)) return false
  const builtAt = statSync(STAMP).mtimeMs
  return files.every((file) => statSync(join(ROOT, file)).mtimeMs < builtAt)
}

function build (files: string[]): void {
  rmSync(OUT, { recursive: true, force: true })
  buildSync({
    entryPoints: files.filter((file) => file.endsWith('.ts')).map((file) => join(ROOT, file)),
    outdir: OUT,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning'
  })
  // Plain JavaScript the service loads by its file name (the hashing worker).
  for (const file of files.filter((name) => name.endsWith('.mjs'))) copyFileSync(join(ROOT, file), join(OUT, file))
  writeFileSync(STAMP, `${new Date().toISOString()}\n`)
}

/** Takes the build lock (a directory: creating one is atomic), waiting while another process holds it. */
function lock (): void {
  // A clean clone has no node_modules/.cache yet.
  mkdirSync(dirname(LOCK), { recursive: true })
  for (;;) {
    try {
      mkdirSync(LOCK)
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const held = statSync(LOCK, { throwIfNoEntry: false })
      const abandoned = held !== undefined && Date.now() - held.mtimeMs > STALE_LOCK_MS
      if (abandoned) rmSync(LOCK, { recursive: true, force: true })
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50)
    }
  }
}

/** Whether this process has seen the build fresh: the sources do not change during a run. */
let checked = false

/** `entry` (`src/…/name.ts`) compiled, built first when any source is newer than the last build. */
export function compiledEntry (entry: string): string {
  if (!checked) {
    lock()
    try {
      const files = sourceFiles()
      if (!fresh(files)) build(files)
      checked = true
    } finally {
      rmSync(LOCK, { recursive: true, force: true })
    }
  }
  return join(OUT, entry.replace(/\.ts$/, '.js'))
}
