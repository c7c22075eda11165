import { EventEmitter } from 'node:events'

/**
 * A job of the table (src/plugins/application/background.ts): what it does, how often, and how
 * several instances share it.
 */
interface BackgroundJob {
  readonly name: string
  /** The time between two runs (ms); null for a start-up job, run once after `ready`. */
  readonly everyMs: number | null
  /** Also runs at `ready`, not only after its first interval. */
  readonly atReady: boolean
  readonly does: string
  /** How the work is shared when several instances run (cluster workers or hosts). */
  readonly shared: string
}

/** A job and how it goes. */
export interface JobState extends BackgroundJob {
  /** Started (after `ready`) and not yet stopped (at close). */
  active: boolean
  /** Runs begun, and failures among those settled. */
  runs: number
  failures: number
  /** Its last run failed. */
  failing: boolean
}

/** A job of the table with its body. */
export interface JobDefinition extends BackgroundJob {
  run: () => Promise<unknown>
  /** Logged (warn, with `err`) when a run fails; absent when the work logs its own failures. */
  failed?: string
  /** Logged (info) when a run succeeds after failures: then only the first of them is logged. */
  recovered?: string
  /**
   * False for the audit writer's own job: its failure is not written to the audit log it could
   * not write, and once it has stopped no job's failure is.
   */
  audited?: boolean
  /** At close, after the timers stop: what must still be done (ends or waits for the run in progress). */
  stop?: () => Promise<void>
}

interface JobRunnerOptions {
  log: {
    info: (entry: object, message: string) => void
    warn: (entry: object, message: string) => void
    error: (entry: object, message: string) => void
  }
  /** Records a job's first failure of a spell (`job.failed`) in the audit log. */
  recordFailure: (job: string) => void
}

interface Entry { job: JobDefinition, state: JobState, inFlight: Set<Promise<void>> }

/**
 * Runs the jobs of a table: each on its interval once started, and at start when it says so; a
 * failed run is logged and, once per spell of failures, recorded in the audit log; it never
 * ends the process. Stopped in the table's order: the audit writer's job, last, writes what the
 * others queued (and after it none records).
 */
export class JobRunner {
  /** Emits 'run' (name, error or null) each time a run settles. */
  readonly events = new EventEmitter()
  /** Every job with its state. */
  readonly jobs: readonly JobState[]
  readonly #entries: Entry[]
  readonly #timers: NodeJS.Timeout[] = []
  #auditClosed = false

  constructor (table: readonly JobDefinition[], private readonly options: JobRunnerOptions) {
    this.#entries = table.map((job) => {
      const { name, everyMs, atReady, does, shared } = job
      const state: JobState = {
        name, everyMs, atReady, does, shared, active: false, runs: 0, failures: 0, failing: false
      }
      return { job, state, inFlight: new Set<Promise<void>>() }
    })
    this.jobs = this.#entries.map((entry) => entry.state)
  }

  start (): void {
    for (const entry of this.#entries) {
      const { everyMs, atReady } = entry.job
      entry.state.active = true
      if (everyMs !== null) this.#timers.push(setInterval(() => { this.#run(entry) }, everyMs).unref())
      if (atReady || everyMs === null) this.#run(entry)
    }
  }

  /** Every timer first, then each job in the table's order: its last work, then its runs in flight. */
  async stop (): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer)
    for (const entry of this.#entries) {
      await entry.job.stop?.()
      await Promise.all(entry.inFlight)
      entry.state.active = false
      if (entry.job.audited === false) this.#auditClosed = true
    }
  }

  #settled ({ job, state }: Entry, error: unknown): void {
    const { log } = this.options
    const wasFailing = state.failing
    state.failing = error !== null
    if (error === null) {
      if (wasFailing && job.recovered !== undefined) log.info({ job: job.name }, job.recovered)
    } else {
      state.failures++
      if (job.failed !== undefined && (job.recovered === undefined || !wasFailing)) {
        log.warn({ err: error, job: job.name }, job.failed)
      }
      // Once per spell of failures, and never into an audit trail already closed.
      if (!wasFailing && job.audited !== false && !this.#auditClosed) this.options.recordFailure(job.name)
    }
    this.events.emit('run', job.name, error)
  }

  #run (entry: Entry): void {
    entry.state.runs++
    const running: Promise<void> = Promise.resolve().then(entry.job.run).then(
      () => { this.#settled(entry, null) },
      (error: unknown) => { this.#settled(entry, error ?? new Error('job failed')) }
    ).catch((error: unknown) => { this.options.log.error({ err: error, job: entry.job.name }, 'background job not settled') })
      .finally(() => { entry.inFlight.delete(running) })
    entry.inFlight.add(running)
  }
}
