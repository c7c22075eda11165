import { type Static, Type } from '@sinclair/typebox'
import { TimestampSchema } from './common.js'
import { component } from './components.js'

/** The id of a consent: the authorization server's grant id. */
export const GrantIdSchema = Type.String({
  minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', examples: ['Xb3kQm9yR2Lw7eHc1AqZpT5vN0dJ8sUfGhKiOjYtBrW'], description: 'The consent\'s id'
})

/** A consent the caller gave an application (docs/api.md, "Authorization server"). */
export const AuthorizationGrantSchema = Type.Object({
  id: GrantIdSchema,
  client_id: Type.String({ description: 'The application\'s client id' }),
  client_name: Type.String({ description: 'The application\'s registered name (empty once it was deleted)' }),
  scopes: Type.Array(Type.String(), { description: 'What the application may see or do' }),
  organization_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The organization chosen for the `organization` scope (its tokens\' `org_id`), or null'
  }),
  granted_at: TimestampSchema,
  expires_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When the consent lapses, or null' })
}, { title: 'AuthorizationGrant' })
export type AuthorizationGrant = Static<typeof AuthorizationGrantSchema>

export const AuthorizationGrantListResponseSchema = component('AuthorizationGrantListResponse', Type.Object({
  data: Type.Array(component('AuthorizationGrant', AuthorizationGrantSchema))
}))

export const GrantParamsSchema = Type.Object({ id: GrantIdSchema })
