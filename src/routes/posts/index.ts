import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { BEARER, LOCATION, described, IdParamsSchema, OPTIONAL_BEARER } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { COMMENT_FIELDS, CommentBodySchema, CommentCollectionSchema, CommentParamsSchema, CommentResponseSchema, POST_FIELDS, PostCollectionSchema, PostCreateBodySchema, PostFiltersSchema, PostPatchBodySchema, PostResponseSchema } from '../../../schemas/post.js'

/** Posts and their comments (docs/api.md, "Posts and comments"). */
const posts: FastifyPluginAsyncTypebox = async (fastify) => {
  const { posts: service } = fastify.services

  fastify.get('', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      operationId: 'posts.list',
      summary: 'List posts (published ones; with a token also the caller\'s own)',
      security: OPTIONAL_BEARER,
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: described(PostCollectionSchema, 'A page of posts'), ...errorResponses({}, 401) }
    }
  }, async (request) => await service.list(request.user, request.query))

  fastify.post('', {
    onRequest: [fastify.authenticate, fastify.requirePermission('create')],
    schema: {
      tags: ['posts'],
      operationId: 'posts.create',
      summary: 'Write a post (draft unless a status is given)',
      security: BEARER,
      body: PostCreateBodySchema,
      response: { 201: described(PostResponseSchema, 'Created: the post', LOCATION), ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    const post = await service.create(fastify.authorize(request, 'create'), request.body)
    return await reply.code(201).header('location', `/api/v1/posts/${post.id}`).send({ data: post })
  })

  fastify.get('/:id', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      operationId: 'posts.get',
      summary: 'Get a post',
      security: OPTIONAL_BEARER,
      params: IdParamsSchema,
      response: { 200: described(PostResponseSchema, 'The post'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => ({ data: await service.get(request.user, request.params.id) }))

  fastify.patch('/:id', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['posts'],
      operationId: 'posts.update',
      summary: 'Edit a post (its author, or a moderator or admin)',
      security: BEARER,
      params: IdParamsSchema,
      body: PostPatchBodySchema,
      response: { 200: described(PostResponseSchema, 'The edited post'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.update(fastify.authorize(request, 'read'), request.params.id, request.body) }))

  fastify.delete('/:id', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['posts'],
      operationId: 'posts.delete',
      summary: 'Delete a post and its comments (its author, or a moderator or admin)',
      security: BEARER,
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(fastify.authorize(request, 'read'), request.params.id)
    return await reply.code(204).send()
  })

  fastify.get('/:id/comments', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.list',
      summary: 'List a post\'s comments (oldest first)',
      security: OPTIONAL_BEARER,
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(COMMENT_FIELDS),
      response: { 200: described(CommentCollectionSchema, 'A page of the post\'s comments'), ...errorResponses({}, 401, 404) }
    }
  }, async (request) => await service.comments(request.user, request.params.id, request.query))

  fastify.post('/:id/comments', {
    onRequest: [fastify.authenticate, fastify.requirePermission('create')],
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.create',
      summary: 'Comment on a post',
      security: BEARER,
      params: IdParamsSchema,
      body: CommentBodySchema,
      response: { 201: described(CommentResponseSchema, 'Created: the comment'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const comment = await service.comment(fastify.authorize(request, 'create'), request.params.id, request.body.body)
    return await reply.code(201).send({ data: comment })
  })

  fastify.patch('/:id/comments/:commentId', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.update',
      summary: 'Edit a comment (its author, or a moderator or admin)',
      security: BEARER,
      params: CommentParamsSchema,
      body: CommentBodySchema,
      response: { 200: described(CommentResponseSchema, 'The edited comment'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, commentId } = request.params
    return { data: await service.updateComment(fastify.authorize(request, 'read'), id, commentId, request.body.body) }
  })

  fastify.delete('/:id/comments/:commentId', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['comments'],
      operationId: 'posts.comments.delete',
      summary: 'Delete a comment (its author, or a moderator or admin)',
      security: BEARER,
      params: CommentParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.removeComment(fastify.authorize(request, 'read'), request.params.id, request.params.commentId)
    return await reply.code(204).send()
  })
}

export default posts
