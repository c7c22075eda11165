import type { CursorCodec } from '../collection/cursor.js'
import { AuditLogsRepository } from './audit-logs.js'
import type { Database } from './database.js'
import { DevicesRepository } from './devices.js'
import { IdentitiesRepository } from './identities.js'
import { MfaRepository } from './mfa.js'
import { OneTimeTokensRepository } from './one-time-tokens.js'
import { OutboxRepository } from './outbox.js'
import { CommentsRepository, PostsRepository } from './posts.js'
import { RevocationsRepository } from './revocations.js'
import { SessionsRepository } from './sessions.js'
import { SignInFailuresRepository } from './sign-in-failures.js'
import { UsersRepository } from './users.js'

export type Repositories = ReturnType<typeof createRepositories>

/** The data layer over one database: the only code that builds SQL. */
export function createRepositories ({ db, readRows }: Pick<Database, 'db' | 'readRows'>, cursors: CursorCodec) {
  const users = new UsersRepository(db, cursors, readRows)
  const outbox = new OutboxRepository(db)
  return {
    users,
    outbox,
    oneTimeTokens: new OneTimeTokensRepository(db, outbox),
    sessions: new SessionsRepository(db, cursors, readRows),
    revocations: new RevocationsRepository(db),
    signInFailures: new SignInFailuresRepository(db, readRows),
    auditLogs: new AuditLogsRepository(db, cursors, readRows),
    devices: new DevicesRepository(db, cursors, readRows),
    mfa: new MfaRepository(db, (userId) => users.invalidate(userId)),
    identities: new IdentitiesRepository(db),
    posts: new PostsRepository(db, cursors, readRows),
    comments: new CommentsRepository(db, cursors, readRows)
  }
}
