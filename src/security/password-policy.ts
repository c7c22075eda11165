import { validationFailed } from '../errors.js'
import { PASSWORD_LENGTH } from '../../schemas/user.js'

export type PasswordPolicy = 'basic' | 'strong'

/** What `strong` adds to the 8–128 length rule (docs/api.md, "Passwords"). */
const STRONG_MIN_LENGTH = 12
const STRONG_CLASSES = [
  { pattern: '[A-Z]', problem: 'must contain an uppercase letter' },
  { pattern: '[a-z]', problem: 'must contain a lowercase letter' },
  { pattern: '[0-9]', problem: 'must contain a digit' },
  { pattern: '[^A-Za-z0-9]', problem: 'must contain a special character' }
] as const
const STRONG_RULES = STRONG_CLASSES.map(({ pattern, problem }) => ({ test: new RegExp(pattern), problem }))

/**
 * PASSWORD_POLICY (docs/api.md, "Passwords"), which every way of setting a password applies:
 * `basic` is the 8–128 length rule (which the request schemas also state, so an HTTP caller
 * gets their details first); `strong` raises the minimum and adds the rules below. Lengths
 * count characters (code points), as the schemas' do. Returns the unmet rules.
 */
export function passwordPolicyProblems (password: string, policy: PasswordPolicy): string[] {
  const length = [...password].length
  const minLength = policy === 'strong' ? STRONG_MIN_LENGTH : PASSWORD_LENGTH.minLength
  const rules: Array<[boolean, string]> = [
    [length >= minLength, `must be at least ${minLength} characters long`],
    [length <= PASSWORD_LENGTH.maxLength, `must be at most ${PASSWORD_LENGTH.maxLength} characters long`],
    ...(policy === 'strong' ? STRONG_RULES.map(({ test, problem }): [boolean, string] => [test.test(password), problem]) : [])
  ]
  return rules.filter(([met]) => !met).map(([, problem]) => problem)
}

/**
 * The password schema the OpenAPI document publishes for a policy: the request schema's length
 * rule, and under `strong` the same rules the check above applies, as a pattern of lookaheads.
 */
export function publishedPasswordSchema (
  base: { minLength: number, maxLength: number },
  policy: PasswordPolicy
): Record<string, unknown> {
  if (policy === 'basic') return { ...base, description: `${base.minLength} to ${base.maxLength} characters (PASSWORD_POLICY=basic)` }
  return {
    ...base,
    minLength: STRONG_MIN_LENGTH,
    pattern: `^${STRONG_CLASSES.map(({ pattern }) => `(?=[\\s\\S]*${pattern})`).join('')}`,
    description: `${STRONG_MIN_LENGTH} to ${base.maxLength} characters with an uppercase and a lowercase letter, a digit and a special character (PASSWORD_POLICY=strong)`
  }
}

/** Throws VALIDATION_FAILED with one detail per unmet password rule. */
export function assertPasswordPolicy (password: string, policy: PasswordPolicy, path = '/password'): void {
  const problems = passwordPolicyProblems(password, policy)
  if (problems.length > 0) throw validationFailed(problems.map((message) => ({ path, message })))
}
