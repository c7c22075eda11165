import { isSensitiveKey, REDACTED } from '../security/redaction.js'

/** How a bad configuration is reported: the error start-up stops with, and a refused value as it may show it. */

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
  }
}

/**
 * A refused value as the start-up error may show it: error output ends up in logs and CI
 * transcripts, so secrets are not repeated, nor the password inside a connection URL.
 */
export function shown (name: string, value: unknown): string {
  if (isSensitiveKey(name)) return ''
  const text = String(value).replace(/\/\/([^:/@]*):[^@/]*@/, `//$1:${REDACTED}@`)
  return ` (got "${text}")`
}
