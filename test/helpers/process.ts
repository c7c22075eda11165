import { type ChildProcess, execFile, spawn, type StdioOptions } from 'node:child_process'
import { createInterface } from 'node:readline'
import { compiledEntry, ROOT } from './compiled.js'
import type { TestContext } from './context.js'

export type LogEntry = Record<string, unknown>

/** A spawned service process, with its log (stdout, one JSON entry a line). */
export interface SpawnedService {
  child: ChildProcess
  /** The exit code (null when ended by a signal). */
  exited: Promise<number | null>
  /** Calls `listener` with each log line from now on; returns the function that stops it. */
  onLog: (listener: (entry: LogEntry) => void) => () => void
  /** The next log line from now on that `matches`. */
  nextLog: (matches: (entry: LogEntry) => boolean) => Promise<LogEntry>
}

/** The service running as its own process, as `npm start` runs it. */
export interface ServiceProcess extends SpawnedService {
  /** `http://127.0.0.1:PORT` */
  base: string
}

/** What a command printed, and its exit code (null when ended by a signal). */
export interface CommandRun { code: number | null, stdout: string, stderr: string }

/** `command` run in the repository with `args` and `env` (the whole environment). */
export async function runCommand (
  command: string, args: string[], env: NodeJS.ProcessEnv = process.env
): Promise<CommandRun> {
  return await new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }))
  })
}

/**
 * `npm run <script>` as an operator runs it, for a script that is `tsx src/cli/<name>.ts`: that
 * file, compiled (compiled.ts), run by Node (runCommand).
 */
export async function runCli (name: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandRun> {
  return await runCommand(process.execPath, [compiledEntry(`src/cli/${name}.ts`), ...args], env)
}

/** Runs src/server.ts (or another entry, such as src/cluster.ts), compiled (compiled.ts). */
export function spawnServer (env: Record<string, string>, stdio: StdioOptions, entry = 'src/server.ts'): ChildProcess {
  return spawn(process.execPath, [compiledEntry(entry)], { cwd: ROOT, env: { ...process.env, ...env }, stdio })
}

/** Spawns `entry` (see spawnServer) with a JWT secret and `env`; killed at teardown if still running. */
export function spawnService (t: TestContext, env: Record<string, string>, entry?: string): SpawnedService {
  const child = spawnServer({ JWT_SECRET: 'x'.repeat(32), ...env }, ['ignore', 'pipe', 'inherit'], entry)
  // 'close', not 'exit': by then the output has been read to its end.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await exited
  })
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  const onLog = (listener: (entry: LogEntry) => void) => {
    const onLine = (line: string) => listener(JSON.parse(line) as LogEntry)
    lines.on('line', onLine)
    return () => { lines.off('line', onLine) }
  }
  const nextLog = async (matches: (entry: LogEntry) => boolean) =>
    await new Promise<LogEntry>((resolve, reject) => {
      const onClose = () => reject(new Error('server output ended'))
      const stop = onLog((entry) => {
        if (!matches(entry)) return
        stop()
        lines.off('close', onClose)
        resolve(entry)
      })
      lines.once('close', onClose)
    })
  return { child, exited, onLog, nextLog }
}

/**
 * Starts the service on a free port of 127.0.0.1 and resolves once it listens (which it
 * logs at level info, so `LOG_LEVEL` must not be above it). Killed at teardown if still running.
 */
export async function startService (t: TestContext, env: Record<string, string>): Promise<ServiceProcess> {
  const service = spawnService(t, { PORT: '0', ...env })
  const listening = await service.nextLog((entry) => String(entry.msg).startsWith('Server listening at http://127.0.0.1:'))
  return { ...service, base: String(listening.msg).replace('Server listening at ', '') }
}

/** A request to a started service, as another program makes it: JSON in, the status and the parsed body out. */
export async function callService (
  service: ServiceProcess,
  method: string,
  path: string,
  options: { token?: string, body?: unknown } = {}
): Promise<{ status: number, body: any }> {
  const response = await fetch(`${service.base}${path}`, {
    method,
    headers: {
      ...(options.token !== undefined && { authorization: `Bearer ${options.token}` }),
      ...(options.body !== undefined && { 'content-type': 'application/json' })
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body)
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? null : JSON.parse(text) }
}
