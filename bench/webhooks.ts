import { execSync } from 'node:child_process'
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { json, load, loadAverage, machine, type Measured, median, ROOT, ROUNDS, SECONDS, serviceEnv, START_FLAGS, start, stop, WARM_UP_SECONDS } from './harness.js'

/**
 * `npm run bench:webhooks`: what webhooks cost a change, and how fast one instance sends them.
 * The service (compiled, SQLite, every protection on) takes `PATCH /api/v1/users/{id}` (a name
 * change: `user.updated`, no hashing) under load, in rounds that alternate an endpoint
 * subscribed to it being disabled and enabled; a receiver on 127.0.0.1, in this process,
 * answers 204. Reports the change's throughput and server CPU per request both ways, and
 * the deliveries sent per second while the load runs and after it, until none is pending.
 * Appends the table to bench/RESULTS.md.
 */

const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-passphrase-1' }

async function main (): Promise<void> {
  const loadAtStart = loadAverage()
  let received = 0
  let lastReceivedAt = 0
  const receiver = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      received++
      lastReceivedAt = Date.now()
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`

  const dir = mkdtempSync(join(tmpdir(), 'users-api-bench-webhooks-'))
  const env = {
    ...serviceEnv(join(dir, 'service.db')),
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password
  }
  const service = await start([...START_FLAGS, 'dist/src/server.js'], env, join(dir, 'service.log'))
  const rows: string[] = []
  try {
    const { base, child } = service
    const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify(ADMIN) })
    const token = String(login.data.access_token)
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const userId = String((JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as { sub: string }).sub)
    const endpoint = await json(`${base}/api/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: receiverUrl, events: ['user.updated'] }) })
    const webhookId = String(endpoint.data.id)
    const setEnabled = async (enabled: boolean) => {
      await json(`${base}/api/v1/webhooks/${webhookId}`, { method: 'PATCH', headers, body: JSON.stringify({ enabled }) })
    }
    const change = { url: `${base}/api/v1/users/${userId}`, method: 'PATCH' as const, headers, body: JSON.stringify({ name: 'Bench Admin' }) }

    await load({ ...change, duration: WARM_UP_SECONDS }, child.pid)
    const without: Measured[] = []
    const withEndpoint: Measured[] = []
    const sentDuring: number[] = []
    const drainMs: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      // The side measured first alternates, so that a drift of the machine's speed moves both.
      for (const enabled of round % 2 === 0 ? [false, true] : [true, false]) {
        await setEnabled(enabled)
        const before = received
        const measured = await load(change, child.pid)
        if (!enabled) {
          without.push(measured)
          continue
        }
        withEndpoint.push(measured)
        sentDuring.push((received - before) / SECONDS)
        // The backlog drains before the next round: done once nothing came for a second.
        const loadEnded = Date.now()
        while (Date.now() - Math.max(lastReceivedAt, loadEnded) < 1000) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        drainMs.push(Math.max(0, lastReceivedAt - loadEnded))
      }
    }
    const rps = (side: Measured[]) => median(side.map((measured) => measured.rps))
    const cpu = (side: Measured[]) => median(side.map((measured) => measured.cpuUs))
    rows.push(
      `| \`PATCH /api/v1/users/{id}\`, no endpoint | ${rps(without).toFixed(0)} req/s | ${cpu(without).toFixed(0)} µs | — |`,
      `| the same, one endpoint subscribed to \`user.updated\` | ${rps(withEndpoint).toFixed(0)} req/s (× ${(rps(withEndpoint) / rps(without)).toFixed(2)}) | ${cpu(withEndpoint).toFixed(0)} µs (× ${(cpu(withEndpoint) / cpu(without)).toFixed(2)}) | ${median(sentDuring).toFixed(0)} deliveries/s sent during the load; the rest within ${median(drainMs).toFixed(0)} ms after it |`
    )
  } finally {
    await stop(service.child)
    receiver.close()
    rmSync(dir, { recursive: true, force: true })
  }
  const commit = execSync('git rev-parse --short HEAD').toString().trim()
  const table = [
    '',
    `## ${new Date().toISOString().slice(0, 10)} — commit ${commit} — webhooks: medians of ${ROUNDS} interleaved rounds of ${SECONDS} s, SQLite, ${machine()}, ` +
      `load average ${loadAtStart} at the start and ${loadAverage()} at the end`,
    '',
    '| scenario | throughput | server CPU per request | deliveries |',
    '|---|---|---|---|',
    ...rows,
    ''
  ].join('\n')
  appendFileSync(join(ROOT, 'bench', 'RESULTS.md'), table)
  process.stdout.write(table)
}

await main()
