import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { POST_FIELDS, PostCollectionSchema, PostFiltersSchema } from '../../../schemas/post.js'

/** A user's posts, with the visibility of the posts list (docs/api.md, "Posts and comments"). */
const userPosts: FastifyPluginAsyncTypebox = async (fastify) => {
  const { posts } = fastify.services
  fastify.get('/:id/posts', {
    config: { access: 'optional' },
    schema: {
      tags: ['posts'],
      operationId: 'users.posts.list',
      summary: 'A user\'s posts',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: described(PostCollectionSchema, 'A page of the user\'s posts'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => await posts.listOfAuthor(request.serviceContext, request.params.id, request.query))
}

export default userPosts
