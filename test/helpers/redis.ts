/** Test helper: the Redis of the cluster tests (`REDIS_URL`, default redis://127.0.0.1:6379) and why it is unusable. */
import { Redis } from 'ioredis'

/** The Redis the tests use. */
export const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'

/** Why Redis cannot be used (a skip message), or undefined when it answers PING. Never throws. */
export async function redisReason(): Promise<string | undefined> {
  const r = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  r.on('error', () => undefined)
  try {
    await r.connect()
    await r.ping()
    return undefined
  } catch (err) {
    return `Redis not reachable at ${redisUrl}: ${(err as Error).message}`
  } finally {
    r.disconnect()
  }
}

/** A key prefix no other test run uses. */
export const uniquePrefix = (): string => `trb-test:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`

/** A Redis connection and a key prefix of one test, from {@link redisScratch}. */
export interface RedisScratch {
  /** A prefix no other test run uses (see {@link uniquePrefix}). */
  keyPrefix: string
  /** A connection to {@link redisUrl}, for the test's own reads and writes. */
  redis: Redis
}

/**
 * A unique key prefix on the test Redis, whose keys are deleted (only those: never FLUSHALL, other
 * tests share the server) and whose connection is closed on teardown.
 * @returns undefined, after a `skipped: <reason>` comment, when Redis does not answer.
 */
export async function redisScratch(t: { comment(message: string): void; teardown(fn: () => unknown): void }): Promise<RedisScratch | undefined> {
  const reason = await redisReason()
  if (reason) {
    t.comment(`skipped: ${reason}`)
    return undefined
  }
  const keyPrefix = uniquePrefix()
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  t.teardown(async () => {
    const keys = await redis.keys(`${keyPrefix}*`)
    if (keys.length) await redis.del(...keys)
    await redis.quit()
  })
  return { keyPrefix, redis }
}
