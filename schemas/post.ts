import { Type, type Static } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { IdSchema, TimestampSchema, DataEnvelope } from './common.js'

/** Post statuses (docs/api.md, "Posts and comments"). */
export const POST_STATUSES = ['draft', 'published', 'archived'] as const
export const PostStatusSchema = Type.Unsafe<typeof POST_STATUSES[number]>(Type.String({ enum: [...POST_STATUSES], title: 'PostStatus' }))

const TitleSchema = Type.String({ minLength: 1, maxLength: 200, examples: ['Notes on the Analytical Engine'] })
const PostBodySchema = Type.String({ minLength: 1, maxLength: 5000, examples: ['The engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.'] })
const CommentTextSchema = Type.String({ minLength: 1, maxLength: 2000, examples: ['A fine description.'] })

export const PostSchema = Type.Object({
  id: IdSchema,
  author_id: IdSchema,
  title: Type.String(),
  body: Type.String(),
  status: PostStatusSchema,
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'Post' })
export type Post = Static<typeof PostSchema>

export const PostCreateBodySchema = Type.Object({
  title: TitleSchema,
  body: PostBodySchema,
  status: Type.Optional(PostStatusSchema)
}, { additionalProperties: false, description: 'status defaults to draft' })
export type PostCreateBody = Static<typeof PostCreateBodySchema>

export const PostPatchBodySchema = Type.Object({
  title: Type.Optional(TitleSchema),
  body: Type.Optional(PostBodySchema),
  status: Type.Optional(PostStatusSchema)
}, { additionalProperties: false })
export type PostChanges = Static<typeof PostPatchBodySchema>

export const POST_FIELDS = {
  sortable: ['title', 'status', 'created_at', 'updated_at'],
  selectable: ['author_id', 'title', 'body', 'status', 'created_at', 'updated_at'],
  searchIn: 'the title and body'
} as const

export const PostListItemSchema = ListItem(PostSchema, 'PostListItem')

export const PostFiltersSchema = { status: Type.Optional(PostStatusSchema) }

export const CommentSchema = Type.Object({
  id: IdSchema,
  post_id: IdSchema,
  author_id: IdSchema,
  body: Type.String(),
  created_at: TimestampSchema
}, { title: 'Comment' })
export type Comment = Static<typeof CommentSchema>

export const CommentBodySchema = Type.Object({ body: CommentTextSchema }, { additionalProperties: false })

export const COMMENT_FIELDS = {
  sortable: ['created_at'],
  selectable: ['post_id', 'author_id', 'body', 'created_at'],
  searchIn: 'the body'
} as const

export const CommentListItemSchema = ListItem(CommentSchema, 'CommentListItem')

export const CommentParamsSchema = Type.Object({ id: IdSchema, commentId: IdSchema }, { additionalProperties: false })

/** Named response envelopes (components of the OpenAPI document). */
export const CommentCollectionSchema = CollectionEnvelope(CommentListItemSchema)
export const PostCollectionSchema = CollectionEnvelope(PostListItemSchema)
export const CommentResponseSchema = DataEnvelope(CommentSchema)
export const PostResponseSchema = DataEnvelope(PostSchema)
