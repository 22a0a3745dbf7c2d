/**
 * `server.maxResponseBytes`: the last guard on result size. The query cost limit and the database
 * `maxTake` refuse most large results before they run; whatever still produces a body larger than
 * the limit is answered with a 400 `TRB_ERR_GRAPHQL_LIMIT` instead (never cached). Streams (SSE)
 * are not measured. Introspection documents have their own, higher bound,
 * `server.maxIntrospectionBytes`: the size of their answer is the schema's, not the data's.
 */
import type { FastifyReply } from 'fastify'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { GraphQLLimitError, errorBody } from '../errors.js'

/**
 * Bodies of at least this many UTF-16 units are sent as a Buffer: encoded to UTF-8 once, where a
 * string is encoded twice (fastify's `Content-Length`, then the socket write). That second pass
 * measured a tenth of the event loop under large responses; small bodies stay strings, which is
 * cheaper for them.
 */
export const BUFFER_FROM_UNITS = 64 * 1024

/**
 * Returns `body` (as a UTF-8 Buffer from {@link BUFFER_FROM_UNITS} units on), or, when it is larger
 * than the served config's `server.maxResponseBytes`, the body of a 400 `TRB_ERR_GRAPHQL_LIMIT` (the
 * reply's status becomes 400, `Cache-Control: no-store`, no ETag). Called inline where `/graphql`
 * and `/operations/*` send their JSON, not as an onSend hook: a global hook costs every request
 * about 2 % of throughput. A string shorter than `maxBytes / 3` UTF-16 units cannot exceed the
 * limit (UTF-8 needs at most 3 bytes per unit), so ordinary responses are not measured.
 * `introspection` (a document that selects introspection fields only) measures against
 * `server.maxIntrospectionBytes` instead.
 */
export function limitResponse(reply: FastifyReply, body: string, introspection = false): string | Buffer {
  const { server } = reply.server.tributary.holder.current.config
  const maxBytes = introspection ? server.maxIntrospectionBytes : server.maxResponseBytes
  const small = body.length < BUFFER_FROM_UNITS
  if (body.length <= maxBytes / 3) return small ? body : Buffer.from(body)
  const size = Buffer.byteLength(body)
  if (size <= maxBytes) return small ? body : Buffer.from(body)
  return refuse(reply, size, maxBytes, introspection ? 'maxIntrospectionBytes' : 'maxResponseBytes')
}

/**
 * {@link limitResponse} for a body in latin1-coded UTF-8 (each character one byte of its UTF-8 text:
 * a PostgreSQL direct answer, connectors/database/direct.ts `Latin1Context`): returns its bytes as a
 * Buffer (`Buffer.from(body, 'latin1')`, no UTF-8 encoding; its size is its length), or the same
 * 400 `TRB_ERR_GRAPHQL_LIMIT` body as {@link limitResponse} past `server.maxResponseBytes`.
 */
export function limitLatin1Response(reply: FastifyReply, body: string): string | Buffer {
  const maxBytes = reply.server.tributary.holder.current.config.server.maxResponseBytes
  if (body.length <= maxBytes) return Buffer.from(body, 'latin1')
  return refuse(reply, body.length, maxBytes, 'maxResponseBytes')
}

/** The refusal of an answer of `size` bytes: status 400, no ETag, the `TRB_ERR_GRAPHQL_LIMIT` body. */
function refuse(reply: FastifyReply, size: number, maxBytes: number, option: 'maxIntrospectionBytes' | 'maxResponseBytes'): string {
  reply.log.warn({ size, maxBytes }, `response larger than server.${option} refused`)
  collectRefusedAnswers()
  reply.code(400).header('cache-control', 'no-store').removeHeader('etag')
  return JSON.stringify(errorBody(new GraphQLLimitError(`The response would be ${size} bytes, more than the maximum of ${maxBytes} (${option}); ask for less`)))
}

/** Milliseconds between the last of a run of refused answers and the collection that frees them. */
export const COLLECT_DELAY_MS = 1000
/** Longest a collection waits for a run of refusals to end, in milliseconds: a steady stream of them is collected this often. */
export const COLLECT_MAX_WAIT_MS = 10_000
/** Fewest milliseconds between two such collections, so that refused answers cannot make the gateway spend its time collecting. */
export const COLLECT_INTERVAL_MS = 5000

type Collect = () => void
let collect: Collect | null | undefined
let scheduled: NodeJS.Timeout | undefined
let firstPending = 0
let lastCollection = -Infinity

/** V8's `gc()`: the global one when node runs with `--expose-gc`, else exposed for a new context only; null if neither works. */
function collector(): Collect | null {
  if (collect !== undefined) return collect
  try {
    const global = (globalThis as { gc?: Collect }).gc
    if (typeof global === 'function') return (collect = global)
    setFlagsFromString('--expose-gc')
    const exposed = runInNewContext('gc') as unknown
    collect = typeof exposed === 'function' ? (exposed as Collect) : null
  } catch {
    collect = null
  }
  return collect
}

/**
 * Frees the dead text of refused answers with one full V8 collection, {@link COLLECT_DELAY_MS} after
 * the last refusal of a run (at most {@link COLLECT_MAX_WAIT_MS} after its first, and
 * {@link COLLECT_INTERVAL_MS} after the previous collection). A refused answer leaves nothing alive
 * (the heap after a full collection is the same before and after it), but its text — the execution
 * result and its JSON, twice `maxResponseBytes` or more — lies dead in V8's old and large-object
 * spaces, which an idle process does not collect: five refused 30 MB answers left the gateway's RSS
 * 86 MB above its baseline for minutes (twenty: 205 MB), until later load ran a full collection.
 * A full collection costs tens of milliseconds with the gateway's live heap (about 45 MB).
 */
function collectRefusedAnswers(): void {
  const now = Date.now()
  if (scheduled) {
    // A steady stream of refusals keeps the collection already set rather than postponing it for ever.
    if (now - firstPending >= COLLECT_MAX_WAIT_MS) return
    clearTimeout(scheduled)
  } else {
    firstPending = now
  }
  const at = Math.max(now + COLLECT_DELAY_MS, lastCollection + COLLECT_INTERVAL_MS)
  scheduled = setTimeout(() => {
    scheduled = undefined
    lastCollection = Date.now()
    collector()?.()
  }, at - now)
  scheduled.unref()
}
