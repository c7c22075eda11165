import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A TCP port on 127.0.0.1 that nothing listens on right now, for a process that needs a fixed one. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
