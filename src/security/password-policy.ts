export type PasswordPolicy = 'basic' | 'strong'

/**
 * PASSWORD_POLICY (docs/api.md, "Passwords"). `basic` is the 8–128 length rule, which the
 * request schema already enforces; `strong` adds the rules below. Returns the unmet rules.
 */
export function passwordPolicyProblems (password: string, policy: PasswordPolicy): string[] {
  if (policy === 'basic') return []
  const rules: Array<[boolean, string]> = [
    [[...password].length >= 12, 'must be at least 12 characters long'],
    [/[A-Z]/.test(password), 'must contain an uppercase letter'],
    [/[a-z]/.test(password), 'must contain a lowercase letter'],
    [/[0-9]/.test(password), 'must contain a digit'],
    [/[^A-Za-z0-9]/.test(password), 'must contain a special character']
  ]
  return rules.filter(([met]) => !met).map(([, problem]) => problem)
}
