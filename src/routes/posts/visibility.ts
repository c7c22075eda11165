import type { FastifyInstance, FastifyRequest } from 'fastify'
import { POST_FIELDS, type Post } from '../../../schemas/post.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { type CollectionQueryInput, parseCollectionQuery } from '../../collection/query.js'
import { hasPermission } from '../../security/permissions.js'
import type { Visibility } from '../../store/posts.js'

/** Matches no user: asks whether a permission is held over other people's resources. */
const SOMEONE_ELSE = ''

/**
 * CONTRACT section 7: without a token only published posts; with one, also the caller's
 * own; callers who may edit anyone's posts (moderators, admins) see every post.
 */
export function visibilityOf (request: FastifyRequest): Visibility {
  const { user } = request
  if (user === null) return { viewerId: null, seesAll: false }
  return { viewerId: user.id, seesAll: hasPermission(user, 'write', SOMEONE_ELSE) }
}

export function canSee (visibility: Visibility, post: Post): boolean {
  return visibility.seesAll || post.status === 'published' || post.author_id === visibility.viewerId
}

/** A page of the posts the caller may see (newest first by default), optionally one author's. */
export async function postsPage (
  fastify: FastifyInstance,
  request: FastifyRequest,
  query: CollectionQueryInput & { status?: string },
  authorId?: string
) {
  const { status, ...rest } = query
  const collection = parseCollectionQuery(rest, { ...POST_FIELDS, defaultSort: [{ field: 'created_at', descending: true }] },
    fastify.cursors, status === undefined ? {} : { status })
  return collectionEnvelope(await fastify.repositories.posts.list(collection, visibilityOf(request), authorId), collection.fields)
}
