import AjvCompiler from '@fastify/ajv-compiler'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import app from './app.js'
import type { Config } from './config.js'

/** CONTRACT section 8: the 10 KB body limit. */
export const BODY_LIMIT_BYTES = 10_240

const ajvFactory = AjvCompiler()

/**
 * Query strings and path parameters arrive as text, so they are coerced to the schema's
 * types; JSON bodies are not ("8" is not a number). Unknown keys are refused, never
 * silently dropped, and every problem is reported.
 */
const validatorFactory = {
  buildValidator (externalSchemas: Record<string, unknown>) {
    const strict = { removeAdditional: false, useDefaults: true, allErrors: true } as const
    const body = ajvFactory(externalSchemas as never, { customOptions: { ...strict, coerceTypes: false } })
    const text = ajvFactory(externalSchemas as never, { customOptions: { ...strict, coerceTypes: 'array' } })
    return (route: { httpPart?: string }) => (route.httpPart === 'body' ? body : text)(route as never)
  }
}

/** The Fastify instance with the application registered; `ready()` and `listen()` are the caller's. */
export function createInstance (config: Config): FastifyInstance {
  const instance = Fastify({
    logger: { level: config.logLevel },
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: config.trustProxy,
    forceCloseConnections: 'idle',
    schemaController: { compilersFactory: validatorFactory as never }
  })
  // Registered through fastify-plugin, so its error handler and parsers are the root ones.
  instance.register(fp(app), { config })
  return instance
}
