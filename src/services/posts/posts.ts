import { COMMENT_FIELDS, type Comment, POST_FIELDS, type Post, type PostChanges, type PostCreateBody } from '../../../schemas/post.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors } from '../../errors.js'
import { authorize, hasPermission } from '../../security/permissions.js'
import type { CommentsRepository, PostsRepository, Visibility } from '../../store/posts.js'
import type { UsersRepository } from '../../store/users.js'
import { type Caller, callerOf, type RequestContext } from '../context.js'

/** Matches no user: asks whether a permission is held over other people's resources. */
const SOMEONE_ELSE = ''

/**
 * Without a token only published posts; with one, also the caller's own; callers who may edit
 * anyone's posts (moderators, admins) see every post.
 */
function visibilityOf (caller: Caller | null): Visibility {
  if (caller === null) return { viewerId: null, seesAll: false }
  return { viewerId: caller.id, seesAll: hasPermission(caller, 'write', SOMEONE_ELSE) }
}

function canSee (visibility: Visibility, post: Post): boolean {
  return visibility.seesAll || post.status === 'published' || post.author_id === visibility.viewerId
}

export interface PostServiceDependencies {
  posts: PostsRepository
  comments: CommentsRepository
  users: UsersRepository
  cursors: CursorCodec
}

/**
 * Posts and their comments (docs/api.md, "Posts and comments");
 * a post the caller may not see is as absent as a missing one.
 */
export class PostService {
  constructor (private readonly deps: PostServiceDependencies) {}

  /** A page of the posts the caller may see (newest first by default), optionally one author's. */
  async list (context: RequestContext, query: CollectionQueryInput & { status?: string }, authorId?: string) {
    const caller = context.caller
    const { status, ...rest } = query
    return await collectionPage(rest, { ...POST_FIELDS, defaultSort: [{ field: 'created_at', descending: true }], scope: `posts:${authorId ?? 'all'}:${caller?.id ?? 'anonymous'}` }, this.deps.cursors,
      async (request) => await this.deps.posts.list(request, visibilityOf(caller), authorId),
      status === undefined ? {} : { status })
  }

  /** A user's posts, as `list` shows them; 404 for a user that does not exist. */
  async listOfAuthor (context: RequestContext, authorId: string, query: CollectionQueryInput & { status?: string }) {
    if (await this.deps.users.findById(authorId) === undefined) throw new Errors.NOT_FOUND('User')
    return await this.list(context, query, authorId)
  }

  async get (context: RequestContext, id: string): Promise<Post> {
    const post = await this.deps.posts.findById(id)
    if (post === undefined || !canSee(visibilityOf(context.caller), post)) throw new Errors.NOT_FOUND('Post')
    return post
  }

  async create (context: RequestContext, { title, body, status = 'draft' }: PostCreateBody): Promise<Post> {
    const caller = callerOf(context)
    return await this.deps.posts.create(caller.id, { title, body, status })
  }

  async update (context: RequestContext, id: string, changes: PostChanges): Promise<Post> {
    const caller = callerOf(context)
    const post = await this.get(context, id)
    authorize(caller, 'write', post.author_id)
    const updated = await this.deps.posts.update(post.id, changes)
    if (updated === undefined) throw new Errors.NOT_FOUND('Post')
    return updated
  }

  async remove (context: RequestContext, id: string): Promise<void> {
    const caller = callerOf(context)
    const post = await this.get(context, id)
    authorize(caller, 'delete', post.author_id)
    await this.deps.posts.delete(post.id)
  }

  /** A post's comments, oldest first by default. */
  async comments (context: RequestContext, postId: string, query: CollectionQueryInput) {
    const caller = context.caller
    const post = await this.get(context, postId)
    return await collectionPage(query, { ...COMMENT_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `comments:${post.id}:${caller?.id ?? 'anonymous'}` }, this.deps.cursors,
      async (request) => await this.deps.comments.list(post.id, request))
  }

  async comment (context: RequestContext, postId: string, body: string): Promise<Comment> {
    const caller = callerOf(context)
    const post = await this.get(context, postId)
    return await this.deps.comments.create(post.id, caller.id, body)
  }

  async updateComment (context: RequestContext, postId: string, commentId: string, body: string): Promise<Comment> {
    const caller = callerOf(context)
    const comment = await this.#visibleComment(context, postId, commentId)
    authorize(caller, 'write', comment.author_id)
    const updated = await this.deps.comments.update(comment.id, body)
    if (updated === undefined) throw new Errors.NOT_FOUND('Comment')
    return updated
  }

  async removeComment (context: RequestContext, postId: string, commentId: string): Promise<void> {
    const caller = callerOf(context)
    const comment = await this.#visibleComment(context, postId, commentId)
    authorize(caller, 'delete', comment.author_id)
    await this.deps.comments.delete(comment.id)
  }

  async #visibleComment (context: RequestContext, postId: string, commentId: string): Promise<Comment> {
    await this.get(context, postId)
    const comment = await this.deps.comments.find(postId, commentId)
    if (comment === undefined) throw new Errors.NOT_FOUND('Comment')
    return comment
  }
}
