import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from '../../bench/free-port.js'
import type { TestContext } from '../helpers/context.js'

/*
 * Private PostgreSQL and Redis servers for fault injection, on free ports of 127.0.0.1: the
 * machine's shared servers serve other suites at the same time and must never be stopped.
 */

const run = promisify(execFile)

/** The newest installed PostgreSQL's programs (Debian layout: /usr/lib/postgresql/<version>/bin). */
function postgresBin (program: string): string {
  const root = '/usr/lib/postgresql'
  const newest = readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(a) - Number(b)).at(-1)
  if (newest === undefined) throw new Error(`no PostgreSQL under ${root}`)
  return join(root, newest, 'bin', program)
}

/** PostgreSQL refuses to run as root: its programs run as the `postgres` account. */
async function asPostgres (program: string, args: string[]): Promise<void> {
  await run('runuser', ['-u', 'postgres', '--', postgresBin(program), ...args])
}

export interface PrivatePostgres {
  url: string
  /**
   * `immediate` crashes the server (no checkpoint, connections cut); `fast` ends every session and shuts down
   * cleanly.
   */
  stop: (mode: 'immediate' | 'fast') => Promise<void>
  start: () => Promise<void>
  /**
   * Stops every server process where it stands (SIGSTOP): connections stay open and nothing answers, as on a hung
   * host.
   */
  freeze: () => void
  /** Lets them go on (SIGCONT); a test that freezes thaws at its own teardown too, before its clients end. */
  thaw: () => void
  /** A client connected to it, ended at teardown. */
  connect: () => Promise<pg.Client>
}

/** A new PostgreSQL cluster (trust authentication, fsync off), started; stopped and removed at teardown. */
export async function startPostgres (t: TestContext): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'users-api-faults-pg-'))
  const socketDir = join(dir, 'socket')
  mkdirSync(socketDir)
  const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString()))
  for (const path of [dir, socketDir]) chownSync(path, uid as number, gid as number)
  const data = join(dir, 'data')
  const port = await freePort()
  let running = false
  t.teardown(async () => {
    try {
      if (running) await asPostgres('pg_ctl', ['stop', '-D', data, '-m', 'immediate'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
  await asPostgres('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync'])
  const start = async () => {
    await asPostgres('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', join(dir, 'postgres.log'),
      '-o', `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -c fsync=off`])
    running = true
  }
  const stop = async (mode: 'immediate' | 'fast') => {
    await asPostgres('pg_ctl', ['stop', '-D', data, '-w', '-m', mode])
    running = false
  }
  const signal = (name: 'SIGSTOP' | 'SIGCONT') => {
    if (!running) return
    const postmaster = readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0] ?? ''
    const children = execFileSync('pgrep', ['-P', postmaster]).toString().split('\n').filter((pid) => pid !== '')
    for (const pid of [postmaster, ...children]) {
      try {
        process.kill(Number(pid), name)
      } catch (error) {
        // A backend that exited since pgrep listed it (a connection closing) needs no signal.
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
      }
    }
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const connect = async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    t.teardown(async () => await client.end())
    return client
  }
  await start()
  // Never left frozen: pg_ctl stop would wait for it.
  t.teardown(() => { signal('SIGCONT') })
  return { url, start, stop, freeze: () => { signal('SIGSTOP') }, thaw: () => { signal('SIGCONT') }, connect }
}

export interface PrivateRedis {
  url: string
  /** Kills the server (SIGKILL): it keeps nothing, as with `--save ""` it would not anyway. */
  stop: () => Promise<void>
  /** Starts it again on the same port, empty. */
  start: () => Promise<void>
}

/** A Redis server without persistence, started; killed at teardown. */
export async function startRedis (t: TestContext): Promise<PrivateRedis> {
  const port = await freePort()
  let server: ChildProcess | null = null
  const stop = async () => {
    if (server === null) return
    const exited = new Promise((resolve) => server?.once('exit', resolve))
    server.kill('SIGKILL')
    await exited
    server = null
  }
  const start = async () => {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
    server = child
    // Read to the end (the lines after this one are ignored), so the pipe never fills up.
    const lines = createInterface({ input: child.stdout })
    await new Promise<void>((resolve, reject) => {
      lines.on('line', (line) => { if (line.includes('Ready to accept connections')) resolve() })
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)))
    })
  }
  t.teardown(stop)
  await start()
  return { url: `redis://127.0.0.1:${port}`, start, stop }
}
