/**
 * `server.maxResponseBytes`: the last guard on result size. The query cost limit and the database
 * `maxTake` refuse most large results before they run; whatever still produces a body larger than
 * the limit is answered with a 400 `TRB_ERR_GRAPHQL_LIMIT` instead (never cached). Streams (SSE)
 * are not measured.
 */
import type { FastifyInstance } from 'fastify'
import { GraphQLLimitError, errorBody } from '../errors.js'

/**
 * Adds the onSend hook that enforces `maxBytes` on string and Buffer bodies. A string shorter than
 * `maxBytes / 3` UTF-16 units cannot exceed it (UTF-8 needs at most 3 bytes per unit), so ordinary
 * responses are not measured.
 */
export function registerResponseLimit(app: FastifyInstance, maxBytes: number): void {
  const safeLength = Math.floor(maxBytes / 3)
  app.addHook('onSend', async (_request, reply, payload) => {
    let size: number
    if (typeof payload === 'string') {
      if (payload.length <= safeLength) return payload
      size = Buffer.byteLength(payload)
    } else if (Buffer.isBuffer(payload)) size = payload.length
    else return payload
    if (size <= maxBytes) return payload
    reply.log.warn({ size, maxBytes }, 'response larger than server.maxResponseBytes refused')
    reply.code(400).header('cache-control', 'no-store').removeHeader('etag').type('application/json; charset=utf-8')
    return JSON.stringify(errorBody(new GraphQLLimitError(`The response would be ${size} bytes, more than the maximum of ${maxBytes} (maxResponseBytes); ask for less`)))
  })
}
