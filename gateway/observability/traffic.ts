/**
 * The traffic the admin console shows (README "Admin console"): requests, errors and latency per
 * operation and per source over the last {@link WINDOW_MINUTES} minutes, kept in memory as a ring of
 * per-minute buckets, and the last {@link MAX_RECENT_ERRORS} errors. Prometheus histograms
 * (metrics.ts) count since the process started and have no window: a scraper computes rates, the
 * console has no scraper, hence this ring.
 *
 * Memory is bounded: at most {@link MAX_KEYS} keys per kind (further ones are counted under
 * `(other)`), {@link WINDOW_MINUTES} buckets per key of {@link LATENCY_BOUNDS}.length + 1 counters.
 * State is per process, like the metrics: every app of the process that turns the console on records here.
 */

/** Minutes the window covers (15). */
export const WINDOW_MINUTES = 15
/** Errors kept, newest first (100). */
export const MAX_RECENT_ERRORS = 100
/** Most distinct keys (operations, or sources) recorded; the rest count as `(other)`. */
export const MAX_KEYS = 200

/** Upper bounds of the latency buckets, in milliseconds: 0.25 ms to about 60 s, ×1.5 each. */
export const LATENCY_BOUNDS: readonly number[] = (() => {
  const out: number[] = []
  for (let b = 0.25; b < 60_000; b *= 1.5) out.push(+b.toFixed(3))
  return out
})()

interface Bucket {
  /** Minute number (`Math.floor(ms / 60000)`) this bucket counts. */
  minute: number
  count: number
  errors: number
  /** Counts per latency bucket; the last is past the largest bound. */
  latency: Uint32Array
}

/** One key's figures over the window. */
export interface TrafficFigures {
  /** Operation name, or source name. */
  name: string
  /** Requests (or calls) in the window. */
  count: number
  /** Average requests per second over the window (count / window seconds). */
  perSecond: number
  /** Share of requests that failed, 0 to 1. */
  errorRate: number
  /** Latency percentiles in milliseconds (the upper bound of the bucket holding the rank); null without requests. */
  p50: number | null
  p95: number | null
  p99: number | null
  /** Requests per minute, oldest first ({@link WINDOW_MINUTES} values, the last one the current minute). */
  perMinute: number[]
}

/** One recorded error: never variable values, never a message in production. */
export interface RecentError {
  /** ISO 8601 time. */
  time: string
  /** `extensions.code` (`TRB_ERR_…`). */
  code: string
  /** `extensions.errorId` of a masked internal error, else null. */
  errorId: string | null
  /** The GraphQL path (`todo_findUniqueTodo.title`), or null when the error has none. */
  path: string | null
  /** The operation (stored operation name, `/graphql` operation name or `(graphql)`). */
  operation: string
  /** HTTP status of the answer. */
  status: number
  /** The error's message: development only (null in production). */
  message: string | null
}

/** A ring of per-minute buckets for many keys. */
class Series {
  private readonly keys = new Map<string, Bucket[]>()

  record(key: string, ms: number, failed: boolean, now: number): void {
    let ring = this.keys.get(key)
    if (!ring) {
      if (this.keys.size >= MAX_KEYS) ring = this.keys.get((key = '(other)'))
      if (!ring) this.keys.set(key, (ring = []))
    }
    const minute = Math.floor(now / 60_000)
    const slot = minute % WINDOW_MINUTES
    let bucket = ring[slot]
    if (!bucket || bucket.minute !== minute) ring[slot] = bucket = { minute, count: 0, errors: 0, latency: new Uint32Array(LATENCY_BOUNDS.length + 1) }
    bucket.count++
    if (failed) bucket.errors++
    let i = 0
    while (i < LATENCY_BOUNDS.length && ms > LATENCY_BOUNDS[i]!) i++
    bucket.latency[i]!++
  }

  figures(now: number): TrafficFigures[] {
    const current = Math.floor(now / 60_000)
    const out: TrafficFigures[] = []
    for (const [name, ring] of this.keys) {
      const latency = new Array<number>(LATENCY_BOUNDS.length + 1).fill(0)
      const perMinute = new Array<number>(WINDOW_MINUTES).fill(0)
      let count = 0
      let errors = 0
      for (const b of ring) {
        if (!b || b.minute <= current - WINDOW_MINUTES) continue
        count += b.count
        errors += b.errors
        perMinute[WINDOW_MINUTES - 1 - (current - b.minute)] = b.count
        b.latency.forEach((n, i) => (latency[i]! += n))
      }
      if (count === 0) continue
      const pct = (p: number): number => {
        const rank = Math.ceil(count * p)
        let seen = 0
        for (let i = 0; i < latency.length; i++) {
          seen += latency[i]!
          if (seen >= rank) return LATENCY_BOUNDS[i] ?? LATENCY_BOUNDS[LATENCY_BOUNDS.length - 1]! * 1.5
        }
        return LATENCY_BOUNDS[LATENCY_BOUNDS.length - 1]!
      }
      out.push({ name, count, perSecond: +(count / (WINDOW_MINUTES * 60)).toFixed(4), errorRate: +(errors / count).toFixed(4), p50: pct(0.5), p95: pct(0.95), p99: pct(0.99), perMinute })
    }
    return out.sort((a, b) => b.count - a.count || a.name.localeCompare(b.name))
  }
}

/**
 * The console's name of a `/graphql` operation: the request's `operationName` when it is a GraphQL
 * name of at most 100 characters, else `(graphql)` (client-chosen text: never a key of its own
 * otherwise).
 */
export function graphqlTrafficName(operationName: unknown): string {
  return typeof operationName === 'string' && TRAFFIC_NAME.test(operationName) ? operationName : '(graphql)'
}

/** A GraphQL name of at most 100 characters (see {@link graphqlTrafficName}). */
const TRAFFIC_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,99}$/

/** The recorder the console reads; the probes (probes.ts) and the console's hooks write to it. */
export class TrafficRecorder {
  private readonly operations = new Series()
  private readonly sources = new Series()
  private readonly errors: RecentError[] = []

  /** Counts one operation answered in `ms` milliseconds. */
  operation(name: string, ms: number, failed: boolean, now = Date.now()): void {
    this.operations.record(name, ms, failed, now)
  }

  /** Counts one call to a source (an SQL statement, an upstream HTTP call) of `ms` milliseconds. */
  source(name: string, ms: number, failed: boolean, now = Date.now()): void {
    this.sources.record(name, ms, failed, now)
  }

  /** Keeps one error (the oldest past {@link MAX_RECENT_ERRORS} is dropped). */
  error(error: RecentError): void {
    this.errors.unshift(error)
    if (this.errors.length > MAX_RECENT_ERRORS) this.errors.length = MAX_RECENT_ERRORS
  }

  /** The window's figures and the recent errors, newest first. */
  snapshot(now = Date.now()): { windowMinutes: number; operations: TrafficFigures[]; sources: TrafficFigures[]; errors: RecentError[] } {
    return { windowMinutes: WINDOW_MINUTES, operations: this.operations.figures(now), sources: this.sources.figures(now), errors: [...this.errors] }
  }
}
