import cluster, { type Worker } from 'node:cluster'
import pino from 'pino'
import { sharedSigningVariables, workerCount } from './config/index.js'

/**
 * `npm run start:cluster`: the service on several cores of one host, through Node's cluster
 * module (the workers share the listening port). WORKERS sets how many (default: one per
 * core). The first worker starts alone, so the database is migrated once, and the others
 * when it listens. A worker that dies after it started listening is replaced; one that dies
 * before (a bad configuration, an unreachable database) stops the whole service. On SIGTERM
 * or SIGINT every worker finishes its in-flight requests (src/server.ts) and the primary
 * exits 0 when they all have.
 *
 * The workers share state as separate hosts would: through the database, and through Redis
 * when REDIS_URL is set. Without Redis each worker counts rate limits on its own. What the
 * configuration leaves to be generated (JWT_SECRET, the private key) the primary generates
 * once and hands to every worker in its environment, so each accepts the others' tokens.
 */

/** The number of workers, or the process ends naming the bad WORKERS value. */
function workers (): number {
  try {
    return workerCount()
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    process.exit(1)
  }
}

if (cluster.isPrimary) {
  // The primary's own lines, in the workers' format; `role` tells them apart.
  const log = pino().child({ role: 'primary' })
  const count = workers()
  const signing = sharedSigningVariables()
  for (const warning of signing.warnings) log.warn(warning)
  const fork = () => cluster.fork(signing.variables)
  const listening = new WeakSet<Worker>()
  let stopping = false
  let othersStarted = false

  cluster.on('listening', (worker, address) => {
    listening.add(worker)
    log.info({ worker: worker.process.pid, port: address.port }, 'worker listening')
    if (othersStarted || stopping) return
    othersStarted = true
    for (let index = 1; index < count; index++) fork()
  })
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping && listening.has(worker)) {
      log.error({ worker: worker.process.pid, code, signal }, 'worker died: replacing it')
      fork()
      return
    }
    if (!stopping) {
      log.error({ worker: worker.process.pid, code, signal }, 'a worker failed to start: stopping')
      stopping = true
      process.exitCode = 1
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM')
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) {
      log.info('all workers stopped')
      process.exit()
    }
  })
  // SIGTERM (from an orchestrator, to this process alone) is passed to every worker. Ctrl-C's
  // SIGINT already reaches the whole process group: passing it on would be a second signal,
  // which makes a worker exit at once instead of finishing its requests.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return
      stopping = true
      log.info({ signal }, 'shutting down')
      if (signal === 'SIGTERM') for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM')
    })
  }
  log.info({ workers: count }, 'starting workers')
  fork()
} else {
  await import('./server.js')
}
