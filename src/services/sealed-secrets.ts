import { type KeyMaterial, SEALED_PURPOSES, SecretBox } from '../security/secret-box.js'
import { SEALED_COLUMNS, type SealedSecretsRepository, type SealedTable } from '../store/sealed-secrets.js'

/** What each table's sealed values were sealed for. */
const PURPOSE_OF: Record<SealedTable, string> = {
  users: SEALED_PURPOSES.totpSecret,
  webhook_endpoints: SEALED_PURPOSES.webhookSecret,
  authorization_server_keys: SEALED_PURPOSES.idTokenKey,
  sso_connections: SEALED_PURPOSES.ssoClientSecret
}

/** What a reseal did, per table: values sealed again, and values no key of the ring opens. */
export type ResealReport = Record<SealedTable, { resealed: number, unopenable: number }>

/**
 * Seals every secret at rest again under the sealing key ring's first key (docs/operations.md,
 * "Sealed secrets"), so that the former keys can leave SEALING_PREVIOUS_KEYS. The pairs kept
 * for refresh retries are not among them: each lives seconds (REFRESH_RETRY_WINDOW_S).
 */
export async function resealAll (sealed: SealedSecretsRepository, keys: readonly KeyMaterial[]): Promise<ResealReport> {
  const report = {} as ResealReport
  for (const table of Object.keys(SEALED_COLUMNS) as SealedTable[]) {
    const box = new SecretBox(keys, PURPOSE_OF[table])
    const counts = { resealed: 0, unopenable: 0 }
    for await (const values of sealed.values(table)) {
      for (const value of values) {
        const resealed = box.resealed(value.box)
        if (resealed === null) counts.unopenable++
        else if (resealed !== value.box && await sealed.replace(value, resealed)) counts.resealed++
      }
    }
    report[table] = counts
  }
  return report
}
