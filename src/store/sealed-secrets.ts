import { type RawBuilder, sql } from 'kysely'
import type { Db } from './types.js'

/** Where secrets are kept sealed: each table's key column and its sealed columns. */
export const SEALED_COLUMNS = {
  users: { key: 'id', columns: ['totp_secret', 'totp_pending_secret'] },
  webhook_endpoints: { key: 'id', columns: ['secret', 'previous_secret'] },
  authorization_server_keys: { key: 'kid', columns: ['private_key'] },
  sso_connections: { key: 'id', columns: ['oidc_client_secret'] }
} as const

export type SealedTable = keyof typeof SEALED_COLUMNS

/** A sealed value at rest: its table, row and column, and the box. */
export interface SealedValue { table: SealedTable, key: string, column: string, box: string }

/** Rows read at a time. */
const BATCH = 500

/**
 * Every sealed value of the database, for `npm run secrets:reseal` (docs/operations.md,
 * "Sealed secrets"): read in batches along each table's primary key, each replaced only if it
 * is still the box that was read.
 */
export class SealedSecretsRepository {
  constructor (private readonly db: Db) {}

  async * values (table: SealedTable): AsyncGenerator<SealedValue[]> {
    const { key, columns } = SEALED_COLUMNS[table]
    // Each batch a range of the primary key ('' sorts before every key): the first one too.
    let after = ''
    for (;;) {
      const query: RawBuilder<Record<string, string | null>> = sql`select ${sql.ref(key)} as key, ${sql.join(columns.map((column) => sql.ref(column)))}
        from ${sql.table(table)} where ${sql.ref(key)} > ${after} order by ${sql.ref(key)} limit ${BATCH}`
      const rows: Array<Record<string, string | null>> = (await query.execute(this.db)).rows
      if (rows.length === 0) return
      after = rows[rows.length - 1]?.key ?? ''
      yield rows.flatMap((row) => columns.flatMap((column) => {
        const box = row[column]
        return typeof box === 'string' ? [{ table, key: String(row.key), column, box }] : []
      }))
    }
  }

  /** Puts `box` in place of `value`'s, unless that changed since it was read; answers whether it did. */
  async replace (value: SealedValue, box: string): Promise<boolean> {
    const { key } = SEALED_COLUMNS[value.table]
    const result = await sql`update ${sql.table(value.table)} set ${sql.ref(value.column)} = ${box}
      where ${sql.ref(key)} = ${value.key} and ${sql.ref(value.column)} = ${value.box}`.execute(this.db)
    return Number(result.numAffectedRows ?? 0n) > 0
  }
}
