import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Clock, RateLimitStore, WindowState } from './sliding-window.js'

/**
 * The same sliding-window log in a Redis sorted set per key, in one atomic script, so every
 * instance shares the counters. Returns { current, ttl } as the memory store does.
 */
const SLIDING_WINDOW = `
local key, now, window, max, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local current = count + 1
if count < max then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  count = count + 1
  current = count
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local ttl = window
if oldest[2] then ttl = tonumber(oldest[2]) + window - now end
return { current, ttl }
`

type SlidingWindowCommand = (key: string, now: number, windowMs: number, max: number, member: string) => Promise<[number, number]>

export class SlidingWindowRedisStore implements RateLimitStore {
  readonly #command: SlidingWindowCommand

  constructor (
    redis: Redis,
    private readonly now: Clock = Date.now,
    private readonly prefix = 'users-api:rate:'
  ) {
    // A defined command runs by EVALSHA: the script is sent once, not with every request.
    if (!('usersApiSlidingWindow' in redis)) redis.defineCommand('usersApiSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW })
    const command = (redis as unknown as { usersApiSlidingWindow: SlidingWindowCommand }).usersApiSlidingWindow
    this.#command = command.bind(redis)
  }

  async hit (key: string, windowMs: number, max: number): Promise<WindowState> {
    const now = this.now()
    const member = `${now}:${randomBytes(6).toString('base64url')}`
    const [current, ttl] = await this.#command(this.prefix + key, now, windowMs, max, member)
    return { current, ttl }
  }
}
