import t from 'tap'
import { passwordPolicyProblems } from '../../src/security/password-policy.js'

t.test('basic is the 8–128 length rule, in characters, wherever a password is set', async (t) => {
  t.same(passwordPolicyProblems('short', 'basic'), ['must be at least 8 characters long'])
  t.same(passwordPolicyProblems('p'.repeat(129), 'basic'), ['must be at most 128 characters long'])
  for (const accepted of ['p'.repeat(8), 'p'.repeat(128), '😀'.repeat(8), '😀'.repeat(128)]) t.same(passwordPolicyProblems(accepted, 'basic'), [], `${[...accepted].length} characters`)
  t.same(passwordPolicyProblems('😀'.repeat(7), 'basic'), ['must be at least 8 characters long'], '14 UTF-16 units are still 7 characters')
})

t.test('strong raises the minimum to 12 and asks for four kinds of character', async (t) => {
  t.same(passwordPolicyProblems('Abcdefgh123!', 'strong'), [])
  t.same(passwordPolicyProblems('short', 'strong'), ['must be at least 12 characters long', 'must contain an uppercase letter', 'must contain a digit', 'must contain a special character'])
  t.same(passwordPolicyProblems(`Ab1!${'x'.repeat(125)}`, 'strong'), ['must be at most 128 characters long'])
})
