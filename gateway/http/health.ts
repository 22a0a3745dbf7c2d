/**
 * Health endpoints for orchestrators and load balancers:
 *
 * - `GET /health/live`: 200 `{"status":"ok"}` while the process serves HTTP; it probes nothing.
 * - `GET /health/ready`: 200 `{"status":"ready","sources":{...},"redis":"up"|"memory"}` when every source
 *   and Redis answer within `server.healthTimeoutMs` (80 ms by default, so the endpoint answers in about
 *   that long at worst); else 503 with `"status":"unready"` and what is down. Once shutdown began
 *   ({@link startDraining}), 503 `"status":"draining"` without probing.
 * - `GET /health`: 200 `{"status":"ok"|"degraded","sources":{...}}`, each source probed within
 *   `server.healthTimeoutMs` too (one that has not answered by then is `down`, and the status `degraded`);
 *   a database source with change streams adds `changes: {method, status, lastError?}`, and
 *   `status: reconnecting` makes the answer `degraded`; with event triggers also `"events":{"status","backlog":{trigger: n}}` (README "Event triggers").
 */
import type { FastifyInstance } from 'fastify'
import type { SourceHealth } from '../connectors/types.js'
import type { GatewayHolder } from './gateway-holder.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness: `draining` turns `/health/ready` to 503 (the first step of a graceful shutdown). */
    readiness: { draining: boolean }
  }
}

/** Resolves `promise`, or `fallback` after `ms` milliseconds. */
function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([promise.catch(() => fallback), new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]).finally(() => clearTimeout(timer))
}

/** The probe of each source now in flight, shared by every health request that arrives meanwhile. */
const inFlight = new WeakMap<object, Promise<SourceHealth>>()

/**
 * One source's health, from the probe already in flight for it when there is one: however many
 * health requests arrive at once (a load balancer, or a client flooding `/health`), each source gets
 * at most one probe at a time.
 */
function sharedProbe(subschema: GatewayHolder['current']['sources'][number]['subschema']): Promise<SourceHealth> {
  let probe = inFlight.get(subschema)
  if (!probe) {
    probe = subschema.health().finally(() => inFlight.delete(subschema))
    inFlight.set(subschema, probe)
  }
  return probe
}

/**
 * Probes every source at once, each bounded by `timeoutMs`: a source that has not answered by then
 * (a database busy with heavy statements, an upstream that hangs) counts as down. Concurrent callers
 * share each source's probe ({@link sharedProbe}).
 * @returns `[source name, health]` pairs, in the sources' order.
 */
function probeSources(sources: GatewayHolder['current']['sources'], timeoutMs: number): Promise<(readonly [string, SourceHealth])[]> {
  const down: SourceHealth = { status: 'down', message: `no answer within ${timeoutMs} ms` }
  return Promise.all(sources.map(async (s) => [s.name, await within(sharedProbe(s.subschema), timeoutMs, down)] as const))
}

/** Registers `/health`, `/health/live` and `/health/ready` and decorates `app.readiness`. */
export function registerHealthRoutes(app: FastifyInstance, holder: GatewayHolder): void {
  app.decorate('readiness', { draining: false })

  app.get('/health', async (_request, reply) => {
    const gateway = holder.current
    const sources = Object.fromEntries(await probeSources(gateway.sources, gateway.config.server.healthTimeoutMs))
    // Event triggers (README "Event triggers"): their backlog, `degraded` over eventsDelivery.maxBacklog.
    // Not part of readiness: an instance with a backlog still serves requests.
    const events = gateway.events?.status()
    // A change stream whose connection or poll fails (sources.<name>.changes.status `reconnecting`)
    // degrades too; readiness is not affected (the source still answers queries).
    const up = Object.values(sources).every((s) => s.status === 'up' && (s.changes === undefined || s.changes.status === 'up')) && events?.status !== 'degraded'
    return reply.code(200).send({ status: up ? 'ok' : 'degraded', sources, ...(events ? { events } : {}) })
  })

  app.get('/health/live', async (_request, reply) => reply.code(200).header('cache-control', 'no-store').send({ status: 'ok' }))

  app.get('/health/ready', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    if (app.readiness.draining) return reply.code(503).send({ status: 'draining' })
    const timeout = holder.current.config.server.healthTimeoutMs
    const gateway = holder.current
    const [entries, redis] = await Promise.all([
      probeSources(gateway.sources, timeout),
      holder.cluster.kind === 'memory' ? Promise.resolve('memory' as const) : within(holder.cluster.ping(timeout), timeout, false).then((ok) => (ok ? 'up' as const : 'down' as const)),
    ])
    const sources = Object.fromEntries(entries)
    const ready = redis !== 'down' && entries.every(([, h]) => h.status === 'up')
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unready', sources, redis })
  })
}

/**
 * Starts a graceful shutdown: `/health/ready` answers 503 at once, then after `delayMs` the server
 * stops accepting connections and waits for in-flight requests (`app.close()`).
 */
export async function startDraining(app: FastifyInstance, delayMs: number): Promise<void> {
  app.readiness.draining = true
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
}
