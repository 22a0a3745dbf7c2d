/**
 * Upstream calls of the REST connector, through one undici `Pool` per source (keep-alive, one
 * origin; made at the source's first upstream call, when undici loads: ../../undici.ts). Turns
 * failures into the gateway's upstream errors (gateway/errors.ts), each carrying GraphQL
 * `extensions` so that graphql-js and graphql-jit put them on the GraphQL error:
 *
 * | Failure | Error | `extensions` |
 * |---|---|---|
 * | upstream answered non-2xx | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: <upstream status> } }` |
 * | headers or body not received within `timeoutMs`, or connect timeout | `UpstreamTimeoutError` | `{ code: 'TRB_ERR_UPSTREAM_TIMEOUT', http: { status: 504 } }` |
 * | connection refused/reset, DNS failure, closed pool | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: 502 } }` |
 * | 2xx whose body is not valid JSON (for a JSON response) | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: 502 } }` |
 * | answer longer than `maxResponseBytes` (aborted while streaming) | `UpstreamTooLargeError` | `{ code: 'TRB_ERR_UPSTREAM_TOO_LARGE', http: { status: 502 } }` |
 * | circuit breaker open, or `connections + maxQueue` requests already waiting | `UpstreamUnavailableError` | `{ code: 'TRB_ERR_UPSTREAM_UNAVAILABLE', http: { status: 503 } }` |
 *
 * Resilience (per source): idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS) are retried
 * `retry.retries` times after a network failure, a timeout or a 408/429/502/503/504 answer (not a 2xx
 * answer whose body cannot be decoded, which neither counts toward the breaker), waiting
 * `Retry-After` (429/503; no retry when it exceeds `retry.maxDelayMs`) or an exponential backoff with
 * jitter (`baseDelayMs · 2^attempt`, capped at `maxDelayMs`, a random half of it added to the other
 * half). Each call, its retries included, goes through a cockatiel circuit breaker that opens after
 * `circuitBreaker.threshold` consecutive failed calls (network, timeout, 5xx after the last retry) and
 * half-opens after `circuitBreaker.halfOpenAfterMs`; its changes are logged and its state is shown
 * by `health()`.
 *
 * Messages: for a non-2xx answer, the status line plus the upstream body's `message` (or `error`)
 * string when the body is JSON, truncated to 200 characters, and `extensions.upstream` (method, path,
 * status, body excerpt; see `../upstream-details.ts`): in production the formatter shows the status
 * line only and logs the rest. Other messages are the gateway's own: never a stack, never the
 * upstream address.
 */
import { STATUS_CODES } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen, type CircuitBreakerPolicy } from 'cockatiel'
import { pino, type Logger } from 'pino'
import type { Dispatcher, Pool } from 'undici'
import { undici } from '../../undici.js'
import { UpstreamError, UpstreamTimeoutError, UpstreamTooLargeError, UpstreamUnavailableError } from '../../errors.js'
import { parseJsonExact } from '../../scalars.js'
import type { SourceHealth } from '../types.js'
import type { RestRequest, RestRequestFn } from './convert.js'
import type { AppliedAuth, Authenticator } from './security.js'
import { isObject } from './openapi.js'
import { bodyExcerpt, withUpstreamDetails } from '../upstream-details.js'
import { compileHeaderTemplates, renderHeaderTemplates } from '../../auth/header-templates.js'
import { registerPool, startUpstream } from '../../observability/probes.js'
import { hasOriginHooks, hookFailure, originRequest, originResponse, type OriginHookSlot, type OriginRequest } from '../../hooks/index.js'

/** Retry policy of a source (see the file header). */
export interface RetryOptions {
  /** Retries after the first attempt, for idempotent methods only. */
  retries: number
  /** First backoff delay, in milliseconds; doubled on each retry. */
  baseDelayMs: number
  /** Cap of one backoff delay, and the longest `Retry-After` honoured, in milliseconds. */
  maxDelayMs: number
}

