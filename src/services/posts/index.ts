import type { ServiceDependencies } from '../dependencies.js'
import { PostService } from './posts.js'

/** Posts and their comments. */
export function postServices ({ repositories, cursors }: ServiceDependencies) {
  const { posts, comments, users } = repositories
  return { posts: new PostService({ posts, comments, users, cursors }) }
}
