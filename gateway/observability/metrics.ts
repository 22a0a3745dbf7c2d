/**
 * Prometheus metrics through prom-client (README "Observability"): the metric set, made once per
 * process in a registry of its own (not prom-client's global one, which an embedding program may
 * use), and the `GET /metrics` route with its access rules (`metrics.bearerToken`,
 * `metrics.allowedIps`).
 *
 * Every label is bounded: `route` is the route pattern fastify matched (`/operations/*`,
 * `/api/v1/todo/:id`, `(unmatched)`), never the URL; `operation` a stored operation's name or
 * `(graphql)`; `source` a data source's name; `status` an HTTP status.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { MetricsDeniedError } from '../errors.js'
import { sendError } from '../http/format-error.js'
import { activity, livePollerCounts, observers, pools } from './probes.js'

/** The observers of one metric child: what the probes call. */
interface Observer {
  observe(value: number): void
}

/** The metrics of the process, with cached label children (prom-client hashes labels on every `labels()` call). */
export interface MetricSet {
  /** The registry served at the metrics path. */
  registry: Registry
  /** `tributary_http_requests_total{route,method,status}`: counts one response. */
  countRequest(route: string, method: string, status: number): void
  /** `tributary_operation_duration_seconds{operation}`. */
  operationSeconds(operation: string): Observer
  /** `tributary_upstream_duration_seconds{source,status}`. */
  upstreamSeconds(source: string, status: string): Observer
  /** `tributary_sql_duration_seconds{source}`. */
  sqlSeconds(source: string): Observer
}

/** Histogram buckets, in seconds: 1 ms to 10 s. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** Makes the process's metric set (once) and switches the probes on. */
export function enableMetrics(): MetricSet {
  if (observers.metrics) return observers.metrics
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new Counter({
    name: 'tributary_http_requests_total',
    help: 'HTTP responses sent, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  })
  const operation = new Histogram({
    name: 'tributary_operation_duration_seconds',
    help: 'Time to run one operation (a stored operation by name; documents on /graphql as "(graphql)"), in seconds',
    labelNames: ['operation'] as const,
    buckets: BUCKETS,
    registers: [registry],
  })
  const upstream = new Histogram({
    name: 'tributary_upstream_duration_seconds',
    help: 'Time of one upstream HTTP call (REST or GraphQL source), body included, by source and status ("error": no answer), in seconds',
    labelNames: ['source', 'status'] as const,
    buckets: BUCKETS,
    registers: [registry],
  })
  const sql = new Histogram({
    name: 'tributary_sql_duration_seconds',
    help: 'Time of one SQL statement, by database source, in seconds',
    labelNames: ['source'] as const,
    buckets: BUCKETS,
    registers: [registry],
  })
  new Gauge({
    name: 'tributary_subscriptions_active',
    help: 'Subscriptions running (WebSocket operations and Server-Sent Events streams)',
    registers: [registry],
    collect() {
      this.set(activity.subscriptions)
    },
  })
  new Gauge({
    name: 'tributary_live_pollers',
    help: 'Live-query pollers running (one per operation, variables and credentials)',
    registers: [registry],
    collect() {
      let n = 0
      for (const count of livePollerCounts) n += count()
      this.set(n)
    },
  })
  const poolGauge = (kind: 'db' | 'http', name: string, help: string) =>
    new Gauge({
      name,
      help,
      labelNames: ['source', 'state'] as const,
      registers: [registry],
      collect() {
        this.reset()
        for (const p of pools) {
          if (p.kind !== kind) continue
          for (const [state, value] of Object.entries(p.stats())) this.inc({ source: p.source, state }, value)
        }
      },
    })
  poolGauge('db', 'tributary_db_pool_connections', 'Database pool connections by source and state (used, free, pending: acquires waiting)')
  poolGauge('http', 'tributary_upstream_pool_connections', 'Upstream (undici) sockets and requests by source and state (connected, free, pending, queued, running)')

  const requestChildren = new Map<string, Map<string, Map<number, { inc(): void }>>>()
  const operationChildren = new Map<string, Observer>()
  const sqlChildren = new Map<string, Observer>()
  const upstreamChildren = new Map<string, Observer>()
  const set: MetricSet = {
    registry,
    countRequest(route, method, status) {
      let byMethod = requestChildren.get(route)
      if (!byMethod) requestChildren.set(route, (byMethod = new Map()))
      let byStatus = byMethod.get(method)
      if (!byStatus) byMethod.set(method, (byStatus = new Map()))
      let child = byStatus.get(status)
      if (!child) byStatus.set(status, (child = requests.labels(route, method, String(status))))
      child.inc()
    },
    operationSeconds(name) {
      let child = operationChildren.get(name)
      if (!child) operationChildren.set(name, (child = operation.labels(name)))
      return child
    },
    upstreamSeconds(source, status) {
      const key = `${source}\u0000${status}`
      let child = upstreamChildren.get(key)
      if (!child) upstreamChildren.set(key, (child = upstream.labels(source, status)))
      return child
    },
    sqlSeconds(source) {
      let child = sqlChildren.get(source)
      if (!child) sqlChildren.set(source, (child = sql.labels(source)))
      return child
    },
  }
  observers.metrics = set
  return set
}

/** The resolved `metrics` section of the config. */
export interface MetricsConfig {
  /** Serve and collect metrics. */
  readonly enabled: boolean
  /** The route, e.g. `/metrics`. */
  readonly path: string
  /** When set, scrapes must send `Authorization: Bearer <token>`. */
  readonly bearerToken: string | null
  /** Client addresses allowed to scrape; null for any. */
  readonly allowedIps: readonly string[] | null
}

/** The route label of a request: the pattern fastify matched, or `(unmatched)` (404s, so that random URLs add no series). */
export function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? '(unmatched)'
}

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
  const metrics = enableMetrics()
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
