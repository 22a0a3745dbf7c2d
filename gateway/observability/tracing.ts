/**
 * OpenTelemetry traces (README "Observability"): `@opentelemetry/sdk-node` with the OTLP/HTTP (JSON)
 * trace exporter, started only when `telemetry.otlpEndpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) is
 * set; the SDK is imported only then, so a gateway without telemetry loads none of it.
 *
 * Spans: one server span per HTTP request (its parent the client's W3C `traceparent`, when sent),
 * one `operation <name>` span below it, and one client span per SQL statement and per upstream call
 * below that (`probes.ts`), whose context goes to REST and GraphQL upstreams as `traceparent`.
 */
import { SpanKind, context, propagation, trace, type Context, type Span } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { endSpan, observers } from './probes.js'
import { routePattern } from './route-info.js'
import { importOptional } from '../optional-package.js'

/** The resolved `telemetry` section of the config. */
export interface TelemetryConfig {
  /** OTLP/HTTP base URL of the collector (`http://collector:4318`; traces go to `<base>/v1/traces`); null: no traces. */
  readonly otlpEndpoint: string | null
  /** The `service.name` resource attribute. */
  readonly serviceName: string
  /** Trace the health probes (`/health*`) and static assets (`/playground/assets/*`, `/console/assets/*`) too. Default false. */
  readonly traceProbesAndAssets?: boolean
}

/** Routes not traced unless `telemetry.traceProbesAndAssets`: health probes and static assets. */
const UNTRACED = /^\/(health(\/|$|\?)|playground\/assets\/|console\/assets\/)/

/** True when a request to `url` (path and query) gets no span: a health probe or a static asset, unless asked. */
export function untraced(url: string, config: Pick<TelemetryConfig, 'traceProbesAndAssets'>): boolean {
  return !config.traceProbesAndAssets && UNTRACED.test(url)
}

interface Running {
  endpoint: string
  users: number
  flush(): Promise<void>
  shutdown(): Promise<void>
}
let running: Running | undefined
let starting: Promise<Running> | undefined

/** The URL spans are posted to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else `<otlpEndpoint>/v1/traces`. */
export function tracesUrl(otlpEndpoint: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${otlpEndpoint.replace(/\/+$/, '')}/v1/traces`
}

async function start(config: TelemetryConfig & { otlpEndpoint: string }): Promise<Running> {
  // Optional peer dependencies (README "Install size and optional packages"): a missing one names all three.
  const what = 'telemetry.otlpEndpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)'
  const all = '@opentelemetry/sdk-node @opentelemetry/exporter-trace-otlp-http @opentelemetry/sdk-trace-base'
  const [{ NodeSDK }, { OTLPTraceExporter }, { BatchSpanProcessor }] = await Promise.all([
    importOptional<typeof import('@opentelemetry/sdk-node')>('@opentelemetry/sdk-node', what, all),
    importOptional<typeof import('@opentelemetry/exporter-trace-otlp-http')>('@opentelemetry/exporter-trace-otlp-http', what, all),
    importOptional<typeof import('@opentelemetry/sdk-trace-base')>('@opentelemetry/sdk-trace-base', what, all),
  ])
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(config.otlpEndpoint) }))
  const sdk = new NodeSDK({ serviceName: config.serviceName, spanProcessors: [processor], logRecordProcessors: [], instrumentations: [] })
  sdk.start()
  observers.tracer = trace.getTracer('tributary')
  return {
    endpoint: config.otlpEndpoint,
    users: 0,
    flush: () => processor.forceFlush(),
    async shutdown() {
      observers.tracer = undefined
      await sdk.shutdown()
      // Unregister the globals, so that a later start (another app, a new endpoint) registers its own.
      trace.disable()
      context.disable()
      propagation.disable()
    },
  }
}

/**
 * Starts the SDK (once per process; later apps share it) and returns the function that releases
 * it: the last release flushes the spans and shuts the SDK down.
 */
async function acquireTracing(config: TelemetryConfig & { otlpEndpoint: string }): Promise<() => Promise<void>> {
  if (!running) {
    starting ??= start(config)
    try {
      running = await starting
    } finally {
      starting = undefined
    }
  }
  const r = running
  r.users++
  let released = false
  return async () => {
    if (released) return
    released = true
    await r.flush().catch(() => undefined)
    if (--r.users === 0 && running === r) {
      running = undefined
      await r.shutdown().catch(() => undefined)
    }
  }
}

const kSpan = Symbol('tributary.span')
type Traced = { [kSpan]?: { span: Span; context: Context } }

/**
 * Traces `app`'s requests when `config.otlpEndpoint` is set: starts the SDK, opens a server span in
 * `onRequest` (continuing the client's `traceparent`), makes it active for the handler (`preHandler`:
 * body parsing runs outside the request's async context), and ends it in `onResponse`. Closing the
 * app flushes the spans. A no-op without an endpoint.
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when the OpenTelemetry SDK (an optional peer
 *   dependency) is not installed.
 */
export async function registerTracing(app: FastifyInstance, config: TelemetryConfig): Promise<void> {
  if (!config.otlpEndpoint) return
  const release = await acquireTracing(config as TelemetryConfig & { otlpEndpoint: string })
  app.addHook('onClose', async () => release())
  const tracer = observers.tracer!
  app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    if (untraced(request.url, config)) return done()
    const parent = propagation.extract(context.active(), request.headers)
    const route = routePattern(request) ?? '(unmatched)'
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0]!, 'tributary.request_id': request.id },
    }, parent)
    const ctx = trace.setSpan(parent, span)
    ;(request.raw as Traced)[kSpan] = { span, context: ctx }
    context.with(ctx, done)
  })
  app.addHook('preHandler', (request, _reply, done) => {
    const traced = (request.raw as Traced)[kSpan]
    if (traced) context.with(traced.context, done)
    else done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const traced = (request.raw as Traced)[kSpan]
    if (traced) {
      traced.span.setAttribute('http.response.status_code', reply.statusCode)
      endSpan(traced.span, reply.statusCode >= 500 ? new Error(`HTTP ${reply.statusCode}`) : undefined)
    }
    done()
  })
}

/**
 * A pino `mixin`: adds `traceId` and `spanId` of the active span to every log line while tracing
 * runs (nothing otherwise).
 */
export function traceLogMixin(): Record<string, string> {
  // A new object every time: pino merges the line's own fields into it.
  if (!observers.tracer) return {}
  const span = trace.getSpan(context.active())
  if (!span) return {}
  const { traceId, spanId } = span.spanContext()
  return { traceId, spanId }
}
