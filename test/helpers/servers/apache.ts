import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../bench/free-port.js'
import type { TestContext } from '../context.js'

/** Debian's Apache and mod_auth_openidc (packages apache2, libapache2-mod-auth-openidc; `.ci/run` installs them). */
const APACHE = '/usr/sbin/apache2'
const MODULES = '/usr/lib/apache2/modules'

/** Whether Apache with mod_auth_openidc is installed here. */
export function apacheWithOpenIdc (): boolean {
  return existsSync(APACHE) && existsSync(join(MODULES, 'mod_auth_openidc.so'))
}

/**
 * Apache on 127.0.0.1, in the foreground, with `site` (its configuration, made for Apache's own
 * address) after the modules it needs; `/protected/index.html` answers with the signed-in user and
 * their address in headers. Stopped at teardown.
 */
export async function startApache (
  t: TestContext, site: (base: string) => Promise<string>
): Promise<{ base: string, errors: () => Promise<string> }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const root = await mkdtemp(join(tmpdir(), 'apache-rp-'))
  // Apache serves as www-data.
  await chmod(root, 0o755)
  await writeFile(join(root, 'index.html'), '<!doctype html><title>Protected</title><p>Signed in.</p>')
  const config = `ServerRoot ${root}
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile ${root}/httpd.pid
ErrorLog ${root}/error.log
LogLevel warn auth_openidc:info
User www-data
Group www-data
${['mpm_event', 'authz_core', 'authz_user', 'authn_core', 'alias', 'headers', 'mime', 'auth_openidc'].map((name) => `LoadModule ${name}_module ${MODULES}/mod_${name}.so`).join('\n')}
TypesConfig /etc/mime.types
Alias /protected/index.html ${root}/index.html
<Directory ${root}>
  Require all granted
</Directory>
<Location /protected>
  Header always set X-Remote-User "%{REMOTE_USER}e"
  Header always set X-Email "%{OIDC_CLAIM_email}e"
</Location>
${await site(base)}
`
  await writeFile(join(root, 'httpd.conf'), config)
  const apache: ChildProcess = spawn(APACHE, ['-f', join(root, 'httpd.conf'), '-DFOREGROUND'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let startup = ''
  apache.stderr?.on('data', (chunk: Buffer) => { startup += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => apache.once('exit', (code) => resolve(code)))
  t.teardown(async () => {
    if (apache.exitCode === null) {
      apache.kill('SIGTERM')
      await exited
    }
    await rm(root, { recursive: true, force: true })
  })
  // Listening once it answers; a configuration error ends the process first.
  for (;;) {
    if (apache.exitCode !== null) throw new Error(`apache2 stopped: ${startup}${await readFile(join(root, 'error.log'), 'utf8').catch(() => '')}`)
    const answered = await fetch(`${base}/`).then(() => true, () => false)
    if (answered) break
    await Promise.race([exited, new Promise((resolve) => setImmediate(resolve))])
  }
  return { base, errors: async () => await readFile(join(root, 'error.log'), 'utf8') }
}
