/**
 * Prometheus metrics through prom-client (README "Observability"): the metric set, made once per
 * process in a registry of its own (not prom-client's global one, which an embedding program may
 * use). The `GET /metrics` route with its access rules (`metrics.bearerToken`, `metrics.allowedIps`)
 * is http/metrics-route.ts.
 *
 * Every label is bounded: `route` is the route pattern fastify matched (`/operations/*`,
 * `/api/v1/todo/:id`, `(unmatched)`), never the URL; `operation` a stored operation's name or
 * `(graphql)`; `source` a data source's name; `status` an HTTP status.
 */
import type { FastifyRequest } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { routePattern } from './route-info.js'
import { activity, eventBacklogs, eventDeliveries, livePollerCounts, observers, pools, rejectedEvents, type MetricSet, type Observer } from './probes.js'

export type { MetricSet }

/** Histogram buckets, in seconds: 1 ms to 10 s. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** One label set of a {@link LeanHistogram}: counts per bucket (not cumulative; the last is +Inf), sum and count. */
class HistogramSeries implements Observer {
  readonly counts: Float64Array
  sum = 0
  count = 0
  constructor(readonly labels: Record<string, string>, private readonly buckets: readonly number[]) {
    this.counts = new Float64Array(buckets.length + 1)
  }
  observe(value: number): void {
    const b = this.buckets
    let i = 0
    while (i < b.length && value > b[i]!) i++
    this.counts[i]!++
    this.sum += value
    this.count++
  }
}

type Sample = { labels: Record<string, string | number>; value: number; metricName: string }

/**
 * A Prometheus histogram registered in a prom-client `Registry` as a custom metric (`name`, `help`,
 * `type`, `get()`), which prom-client prints like its own histograms (`_bucket{le}`, `_sum`,
 * `_count`). Unlike prom-client's `Histogram`, whose every `observe` hashes its labels into a string
 * key, a series here is found once per label set and observed with a few additions: the probes run
 * on every request (bench/README.md "Issue 13: metrics on and off").
 */
class LeanHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly series = new Map<string, HistogramSeries>()
  constructor(readonly name: string, readonly help: string, private readonly buckets: readonly number[]) {}

  /** The series of a label set, made on first use; `key` identifies it (its label values joined). */
  child(key: string, labels: () => Record<string, string>): HistogramSeries {
    let s = this.series.get(key)
    if (!s) this.series.set(key, (s = new HistogramSeries(labels(), this.buckets)))
    return s
  }

  /** prom-client's metric contract: the samples to print, buckets cumulative. */
  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = []
    for (const s of this.series.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += s.counts[i]!
        values.push({ labels: { le: i < this.buckets.length ? this.buckets[i]! : '+Inf', ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` })
      }
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` })
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** Drops every series (prom-client's `registry.resetMetrics()`). */
  reset(): void {
    this.series.clear()
  }
}

/**
 * Makes the process's metric set (once) and switches the probes on.
 * @param eventLoopPrecisionMs the event-loop delay histogram's interval in ms (`metrics.eventLoopPrecisionMs`,
 *   prom-client's `eventLoopMonitoringPrecision`); only the first call's counts, later calls get the same set
 */
export function enableMetrics(eventLoopPrecisionMs = 10): MetricSet {
  if (observers.metrics) return observers.metrics
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: eventLoopPrecisionMs })
  // Responses are counted in plain cells (route → method → status), copied into the counter when scraped.
  const requestCells = new Map<string, Map<string, Map<number, { n: number }>>>()
  new Counter({
    name: 'tributary_http_requests_total',
    help: 'HTTP responses sent, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const [route, byMethod] of requestCells) {
        for (const [method, byStatus] of byMethod) for (const [status, cell] of byStatus) this.inc({ route, method, status: String(status) }, cell.n)
      }
    },
  })
  const histogram = (name: string, help: string) => {
    const h = new LeanHistogram(name, help, BUCKETS)
    registry.registerMetric(h as unknown as Parameters<Registry['registerMetric']>[0])
    return h
  }
  const operation = histogram(
    'tributary_operation_duration_seconds',
    'Time to run one operation (a stored operation by name; other documents on /graphql as "(graphql)"), in seconds',
  )
  const upstream = histogram(
    'tributary_upstream_duration_seconds',
    'Time of one upstream HTTP call (REST or GraphQL source), body included, by source and status ("error": no answer), in seconds',
  )
  const sql = histogram('tributary_sql_duration_seconds', 'Time of one SQL statement, by database source, in seconds')
  new Gauge({
    name: 'tributary_subscriptions_active',
    help: 'Subscriptions running (WebSocket operations and Server-Sent Events streams)',
    registers: [registry],
    collect() {
      this.set(activity.subscriptions)
    },
  })
  new Counter({
    name: 'tributary_event_streams_slow_closed_total',
    help: 'Server-Sent Events streams closed because the client left more than MAX_WAITING_SSE_EVENTS (1000) events unread',
    registers: [registry],
    collect() {
      this.reset()
      this.inc(activity.slowEventStreamsClosed)
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
  new Counter({
    name: 'tributary_events_rejected_total',
    help: 'Messages received from a message broker by an events source and not sent to subscribers (too large, not JSON, not of the field type), by source and field',
    labelNames: ['source', 'field'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const { source, field, n } of rejectedEvents.values()) this.inc({ source, field }, n)
    },
  })
  new Counter({
    name: 'tributary_events_delivered_total',
    help: 'Event-trigger deliveries by trigger and outcome (delivered; failed: retry scheduled; dead: moved to the dead-letter table)',
    labelNames: ['trigger', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const { trigger, outcome, n } of eventDeliveries.values()) this.inc({ trigger, outcome }, n)
    },
  })
  new Gauge({
    name: 'tributary_events_backlog',
    help: 'Event-trigger events not delivered yet (pending or retrying), by trigger, as last counted by this instance',
    labelNames: ['trigger'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const backlog of eventBacklogs) for (const [trigger, n] of backlog()) this.set({ trigger }, n)
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

  const set: MetricSet = {
    registry,
    countRequest(route, method, status) {
      let byMethod = requestCells.get(route)
      if (!byMethod) requestCells.set(route, (byMethod = new Map()))
      let byStatus = byMethod.get(method)
      if (!byStatus) byMethod.set(method, (byStatus = new Map()))
      const cell = byStatus.get(status)
      if (cell) cell.n++
      else byStatus.set(status, { n: 1 })
    },
    operationSeconds: (name) => operation.child(name, () => ({ operation: name })),
    upstreamSeconds: (source, status) => upstream.child(`${source}\u0000${status}`, () => ({ source, status })),
    sqlSeconds: (source) => sql.child(source, () => ({ source })),
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
  /** The event-loop delay histogram's interval, ms (1 to 60000; default 10). */
  readonly eventLoopPrecisionMs: number
}

/** The route label of a request: the pattern fastify matched, or `(unmatched)` (404s, so that random URLs add no series). */
export function routeLabel(request: FastifyRequest): string {
  return routePattern(request) ?? '(unmatched)'
}
