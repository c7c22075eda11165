import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Clock, RateLimitStore, WindowState } from './sliding-window.js'

/**
 * The same sliding-window log in a Redis sorted set per key, in one atomic script, so every
 * instance shares the counters. Returns { current, ttl, firstRefusal } as the memory store
 * does; when the key's last refusal was reported is kept beside it (KEYS[2]).
 */
const SLIDING_WINDOW = `
local key, reported, now, window, max, member = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local current = count + 1
if count < max then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  count = count + 1
  current = count
end
local first = 0
if current > max then
  local last = tonumber(redis.call('GET', reported))
  if not last or last <= now - window then
    redis.call('SET', reported, now, 'PX', window)
    first = 1
  end
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local ttl = window
if oldest[2] then ttl = tonumber(oldest[2]) + window - now end
return { current, ttl, first }
`

type SlidingWindowCommand = (
  key: string,
  reportedKey: string,
  now: number,
  windowMs: number,
  max: number,
  member: string
) => Promise<[number, number, number]>

export class SlidingWindowRedisStore implements RateLimitStore {
  readonly #command: SlidingWindowCommand

  constructor (
    redis: Redis,
    private readonly now: Clock = Date.now,
    private readonly prefix = 'users-api:rate:'
  ) {
    // A defined command runs by EVALSHA: the script is sent once, not with every request.
    if (!('usersApiSlidingWindow' in redis)) redis.defineCommand('usersApiSlidingWindow', { numberOfKeys: 2, lua: SLIDING_WINDOW })
    const command = (redis as unknown as { usersApiSlidingWindow: SlidingWindowCommand }).usersApiSlidingWindow
    this.#command = command.bind(redis)
  }

  async hit (key: string, windowMs: number, max: number): Promise<WindowState> {
    const now = this.now()
    const member = `${now}:${randomBytes(6).toString('base64url')}`
    // Both keys carry the client's key as their hash tag, so they share a cluster slot, and
    // no client's key can name another client's counter or mark.
    const counter = `${this.prefix}{${key}}`
    const [current, ttl, first] = await this.#command(counter, `${counter}:reported`, now, windowMs, max, member)
    return { current, ttl, firstRefusal: first === 1 }
  }
}
