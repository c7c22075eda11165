import { commandOptions, failUsage, runServiceCommand } from './service-command.js'

const USAGE = `Usage: npm run --silent id-token-keys -- list|stage|activate|retire

The keys the authorization server signs ID tokens with (RS256, ES256, EdDSA), kept in
DATABASE_URL (docs/operations.md, "ID-token keys"). A rotation is three steps, each followed by
a restart of every instance, one by one:

  list       every key: kid, algorithm, generation, status (signing, staged, retiring)
  stage      a new generation, published from the next start on, not yet signing
  activate   the staged generation signs from the next start on; the one before retires
             (still published, so that ID tokens it signed still verify)
  retire     the retired generation is no longer published
  --help     this text
`

const { positionals } = commandOptions({}, USAGE)
const [step, ...extra] = positionals
if (extra.length > 0 || step === undefined) failUsage('name one step', USAGE)
if (!['list', 'stage', 'activate', 'retire'].includes(step)) failUsage(`unknown step: ${step}`, USAGE)

await runServiceCommand(async (app) => {
  const keys = app.services.idTokenKeys
  if (step === 'stage') {
    process.stdout.write(`Generation ${await keys.stage()} is staged: restart every instance, then run activate.\n`)
  } else if (step === 'activate') {
    const generation = await keys.activate()
    process.stdout.write(generation === null
      ? 'No generation is staged: run stage first.\n'
      : `Generation ${generation} signs from each instance's next start: restart every instance, then run retire.\n`)
  } else if (step === 'retire') {
    process.stdout.write(`${await keys.retire()} retired keys removed: restart every instance.\n`)
  }
  for (const key of await keys.list()) {
    process.stdout.write(`${key.kid}  ${key.algorithm.padEnd(5)}  generation ${key.generation}  ${key.status}  ${key.created_at}\n`)
  }
})
