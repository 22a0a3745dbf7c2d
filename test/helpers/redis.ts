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
