import { createSecretKey, pbkdf2, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import express from 'express'
import { rateLimit } from 'express-rate-limit'
import helmet from 'helmet'
import jwt from 'jsonwebtoken'

/**
 * The Express peer of `npm run bench`: what a team would write instead with the usual Express
 * 5 libraries (helmet, express-rate-limit, jsonwebtoken with a KeyObject, better-sqlite3),
 * answering the service's JSON shapes for the benchmarked routes. No request log.
 * DATABASE_PATH is its SQLite file, PORT its port.
 */
const derive = promisify(pbkdf2)
const ROUNDS = 120_000
const key = createSecretKey(Buffer.from('bench-secret-bench-secret-bench-secret'))
const db = new Database(process.env.DATABASE_PATH ?? ':memory:')
db.pragma('journal_mode = WAL')
db.exec(`CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, email_verified INTEGER NOT NULL DEFAULT 0,
  name TEXT NOT NULL, password_hash TEXT NOT NULL, created_at TEXT NOT NULL)`)
db.exec('CREATE INDEX IF NOT EXISTS users_created_at ON users (created_at, id)')
const insertUser = db.prepare('INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)')
const userById = db.prepare('SELECT id, email, email_verified, name, created_at FROM users WHERE id = ?')
const userByEmail = db.prepare('SELECT id, password_hash FROM users WHERE email = ?')
const page = db.prepare('SELECT id, email, email_verified, name, created_at FROM users ORDER BY created_at, id LIMIT ? OFFSET ?')
const count = db.prepare('SELECT count(*) AS total FROM users')

const shape = (row) => ({
  id: row.id, email: row.email, email_verified: row.email_verified === 1, name: row.name, created_at: row.created_at
})
const fail = (response, status, code, message) => response.status(status).json({ error: { code, message } })

function authenticate (request, response, next) {
  const header = request.get('authorization') ?? ''
  if (!header.startsWith('Bearer ')) return fail(response, 401, 'UNAUTHORIZED', 'Authentication required')
  try {
    request.user = jwt.verify(header.slice(7), key, { algorithms: ['HS256'] })
  } catch {
    return fail(response, 401, 'UNAUTHORIZED', 'Invalid token')
  }
  next()
}

const app = express()
app.disable('x-powered-by')
app.use(helmet())
// Every request counts against the limit, set out of reach as the service's is in the bench.
app.use(rateLimit({ windowMs: 1000, limit: 1_000_000_000, standardHeaders: 'draft-8', legacyHeaders: false }))
app.use(express.json({ limit: '10kb' }))

app.get('/health', (request, response) => { response.json({ status: 'ok' }) })

app.post('/api/v1/users', async (request, response) => {
  const { email, name, password } = request.body ?? {}
  if (typeof email !== 'string' || typeof name !== 'string' || typeof password !== 'string' || password.length < 8) {
    return fail(response, 400, 'VALIDATION_ERROR', 'email, name and password are required')
  }
  const salt = randomBytes(16)
  const passwordHash = `${salt.toString('base64')}$${(await derive(password, salt, ROUNDS, 32, 'sha256')).toString('base64')}`
  const row = { id: randomUUID(), email, email_verified: 0, name, created_at: new Date().toISOString() }
  try {
    insertUser.run(row.id, email, name, passwordHash, row.created_at)
  } catch {
    return fail(response, 409, 'CONFLICT', 'Email already registered')
  }
  response.status(201).json({ data: shape(row) })
})

app.post('/api/v1/auth/login', async (request, response) => {
  const { email, password } = request.body ?? {}
  const row = typeof email === 'string' ? userByEmail.get(email) : undefined
  const [salt = '', stored = ''] = row?.password_hash.split('$') ?? []
  const expected = Buffer.from(stored, 'base64')
  const computed = await derive(String(password), Buffer.from(salt, 'base64'), ROUNDS, 32, 'sha256')
  if (row === undefined || expected.length !== computed.length || !timingSafeEqual(expected, computed)) {
    return fail(response, 401, 'INVALID_CREDENTIALS', 'Invalid email or password')
  }
  const token = jwt.sign({ sub: row.id }, key, { algorithm: 'HS256', expiresIn: '15m' })
  response.json({ data: { access_token: token, token_type: 'Bearer', expires_in: 900 } })
})

app.get('/api/v1/users/:id', authenticate, (request, response) => {
  const row = userById.get(request.params.id)
  if (row === undefined) return fail(response, 404, 'NOT_FOUND', 'User not found')
  response.json({ data: shape(row) })
})

app.get('/api/v1/users', authenticate, (request, response) => {
  const limit = Math.min(Math.max(Number(request.query.limit ?? 20) || 20, 1), 100)
  const pageNumber = Math.max(Number(request.query.page ?? 1) || 1, 1)
  const { total } = count.get()
  response.json({
    data: page.all(limit, (pageNumber - 1) * limit).map(shape),
    meta: { kind: 'offset', page: pageNumber, limit, total, totalExact: true, totalPages: Math.ceil(total / limit) }
  })
})

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1')
process.on('SIGTERM', () => { server.close(() => { db.close(); process.exit(0) }) })
