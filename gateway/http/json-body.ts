/**
 * The one rule for POST bodies on `/graphql` and `/operations/*` (CSRF, see README "HTTP contract"):
 * a browser may send a cross-site POST without a preflight only with a "simple" content type
 * (`text/plain`, forms) or none, so a body must be JSON (`application/json` or `*+json`), else 415;
 * and a body-less POST that a browser marks `Sec-Fetch-Site: cross-site` or `same-site` is refused (400).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { BadRequestError } from '../errors.js'
import { sendError } from './format-error.js'

/**
 * Sends the error (`TRB_ERR_BAD_REQUEST`, 415 or 400) and returns the reply when the request breaks
 * the rule above; returns undefined when the request may go on.
 */
export function refuseNonJsonBody(request: FastifyRequest, reply: FastifyReply, what = 'the variables'): FastifyReply | undefined {
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (contentType !== '' && contentType !== 'application/json' && !contentType.endsWith('+json')) {
    return sendError(reply, new BadRequestError(`Send ${what} as JSON (Content-Type: application/json), not ${contentType}`), 415)
  }
  const site = request.headers['sec-fetch-site']
  if (contentType === '' && (site === 'cross-site' || site === 'same-site')) {
    return sendError(reply, new BadRequestError(`A cross-site request must send ${what} as JSON (Content-Type: application/json)`))
  }
  return undefined
}
