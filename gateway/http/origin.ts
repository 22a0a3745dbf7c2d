/**
 * Origin and Host checks (issue 7, cross-site WebSocket hijacking and DNS rebinding).
 *
 * - `Host`: when `server.allowedHosts` is set, a request whose `Host` header is missing or not listed
 *   is answered 421 `TRB_ERR_MISDIRECTED` before routing (WebSocket upgrades included).
 * - `Origin`: a WebSocket upgrade or a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`)
 *   that carries an `Origin` which is neither the gateway's own nor in `server.allowedOrigins` is
 *   answered 403 `TRB_ERR_ORIGIN_FORBIDDEN` before the upgrade. Requests without `Origin` (curl, server
 *   to server clients, `ws` in Node.js) pass: only browsers send it, and they always do on upgrades.
 * - Cross-origin HTTP from a listed origin is answered with CORS headers by `@fastify/cors`
 *   (registered only when the list is not empty; same-origin requests need no CORS headers).
 *
 * The gateway's own origin: an `Origin` with scheme `http` or `https` whose host, port included
 * and the scheme's default port (80, 443) left out, equals the request's `Host` header compared the
 * same way, ignoring case. The scheme is not compared: TLS often ends at a proxy in front of the
 * gateway. A proxy that rewrites `Host` must pass the public host on, or the public origin must be
 * listed in `server.allowedOrigins`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import cors from '@fastify/cors'
import { MisdirectedError, OriginForbiddenError, RouteNotFoundError } from '../errors.js'
import { sendError } from './format-error.js'

/** What {@link registerOriginGuard} reads from `server`. */
export interface OriginGuardOptions {
  /** Normalised origins (`new URL(o).origin`) allowed besides the gateway's own. */
  allowedOrigins: readonly string[]
  /** Lower-cased `Host` patterns (`host`, `host:port`, `.domain`); null: `Host` is not checked. */
  allowedHosts: readonly string[] | null
}

/** Splits a lower-cased `host[:port]` (IPv6 in brackets) into hostname and port (`''` when absent). */
function splitHost(host: string): { hostname: string; port: string } {
  const close = host.startsWith('[') ? host.indexOf(']') : -1
  const colon = host.indexOf(':', close + 1)
  return colon === -1 ? { hostname: host, port: '' } : { hostname: host.slice(0, colon), port: host.slice(colon + 1) }
}

/**
 * A predicate over `Host` header values for the patterns of `server.allowedHosts`: `name` matches
 * that hostname on any port, `name:port` that hostname and port, `.domain` the domain and every
 * subdomain on any port (with `:port`, on that port). Case is ignored.
 */
export function hostMatcher(patterns: readonly string[]): (host: string | undefined) => boolean {
  const parsed = patterns.map((p) => {
    const { hostname, port } = splitHost(p.toLowerCase())
    return hostname.startsWith('.') ? { suffix: hostname, exact: hostname.slice(1), port } : { suffix: undefined, exact: hostname, port }
  })
  return (host) => {
    if (!host) return false
    const { hostname, port } = splitHost(host.toLowerCase())
    return parsed.some((p) => (p.port === '' || p.port === port) && (hostname === p.exact || (p.suffix !== undefined && hostname.endsWith(p.suffix))))
  }
}

/**
 * True when `origin` is the gateway's own for a request with this `Host` header (see the module
 * comment): same host and port, scheme http or https, default ports left out on both sides.
 */
export function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  const defaultPort = url.protocol === 'https:' ? '443' : '80'
  const { hostname, port } = splitHost(host.toLowerCase())
  // URL.host is lower-cased and leaves the scheme's default port out.
  return url.host === (port === '' || port === defaultPort ? hostname : `${hostname}:${port}`)
}

/**
 * Answers a refused request with `err`. An upgrade's socket is not an HTTP connection fastify
 * tracks (@fastify/websocket routes it by hand and its own hooks have not run yet): it is ended
 * once the answer is written.
 */
function refuse(request: FastifyRequest, reply: FastifyReply, err: Error & { code: string; statusCode?: number }): void {
  if (request.headers.upgrade !== undefined) {
    reply.header('connection', 'close')
    reply.raw.once('finish', () => request.raw.socket.end())
  }
  sendError(reply, err)
}

/**
 * The check as a callback hook: 421 for an unlisted `Host` (when `allowedHosts` is set), 403 for an
 * upgrade or preflight from a foreign `Origin`.
 */
function guard(options: OriginGuardOptions) {
  const allowed = new Set(options.allowedOrigins)
  const hostAllowed = options.allowedHosts ? hostMatcher(options.allowedHosts) : null
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const headers = request.headers
    if (hostAllowed && !hostAllowed(headers.host)) {
      refuse(request, reply, new MisdirectedError())
      return
    }
    const origin = headers.origin
    if (
      origin !== undefined &&
      (headers.upgrade !== undefined || (request.method === 'OPTIONS' && headers['access-control-request-method'] !== undefined)) &&
      !allowed.has(origin) &&
      !isOwnOrigin(origin, headers.host)
    ) {
      reply.header('vary', 'Origin')
      refuse(request, reply, new OriginForbiddenError(origin.slice(0, 200)))
      return
    }
    done()
  }
}

/**
 * Adds the Host check, the Origin check of upgrades and preflights, and (for a non-empty
 * `allowedOrigins`) `@fastify/cors` to the app. Register before the routes.
 *
 * With neither `allowedHosts` nor `allowedOrigins` (the default), no hook runs on ordinary requests
 * (a global onRequest hook costs every request about 2 % of throughput): upgrades are checked by
 * {@link registerUpgradeGuard} in the WebSocket scope, and preflights by an `OPTIONS *` route that
 * refuses foreign origins (403) and answers anything else like an unknown route (404).
 */
export async function registerOriginGuard(app: FastifyInstance, options: OriginGuardOptions): Promise<void> {
  const check = guard(options)
  if (options.allowedHosts === null && options.allowedOrigins.length === 0) {
    app.options('*', (request, reply) => {
      check(request, reply, () => sendError(reply, new RouteNotFoundError('OPTIONS', request.url.split('?')[0])))
    })
    return
  }
  app.addHook('onRequest', check)
  if (options.allowedOrigins.length > 0) {
    await app.register(cors, {
      origin: [...new Set(options.allowedOrigins)],
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      maxAge: 600,
      strictPreflight: true,
    })
  }
}

/**
 * The Origin check of WebSocket upgrades for the scope that serves them (GET /graphql), when
 * {@link registerOriginGuard} added no global hook. Only that scope's routes accept upgrades.
 */
export function registerUpgradeGuard(scope: FastifyInstance, options: OriginGuardOptions): void {
  if (options.allowedHosts === null && options.allowedOrigins.length === 0) scope.addHook('onRequest', guard(options))
}
