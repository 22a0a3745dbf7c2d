/**
 * `server.maxResponseBytes`: the last guard on result size. The query cost limit and the database
 * `maxTake` refuse most large results before they run; whatever still produces a body larger than
 * the limit is answered with a 400 `TRB_ERR_GRAPHQL_LIMIT` instead (never cached). Streams (SSE)
 * are not measured.
 */
import type { FastifyReply } from 'fastify'
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
 */
export function limitResponse(reply: FastifyReply, body: string): string | Buffer {
  const maxBytes = reply.server.tributary.holder.current.config.server.maxResponseBytes
  const small = body.length < BUFFER_FROM_UNITS
  if (body.length <= maxBytes / 3) return small ? body : Buffer.from(body)
  const size = Buffer.byteLength(body)
  if (size <= maxBytes) return small ? body : Buffer.from(body)
  reply.log.warn({ size, maxBytes }, 'response larger than server.maxResponseBytes refused')
  reply.code(400).header('cache-control', 'no-store').removeHeader('etag')
  return JSON.stringify(errorBody(new GraphQLLimitError(`The response would be ${size} bytes, more than the maximum of ${maxBytes} (maxResponseBytes); ask for less`)))
}
