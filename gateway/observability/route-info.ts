/**
 * What the observability hooks (metrics, tracing, the console's traffic) read of the route a request
 * matched, without `request.routeOptions`: that getter builds a 12-field object (and looks up the
 * server's body limit and constraint strategies) on every call, and the metrics' `onResponse` hook
 * runs on every request. The route's `config` (fastify copies the route's `config` option and adds
 * `url` and `method`) is read from the request's route context instead.
 */
import { createRequire } from 'node:module'
import type { FastifyRequest } from 'fastify'

/** The route `config` fields read here. */
export interface RouteConfig {
  /** The route's URL pattern, as registered (undefined for the not-found handler). */
  readonly url?: string
}

/** fastify's route-context symbol (`Symbol('fastify.context')`, lib/symbols.js), or undefined if this fastify has none. */
const kRouteContext: symbol | undefined = (() => {
  try {
    const symbols = createRequire(import.meta.url)('fastify/lib/symbols.js') as { kRouteContext?: unknown }
    return typeof symbols.kRouteContext === 'symbol' ? symbols.kRouteContext : undefined
  } catch {
    return undefined
  }
})()

const NONE: RouteConfig = Object.freeze({})

/** The `config` of the route `request` matched ({@link RouteConfig}); `{}` when there is none. */
function routeConfig(request: FastifyRequest): RouteConfig {
  if (kRouteContext !== undefined) {
    const context = (request as unknown as Record<symbol, { config?: RouteConfig } | undefined>)[kRouteContext]
    if (context) return context.config ?? NONE
  }
  return { url: request.routeOptions.url }
}

/** The URL pattern of the route `request` matched (`/operations/*`, `/graphql`...); undefined when none did (a 404). */
export function routePattern(request: FastifyRequest): string | undefined {
  return routeConfig(request).url
}
