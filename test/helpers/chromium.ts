import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import type { Test } from 'tap'

/** Debian's `chromium` package, used when present (`.ci/run` installs it). */
const DEBIAN_CHROMIUM = '/usr/bin/chromium'

/** Headless, and nothing that would reach beyond this machine (docs/testing.md). */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/**
 * The Chromium that @sparticuz/chromium ships inside its npm package, so `npm test` needs no
 * system package. The package unpacks into the temporary directory and trusts whatever it finds
 * there; test files run in parallel, so each unpacks into a directory of its own and renames it
 * into place, and the first complete one is kept (node_modules/.cache, per package version).
 */
async function packagedChromium (): Promise<string> {
  const packageDirectory = join(import.meta.dirname, '..', '..', 'node_modules', '@sparticuz', 'chromium')
  const { version } = JSON.parse(await readFile(join(packageDirectory, 'package.json'), 'utf8')) as { version: string }
  const cache = join(import.meta.dirname, '..', '..', 'node_modules', '.cache')
  const unpacked = join(cache, `chromium-${version}`)
  const executable = join(unpacked, 'chromium')
  if (existsSync(executable)) return executable
  await mkdir(cache, { recursive: true })
  const staging = await mkdtemp(join(cache, `chromium-${version}-`))
  const { default: packaged } = await import('@sparticuz/chromium')
  // The package unpacks into os.tmpdir(), which follows TMPDIR.
  const tmpdir = process.env.TMPDIR
  process.env.TMPDIR = staging
  try {
    await packaged.executablePath()
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = tmpdir
  }
  try {
    await rename(staging, unpacked)
  } catch (error) {
    // Another test file put its copy in place first.
    if (!existsSync(executable)) throw error
    await rm(staging, { recursive: true, force: true })
  }
  return executable
}

/**
 * The browser the tests drive: CHROMIUM_PATH when set; otherwise Debian's chromium when
 * installed, unless TEST_CHROMIUM=packaged asks for the packaged one; otherwise the packaged one.
 */
async function chromiumExecutable (): Promise<string> {
  const configured = process.env.CHROMIUM_PATH
  if (configured !== undefined && configured !== '') {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH names no file: ${configured}`)
    return configured
  }
  if (process.env.TEST_CHROMIUM !== 'packaged' && existsSync(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM
  return await packagedChromium()
}

/** Headless Chromium (each context a fresh profile), closed at the test's end. */
export async function launchChromium (t: Test): Promise<Browser> {
  const executablePath = await chromiumExecutable()
  let browser: Browser
  try {
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS })
  } catch (error) {
    // The packaged build now and then dies of SIGSEGV while starting, before any page: that is
    // the browser's start, not what a test tests, so it is started once more (said in the output).
    t.comment(`Chromium did not start, started again: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS })
  }
  t.comment(`Chromium ${browser.version()} from ${executablePath}`)
  t.teardown(async () => await browser.close())
  return browser
}

/**
 * Every console error and uncaught exception of the page (a CSP violation is one), but the
 * browser's own request for /favicon.ico, which the service does not serve (some Chromium builds
 * ask for it, and report its 404).
 */
export function pageErrors (page: Page): string[] {
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) errors.push(message.text())
  })
  page.on('pageerror', (error) => { errors.push(error.message) })
  return errors
}
