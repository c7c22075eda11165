import t from 'tap'
import { IdpRefusal } from '../../../src/federation/refusal.js'
import { openIdPerson } from '../../../src/services/sso/assertion-profile.js'

/**
 * The person an OpenID connection's provider names (docs/api.md, "OpenID Connect connections"):
 * its claims through the connection's mapping, refused where the provider does not vouch for the
 * address, and, at Google's shared issuer, where the account is not its domain's Workspace's.
 */

const ISSUER = 'https://idp.acme.example'
const GOOGLE = 'https://accounts.google.com'

t.test('the standard claims, or those the mapping names', async (t) => {
  t.same(openIdPerson(ISSUER, { sub: 's1', email: 'Ada@Acme.example', name: 'Ada L', groups: ['Admins', 3, ''] }, {}),
    { subject: 's1', email: 'ada@acme.example', name: 'Ada L', groups: ['Admins'] })
  t.same(openIdPerson(ISSUER, { sub: 's2', email: 'ada@acme.example', given_name: 'Ada', family_name: 'Lovelace', groups: 'Admins' }, {}),
    { subject: 's2', email: 'ada@acme.example', name: 'Ada Lovelace', groups: ['Admins'] }, 'a single group as a string; the name from its parts')
  t.same(openIdPerson(ISSUER, { sub: 's3', preferred_username: 'ada@acme.example', roles: ['Owners'] }, { email: 'preferred_username', groups: 'roles' }),
    { subject: 's3', email: 'ada@acme.example', name: null, groups: ['Owners'] }, 'Entra ID\'s UPN and app roles, mapped')
})

t.test('refused with the reason where the provider does not vouch for an address', async (t) => {
  const refused = (issuer: string, claims: Record<string, unknown>, reason: RegExp, name: string) => {
    const thrown = (() => {
      try {
        openIdPerson(issuer, { sub: 's', ...claims }, {})
      } catch (error) {
        return error
      }
    })()
    t.ok(thrown instanceof IdpRefusal, `${name}: refused`)
    t.match((thrown as Error | undefined)?.message, reason, name)
  }
  refused(ISSUER, {}, /names no usable e-mail address/, 'no address')
  refused(ISSUER, { email: 'not an address' }, /names no usable e-mail address/, 'not an address')
  refused(ISSUER, { email: 'ada@acme.example', email_verified: false }, /not verified/, 'email_verified false')
  refused(ISSUER, { email: 'ada@acme.example', email_verified: 'false' }, /not verified/, 'email_verified "false", as some providers send it')
  refused(GOOGLE, { email: 'ada@acme.example', email_verified: true }, /Google Workspace domain/, 'a consumer Google account (no hd)')
  refused(GOOGLE, { email: 'ada@acme.example', email_verified: true, hd: 'evil.example' }, /Google Workspace domain/, 'another Workspace')
  t.equal(openIdPerson(GOOGLE, { sub: 'g', email: 'ada@acme.example', email_verified: true, hd: 'acme.example' }, {}).email, 'ada@acme.example',
    'a Workspace account of the address\'s domain')
  t.equal(openIdPerson(ISSUER, { sub: 'e', email: 'ada@acme.example' }, {}).email, 'ada@acme.example', 'no email_verified: the provider vouches, as a SAML IdP does')
})
