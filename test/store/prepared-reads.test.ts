import { sql } from 'kysely'
import t from 'tap'
import { openDatabase } from '../../src/store/database.js'
import type { TestContext } from '../helpers/context.js'
import { sqliteFile } from '../helpers/database.js'

/** A SQLite file database (WAL, as the service runs it) with one table. */
async function sqliteDatabase (t: TestContext) {
  // A file: WAL needs one.
  const { url, path } = sqliteFile(t)
  const database = openDatabase({ dialect: 'sqlite', url, path })
  // Closed before the file is removed: tap runs teardowns last registered first.
  t.teardown(async () => await database.close())
  await sql`create table items (id text primary key)`.execute(database.db)
  const read = sql<{ id: string }>`select id from items order by id`.compile(database.db)
  return { database, read }
}

t.test('SQLite prepared reads answer at once, without a promise, when no transaction is open', async (t) => {
  const { database, read } = await sqliteDatabase(t)
  await sql`insert into items (id) values ('a')`.execute(database.db)
  const rows = database.readRows(read)
  t.notOk(rows instanceof Promise, 'synchronous')
  t.same(rows, [{ id: 'a' }])
  // The statement is shared with Kysely's driver: it must still give objects there.
  t.same((await database.db.executeQuery(read)).rows, [{ id: 'a' }], 'the same SQL through Kysely')
  const failing = sql<{ id: string }>`select id from items where id = ${'a'}`.compile(database.db)
  t.throws(() => database.readRows({ ...failing, parameters: [] }), /parameter/i, 'a read that fails throws')
  t.same((await database.db.executeQuery({ ...failing })).rows, [{ id: 'a' }], 'and leaves its statement giving objects')
})

t.test('a read during an open transaction never sees its uncommitted writes', async (t) => {
  const { database, read } = await sqliteDatabase(t)
  let insideTransaction: () => void = () => {}
  const inserted = new Promise<void>((resolve) => { insideTransaction = resolve })
  let rollBack: () => void = () => {}
  const decided = new Promise<void>((resolve) => { rollBack = resolve })
  const transaction = database.db.transaction().execute(async (trx) => {
    await sql`insert into items (id) values ('uncommitted')`.execute(trx)
    insideTransaction()
    await decided
    throw new Error('rolled back')
  })

  await inserted
  const during = database.readRows(read)
  t.ok(during instanceof Promise, 'queued behind the transaction')
  rollBack()
  await t.rejects(transaction, /rolled back/)
  t.same(await during, [], 'the rolled-back row was never seen')

  let queued: unknown
  await database.db.transaction().execute(async (trx) => {
    await sql`insert into items (id) values ('committed')`.execute(trx)
    queued = database.readRows(read)
  })
  t.ok(queued instanceof Promise, 'queued again')
  t.same(await queued, [{ id: 'committed' }], 'a queued read sees the transaction once it has committed')
})
