import type { Comment, Post } from '../../schemas/post.js'
import type { CollectionRequest } from '../collection/query.js'
import { uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { SEARCH_INDEXES } from './search.js'
import type { Db } from './types.js'

/** Who is reading: anonymous readers see published posts; a caller also their own; moderators all. */
export interface Visibility {
  viewerId: string | null
  seesAll: boolean
}

const POST_COLUMNS = ['id', 'author_id', 'title', 'body', 'status', 'created_at', 'updated_at'] as const
const COMMENT_COLUMNS = ['id', 'post_id', 'author_id', 'body', 'created_at'] as const

/** A type rather than an interface: only type literals meet FilterValues' index signature. */
type PostFilters = {
  authorId?: string
  /** Undefined: every post; null: published ones; an id: published ones and that author's. */
  visibleTo?: string | null
  status?: string
}

/**
 * The maintained count of the posts these filters select (migration 0010 keeps `posts` and
 * `posts:<status>`): every post or one status (a moderator), published ones (anonymous).
 * A signed-in reader's own posts among the published, and one author's, are counted.
 */
function postsCount ({ authorId, visibleTo, status }: PostFilters): string | undefined {
  if (authorId !== undefined) return undefined
  if (visibleTo === undefined) return status === undefined ? 'posts' : `posts:${status}`
  if (visibleTo === null && (status === undefined || status === 'published')) return 'posts:published'
  return undefined
}

export class PostsRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    this.#pages = new PageQueries<Post, PostFilters>(({ authorId, visibleTo, status }) => {
      let filtered = db.selectFrom('posts')
      if (authorId !== undefined) filtered = filtered.where('author_id', '=', authorId)
      if (visibleTo === null) filtered = filtered.where('status', '=', 'published')
      else if (visibleTo !== undefined) filtered = filtered.where((eb) => eb.or([eb('status', '=', 'published'), eb('author_id', '=', visibleTo)]))
      if (status !== undefined) filtered = filtered.where('status', '=', status as Post['status'])
      return filtered
    }, POST_COLUMNS, pages, {
      searchIn: SEARCH_INDEXES.posts.columns,
      searchIndex: SEARCH_INDEXES.posts,
      maintainedCount: postsCount
    })
  }

  async create (authorId: string, post: Pick<Post, 'title' | 'body' | 'status'>): Promise<Post> {
    const now = new Date().toISOString()
    const row = { id: uuidv7(), author_id: authorId, ...post, created_at: now, updated_at: now }
    await this.db.insertInto('posts').values(row).execute()
    return row
  }

  async findById (id: string): Promise<Post | undefined> {
    return await this.db.selectFrom('posts').select(POST_COLUMNS).where('id', '=', id).executeTakeFirst()
  }

  async update (id: string, changes: Partial<Pick<Post, 'title' | 'body' | 'status'>>): Promise<Post | undefined> {
    return await this.db.updateTable('posts').set({ ...changes, updated_at: new Date().toISOString() })
      .where('id', '=', id).returning(POST_COLUMNS).executeTakeFirst()
  }

  /** Removes the post and its comments. */
  async delete (id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('posts').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }

  /** Posts the viewer may see; `authorId` narrows to one author's posts. */
  async list (request: CollectionRequest, visibility: Visibility, authorId?: string): Promise<CollectionResult<Post>> {
    return await this.#pages.run(request, {
      authorId,
      visibleTo: visibility.seesAll ? undefined : visibility.viewerId,
      status: request.filters.status
    })
  }

  /**
   * The latest `limit` posts `authorId` wrote, whatever their status, newest first (an
   * account's export, docs/api.md, "Account export"): read backwards through
   * posts_author_id_created_at_id, which gives the order.
   */
  async latestByAuthor (authorId: string, limit: number): Promise<Post[]> {
    return await this.db.selectFrom('posts').select(POST_COLUMNS)
      .where('author_id', '=', authorId)
      .orderBy('created_at', 'desc').orderBy('id', 'desc')
      .limit(limit).execute()
  }
}

export class CommentsRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    this.#pages = new PageQueries<Comment, { postId: string }>(({ postId }) =>
      db.selectFrom('comments').where('post_id', '=', postId), COMMENT_COLUMNS, pages, {
      searchIn: SEARCH_INDEXES.comments.columns,
      searchIndex: SEARCH_INDEXES.comments
    })
  }

  async create (postId: string, authorId: string, body: string): Promise<Comment> {
    const row = { id: uuidv7(), post_id: postId, author_id: authorId, body, created_at: new Date().toISOString() }
    await this.db.insertInto('comments').values(row).execute()
    return row
  }

  async find (postId: string, id: string): Promise<Comment | undefined> {
    return await this.db.selectFrom('comments').select(COMMENT_COLUMNS).where('post_id', '=', postId).where('id', '=', id).executeTakeFirst()
  }

  async update (id: string, body: string): Promise<Comment | undefined> {
    return await this.db.updateTable('comments').set({ body }).where('id', '=', id).returning(COMMENT_COLUMNS).executeTakeFirst()
  }

  async delete (id: string): Promise<void> {
    await this.db.deleteFrom('comments').where('id', '=', id).execute()
  }

  async list (postId: string, request: CollectionRequest): Promise<CollectionResult<Comment>> {
    return await this.#pages.run(request, { postId })
  }

  /**
   * The latest `limit` comments `authorId` wrote, on any post, newest first (an account's
   * export, docs/api.md, "Account export"): found through comments_author_id, so only the
   * author's own comments are read (and sorted).
   */
  async latestByAuthor (authorId: string, limit: number): Promise<Comment[]> {
    return await this.db.selectFrom('comments').select(COMMENT_COLUMNS)
      .where('author_id', '=', authorId)
      .orderBy('created_at', 'desc').orderBy('id', 'desc')
      .limit(limit).execute()
  }
}
