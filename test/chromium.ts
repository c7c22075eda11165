import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'
import type { Test } from 'tap'

/** Debian's `chromium` package (`.ci/run` installs it); CHROMIUM_PATH points elsewhere. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Headless, and nothing that would reach beyond this machine (docs/testing.md). */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** Headless Chromium (each context a fresh profile), closed at the test's end. */
export async function launchChromium (t: Test): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium) or set CHROMIUM_PATH`)
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
  t.teardown(async () => await browser.close())
  return browser
}
