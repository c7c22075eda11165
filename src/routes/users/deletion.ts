import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { DataEnvelope, described, TimestampSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'

const DeletionScheduledSchema = DataEnvelope(Type.Object({
  deletion_due_at: TimestampSchema
}, { title: 'DeletionScheduled' }))

/** Deleting one's own account (docs/api.md, "Deleting one's account"). */
const deletion: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accountDeletion } = fastify.services

  fastify.delete('/me', {
    config: { access: 'bearer' },
    schema: {
      tags: ['users'],
      operationId: 'users.deleteOwn',
      summary: 'Delete one\'s own account, a sensitive change (needs a proof): at once, or after ACCOUNT_DELETION_GRACE_DAYS',
      body: ProofBodySchema,
      response: {
        202: described(DeletionScheduledSchema, 'Scheduled: the account is suspended until it is erased'),
        204: { type: 'null', description: 'Deleted' },
        ...errorResponses({ body: true }, 401, 403, 423)
      }
    }
  }, async (request, reply) => {
    const scheduled = await accountDeletion.deleteOwn(request.serviceContext, request.body ?? {})
    if (scheduled === null) return await reply.code(204).send()
    return await reply.code(202).send({ data: scheduled })
  })
}

export default deletion
