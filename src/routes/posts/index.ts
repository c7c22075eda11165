import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { LOCATION, described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { COMMENT_FIELDS, CommentBodySchema, CommentCollectionSchema, CommentParamsSchema, CommentResponseSchema, POST_FIELDS, PostCollectionSchema, PostCreateBodySchema, PostFiltersSchema, PostPatchBodySchema, PostResponseSchema } from '../../../schemas/post.js'

/** Posts and their comments (docs/api.md, "Posts and comments"). */
const posts: FastifyPluginAsyncTypebox = async (fastify) => {
  const { posts: service } = fastify.services

  fastify.get('', {
    config: { access: 'optional' },
    schema: {
      tags: ['posts'],
      operationId: 'posts.list',
      summary: 'List posts (published ones; with a token also the caller\'s own)',
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: described(PostCollectionSchema, 'A page of posts'), ...errorResponses({}, 401) }
    }
  }, async (request) => await service.list(request.serviceContext, request.query))

  fastify.post('', {
    config: { access: { permission: 'create' } },
    schema: {
      tags: ['posts'],
      operationId: 'posts.create',
      summary: 'Write a post (draft unless a status is given)',
      body: PostCreateBodySchema,
      response: { 201: described(PostResponseSchema, 'Created: the post', LOCATION), ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    const post = await service.create(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/posts/${post.id}`).send({ data: post })
  })

  fastify.get('/:id', {
    config: { access: 'optional' },
    schema: {
      tags: ['posts'],
      operationId: 'posts.get',
      summary: 'Get a post',
      params: IdParamsSchema,
      response: { 200: described(PostResponseSchema, 'The post'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => ({ data: await service.get(request.serviceContext, request.params.id) }))

  fastify.patch('/:id', {
    config: { access: 'bearer' },
    schema: {
      tags: ['posts'],
      operationId: 'posts.update',
      summary: 'Edit a post (its author, or a moderator or admin)',
      params: IdParamsSchema,
      body: PostPatchBodySchema,
      response: { 200: described(PostResponseSchema, 'The edited post'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.update(request.serviceContext, request.params.id, request.body) }))

  fastify.delete('/:id', {
    config: { access: 'bearer' },
    schema: {
      tags: ['posts'],
      operationId: 'posts.delete',
      summary: 'Delete a post and its comments (its author, or a moderator or admin)',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })

  fastify.get('/:id/comments', {
    config: { access: 'optional' },
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.list',
      summary: 'List a post\'s comments (oldest first)',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(COMMENT_FIELDS),
      response: { 200: described(CommentCollectionSchema, 'A page of the post\'s comments'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => await service.comments(request.serviceContext, request.params.id, request.query))

  fastify.post('/:id/comments', {
    config: { access: { permission: 'create' } },
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.create',
      summary: 'Comment on a post',
      params: IdParamsSchema,
      body: CommentBodySchema,
      response: { 201: described(CommentResponseSchema, 'Created: the comment'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const comment = await service.comment(request.serviceContext, request.params.id, request.body.body)
    return await reply.code(201).send({ data: comment })
  })

  fastify.patch('/:id/comments/:commentId', {
    config: { access: 'bearer' },
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.update',
      summary: 'Edit a comment (its author, or a moderator or admin)',
      params: CommentParamsSchema,
      body: CommentBodySchema,
      response: { 200: described(CommentResponseSchema, 'The edited comment'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, commentId } = request.params
    return { data: await service.updateComment(request.serviceContext, id, commentId, request.body.body) }
  })

  fastify.delete('/:id/comments/:commentId', {
    config: { access: 'bearer' },
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.delete',
      summary: 'Delete a comment (its author, or a moderator or admin)',
      params: CommentParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.removeComment(request.serviceContext, request.params.id, request.params.commentId)
    return await reply.code(204).send()
  })
}

export default posts
