import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { buildOpenApiDocument } from '../documentation.js'

/** `npm run export:openapi [-- --out DIR]`: writes openapi.json and openapi.yaml; no server starts. */
const { values } = parseArgs({ options: { out: { type: 'string', default: '.' } } })
const out = values.out ?? '.'
const document = await buildOpenApiDocument()
await mkdir(out, { recursive: true })
await writeFile(join(out, 'openapi.json'), `${JSON.stringify(document, null, 2)}\n`)
await writeFile(join(out, 'openapi.yaml'), stringify(document))
process.stdout.write(`Wrote ${join(out, 'openapi.json')} and ${join(out, 'openapi.yaml')}\n`)
