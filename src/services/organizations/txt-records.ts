import { Resolver } from 'node:dns/promises'

/** The TXT records at a name, each as its character strings (node:dns's resolveTxt shape). */
export type TxtResolver = (name: string) => Promise<string[][]>

/** DNS answers that mean "no such record", as opposed to a lookup that failed. */
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA'])

/** Whether a lookup's error says the record does not exist (rather than that DNS could not be asked). */
export function isNoRecord (error: unknown): boolean {
  return NO_RECORD.has(String((error as { code?: unknown } | null)?.code))
}

/**
 * The system's resolvers, asked with a short timeout: a verification is a request someone waits
 * on, and a slow name server must not hold it longer than a few seconds.
 */
export function systemTxtResolver (): TxtResolver {
  const resolver = new Resolver({ timeout: 2000, tries: 2 })
  return async (name) => await resolver.resolveTxt(name)
}
