import { ID_TOKEN_ALGORITHMS } from '../../schemas/keys.js'
import { type OAuthClientCreate, OAuthClientCreateSchema, OAUTH_GRANT_TYPES } from '../../schemas/oauth-clients.js'
import { validationFailed } from '../errors.js'
import { schemaIssues } from '../http/validation.js'
import { commandContext, commandOptions, failUsage, runServiceCommand } from './service-command.js'

const USAGE = `Usage: npm run --silent client:create -- --name NAME [--redirect-uri URI]... [--grant-type GRANT]...
                                          [--scope SCOPE]... [--public] [--id-token-alg ALG]

Registers an application with the authorization server in DATABASE_URL (migrating it first), as
POST /api/v1/oauth-clients does: the same rules, audited (actor: the command line). Prints the
client as JSON on stdout, with its secret, which is shown this once.

  --name NAME                      shown to people signing in (required)
  --redirect-uri URI               where codes are sent back; repeated for several
  --post-logout-redirect-uri URI   where the browser may go after signing out; repeated
  --grant-type GRANT               one of ${OAUTH_GRANT_TYPES.join(', ')};
                                   repeated or comma-separated (default: authorization_code and
                                   refresh_token with a redirect URI, else client_credentials)
  --scope SCOPE                    repeated or comma-separated (default: openid, profile, email
                                   with a redirect URI, else required)
  --public                         no secret: a browser or native application (PKCE only)
  --id-token-alg ALG               ${ID_TOKEN_ALGORITHMS.join(', ')} (default: RS256)
  --help                           this text
`

const { values } = commandOptions({
  name: { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  'grant-type': { type: 'string', multiple: true },
  scope: { type: 'string', multiple: true },
  public: { type: 'boolean' },
  'id-token-alg': { type: 'string' }
}, USAGE)

const listed = (given: string[] | undefined) => given?.flatMap((item) => item.split(',')).filter((item) => item !== '')
const redirectUris = values['redirect-uri'] ?? []
const forPeople = redirectUris.length > 0
const input = {
  name: values.name ?? failUsage('--name is required', USAGE),
  confidential: values.public !== true,
  redirect_uris: redirectUris,
  post_logout_redirect_uris: values['post-logout-redirect-uri'] ?? [],
  grant_types: listed(values['grant-type']) ?? (forPeople ? ['authorization_code', 'refresh_token'] : ['client_credentials']),
  scopes: listed(values.scope) ?? (forPeople ? ['openid', 'profile', 'email'] : failUsage('--scope is required for a client without a redirect URI', USAGE)),
  ...(values['id-token-alg'] !== undefined && { id_token_signed_response_alg: values['id-token-alg'] })
}

await runServiceCommand(async (app) => {
  // The API's request schema first, then the service's rules, as for a registration through the API.
  const issues = schemaIssues(OAuthClientCreateSchema)(input)
  if (issues.length > 0) throw validationFailed(issues)
  const client = await app.services.oauthClients.create(commandContext('client:create'), input as OAuthClientCreate, 'command_line')
  process.stdout.write(`${JSON.stringify(client, null, 2)}\n`)
})
