import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { standaloneSchemas } from './standalone-schemas.js'

// Importing the route modules registers every named schema.
import '../app.js'

/** `npm run export:schemas [-- --out DIR]`: each named TypeBox schema as a standalone JSON Schema file. */
const { values } = parseArgs({ options: { out: { type: 'string', default: 'json-schemas' } } })
const out = values.out ?? 'json-schemas'
await mkdir(out, { recursive: true })
const schemas = standaloneSchemas()
for (const [name, schema] of Object.entries(schemas)) {
  await writeFile(join(out, `${name}.schema.json`), `${JSON.stringify(schema, null, 2)}\n`)
}
process.stdout.write(`Wrote ${Object.keys(schemas).length} schemas to ${out}/\n`)
