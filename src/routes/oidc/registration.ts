import { timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsync } from 'fastify'
import {
  type DynamicRegistration, DynamicRegistrationErrorSchema, DynamicRegistrationResponseSchema, DynamicRegistrationSchema
} from '../../../schemas/oauth-clients.js'
import { isServiceError } from '../../errors.js'

/** The error RFC 7591 answers for a refused registration, from the service's validation details. */
function registrationError (details: Array<{ path: string, message: string }>) {
  const redirect = details.some((issue) => /^\/(post_logout_)?redirect_uris/.test(issue.path))
  return {
    error: redirect ? 'invalid_redirect_uri' as const : 'invalid_client_metadata' as const,
    error_description: details.map((issue) => `${issue.path}: ${issue.message}`).join('; ')
  }
}

/**
 * Dynamic client registration (RFC 7591), when the operator set an initial access token
 * (AUTHORIZATION_SERVER_REGISTRATION_TOKEN): a registration held to the rules of the admin API's,
 * through the same service, audited; answered in the RFC's shape.
 */
export function dynamicRegistration (initialAccessToken: string): FastifyPluginAsync {
  const expected = Buffer.from(`Bearer ${initialAccessToken}`)
  return async (fastify) => {
    const { oauthClients } = fastify.services
    fastify.post<{ Body: DynamicRegistration }>('/reg', {
      config: { access: 'public' },
      attachValidation: true,
      schema: {
        hide: true,
        body: DynamicRegistrationSchema,
        response: {
          201: DynamicRegistrationResponseSchema,
          400: DynamicRegistrationErrorSchema,
          401: DynamicRegistrationErrorSchema
        }
      }
    }, async (request, reply) => {
      const presented = Buffer.from(request.headers.authorization ?? '')
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
        return await reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"')
          .send({ error: 'invalid_token', error_description: 'the initial access token is missing or wrong' })
      }
      if (request.validationError !== undefined) {
        return await reply.code(400).send({ error: 'invalid_client_metadata', error_description: request.validationError.message })
      }
      try {
        return await reply.code(201).send(await oauthClients.registerDynamically(request.serviceContext, request.body))
      } catch (error) {
        if (!isServiceError(error) || !('details' in error)) throw error
        return await reply.code(400).send(registrationError(error.details as Array<{ path: string, message: string }>))
      }
    })
  }
}
