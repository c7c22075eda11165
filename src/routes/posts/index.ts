import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { BEARER, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { COMMENT_FIELDS, CommentBodySchema, CommentCollectionSchema, CommentParamsSchema, CommentResponseSchema, POST_FIELDS, PostCollectionSchema, PostCreateBodySchema, PostFiltersSchema, PostPatchBodySchema, PostResponseSchema } from '../../../schemas/post.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { parseCollectionQuery } from '../../collection/query.js'
import { Errors } from '../../errors.js'
import { canSee, postsPage, visibilityOf } from './visibility.js'

/** Spec 4.2 and CONTRACT section 7: posts and their comments. */
const posts: FastifyPluginAsyncTypebox = async (fastify) => {
  const { posts: repository, comments } = fastify.repositories

  /** The post if the caller may see it; a hidden post is as absent as a missing one. */
  async function visiblePost (request: FastifyRequest, id: string) {
    const post = await repository.findById(id)
    if (post === undefined || !canSee(visibilityOf(request), post)) throw new Errors.NOT_FOUND('Post')
    return post
  }

  async function visibleComment (request: FastifyRequest, postId: string, commentId: string) {
    await visiblePost(request, postId)
    const comment = await comments.find(postId, commentId)
    if (comment === undefined) throw new Errors.NOT_FOUND('Comment')
    return comment
  }

  fastify.get('', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      summary: 'List posts (published ones; with a token also the caller\'s own)',
      querystring: CollectionQuerySchema(POST_FIELDS, PostFiltersSchema),
      response: { 200: PostCollectionSchema, ...errorResponses({}, 401) }
    }
  }, async (request) => await postsPage(fastify, request, request.query))

  fastify.post('', {
    onRequest: [fastify.authenticate, fastify.requirePermission('create')],
    schema: {
      tags: ['posts'],
      summary: 'Write a post (draft unless a status is given)',
      security: BEARER,
      body: PostCreateBodySchema,
      response: { 201: PostResponseSchema, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    const { title, body, status = 'draft' } = request.body
    const post = await repository.create(request.user?.id ?? '', { title, body, status })
    return await reply.code(201).header('location', `/api/v1/posts/${post.id}`).send({ data: post })
  })

  fastify.get('/:id', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['posts'],
      summary: 'Get a post',
      params: IdParamsSchema,
      response: { 200: PostResponseSchema, ...errorResponses({}, 401, 404) }
    }
  }, async (request) => ({ data: await visiblePost(request, request.params.id) }))

  fastify.patch('/:id', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['posts'],
      summary: 'Edit a post (its author, or a moderator or admin)',
      security: BEARER,
      params: IdParamsSchema,
      body: PostPatchBodySchema,
      response: { 200: PostResponseSchema, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const post = await visiblePost(request, request.params.id)
    fastify.authorize(request, 'write', post.author_id)
    const updated = await repository.update(post.id, request.body)
    if (updated === undefined) throw new Errors.NOT_FOUND('Post')
    return { data: updated }
  })

  fastify.delete('/:id', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['posts'],
      summary: 'Delete a post and its comments (its author, or a moderator or admin)',
      security: BEARER,
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const post = await visiblePost(request, request.params.id)
    fastify.authorize(request, 'delete', post.author_id)
    await repository.delete(post.id)
    return await reply.code(204).send()
  })

  fastify.get('/:id/comments', {
    onRequest: [fastify.authenticateIfPresent],
    schema: {
      tags: ['comments'],
      summary: 'List a post\'s comments (oldest first)',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(COMMENT_FIELDS),
      response: { 200: CommentCollectionSchema, ...errorResponses({}, 401, 404) }
    }
  }, async (request) => {
    const post = await visiblePost(request, request.params.id)
    const collection = parseCollectionQuery(request.query, { ...COMMENT_FIELDS, defaultSort: [{ field: 'created_at', descending: false }] }, fastify.cursors)
    return collectionEnvelope(await comments.list(post.id, collection), collection.fields)
  })

  fastify.post('/:id/comments', {
    onRequest: [fastify.authenticate, fastify.requirePermission('create')],
    schema: {
      tags: ['comments'],
      summary: 'Comment on a post',
      security: BEARER,
      params: IdParamsSchema,
      body: CommentBodySchema,
      response: { 201: CommentResponseSchema, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const post = await visiblePost(request, request.params.id)
    const comment = await comments.create(post.id, request.user?.id ?? '', request.body.body)
    return await reply.code(201).send({ data: comment })
  })

  fastify.patch('/:id/comments/:commentId', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['comments'],
      summary: 'Edit a comment (its author, or a moderator or admin)',
      security: BEARER,
      params: CommentParamsSchema,
      body: CommentBodySchema,
      response: { 200: CommentResponseSchema, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const comment = await visibleComment(request, request.params.id, request.params.commentId)
    fastify.authorize(request, 'write', comment.author_id)
    const updated = await comments.update(comment.id, request.body.body)
    if (updated === undefined) throw new Errors.NOT_FOUND('Comment')
    return { data: updated }
  })

  fastify.delete('/:id/comments/:commentId', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['comments'],
      summary: 'Delete a comment (its author, or a moderator or admin)',
      security: BEARER,
      params: CommentParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const comment = await visibleComment(request, request.params.id, request.params.commentId)
    fastify.authorize(request, 'delete', comment.author_id)
    await comments.delete(comment.id)
    return await reply.code(204).send()
  })
}

export default posts
