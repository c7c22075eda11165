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
 * PASSWORD_POLICY (docs/api.md, "Passwords"). `basic` is the 8–128 length rule, which the
 * request schema already enforces; `strong` adds the rules below. Returns the unmet rules.
 */
export function passwordPolicyProblems (password: string, policy: PasswordPolicy): string[] {
  if (policy === 'basic') return []
  const rules: Array<[boolean, string]> = [
    [[...password].length >= STRONG_MIN_LENGTH, `must be at least ${STRONG_MIN_LENGTH} characters long`],
    ...STRONG_RULES.map(({ test, problem }): [boolean, string] => [test.test(password), problem])
  ]
  return rules.filter(([met]) => !met).map(([, problem]) => problem)
}

/**
 * The password schema the OpenAPI document publishes for a policy: the request schema's length
 * rule, and under `strong` the same rules the check above applies, as a pattern of lookaheads.
 */
export function publishedPasswordSchema (base: { minLength: number, maxLength: number }, policy: PasswordPolicy): Record<string, unknown> {
  if (policy === 'basic') return { ...base, description: `${base.minLength} to ${base.maxLength} characters (PASSWORD_POLICY=basic)` }
  return {
    ...base,
    minLength: STRONG_MIN_LENGTH,
    pattern: `^${STRONG_CLASSES.map(({ pattern }) => `(?=[\\s\\S]*${pattern})`).join('')}`,
    description: `${STRONG_MIN_LENGTH} to ${base.maxLength} characters with an uppercase and a lowercase letter, a digit and a special character (PASSWORD_POLICY=strong)`
  }
}
