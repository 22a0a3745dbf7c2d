/**
 * Upstream calls of the REST connector, through one undici `Pool` per source (keep-alive, one
 * origin). Turns failures into the gateway's upstream errors (gateway/errors.ts), each carrying GraphQL
 * `extensions` so that graphql-js and graphql-jit put them on the GraphQL error:
 *
 * | Failure | Error | `extensions` |
 * |---|---|---|
 * | upstream answered non-2xx | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: <upstream status> } }` |
 * | headers or body not received within `timeoutMs`, or connect timeout | `UpstreamTimeoutError` | `{ code: 'TRB_ERR_UPSTREAM_TIMEOUT', http: { status: 504 } }` |
 * | connection refused/reset, DNS failure, closed pool | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: 502 } }` |
 * | 2xx whose body is not valid JSON (for a JSON response) | `UpstreamError` | `{ code: 'TRB_ERR_UPSTREAM', http: { status: 502 } }` |
 *
 * Messages: for a non-2xx answer, the status line plus the upstream body's `message` (or `error`)
 * string when the body is JSON, truncated to 200 characters, and `extensions.upstream` (method, path,
 * status, body excerpt; see `../upstream-details.ts`): in production the formatter shows the status
 * line only and logs the rest. Other messages are the gateway's own: never a stack, never the
 * upstream address.
 */
import { STATUS_CODES } from 'node:http'
import { performance } from 'node:perf_hooks'
import { Pool, type Dispatcher } from 'undici'
import { UpstreamError, UpstreamTimeoutError } from '../../errors.js'
import { parseJsonExact } from '../../scalars.js'
import type { SourceHealth } from '../types.js'
import type { RestRequest, RestRequestFn } from './convert.js'
import { isObject } from './openapi.js'
import { bodyExcerpt, withUpstreamDetails } from '../upstream-details.js'

/** Options of {@link createUpstream}. */
export interface UpstreamOptions {
  /** Absolute http(s) base URL; its path is prefixed to every operation path. */
  baseUrl: string
  /** headersTimeout and bodyTimeout (and connect timeout), in milliseconds. */
  timeoutMs: number
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
  /** HEAD on the base URL: any HTTP answer is `up`; a connect failure or timeout is `down`. Never throws. */
  health(): Promise<SourceHealth>
  /** Closes the pool (idempotent). */
  close(): Promise<void>
}

const MAX_ERROR_BODY = 64 * 1024
const MAX_MESSAGE = 200
const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-authorization', 'proxy-connection', 'expect'])
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

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
 * Creates the pool and the request function for one REST source.
 * @throws TypeError when `baseUrl` is not an absolute http(s) URL.
 */
export function createUpstream(options: UpstreamOptions): Upstream {
  const base = new URL(options.baseUrl)
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`baseUrl must be http(s): ${options.baseUrl}`)
  const basePath = base.pathname.replace(/\/+$/, '')
  const { timeoutMs, sourceName } = options
  const pool = new Pool(base.origin, {
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: timeoutMs },
    keepAliveTimeout: 10_000,
  })
  const staticHeaders: Record<string, string> = {}
  for (const [k, v] of Object.entries(options.headers)) staticHeaders[k.toLowerCase()] = v
  const forward = options.forwardHeaders.map((h) => h.toLowerCase()).filter((h) => !HOP_BY_HOP.has(h))

  const request: RestRequestFn = async (req: RestRequest, context: unknown) => {
    const headers: Record<string, string> = { ...staticHeaders }
    if (forward.length > 0) {
      const incoming = incomingHeaders(context)
      if (incoming) {
        for (const name of forward) {
          const v = incoming[name]
          if (typeof v === 'string') headers[name] = v
          else if (Array.isArray(v)) headers[name] = v.join(', ')
        }
      }
    }
    Object.assign(headers, req.headers)
    headers.accept = req.responseKind === 'json' ? 'application/json' : '*/*'
    if (req.body !== undefined) headers['content-type'] = req.contentType ?? 'application/json'
    const search = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : ''
    let res: Dispatcher.ResponseData
    try {
      res = await pool.request({ method: req.method as Dispatcher.HttpMethod, path: `${basePath}${req.path}${search}`, headers, body: req.body })
    } catch (err) {
      throw mapNetworkError(err, sourceName, timeoutMs)
    }
    try {
      const status = res.statusCode
      if (status < 200 || status >= 300) {
        const text = await readLimited(res.body, MAX_ERROR_BODY)
        const details = { source: sourceName, method: req.method, path: `${basePath}${req.path}`, status, body: bodyExcerpt(text) }
        throw withUpstreamDetails(withExtensions(new UpstreamError(sourceName, statusMessage(status, text)), status), details)
      }
      switch (req.responseKind) {
        case 'none':
          await res.body.dump()
          return true
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
            throw withExtensions(new UpstreamError(sourceName, `${req.operation}: the answer is not valid JSON`), 502)
          }
        }
      }
    } catch (err) {
      if (!res.body.destroyed) res.body.destroy()
      throw mapNetworkError(err, sourceName, timeoutMs)
    }
  }

  let closing: Promise<void> | undefined
  return {
    request,
    async health() {
      const started = performance.now()
      try {
        const res = await pool.request({ method: 'HEAD', path: basePath === '' ? '/' : basePath, headers: staticHeaders, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
        await res.body.dump()
        return { status: 'up', latencyMs: Math.round((performance.now() - started) * 100) / 100 }
      } catch (err) {
        const mapped = mapNetworkError(err, sourceName, timeoutMs)
        return { status: 'down', message: mapped.message, latencyMs: Math.round((performance.now() - started) * 100) / 100 }
      }
    },
    close() {
      closing ??= pool.close().catch(() => undefined)
      return closing
    },
  }
}
