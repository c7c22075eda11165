import { resealAll } from '../services/sealed-secrets.js'
import { commandOptions, runServiceCommand } from './service-command.js'

const USAGE = `Usage: npm run --silent secrets:reseal

Seals every secret kept sealed in DATABASE_URL (TOTP secrets, webhook signing secrets, the
authorization server's ID-token keys, OpenID SSO connections' client secrets) again under SEALING_KEY (JWT_SECRET when unset), opening
each with any key of the ring (SEALING_PREVIOUS_KEYS, JWT_SECRET, former signing secrets). Once
it reports nothing left to reseal, the former keys can leave SEALING_PREVIOUS_KEYS
(docs/operations.md, "Sealed secrets"). Safe to run while the service runs, and again.

  --help     this text
`

commandOptions({}, USAGE)

await runServiceCommand(async (app) => {
  const report = await resealAll(app.repositories.sealedSecrets, app.config.sealing.keys)
  let unopenable = 0
  for (const [table, counts] of Object.entries(report)) {
    unopenable += counts.unopenable
    process.stdout.write(`${table}: ${counts.resealed} resealed${counts.unopenable > 0 ? `, ${counts.unopenable} opened by no key of the ring` : ''}\n`)
  }
  if (unopenable > 0) {
    throw new Error(`${unopenable} sealed values are opened by no key of the ring: add the key they were sealed under to SEALING_PREVIOUS_KEYS and run again`)
  }
})
