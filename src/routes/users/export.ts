import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AccountExportResponseSchema } from '../../../schemas/account-export.js'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'

/** The caller's account export (docs/api.md, "Account export"). */
const accountExport: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accountExport: exports } = fastify.services

  fastify.get('/me/export', {
    config: { access: 'bearer' },
    schema: {
      tags: ['users'],
      operationId: 'users.export',
      summary: 'Export everything the service stores about the caller, as one JSON document (each list capped, the latest first)',
      // No parameters: an unknown one is refused, as everywhere (docs/api.md, "Conventions").
      querystring: Type.Object({}, { additionalProperties: false }),
      response: { 200: described(AccountExportResponseSchema, 'The caller\'s data: profile, sessions, devices, identities, passkeys, memberships, posts, comments, audit entries'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => ({ data: await exports.export(request.serviceContext) }))
}

export default accountExport
