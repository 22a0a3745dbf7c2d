/**
 * The metrics route (`metrics.path`, default `/metrics`) and the request counter: the HTTP side of
 * observability/metrics.ts, here because it answers refusals with the HTTP layer's error body
 * (format-error.ts) and observability/ sits below http/ (docs/architecture.md §7).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MetricsDeniedError } from '../errors.js'
import { enableMetrics, routeLabel, type MetricsConfig } from '../observability/metrics.js'
import { sendError } from './format-error.js'

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** `::ffff:127.0.0.1` (an IPv4 client on a dual-stack socket) is `127.0.0.1`. */
function normaliseIp(ip: string): string {
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip
}

/**
 * Switches metrics on and registers the metrics route and the request counter (an `onResponse`
 * hook) on `app`. Access: a request from an address not in `allowedIps` gets 403, one without the
 * bearer token 401 (with `WWW-Authenticate: Bearer`), both `TRB_ERR_METRICS_DENIED`.
 */
export function registerMetrics(app: FastifyInstance, config: MetricsConfig): void {
  const metrics = enableMetrics(config.eventLoopPrecisionMs)
  app.addHook('onResponse', (request, reply, done) => {
    metrics.countRequest(routeLabel(request), request.method, reply.statusCode)
    done()
  })
  const token = config.bearerToken === null ? undefined : digest(`Bearer ${config.bearerToken}`)
  const allowed = config.allowedIps === null ? undefined : new Set(config.allowedIps.map(normaliseIp))
  app.get(config.path, async (request: FastifyRequest, reply: FastifyReply) => {
    if (allowed && !allowed.has(normaliseIp(request.ip))) {
      return sendError(reply, new MetricsDeniedError('This address may not read the metrics (metrics.allowedIps)'), 403)
    }
    if (token) {
      const given = request.headers.authorization
      if (typeof given !== 'string' || !timingSafeEqual(digest(given), token)) {
        reply.header('www-authenticate', 'Bearer realm="metrics"')
        return sendError(reply, new MetricsDeniedError('The metrics need Authorization: Bearer <metrics.bearerToken>'), 401)
      }
    }
    const body = await metrics.registry.metrics()
    return reply.header('cache-control', 'no-store').type(metrics.registry.contentType).send(body)
  })
}
