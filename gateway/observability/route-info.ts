/**
 * What the observability hooks (metrics, tracing, the console's traffic) read of the route a request
 * matched, without `request.routeOptions`: that getter builds a 12-field object (and looks up the
 * server's body limit and constraint strategies) on every call, and the metrics' `onResponse` hook
 * runs on every request. The route's `config` (fastify copies the route's `config` option and adds
 * `url` and `method`) is read from the request's route context instead.
 */
import type { FastifyRequest } from 'fastify'
// Imported, not required by path at run time: the bundle (scripts/bundle-gateway.mjs) then holds the
// one instance of the module that fastify itself uses, whose symbol is the one on its requests.
// @ts-expect-error fastify ships no declarations of lib/symbols.js
import * as fastifySymbols from 'fastify/lib/symbols.js'

/** The route `config` fields read here. */
export interface RouteConfig {
  /** The route's URL pattern, as registered (undefined for the not-found handler). */
  readonly url?: string
}

/** fastify's route-context symbol (`Symbol('fastify.context')`, lib/symbols.js), or undefined if this fastify has none. */
const kRouteContext: symbol | undefined = (() => {
  const symbols = fastifySymbols as { kRouteContext?: unknown; default?: { kRouteContext?: unknown } }
  const symbol = symbols.kRouteContext ?? symbols.default?.kRouteContext
  return typeof symbol === 'symbol' ? symbol : undefined
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
