/** Types of bench/lib/wrk.mjs, for the TypeScript that imports it (test/bench-wrk.test.ts). */

/** Whether `wrk` runs on this machine (looked up once). */
export function wrkAvailable(): boolean

/** What {@link runWrk} sends: one request, repeated on every connection. */
export interface WrkRequest {
  /** For progress lines and errors. */
  label: string
  /** Only `http://127.0.0.1:<port>/…`. */
  url: string
  /** Default GET. */
  method?: string
  headers?: Record<string, string>
  body?: string
  /** Refused: wrk sends one body (autocannon runs these). */
  bodies?: string[]
  /** Refused: wrk holds no fixed rate (autocannon runs these). */
  rate?: number
  /** Seconds, in (0, 600]. */
  duration: number
  /** 1 to 1000. */
  connections: number
  /** wrk threads (default 1, at most `connections`). */
  threads?: number
  /** Gets a status line once a second. */
  progress?: (text: string) => void
}

/** One run's result, shaped as bench/autocannon-worker.mjs' (the fields bench/run.mjs reads). */
export interface WrkResult {
  url: string
  method: string
  /** Seconds, as wrk measured the run. */
  duration: number
  connections: number
  /** Completed responses. */
  requests: { total: number }
  reqPerSec: number
  /** Milliseconds. */
  latency: { average: number; p50: number; p90: number; p99: number }
  /** Socket connect, read and write errors. */
  errors: number
  timeouts: number
  /** Responses with a status of 400 or more (wrk's `Non-2xx or 3xx responses`; a 3xx is not counted, as autocannon would). */
  non2xx: number
  /** wrk's CPU use, % of one core (sampled from /proc every 100 ms). */
  clientCpuPct: number
  client: 'wrk'
}

/**
 * One wrk run (`-t<threads> -c<connections> -d<duration>s --latency --timeout 10s`; a Lua script for
 * a method, headers or a body).
 * @throws synchronously on a URL other than 127.0.0.1, bounds, `bodies` or `rate`, or wrk missing;
 *   the promise rejects when wrk exits non-zero or prints no summary
 */
export function runWrk(request: WrkRequest): Promise<WrkResult>