/** Circuit breaker of a source (cockatiel `ConsecutiveBreaker`). */
export interface CircuitBreakerOptions {
  /** Consecutive failed calls (network, timeout, 5xx after the last retry) that open the circuit. */
  threshold: number
  /** Cool-down, in milliseconds, before one trial call is let through (half-open). */
  halfOpenAfterMs: number
}

/** Options of {@link createUpstream}. */
export interface UpstreamOptions {
  /** Absolute http(s) base URL; its path is prefixed to every operation path. */
  baseUrl: string
  /** Connect timeout, in milliseconds. */
  connectTimeoutMs: number
  /** Time to wait for the response headers, in milliseconds (undici headersTimeout). */
  headersTimeoutMs: number
  /** Longest idle time between two chunks of the body, in milliseconds (undici bodyTimeout). */
  bodyTimeoutMs: number
  /** Most sockets open to the upstream at once (undici Pool `connections`). */
  connections: number
  /** Most requests waiting for a socket; past `connections + maxQueue` calls fail fast with `TRB_ERR_UPSTREAM_UNAVAILABLE`. */
  maxQueue: number
  /** Largest answer body accepted, in bytes; a longer one is aborted (`TRB_ERR_UPSTREAM_TOO_LARGE`). */
  maxResponseBytes: number
  /** Retry policy. */
  retry: RetryOptions
  /** Circuit breaker, or false for none. */
  circuitBreaker: CircuitBreakerOptions | false
  /** Timeout of one `health()` probe, in milliseconds. */
  healthTimeoutMs: number
  /** The gateway's global hooks (`hooks.global.onOriginRequest`/`onOriginResponse`, README "Hooks"); none by default. */
  originHooks?: OriginHookSlot
  /** The source's namespace, as origin hooks filter and see it. Default `''`. */
  namespace?: string
  /** Logger for retries and circuit changes (never sees headers or bodies). */
  logger?: Logger
  /** Credentials for a call's `security` requirements (see `security.ts`); none when undefined. */
  authenticate?: Authenticator['authenticate']
  /** Headers sent with every request. */
  headers: Record<string, string>
  /** Lower-case names of client request headers to forward. */
  forwardHeaders: string[]
  /** The source's name, for error messages. */
  sourceName: string
}

/** An upstream: the request function given to the converter, a health probe and `close`. */
export interface Upstream {
  request: RestRequestFn
  /**
   * HEAD on the base URL (timeout `healthTimeoutMs`): any HTTP answer is `up`; a connect failure or
   * timeout is `down`; an open circuit is `down`. Answers within about 25 ms whatever the upstream
   * does: when the probe is slower, the last known state is returned while it goes on. Never throws.
   */
  health(): Promise<SourceHealth>
  /** Closes the pool, waiting up to 1 s for calls in flight before cutting them off (idempotent). */
  close(): Promise<void>
}

const MAX_ERROR_BODY = 64 * 1024
const MAX_MESSAGE = 200
const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-authorization', 'proxy-connection', 'expect'])
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])
/** Methods retried after a transient failure (RFC 9110 §9.2.2 idempotent methods). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'])
/** Upstream statuses worth a retry. */
const RETRY_STATUSES = new Set([408, 429, 502, 503, 504])
/** How long `health()` waits for a probe before answering with the last known state, in milliseconds. */
const HEALTH_WAIT_MS = 25
/** How long `close()` waits for calls in flight before destroying the pool, in milliseconds. */
const CLOSE_GRACE_MS = 1000
/** `Retry-After` of a failed answer, in milliseconds, keyed by the thrown error. */
const retryAfterOf = new WeakMap<object, number>()
/**
 * Errors for a 2xx answer whose body cannot be decoded (invalid JSON, an HTML page): the upstream
 * answered, so asking again gives the same body. Never retried, never counted by the breaker.
 */
const malformedAnswers = new WeakSet<object>()

type HeaderBag = Record<string, string | string[] | undefined>

