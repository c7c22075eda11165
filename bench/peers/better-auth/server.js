import { createServer } from 'node:http'
import Database from 'better-sqlite3'
import { betterAuth } from 'better-auth'
import { getMigrations } from 'better-auth/db/migration'
import { toNodeHandler } from 'better-auth/node'
import { admin, bearer } from 'better-auth/plugins'

/**
 * The Better Auth peer of `npm run bench`, set up as its documentation sets it up: better-sqlite3,
 * email and password, database sessions, the bearer and admin plugins, served by Node's http
 * server. Its session check (`GET /api/auth/get-session`) stands in for the service's user
 * read, its admin user list (`GET /api/auth/admin/list-users`) for the service's list.
 * DATABASE_PATH is its SQLite file, PORT its port, ADMIN_EMAIL the account that signs up as admin.
 */
const options = {
  database: new Database(process.env.DATABASE_PATH ?? ':memory:'),
  secret: 'bench-secret-bench-secret-bench-secret',
  baseURL: `http://127.0.0.1:${process.env.PORT ?? 3000}`,
  emailAndPassword: { enabled: true },
  plugins: [bearer(), admin()],
  databaseHooks: {
    user: {
      create: {
        // Seeding goes through the sign-up endpoint; this account is the one allowed to list users.
        before: async (user) => ({ data: { ...user, role: user.email === process.env.ADMIN_EMAIL ? 'admin' : 'user' } })
      }
    }
  }
}
const { runMigrations } = await getMigrations(options)
await runMigrations()
const handler = toNodeHandler(betterAuth(options))

const server = createServer((request, response) => {
  if (request.url === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
    return
  }
  void handler(request, response)
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1')
process.on('SIGTERM', () => { server.close(() => { options.database.close(); process.exit(0) }) })
