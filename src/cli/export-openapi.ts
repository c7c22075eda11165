import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { buildOpenApiDocument } from './openapi-document.js'

const USAGE = `Usage: npm run export:openapi [-- --out DIR]

Writes the OpenAPI document as DIR/openapi.json and DIR/openapi.yaml, without starting a server.

  --out DIR   where to write (default: openapi, created when missing)
  --help      this text

The document describes the password rules of PASSWORD_POLICY as set in the environment
(basic when unset), as the running service's /api/openapi.json does.
`

function options (): { out: string } {
  try {
    const { values } = parseArgs({ options: { out: { type: 'string', default: 'openapi' }, help: { type: 'boolean', short: 'h' } } })
    if (values.help === true) {
      process.stdout.write(USAGE)
      process.exit(0)
    }
    return { out: values.out }
  } catch (error) {
    // An unknown option or a missing value: the reason and the usage, not a stack trace.
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`)
    process.exit(2)
  }
}

/** `npm run export:openapi [-- --out DIR]` (docs/api.md, "Health and documentation"). */
const { out } = options()
const policy = process.env.PASSWORD_POLICY
const document = await buildOpenApiDocument(policy === undefined ? {} : { PASSWORD_POLICY: policy })
await mkdir(out, { recursive: true })
await writeFile(join(out, 'openapi.json'), `${JSON.stringify(document, null, 2)}\n`)
await writeFile(join(out, 'openapi.yaml'), stringify(document))
process.stdout.write(`Wrote ${join(out, 'openapi.json')} and ${join(out, 'openapi.yaml')}\n`)