/** An error from gateway/errors.ts with the GraphQL `extensions` graphql-js / graphql-jit copy onto the located error. */
function withExtensions<E extends Error & { code: string }>(err: E, status: number): E {
  return Object.assign(err, { extensions: { code: err.code, http: { status } } })
}

function errorCode(err: unknown): string | undefined {
  let e: unknown = err
  for (let i = 0; i < 3 && isObject(e); i++) {
    if (typeof e.code === 'string') return e.code
    e = e.cause
  }
  return undefined
}

/**
 * Maps a thrown undici/network error to `UpstreamTimeoutError` (504) or `UpstreamError` (502).
 * Errors already mapped (they carry `extensions`) are returned as they are.
 */
export function mapNetworkError(err: unknown, sourceName: string, timeoutMs: number): Error {
  if (isObject(err) && isObject(err.extensions) && typeof err.extensions.code === 'string') return err as unknown as Error
  const code = errorCode(err)
  if (code !== undefined && TIMEOUT_CODES.has(code)) return withExtensions(new UpstreamTimeoutError(sourceName, timeoutMs), 504)
  const reason = code === 'ECONNREFUSED' ? 'connection refused'
    : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' ? 'connection reset'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found'
        : code === 'UND_ERR_DESTROYED' || code === 'UND_ERR_CLOSED' ? 'connection pool closed'
          : 'network error'
  return withExtensions(new UpstreamError(sourceName, code ? `${reason} (${code})` : reason), 502)
}

function safeText(s: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()
  return clean.length > MAX_MESSAGE ? `${clean.slice(0, MAX_MESSAGE)}…` : clean
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const buf = chunk as Buffer
    if (size + buf.length > limit) {
      chunks.push(buf.subarray(0, limit - size))
      body.destroy()
      break
    }
    chunks.push(buf)
    size += buf.length
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The upstream status line plus its JSON `message`/`error`, e.g. `404 Not Found: Role x not found`. */
function statusMessage(status: number, text: string): string {
  let detail: string | undefined
  try {
    const body: unknown = JSON.parse(text)
    if (isObject(body)) {
      const m = body.message ?? body.error ?? body.detail ?? body.title
      if (typeof m === 'string' && m.trim() !== '') detail = safeText(m)
    }
  } catch {
    // not JSON: the body is not shown.
  }
  const line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`
  return detail ? `${line}: ${detail}` : line
}

/** The incoming request's headers from a GraphQL context: mercurius `context.reply.request.headers`, or `context.headers`. */
function incomingHeaders(context: unknown): HeaderBag | undefined {
  if (!isObject(context)) return undefined
  const reply = context.reply
  if (isObject(reply) && isObject(reply.request) && isObject(reply.request.headers)) return reply.request.headers as HeaderBag
  const h = context.headers
  if (isObject(h) && typeof (h as { get?: unknown }).get === 'function' && typeof (h as { forEach?: unknown }).forEach === 'function') {
    const out: HeaderBag = {}
    ;(h as unknown as Headers).forEach((v, k) => { out[k] = v })
    return out
  }
  return isObject(h) ? (h as HeaderBag) : undefined
}

/**
 * `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP date) in milliseconds, or undefined
 * when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (v === undefined || v.trim() === '') return undefined
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The HTTP status a mapped upstream error carries in `extensions.http.status`. */
function statusOf(err: unknown): number | undefined {
  const status = isObject(err) && isObject(err.extensions) && isObject(err.extensions.http) ? err.extensions.http.status : undefined
  return typeof status === 'number' ? status : undefined
}

/** True for an attempt that says the upstream is unwell: network failure, timeout or 5xx (not 4xx, not a too-large answer). */
function isOutage(err: unknown): boolean {
  if (isObject(err) && malformedAnswers.has(err)) return false
  const code = errorCode(err)
  if (code === 'TRB_ERR_UPSTREAM_TIMEOUT') return true
  if (code !== 'TRB_ERR_UPSTREAM') return false
  const status = statusOf(err)
  return status === undefined || status >= 500
}

/**
 * How long to wait before retry number `attempt + 1`, or undefined when `err` is not worth a retry
 * (see the file header). Full rule: `Retry-After` when given on 429/503 (no retry beyond
 * `maxDelayMs`), else `d/2 + random·d/2` with `d = min(maxDelayMs, baseDelayMs · 2^attempt)`.
 */
export function retryDelay(err: unknown, attempt: number, retry: RetryOptions, random = Math.random): number | undefined {
  if (attempt >= retry.retries || (isObject(err) && malformedAnswers.has(err))) return undefined
  const code = errorCode(err)
  if (code !== 'TRB_ERR_UPSTREAM' && code !== 'TRB_ERR_UPSTREAM_TIMEOUT') return undefined
  const status = statusOf(err)
  if (code === 'TRB_ERR_UPSTREAM' && status !== undefined && !RETRY_STATUSES.has(status)) return undefined
  const after = isObject(err) ? retryAfterOf.get(err) : undefined
  if (after !== undefined) return after <= retry.maxDelayMs ? after : undefined
  const d = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt)
  return Math.round(d / 2 + random() * (d / 2))
}

