import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'test/.generated/**'] }),
  {
    rules: {
      // `void promise` marks a deliberate fire-and-forget (its failures are handled where it is made).
      'no-void': ['error', { allowAsStatement: true }]
    }
  }
]
