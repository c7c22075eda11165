import { readFileSync } from 'node:fs'

/**
 * The one code block of docs/integration.md in `language` that holds `marker`, as a reader
 * copies it; the tests that run the guide's snippets adapt it (addresses, ids) and run it.
 */
export function integrationSnippet (language: string, marker: string): string {
  const text = readFileSync(new URL('../../docs/integration.md', import.meta.url), 'utf8')
  const blocks = [...text.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1] ?? '')
  const found = blocks.filter((code) => code.includes(marker))
  if (found.length !== 1) throw new Error(`docs/integration.md: ${found.length} ${language} blocks with ${marker}`)
  return found[0] ?? ''
}
