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
  /**
   * The pattern to report instead of `url` (metric label, span name, console): a stored operation's
   * own route (`/operations/<Name>`) reports `/operations/*`, as the wildcard route that serves the
   * operations added since start-up does, so labels stay one per route kind.
   */
  readonly routeLabel?: string
  /** The stored operation a per-operation route serves (its name, path segments included). */
  readonly operation?: string
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
export function routeConfig(request: FastifyRequest): RouteConfig {
  if (kRouteContext !== undefined) {
    const context = (request as unknown as Record<symbol, { config?: RouteConfig } | undefined>)[kRouteContext]
    if (context) return context.config ?? NONE
  }
  return (request.routeOptions.config as RouteConfig | undefined) ?? { url: request.routeOptions.url }
}

/** The route pattern to report for `request` ({@link RouteConfig.routeLabel}, else its URL pattern); undefined when no route matched. */
export function routePattern(request: FastifyRequest): string | undefined {
  const config = routeConfig(request)
  return config.routeLabel ?? config.url
}
