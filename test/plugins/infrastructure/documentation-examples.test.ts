import { sample } from 'openapi-sampler'
import t from 'tap'
import { withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'

type Json = Record<string, any>

/**
 * What Swagger UI's "Try it out" fills in: a parameter's example (or default), and a body
 * generated from the schema, each property from its first `examples` value.
 */
function exampleOf (parameter: Json): unknown {
  return parameter.example ?? parameter.schema?.examples?.[0] ?? parameter.schema?.example ?? parameter.schema?.default
}

/** The body "Try it out" shows: the media type's example, or one generated from the schema; a form's as a form. */
function bodyOf (document: Json, operation: Json): Json | string | undefined {
  const json = operation.requestBody?.content?.['application/json']
  const form = operation.requestBody?.content?.['application/x-www-form-urlencoded']
  const media = json ?? form
  if (media === undefined) return undefined
  const body = media.example ?? sample(media.schema, {}, document) as Json
  return json === undefined ? new URLSearchParams(body as Record<string, string>).toString() : body
}

for (const policy of ['basic', 'strong']) {
  t.test(`"Try it out" as shown (PASSWORD_POLICY=${policy}): every operation's example request passes validation, and sign-up then sign-in succeed`, async (t) => {
    const app = await build(t, { env: { PASSWORD_POLICY: policy } })
    const document = app.swagger() as Json
    const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: bodyOf(document, document.paths['/api/v1/users'].post) })
    t.equal(created.statusCode, 201, `sign-up with the example body: ${created.body}`)
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: bodyOf(document, document.paths['/api/v1/auth/login'].post) })
    t.equal(login.statusCode, 200, `sign-in with the example body: ${login.body}`)

    // The example account, made an administrator, tries every operation: signed in and stepped
    // up with the examples themselves.
    const { id, email } = created.json().data
    await app.repositories.users.markEmailVerified(id, email)
    await app.repositories.users.addRole(id, 'super_admin')
    async function signIn (): Promise<string> {
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: bodyOf(document, document.paths['/api/v1/auth/login'].post) })
      const token: string = login.json().data.access_token
      const stepUp = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/reauthenticate', payload: bodyOf(document, document.paths['/api/v1/auth/reauthenticate'].post) }))
      t.equal(stepUp.statusCode, 200, 'the step-up example proves the example account')
      return token
    }
    let token = await signIn()
    // Deleting one's own account goes out with an account of its own, signed in and stepped up
    // with the example password: the example deletes it.
    const { password } = bodyOf(document, document.paths['/api/v1/auth/login'].post) as { password: string }
    const leavingEmail = 'leaving@example.com'
    await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: leavingEmail, name: 'Leaving Soon', password } })
    const leaving = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: leavingEmail, password } })).json().data.access_token as string
    await app.inject(withToken(leaving, { method: 'POST', url: '/api/v1/auth/reauthenticate', payload: { password } }))
    const missing: string[] = []
    const refused: string[] = []
    let operations = 0
    for (const [path, item] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
      // An earlier example may have signed the caller out (logout, password change): a guard
      // would then answer before validation, so each request goes out with a working token.
        const me = await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))
        if (me.statusCode !== 200) token = await signIn()
        let url = path
        const query = new URLSearchParams()
        const headers: Record<string, string> = {}
        for (const parameter of operation.parameters ?? []) {
          const example = exampleOf(parameter)
          if (example === undefined) {
            if (parameter.required === true) missing.push(`${method.toUpperCase()} ${path}: ${parameter.in} ${parameter.name}`)
            continue
          }
          if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(example)))
          if (parameter.in === 'query') query.set(parameter.name, String(example))
          if (parameter.in === 'header') headers[parameter.name] = String(example)
        }
        const payload = bodyOf(document, operation)
        if (typeof payload === 'string') headers['content-type'] = 'application/x-www-form-urlencoded'
        const search = query.size === 0 ? '' : `?${query}`
        const caller = `${method} ${path}` === 'delete /api/v1/users/me' ? leaving : token
        const answer = await app.inject(withToken(caller, { method: method.toUpperCase() as 'GET', url: `${url}${search}`, headers, ...(payload === undefined ? {} : { payload }) }))
        operations += 1
        const { error } = answer.statusCode === 400 ? answer.json() : { error: undefined }
        if (error?.code !== 'VALIDATION_FAILED') continue
        // A new passkey is the browser's own answer to fresh options: no example can stand for it.
        if (`${method} ${path}` === 'post /api/v1/auth/passkeys' && /could not be verified/.test(error.details[0].message)) continue
        refused.push(`${method.toUpperCase()} ${path}${search} ${JSON.stringify(payload)}: ${JSON.stringify(error)}`)
      }
    }
    t.ok(operations > 50, `${operations} operations tried`)
    t.same(missing, [], 'every required parameter has an example')
    t.same(refused, [], 'no example request is refused as invalid')
  })
}
