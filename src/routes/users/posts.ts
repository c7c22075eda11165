import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema, OPTIONAL_BEARER } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { POST_FIELDS, PostCollectionSchema, PostFiltersSchema } from '../../../schemas/post.js'

/** A user's posts, with the visibility of the posts list (docs/api.md, "Posts and comments"). */
const userPosts: FastifyPluginAsyncTypebox = async (fastify) => {
  const { posts } = fastify.services
  fastify.get('/:id/posts', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      operationId: 'users.posts.list',
      summary: 'A user\'s posts',
      security: OPTIONAL_BEARER,
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: described(PostCollectionSchema, 'A page of the user\'s posts'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => await posts.listOfAuthor(request.user, request.params.id, request.query))
}

export default userPosts
