/**
 * The probes the rest of the gateway calls to be seen from outside (README "Observability"): SQL
 * statements, upstream calls and operations report here, and this module forwards to the Prometheus
 * metrics (`metrics.ts`) and the OpenTelemetry tracer (`tracing.ts`) that are switched on, in this
 * process. With both off every probe is one property check: no timer, no span, no allocation.
 *
 * State is per process (like prom-client's and OpenTelemetry's own registries): an app that turns
 * metrics on makes every gateway of the process report.
 */
import { SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api'
import type { Registry } from 'prom-client'
import type { TrafficRecorder } from './traffic.js'

/** The observers of one metric child: what the probes call. */
export interface Observer {
  observe(value: number): void
}

/** The metrics of the process, with their label children cached: the probes never hash labels. */
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

/** What is switched on in this process. Set by `metrics.ts` and `tracing.ts` only. */
export const observers: {
  /** The Prometheus metrics, when some app serves them. */
  metrics: MetricSet | undefined
  /** The tracer, when an OTLP endpoint is configured and the SDK runs. */
  tracer: Tracer | undefined
  /** The admin console's traffic window (traffic.ts), when some app serves the console. */
  traffic: TrafficRecorder | undefined
} = { metrics: undefined, tracer: undefined, traffic: undefined }

/** Gauges read when `/metrics` is scraped: counts kept here, cheap to update. */
export const activity = {
  /** Subscriptions running: WebSocket subscription operations plus Server-Sent Events streams of stored subscriptions. */
  subscriptions: 0,
  /** Server-Sent Events streams closed because the client had more than `MAX_WAITING_SSE_EVENTS` events unread (a counter). */
  slowEventStreamsClosed: 0,
}

/**
 * Events sources (README "Events (message brokers)"): messages received from a broker and refused
 * (too large, not JSON, not of the field's type), by source and field, counted always (one map
 * update per refused message) and read by `tributary_events_rejected_total`.
 */
export const rejectedEvents = new Map<string, { source: string; field: string; n: number }>()

/** Counts one refused broker message of `source`'s subscription field `field`. */
export function countRejectedEvent(source: string, field: string): void {
  const key = `${source}\u0000${field}`
  const cell = rejectedEvents.get(key)
  if (cell) cell.n++
  else rejectedEvents.set(key, { source, field, n: 1 })
}

/**
 * Event triggers (README "Event triggers"): deliveries by trigger and outcome (`delivered`,
 * `failed`: a retry is scheduled, `dead`: moved to the dead-letter table), counted always and read
 * by `tributary_events_delivered_total`.
 */
export const eventDeliveries = new Map<string, { trigger: string; outcome: string; n: number }>()

/** Counts one delivery attempt of `trigger` that ended with `outcome`. */
export function countEventDelivery(trigger: string, outcome: 'delivered' | 'failed' | 'dead'): void {
  const key = `${trigger}\u0000${outcome}`
  const cell = eventDeliveries.get(key)
  if (cell) cell.n++
  else eventDeliveries.set(key, { trigger, outcome, n: 1 })
}

/** The event-trigger deliverers alive in this process: each reports its last counted backlog per trigger (`tributary_events_backlog`). */
export const eventBacklogs = new Set<() => ReadonlyMap<string, number>>()

/** A connection pool reported by the pool gauges. */
export interface PoolProbe {
  /** `db` for a knex pool, `http` for an undici pool or agent. */
  kind: 'db' | 'http'
  /** The data source's name (its namespace). */
  source: string
  /** The pool's current counts, by state (`used`, `free`, `pending`... see README "Observability"). */
  stats(): Record<string, number>
}

/** Pools alive in this process (connectors add theirs when created, remove them on close). */
export const pools = new Set<PoolProbe>()
/** Sources of the live-poller count (one per app). */
export const livePollerCounts = new Set<() => number>()

/**
 * Adds a pool to the pool gauges.
 * @returns a function that removes it (call it when the pool closes)
 */
export function registerPool(probe: PoolProbe): () => void {
  pools.add(probe)
  return () => void pools.delete(probe)
}

/** Ends a statement's timing; `error` when it failed. */
export type StatementEnd = (error?: unknown) => void

const DB_SYSTEMS: Record<string, string> = { sqlite: 'sqlite', postgres: 'postgresql', mysql: 'mysql' }

/** The first keyword of a statement (`SELECT`, `INSERT`...), upper-cased, for a span name. */
function statementKeyword(sql: string): string {
  const m = /^\s*(?:\(\s*)*([A-Za-z]+)/.exec(sql)
  return m ? m[1]!.toUpperCase() : 'SQL'
}

/**
 * Starts timing one SQL statement: `tributary_sql_duration_seconds{source}` and, inside a traced
 * request, a client span `SELECT` (…) with `db.system.name`, `db.query.text` (the statement with
 * its placeholders, never the values) and `tributary.source`.
 * @returns the function that ends it, or undefined when nothing is switched on
 */
export function startStatement(source: string, dialect: string, sql: string): StatementEnd | undefined {
  const { metrics, tracer, traffic } = observers
  if (!metrics && !tracer && !traffic) return undefined
  const started = performance.now()
  const span = tracer && clientSpan(tracer, statementKeyword(sql), { 'db.system.name': DB_SYSTEMS[dialect] ?? dialect, 'db.query.text': sql, 'tributary.source': source })
  return (error?: unknown) => {
    const ms = performance.now() - started
    metrics?.sqlSeconds(source).observe(ms / 1000)
    traffic?.source(source, ms, error !== undefined)
    if (span) endSpan(span, error)
  }
}

/** Ends an upstream call's timing with the HTTP status it got (0 when none: a network error or timeout). */
export type UpstreamEnd = (status: number, error?: unknown) => void

/**
 * Starts timing one upstream HTTP call (one attempt: retries are calls of their own):
 * `tributary_upstream_duration_seconds{source,status}` and, inside a traced request, a client span
 * `POST` (…) whose context is written into `headers` as W3C `traceparent` (and `tracestate`), so that
 * the upstream continues the trace.
 * @param headers the outgoing headers; modified in place when a span starts
 * @returns the function that ends it, or undefined when nothing is switched on
 */
export function startUpstream(source: string, method: string, url: string, headers: Record<string, string>): UpstreamEnd | undefined {
  const { metrics, tracer, traffic } = observers
  if (!metrics && !tracer && !traffic) return undefined
  const started = performance.now()
  const span = tracer && clientSpan(tracer, method, { 'http.request.method': method, 'url.full': url, 'tributary.source': source })
  if (span) propagation.inject(trace.setSpan(context.active(), span), headers)
  return (status: number, error?: unknown) => {
    const ms = performance.now() - started
    metrics?.upstreamSeconds(source, status > 0 ? String(status) : 'error').observe(ms / 1000)
    traffic?.source(source, ms, status === 0 || status >= 500 || error !== undefined)
    if (span) {
      if (status > 0) span.setAttribute('http.response.status_code', status)
      endSpan(span, error ?? (status >= 400 ? new Error(`HTTP ${status}`) : undefined))
    }
  }
}

/**
 * Runs one operation (a stored operation, or a document on `/graphql`) observed:
 * `tributary_operation_duration_seconds{operation}` and, when tracing, a span `operation <name>`
 * made active for `run`, so that its SQL statements and upstream calls become its children.
 * @param name the operation's label: a stored operation's name, or `(graphql)` (bounded by the deployment)
 * @param attributes extra span attributes
 * @param operationName the operation's own name when it differs from the metric label (a named
 *   document on `/graphql`, labelled `(graphql)`): the span is `operation <operationName>` and carries
 *   it as `graphql.operation.name`. Spans are not aggregated, so any name may appear there.
 */
export function observeOperation<T>(name: string, run: () => Promise<T>, attributes?: Attributes, operationName?: string): Promise<T> {
  const { metrics, tracer } = observers
  if (!metrics && !tracer) return run()
  const started = performance.now()
  const done = (error?: unknown) => metrics?.operationSeconds(name).observe((performance.now() - started) / 1000)
  if (!tracer) return run().then((v) => (done(), v), (err: unknown) => { done(err); throw err })
  const spanName = operationName ?? name
  return tracer.startActiveSpan(`operation ${spanName}`, { attributes: { 'graphql.operation.name': spanName, ...attributes } }, (span) =>
    run().then(
      (v) => {
        done()
        span.end()
        return v
      },
      (err: unknown) => {
        done(err)
        endSpan(span, err)
        throw err
      },
    ))
}

/** A client span, child of the active span; undefined outside a traced request (startup statements and probes make no root spans). */
function clientSpan(tracer: Tracer, name: string, attributes: Attributes): Span | undefined {
  const active = context.active()
  return trace.getSpan(active) ? tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, active) : undefined
}

/** Ends a span, recording `error` (as an exception and an error status) when given. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error))
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
  }
  span.end()
}

/**
 * Counts a subscription stream while it runs: `activity.subscriptions` goes up now and down once
 * when the stream ends (done, thrown, or `return()`ed by the transport).
 */
export function countSubscription<T>(source: AsyncIterableIterator<T>): AsyncIterableIterator<T> {
  activity.subscriptions++
  let open = true
  const finish = () => {
    if (open) {
      open = false
      activity.subscriptions--
    }
  }
  return {
    async next(...args: [] | [unknown]) {
      try {
        const r = await source.next(...args)
        if (r.done) finish()
        return r
      } catch (err) {
        finish()
        throw err
      }
    },
    async return(value?: unknown) {
      finish()
      return source.return ? source.return(value) : { done: true, value: value as T }
    },
    async throw(err?: unknown) {
      finish()
      if (source.throw) return source.throw(err)
      throw err
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
}
