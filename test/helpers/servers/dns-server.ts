/**
 * A DNS server on 127.0.0.1 (dns2) answering from a zone the test writes: TXT records for the
 * names it publishes, NXDOMAIN for every other name, SERVFAIL for the names it breaks. The
 * service asks it through node:dns's own resolver, pointed at it: nothing leaves the machine.
 */
import { Resolver } from 'node:dns/promises'
import type { AddressInfo } from 'node:net'
import dns2 from 'dns2'
import type { TxtResolver } from '../../../src/services/organizations/txt-records.js'
import type { TestContext } from '../context.js'

const { Packet } = dns2

const NXDOMAIN = 3
const SERVFAIL = 2

export interface DnsServer {
  /** node:dns's resolver, asking this server only. */
  resolveTxt: TxtResolver
  /** Publishes a TXT record at `name`, of these character strings. */
  publish: (name: string, ...strings: string[]) => void
  /** Answers SERVFAIL for `name` from now on. */
  fail: (name: string) => void
  /** The names asked, in order. */
  queries: string[]
}

export async function dnsServer (t: TestContext): Promise<DnsServer> {
  const zone = new Map<string, string[][]>()
  const failing = new Set<string>()
  const queries: string[] = []
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request)
    const [question] = request.questions
    const name = (question?.name ?? '').toLowerCase()
    queries.push(name)
    const records = zone.get(name)
    if (failing.has(name)) response.header.rcode = SERVFAIL
    else if (records === undefined) response.header.rcode = NXDOMAIN
    else if (question?.type === Packet.TYPE.TXT) {
      for (const data of records) {
        response.answers.push({ name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data } as never)
      }
    }
    send(response)
  })
  await server.listen(0, '127.0.0.1')
  t.teardown(() => { server.close() })
  const resolver = new Resolver({ timeout: 1000, tries: 1 })
  resolver.setServers([`127.0.0.1:${(server.address() as AddressInfo).port}`])
  return {
    resolveTxt: async (name) => await resolver.resolveTxt(name),
    publish: (name, ...strings) => { zone.set(name.toLowerCase(), [...zone.get(name.toLowerCase()) ?? [], strings]) },
    fail: (name) => { failing.add(name.toLowerCase()) },
    queries
  }
}
