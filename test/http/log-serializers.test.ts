import t from 'tap'
import { logSerializers } from '../../src/http/request-log.js'

t.test('request logs carry method, URL, headers and address, with secrets redacted', async (t) => {
  const request = {
    method: 'POST',
    url: '/api/v1/auth/oauth/github/callback?code=c&state=s&refresh_token=rt',
    headers: { authorization: 'Bearer abc', cookie: 'sid=1', 'user-agent': 'ua', 'x-api-key': 'k' },
    ip: '203.0.113.4'
  }
  const logged = logSerializers.req(request as never)
  t.same(logged, {
    method: 'POST',
    url: '/api/v1/auth/oauth/github/callback?code=[REDACTED]&state=[REDACTED]&refresh_token=[REDACTED]',
    headers: { authorization: '[REDACTED]', cookie: '[REDACTED]', 'user-agent': 'ua', 'x-api-key': '[REDACTED]' },
    ip: '203.0.113.4'
  })
  t.same(logSerializers.res({ statusCode: 201 }), { statusCode: 201 })
})
