import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'test/.generated/**'] }),
  {
    rules: {
      // `void promise` marks a deliberate fire-and-forget (its failures are handled where it is made).
      'no-void': ['error', { allowAsStatement: true }],
      // Long string literals (messages, test names) and URLs may run on; code and comments wrap at 120.
      '@stylistic/max-len': ['error', {
        code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true
      }]
    }
  }
]
