import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { backends } from '../../helpers/database.js'
import { actingAs, buildServices, registered } from '../../helpers/services.js'

for (const backend of backends()) {
  t.test(`post service (${backend.name})`, async (t) => {
    t.test('a draft is its author\'s and moderators\' alone: absent for others, not forbidden', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { posts } = fixture.services
      const author = await registered(fixture)
      const reader = await registered(fixture)
      const moderator = await registered(fixture, ['moderator'])
      const draft = await posts.create(actingAs(author), { title: 'Draft', body: 'Not yet' })
      t.equal(draft.status, 'draft', 'draft unless a status is given')
      t.equal((await posts.get(actingAs(author), draft.id)).id, draft.id)
      t.equal((await posts.get(actingAs(moderator), draft.id)).id, draft.id)
      await t.rejects(posts.get(actingAs(reader), draft.id), Errors.NOT_FOUND)
      await t.rejects(posts.get(actingAs(null), draft.id), Errors.NOT_FOUND)
      await t.rejects(posts.update(actingAs(reader), draft.id, { title: 'Taken' }), Errors.NOT_FOUND, 'a hidden post cannot be edited either')
      t.same((await posts.list(actingAs(reader), {})).data, [], 'nor listed')
      t.equal((await posts.listOfAuthor(actingAs(author), author.id, {})).data.length, 1)
    })

    t.test('a published post is anyone\'s to read and its author\'s or a moderator\'s to change', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { posts } = fixture.services
      const author = await registered(fixture)
      const reader = await registered(fixture)
      const moderator = await registered(fixture, ['moderator'])
      const post = await posts.create(actingAs(author), { title: 'Hello', body: 'World', status: 'published' })
      t.equal((await posts.get(actingAs(null), post.id)).title, 'Hello')
      await t.rejects(posts.update(actingAs(reader), post.id, { title: 'Mine' }), { code: 'FORBIDDEN', message: 'Permission denied. Requires: write' })
      t.equal((await posts.update(actingAs(moderator), post.id, { title: 'Moderated' })).title, 'Moderated')
      const comment = await posts.comment(actingAs(reader), post.id, 'Nice')
      await t.rejects(posts.removeComment(actingAs(author), post.id, comment.id), { code: 'FORBIDDEN', message: 'Permission denied. Requires: delete' }, 'the post\'s author does not own its comments')
      await posts.removeComment(actingAs(reader), post.id, comment.id)
      await posts.remove(actingAs(author), post.id)
      await t.rejects(posts.get(actingAs(author), post.id), Errors.NOT_FOUND)
      await t.rejects(posts.listOfAuthor(actingAs(null), '0190a000-0000-7000-8000-000000000000', {}), Errors.NOT_FOUND, 'an unknown author is 404')
    })
  })
}
