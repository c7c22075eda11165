import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { POST_FIELDS, PostCollectionSchema, PostFiltersSchema } from '../../../schemas/post.js'
import { Errors } from '../../errors.js'
import { postsPage } from '../posts/visibility.js'

/** Spec 4.1's last row: a user's posts, with the visibility of the posts list. */
const userPosts: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/:id/posts', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      summary: 'A user\'s posts',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: PostCollectionSchema, ...errorResponses({}, 401, 404) }
    }
  }, async (request) => {
    if (await fastify.repositories.users.findById(request.params.id) === undefined) throw new Errors.NOT_FOUND('User')
    return await postsPage(fastify, request, request.query, request.params.id)
  })
}

export default userPosts
