import fp from 'fastify-plugin'
import { CursorCodec } from '../collection/cursor.js'
import { AuditLogsRepository } from '../store/audit-logs.js'
import { DevicesRepository } from '../store/devices.js'
import { IdentitiesRepository } from '../store/identities.js'
import { MfaRepository } from '../store/mfa.js'
import { CommentsRepository, PostsRepository } from '../store/posts.js'
import { RevocationsRepository } from '../store/revocations.js'
import { SessionsRepository } from '../store/sessions.js'
import { SignInFailuresRepository } from '../store/sign-in-failures.js'
import { UsersRepository } from '../store/users.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The data layer: the only code that builds SQL. */
    repositories: {
      users: UsersRepository
      sessions: SessionsRepository
      revocations: RevocationsRepository
      signInFailures: SignInFailuresRepository
      auditLogs: AuditLogsRepository
      devices: DevicesRepository
      mfa: MfaRepository
      identities: IdentitiesRepository
      posts: PostsRepository
      comments: CommentsRepository
    }
    /** Signs and checks collection cursors. */
    cursors: CursorCodec
  }
}

export default fp(async (fastify) => {
  const { db, readRows } = fastify.database
  const cursors = new CursorCodec(fastify.config.jwtSecret)
  fastify.decorate('cursors', cursors)
  const users = new UsersRepository(db, cursors, readRows)
  fastify.decorate('repositories', {
    users,
    sessions: new SessionsRepository(db, cursors, readRows),
    revocations: new RevocationsRepository(db),
    signInFailures: new SignInFailuresRepository(db, readRows),
    auditLogs: new AuditLogsRepository(db, cursors, readRows),
    devices: new DevicesRepository(db, cursors, readRows),
    mfa: new MfaRepository(db, (userId) => users.invalidate(userId)),
    identities: new IdentitiesRepository(db),
    posts: new PostsRepository(db, cursors, readRows),
    comments: new CommentsRepository(db, cursors, readRows)
  })
}, { name: 'repositories', dependencies: ['database'] })
