import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import {
  AuthenticationOptionsResponseSchema,
  PASSKEY_FIELDS,
  PasskeyAuthenticationBodySchema,
  PasskeyAuthenticationOptionsBodySchema,
  PasskeyCollectionSchema,
  PasskeyRegistrationBodySchema,
  PasskeyRenameBodySchema,
  PasskeyResponseSchema,
  RegistrationOptionsResponseSchema
} from '../../../schemas/passkeys.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'

/** Passkey registration and sign-in, and the caller's passkeys (docs/api.md, "Passkeys"). */
const passkeys: FastifyPluginAsyncTypebox = async (fastify) => {
  const { passkeys, signIn } = fastify.services

  // Registering a passkey is one way to meet MFA_REQUIRED_ROLES, so it is open to a caller who must.
  fastify.post('/registration/options', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      operationId: 'auth.passkeys.registrationOptions',
      tags: ['passkeys'],
      summary: 'Options for navigator.credentials.create; the challenge is good for 5 minutes, once (not for an account whose address was never verified: 403 EMAIL_NOT_VERIFIED)',
      response: { 200: described(RegistrationOptionsResponseSchema, 'Options for navigator.credentials.create, with a challenge good once for 5 minutes'), ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request) => ({ data: await passkeys.registrationOptions(request.serviceContext) }))

  fastify.post('', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      operationId: 'auth.passkeys.create',
      tags: ['passkeys'],
      summary: 'Register a passkey: the browser\'s answer to the registration options (a sensitive change: needs a proof, REAUTHENTICATION_REQUIRED otherwise)',
      body: PasskeyRegistrationBodySchema,
      response: { 201: described(PasskeyResponseSchema, 'Registered: the passkey'), ...errorResponses({ body: true }, 401, 403, 409, 423) }
    }
  }, async (request, reply) => {
    const passkey = await passkeys.register(request.serviceContext, request.body)
    return await reply.code(201).send({ data: passkey })
  })

  fastify.get('', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      operationId: 'auth.passkeys.list',
      tags: ['passkeys'],
      summary: 'The caller\'s passkeys',
      querystring: CollectionQuerySchema(PASSKEY_FIELDS),
      response: { 200: described(PasskeyCollectionSchema, 'A page of the caller\'s passkeys'), ...errorResponses({}, 401) }
    }
  }, async (request) => await passkeys.list(request.serviceContext, request.query))

  fastify.patch('/:id', {
    config: { access: 'bearer' },
    schema: {
      operationId: 'auth.passkeys.update',
      tags: ['passkeys'],
      summary: 'Rename one of the caller\'s passkeys (a sensitive change: needs a proof)',
      params: IdParamsSchema,
      body: PasskeyRenameBodySchema,
      response: { 200: described(PasskeyResponseSchema, 'Renamed: the passkey'), ...errorResponses({ body: true }, 401, 403, 404, 423) }
    }
  }, async (request) => ({ data: await passkeys.rename(request.serviceContext, request.params.id, request.body) }))

  fastify.delete('/:id', {
    config: { access: 'bearer' },
    schema: {
      operationId: 'auth.passkeys.delete',
      tags: ['passkeys'],
      summary: 'Remove one of the caller\'s passkeys; the account\'s last way to sign in is kept (409); a sensitive change: needs a proof',
      params: IdParamsSchema,
      body: ProofBodySchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404, 409, 423) }
    }
  }, async (request, reply) => {
    await passkeys.remove(request.serviceContext, request.params.id, request.body ?? {})
    return await reply.code(204).send()
  })

  fastify.post('/authentication/options', {
    config: { access: 'public' },
    schema: {
      operationId: 'auth.passkeys.authenticationOptions',
      tags: ['passkeys'],
      summary: 'Options for navigator.credentials.get; without an e-mail address, any discoverable passkey may answer',
      body: PasskeyAuthenticationOptionsBodySchema,
      response: { 200: described(AuthenticationOptionsResponseSchema, 'Options for navigator.credentials.get, and the challenge\'s id to answer with'), ...errorResponses({ body: true }) }
    }
  }, async (request) => ({ data: await passkeys.authenticationOptions(request.body?.email ?? undefined) }))

  fastify.post('/authentication', {
    config: { access: 'public' },
    schema: {
      operationId: 'auth.passkeys.authenticate',
      tags: ['passkeys'],
      summary: 'Sign in with a passkey: a token pair (with user verification), or an MFA challenge as after a password',
      body: PasskeyAuthenticationBodySchema,
      response: { 200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the passkey was used without user verification and the account has MFA on (`mfa_required`)'), ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request) => ({ data: await signIn.withPasskey(request.serviceContext, request.body) }))
}

export default passkeys
