import { generateSync } from 'otplib'
import t from 'tap'
import type { Caller } from '../../../src/services/context.js'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { actingAs, buildServices, contextFrom, owner, type ServiceFixture } from '../../helpers/services.js'

type Owner = Caller & { email: string }

/** One sensitive change, made by its owner's stepped-up session: its audit event and the notice's subject. */
interface SensitiveChange {
  what: string
  event: string
  subject: string
  /** The audit entry's details, where they say what changed. */
  details?: Record<string, unknown>
  make: (fixture: ServiceFixture, account: Owner) => Promise<unknown>
}

const here = contextFrom('192.0.2.60')

/** A passkey of the account, stored directly: the change under test is what follows. */
async function storedPasskey ({ repositories }: ServiceFixture, account: Owner) {
  return await repositories.passkeys.add(account.id, {
    credentialId: `credential-${account.id}`, publicKey: 'AAAA', counter: 0, transports: [], name: 'Laptop'
  })
}

const CHANGES: SensitiveChange[] = [
  {
    what: 'password changed',
    event: 'user.updated',
    subject: 'The password of your account was changed',
    details: { changed: ['password'] },
    make: async ({ services }, account) => await services.accounts.update(actingAs(account, here), account.id, {
      password: 'another-password-1', current_password: TEST_PASSWORD
    })
  },
  {
    what: 'phone number changed',
    event: 'user.updated',
    subject: 'The phone number of your account was changed',
    details: { changed: ['phone'] },
    make: async ({ services }, account) => await services.accounts.update(actingAs(account, here), account.id, { phone: '+15555550160' })
  },
  {
    what: 'backup codes replaced',
    event: 'mfa.backup_codes_replaced',
    subject: 'New backup codes were made for your account; the old ones no longer work',
    make: async ({ services }, account) => {
      const { secret } = await services.mfaSettings.setup(actingAs(account))
      await services.mfaSettings.enable(actingAs(account, here), { code: generateSync({ secret }) })
      // The enabling code's step is spent: the next step's code is the proof.
      const next = generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 })
      return await services.mfaSettings.replaceBackupCodes(actingAs(account, here), next)
    }
  },
  {
    what: 'passkey renamed',
    event: 'passkey.renamed',
    subject: 'A passkey of your account was renamed',
    details: { name: 'Work laptop' },
    make: async (fixture, account) => {
      const passkey = await storedPasskey(fixture, account)
      return await fixture.services.passkeys.rename(actingAs(account, here), passkey.id, { name: 'Work laptop' })
    }
  },
  {
    what: 'passkey removed',
    event: 'passkey.removed',
    subject: 'A passkey was removed from your account',
    make: async (fixture, account) => {
      const passkey = await storedPasskey(fixture, account)
      await fixture.services.passkeys.remove(actingAs(account, here), passkey.id, {})
    }
  },
  {
    what: 'identity unlinked',
    event: 'identity.unlinked',
    subject: 'A sign-in provider was unlinked from your account',
    details: { provider: 'github' },
    make: async ({ services, repositories }, account) => {
      await repositories.identities.link('github', `subject-${account.id}`, account.id, account.email)
      const [identity] = await services.federation.identities(actingAs(account))
      if (identity === undefined) throw new Error('no identity linked')
      await services.federation.unlink(actingAs(account, here), identity.id, {})
    }
  },
  {
    what: 'own account deleted',
    event: 'user.deleted',
    subject: 'Your account was deleted',
    details: { existed: true },
    make: async ({ services }, account) => { await services.accounts.remove(actingAs(account, here), account.id, {}) }
  }
]

for (const backend of backends()) {
  t.test(`sensitive changes are told and audited (${backend.name})`, async (t) => {
    t.test('every sensitive change sends its owner a notice and records its audit event: password, phone, backup codes, passkey renamed and removed, identity unlinked, self-deletion', async (t) => {
      const fixture = await buildServices(t, backend.url)
      for (const change of CHANGES) {
        const account = await owner(fixture)
        await change.make(fixture, account)
        await fixture.delivered()
        const notices = fixture.sent.filter((mail) => mail.to === account.email && mail.subject === change.subject)
        t.equal(notices.length, 1, `${change.what}: one notice to the owner`)
        t.match(notices[0]?.text, /If this was not you, reset your password/, `${change.what}: with the advice`)
        const entries = (await fixture.audited(change.event)).filter((row) => row.target_id === account.id)
        t.match(entries, [{ outcome: 'success', ip: '192.0.2.60', details: change.details ?? {} }], `${change.what}: audited as ${change.event}`)
        t.equal(entries.length, 1, `${change.what}: once`)
      }
    })
  })
}
