/**
 * `server.rateLimit` (README "Rate limiting"): `@fastify/rate-limit` on every route but the health probes and `/metrics`,
 * counting per IP or per token subject, in this process or in Redis (ioredis) so that every
 * instance shares the counters. A client over the limit gets 429 `TRB_ERR_RATE_LIMITED` with
 * `Retry-After` (seconds) and `x-ratelimit-*` headers. When Redis cannot be reached, requests are
 * served uncounted (`skipOnError`) rather than refused.
 */
import rateLimit from '@fastify/rate-limit'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import type { GatewayHolder } from './app.js'
import { authenticateRequest } from './auth.js'
import { RateLimitedError } from '../errors.js'

/** Registers the rate limiter when `server.rateLimit` is set; a no-op otherwise. */
export async function registerRateLimit(app: FastifyInstance, holder: GatewayHolder): Promise<void> {
  const options = holder.current.config.server.rateLimit
  if (!options) return
  const redis = options.redisUrl
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
    ...(redis ? { redis, nameSpace: options.keyPrefix } : {}),
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
    errorResponseBuilder: (_request, context) => new RateLimitedError(Math.max(1, Math.ceil(context.ttl / 1000))),
  })
}
