import { availableParallelism } from 'node:os'

/** WORKERS, read by the cluster's primary only (docs/operations.md, "All variables"). */

/** How many server processes `npm run start:cluster` runs (default: one per core); throws on a bad value. */
export function workerCount (source: Record<string, string | undefined> = process.env): number {
  const value = source.WORKERS
  if (value === undefined || value === '') return availableParallelism()
  if (!/^[1-9][0-9]{0,2}$/.test(value)) throw new Error(`WORKERS must be a positive integer (got "${value}")`)
  return Number(value)
}
