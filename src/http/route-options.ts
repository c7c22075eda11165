import type { RouteOptions } from 'fastify'

type PreHandler = NonNullable<RouteOptions['preHandler']> extends infer H ? H extends Array<infer Item> ? Item : H : never

/** From an onRoute hook: runs `handler` before the route's own preHandlers (none, one or several). */
export function prependPreHandler (route: RouteOptions, handler: PreHandler): void {
  const existing = route.preHandler === undefined
    ? []
    : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]
  route.preHandler = [handler, ...existing]
}
