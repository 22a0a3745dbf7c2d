/**
 * `server.rateLimit` (README "Rate limiting"): `@fastify/rate-limit` on every route but the health probes and `/metrics`,
 * counting per IP or per token subject, in this process or in Redis (ioredis) so that every
 * instance shares the counters. A client over the limit gets 429 `TRB_ERR_RATE_LIMITED` with
 * `Retry-After` (seconds) and `x-ratelimit-*` headers. When Redis cannot be reached, requests are
 * served uncounted (`skipOnError`) rather than refused.
 *
 * Every operation a WebSocket runs is counted too (issue 22 item 6): {@link registerRateLimit} returns
 * a limiter for them that takes from the same counter as the caller's HTTP requests (the plugin's own
 * store, through `fastify.createRateLimit()`), so a socket cannot run more operations than its caller
 * may send requests.
 */
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit'
// @ts-expect-error the plugin ships no declarations of store/LocalStore.js (imported, not required at run time: one instance in the bundle, scripts/bundle-gateway.mjs)
import LocalStoreModule from '@fastify/rate-limit/store/LocalStore.js'
import type { Redis as RedisClient } from 'ioredis'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayHolder } from './gateway-holder.js'
import { authenticateRequest } from './auth.js'
import { RateLimitedError } from '../errors.js'
import { requireOptional } from '../optional-package.js'

/**
 * Counts one operation of a WebSocket against the budget of its caller (the same key and counter as
 * the caller's HTTP requests: IP, or the token subject the socket's `connection_init` proved).
 * @param request the socket's HTTP upgrade request.
 * @returns undefined when the operation may run, else the `TRB_ERR_RATE_LIMITED` error to answer it with
 *   (its `retryAfter`: whole seconds until the window resets, at least 1). Never rejects: a store
 *   failure lets the operation run uncounted, as for HTTP requests.
 */
export type OperationLimiter = (request: FastifyRequest) => Promise<InstanceType<typeof RateLimitedError> & { retryAfter: number } | undefined>

/**
 * Registers the rate limiter when `server.rateLimit` is set.
 * @returns the limiter of WebSocket operations (see {@link OperationLimiter}), or undefined when
 *   `server.rateLimit` is unset (nothing is registered).
 */
export async function registerRateLimit(app: FastifyInstance, holder: GatewayHolder): Promise<OperationLimiter | undefined> {
  const options = holder.current.config.server.rateLimit
  if (!options) return undefined
  const Redis = options.redisUrl ? requireOptional<{ Redis: typeof RedisClient }>('ioredis', 'server.rateLimit.redisUrl').Redis : undefined
  const redis = options.redisUrl && Redis
    ? new Redis(options.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000, enableOfflineQueue: true, lazyConnect: false })
    : undefined
  if (redis) {
    redis.on('error', (err: Error) => app.log.warn({ err: { message: err.message } }, 'rate limit: Redis error'))
    app.addHook('onClose', async () => {
      await redis.quit().catch(() => redis.disconnect())
    })
  }
  await app.register(rateLimit, {
    global: true,
    max: options.max,
    timeWindow: options.timeWindowMs,
    ...(redis ? { redis, nameSpace: options.keyPrefix } : { store: SnapshotLocalStore }),
    skipOnError: true,
    // Health probes (`/health`, `/health/live`, `/health/ready`) and the metrics route are never
    // limited: a load balancer and a scraper poll them.
    allowList: (request) => {
      const path = request.url.split('?')[0]!.replace(/(.)\/$/, '$1')
      return path === '/health' || path === '/health/live' || path === '/health/ready' || path === holder.current.config.metrics.path
    },
    keyGenerator: options.key === 'sub'
      ? async (request) => {
          // An invalid token is counted by IP here; the route then refuses it with 401.
          const auth = await authenticateRequest(holder.current, request).catch(() => null)
          const sub = auth?.claims.sub
          return typeof sub === 'string' ? `sub:${sub}` : `ip:${request.ip}`
        }
      : (request) => request.ip,
    errorResponseBuilder: (_request, context) => new RateLimitedError(retrySeconds(context.ttl)),
  })
  // Without options, createRateLimit uses the plugin's global store, keys and allow list: an
  // operation takes from the very counter its caller's requests take from (memory or Redis).
  const limit = app.createRateLimit()
  return async (request) => {
    const state = await limit(request).catch((err: unknown) => {
      app.log.warn({ err }, 'rate limit: a WebSocket operation was not counted')
      return undefined
    })
    if (!state || state.isAllowed || !state.isExceeded) return undefined
    const seconds = retrySeconds(state.ttl)
    return Object.assign(new RateLimitedError(seconds), { retryAfter: seconds })
  }
}

/** The plugin's in-memory store (store/LocalStore.js, not in its typings): a fixed window per key in an LRU of 5000 keys. */
type LocalStoreCtor = new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => FastifyRateLimitStore
const LocalStore = LocalStoreModule as unknown as LocalStoreCtor

/**
 * The plugin's in-memory store, answering each `incr` with a copy of the key's state. LocalStore
 * answers with its live entry, which later calls mutate: when several operations of one socket are
 * counted at once (their `incr` calls run before any of them reads its answer, since the plugin
 * awaits between the two), every one read the last count, and the first ones were refused too.
 */
class SnapshotLocalStore implements FastifyRateLimitStore {
  private readonly inner: FastifyRateLimitStore
  constructor(options: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
    this.inner = new LocalStore(options.continueExceeding === true, options.exponentialBackoff === true)
  }
  incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max: number): void {
    this.inner.incr(key, (error, result) => callback(error, result && { current: result.current, ttl: result.ttl }), timeWindow, max)
  }
  child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
    return new SnapshotLocalStore(routeOptions as { continueExceeding?: boolean; exponentialBackoff?: boolean })
  }
}

/** Whole seconds until a window of `ttl` milliseconds resets, at least 1 (the `Retry-After` value). */
function retrySeconds(ttl: number): number {
  return Math.max(1, Math.ceil(ttl / 1000))
}