const CIRCUIT_NAMES: Record<CircuitState, 'closed' | 'open' | 'half-open'> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half-open',
  [CircuitState.Isolated]: 'open',
}

/** Sees an answer's status and headers before its body is read (`onOriginResponse`); rejects to fail the call. */
type ObserveResponse = (status: number, headers: Record<string, string | string[] | undefined>) => Promise<void>

const silentLogger = pino({ level: 'silent' })

/**
 * Creates the pool, the circuit breaker and the request function for one REST source.
 * @throws TypeError when `baseUrl` is not an absolute http(s) URL.
 */
export function createUpstream(options: UpstreamOptions): Upstream {
  const base = new URL(options.baseUrl)
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`baseUrl must be http(s): ${options.baseUrl}`)
  const basePath = base.pathname.replace(/\/+$/, '')
  const { sourceName, logger } = options
  // The pool is made at the first upstream call (undici loads then: ../../undici.ts); one closed
  // before any call is made closed, so that a later call fails as on a closed pool.
  let pool: Pool | undefined
  let closedUnused = false
  const poolOf = (): Pool => {
    if (pool) return pool
    pool = new (undici().Pool)(base.origin, {
      connections: options.connections,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      connect: { timeout: options.connectTimeoutMs },
      maxResponseSize: options.maxResponseBytes,
      keepAliveTimeout: 10_000,
    })
    if (closedUnused) void pool.close().catch(() => undefined)
    return pool
  }
  // `{{claims.sub}}`-style values are rendered per call (gateway/auth/header-templates.ts).
  const templates = compileHeaderTemplates(options.headers)
  const staticHeaders: Record<string, string> = { ...templates.static }
  // The pool gauge (tributary_upstream_pool_connections), read when metrics are scraped.
  const unregisterPool = registerPool({ kind: 'http', source: sourceName, stats: () => (pool ? { ...pool.stats } : {}) })
  const forward = options.forwardHeaders.map((h) => h.toLowerCase()).filter((h) => !HOP_BY_HOP.has(h))

  /** The timeout (ms) that an undici timeout error stands for, for the error message. */
  const timeoutFor = (err: unknown): number => {
    const code = errorCode(err)
    return code === 'UND_ERR_CONNECT_TIMEOUT' ? options.connectTimeoutMs : code === 'UND_ERR_BODY_TIMEOUT' ? options.bodyTimeoutMs : options.headersTimeoutMs
  }
  const mapFailure = (err: unknown): Error => {
    if (errorCode(err) === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return withExtensions(new UpstreamTooLargeError(sourceName, options.maxResponseBytes), 502)
    return mapNetworkError(err, sourceName, timeoutFor(err))
  }

  let breaker: CircuitBreakerPolicy | undefined
  let openedAt = 0
  if (options.circuitBreaker) {
    const { threshold, halfOpenAfterMs } = options.circuitBreaker
    breaker = circuitBreaker(handleWhen(isOutage), { halfOpenAfter: halfOpenAfterMs, breaker: new ConsecutiveBreaker(threshold) })
    breaker.onBreak(() => {
      openedAt = Date.now()
      logger?.warn({ circuit: 'open', halfOpenAfterMs }, `circuit opened after ${threshold} consecutive upstream failures`)
    })
    breaker.onHalfOpen(() => logger?.info({ circuit: 'half-open' }, 'circuit half-open: trying one call'))
    breaker.onReset(() => logger?.info({ circuit: 'closed' }, 'circuit closed: upstream answers again'))
  }
  const circuitState = (): 'closed' | 'open' | 'half-open' | undefined => {
    if (!breaker || !options.circuitBreaker) return undefined
    const state = CIRCUIT_NAMES[breaker.state]
    // cockatiel moves Open → HalfOpen on the next call; report the cool-down's end as it is.
    return state === 'open' && Date.now() - openedAt >= options.circuitBreaker.halfOpenAfterMs ? 'half-open' : state
  }

  /**
   * One attempt, observed (observability/probes.ts: its duration by status, a client span whose
   * `traceparent` goes upstream in `headers`).
   */
  const attempt = async (req: RestRequest, path: string, headers: Record<string, string>, observe?: ObserveResponse): Promise<unknown> => {
    const end = startUpstream(sourceName, req.method, `${base.origin}${path}`, headers)
    if (!end) return attemptOnce(req, path, headers, undefined, observe)
    const seen = { status: 0 }
    try {
      const result = await attemptOnce(req, path, headers, seen, observe)
      end(seen.status)
      return result
    } catch (err) {
      end(seen.status, err)
      throw err
    }
  }

  /** One attempt: sends the request and decodes a 2xx answer; rejects with a mapped error. `seen.status` gets the answer's status. */
  const attemptOnce = async (req: RestRequest, path: string, headers: Record<string, string>, seen?: { status: number }, observe?: ObserveResponse): Promise<unknown> => {
    let res: Dispatcher.ResponseData
    // One line per upstream HTTP request (retries included), without the query string, which may carry credentials.
    if (logger?.isLevelEnabled('debug')) logger.debug({ method: req.method, url: `${base.origin}${path.split('?')[0]}` }, 'upstream')
    try {
      res = await poolOf().request({ method: req.method as Dispatcher.HttpMethod, path, headers, body: req.body })
    } catch (err) {
      throw mapFailure(err)
    }
    if (seen) seen.status = res.statusCode
    try {
      const status = res.statusCode
      if (observe) await observe(status, res.headers).catch(async (err: unknown) => {
        // Read to the end, so that the socket goes back to the pool and no abort error is left unheard.
        await res.body.dump().catch(() => undefined)
        throw err
      })
      if (status < 200 || status >= 300) {
        const text = await readLimited(res.body, MAX_ERROR_BODY)
        const details = { source: sourceName, method: req.method, path: `${basePath}${req.path}`, status, body: bodyExcerpt(text) }
        const failure = withUpstreamDetails(withExtensions(new UpstreamError(sourceName, statusMessage(status, text)), status), details)
        const after = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after']) : undefined
        if (after !== undefined) retryAfterOf.set(failure, after)
        throw failure
      }
      switch (req.responseKind) {
        case 'none':
          await res.body.dump()
          return true
        case 'head': {
          await res.body.dump()
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined && name !== 'set-cookie') headers[name] = Array.isArray(value) ? value.join(', ') : value
          }
          return { status, headers }
        }
        case 'text':
          return await res.body.text()
        case 'binary':
          return Buffer.from(await res.body.arrayBuffer()).toString('base64')
        case 'json': {
          const text = await res.body.text()
          if (text.trim() === '') return null
          try {
            // int64 values above 2^53 stay exact for BigInt fields (gateway/scalars.ts).
            return parseJsonExact(text)
          } catch {
            const malformed = withExtensions(new UpstreamError(sourceName, `${req.operation}: the answer is not valid JSON`), 502)
            malformedAnswers.add(malformed)
            throw malformed
          }
        }
      }
    } catch (err) {
      if (!res.body.destroyed) res.body.destroy()
      throw mapFailure(err)
    }
  }

  /** Runs one call (its retries included) through the circuit breaker, when there is one. */
  const guarded = breaker
    ? async (call: () => Promise<unknown>): Promise<unknown> => {
      try {
        return await breaker.execute(call)
      } catch (err) {
        if (err instanceof BrokenCircuitError) throw withExtensions(new UpstreamUnavailableError(sourceName, 'circuit open after repeated failures'), 503)
        throw err
      }
    }
    : (call: () => Promise<unknown>) => call()

  const namespace = options.namespace ?? ''
  /**
   * Runs `onOriginRequest` on a call and prepares `onOriginResponse`. A changed URL must keep the
   * source's origin (its pool is bound to it); the hook errors carry their code for the field.
   */
  const hooked = async (slot: OriginHookSlot, req: RestRequest, path: string, headers: Record<string, string>, context: unknown) => {
    const log = logger ?? silentLogger
    const sent: OriginRequest = { method: req.method, url: `${base.origin}${path}`, headers, body: typeof req.body === 'string' ? req.body : undefined }
    let next: OriginRequest
    try {
      next = await originRequest(slot, namespace, sent, context, log)
    } catch (err) {
      throw withExtensions(err as Error & { code: string }, (err as { statusCode?: number }).statusCode ?? 500)
    }
    if (next !== sent) {
      const url = new URL(next.url)
      if (url.origin !== base.origin) throw withExtensions(hookFailure(slot.current!, 'onOriginRequest', `a REST source keeps its origin ${base.origin}`) as Error & { code: string }, 500)
      path = `${url.pathname}${url.search}`
      headers = next.headers
      req = { ...req, method: next.method, ...(next.body !== sent.body ? { body: next.body } : {}) }
    }
    const observe: ObserveResponse = async (status, raw) => {
      const seen: Record<string, string> = {}
      for (const [name, value] of Object.entries(raw)) if (value !== undefined && name !== 'set-cookie') seen[name] = Array.isArray(value) ? value.join(', ') : value
      try {
        await originResponse(slot, namespace, next, { status, headers: seen }, context, log)
      } catch (err) {
        throw withExtensions(err as Error & { code: string }, (err as { statusCode?: number }).statusCode ?? 500)
      }
    }
    return { req, path, headers, observe }
  }

  const capacity = options.connections + options.maxQueue
  let pending = 0
  const { authenticate } = options
  const request: RestRequestFn = async (req: RestRequest, context: unknown) => {
    const base: Record<string, string> = { ...staticHeaders }
    if (templates.dynamic.length > 0) Object.assign(base, renderHeaderTemplates(templates, context))
    if (forward.length > 0) {
      const incoming = incomingHeaders(context)
      if (incoming) {
        for (const name of forward) {
          const v = incoming[name]
          if (typeof v === 'string') base[name] = v
          else if (Array.isArray(v)) base[name] = v.join(', ')
        }
      }
    }
    Object.assign(base, req.headers)
    base.accept = req.responseKind === 'json' ? 'application/json' : '*/*'
    // A FormData body gets its multipart content-type (with the boundary) from undici.
    if (req.body !== undefined && !(req.body instanceof undici().FormData)) base['content-type'] = req.contentType ?? 'application/json'
    /** Path and headers of the call, with the credentials its operation's `security` requires. */
    const prepare = async (): Promise<{ path: string; headers: Record<string, string>; auth?: AppliedAuth }> => {
      const auth = authenticate && req.security ? await authenticate(req.security, context) : undefined
      const query = auth && auth.query.length > 0 ? [...req.query, ...auth.query] : req.query
      const search = query.length > 0 ? `?${new URLSearchParams(query).toString()}` : ''
      if (!auth) return { path: `${basePath}${req.path}${search}`, headers: base }
      const headers = { ...base, ...auth.headers }
      if (auth.cookies.length > 0) headers.cookie = [base.cookie, ...auth.cookies].filter(Boolean).join('; ')
      return { path: `${basePath}${req.path}${search}`, headers, auth }
    }
    if (pending >= capacity) throw withExtensions(new UpstreamUnavailableError(sourceName, `${capacity} requests already in flight or queued`), 503)
    pending++
    try {
      return await guarded(async () => {
        let { path, headers, auth } = await prepare()
        let observe: ObserveResponse | undefined
        // Origin hooks (README "Hooks"): once per call, before its first attempt; retries send what the hook returned.
        if (hasOriginHooks(options.originHooks, namespace)) ({ req, path, headers, observe } = await hooked(options.originHooks, req, path, headers, context))
        const idempotent = IDEMPOTENT.has(req.method)
        let renewed = false
        for (let n = 0; ; n++) {
          try {
            return await attempt(req, path, headers, observe)
          } catch (err) {
            if (auth?.invalidate && !renewed && statusOf(err) === 401) {
              // The token was refused (revoked, expired early): fetch a new one and try once more.
              renewed = true
              auth.invalidate()
              ;({ path, headers, auth } = await prepare())
              n--
              continue
            }
            const delay = idempotent ? retryDelay(err, n, options.retry) : undefined
            if (delay === undefined) throw err
            logger?.debug({ operation: req.operation, attempt: n + 1, delayMs: delay, code: errorCode(err), status: statusOf(err) }, 'retrying upstream call')
            await sleep(delay)
          }
        }
      })
    } finally {
      pending--
    }
  }

  let last: SourceHealth | undefined
  let probing: Promise<SourceHealth> | undefined
  const probe = async (): Promise<SourceHealth> => {
    const started = performance.now()
    const latency = () => Math.round((performance.now() - started) * 100) / 100
    if (logger?.isLevelEnabled('debug')) logger.debug({ method: 'HEAD', url: `${base.origin}${basePath === '' ? '/' : basePath}` }, 'upstream')
    try {
      const res = await poolOf().request({ method: 'HEAD', path: basePath === '' ? '/' : basePath, headers: staticHeaders, signal: AbortSignal.timeout(options.healthTimeoutMs) })
      await res.body.dump()
      return { status: 'up', latencyMs: latency() }
    } catch (err) {
      const aborted = isObject(err) && (err.name === 'TimeoutError' || err.name === 'AbortError')
      const message = aborted ? `no answer within ${options.healthTimeoutMs} ms` : mapFailure(err).message
      return { status: 'down', message, latencyMs: latency() }
    }
  }

  let closing: Promise<void> | undefined
  return {
    request,
    async health() {
      probing ??= probe().then((h) => { last = h; return h }).finally(() => { probing = undefined })
      const fresh = await Promise.race([probing, sleep(HEALTH_WAIT_MS, undefined, { ref: false })])
      const known: SourceHealth = fresh ?? last ?? { status: 'up', message: 'probe pending' }
      const circuit = circuitState()
      if (circuit === undefined) return known
      if (circuit === 'open') return { status: 'down', message: 'circuit open: calls fail fast', circuit }
      return { ...known, circuit }
    },
    close() {
      unregisterPool()
      // Waits for calls in flight, at most CLOSE_GRACE_MS; a hung upstream is then cut off.
      if (!pool) {
        closedUnused = true
        return (closing ??= Promise.resolve())
      }
      const open = pool
      closing ??= Promise.race([open.close().catch(() => undefined), sleep(CLOSE_GRACE_MS, undefined, { ref: false })])
        .then(() => open.destroy().catch(() => undefined))
      return closing
    },
  }
}
