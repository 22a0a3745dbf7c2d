/**
 * The REST connector: an OpenAPI 3.0/3.1 document becomes an executable GraphQL subschema whose
 * resolvers call the upstream through undici. Conversion rules: see `convert.ts`'s header; request
 * and error rules: see `request.ts`'s header.
 */
import { join } from 'node:path'
import type { GraphQLSchema } from 'graphql'
import { SourceLoadError } from '../../errors.js'
import type { ConnectorContext, LocalSubschema } from '../types.js'
import { convertOpenApi } from './convert.js'
import { DocumentError, loadDocument, resolveBaseUrl } from './load-document.js'
import { createUpstream, type CircuitBreakerOptions, type RetryOptions } from './request.js'
import { createAuthenticator, SecurityConfigError, type SecurityCredentials } from './security.js'

/** Options of a REST data source (`rest({...})` in `datasources/<ns>/index.ts`). Defaults in {@link REST_DEFAULTS}. */
export interface RestSourceOptions {
  /** The OpenAPI 3.0/3.1 or Swagger 2.0 document: a file path (relative to cwd; JSON, or YAML when the `yaml` package is installed) or an http(s) URL. */
  openapi: string
  /** Base URL of the upstream; default: the document's `servers[0].url` (relative and scheme-less server URLs resolved against the document URL). */
  baseUrl?: string
  /** Default of the three timeouts below and the document download timeout, in milliseconds. Default 5000. */
  timeoutMs?: number
  /** Connect timeout, in milliseconds. Default `timeoutMs`. */
  connectTimeoutMs?: number
  /** Time to wait for an answer's headers, in milliseconds. Default `timeoutMs`. */
  headersTimeoutMs?: number
  /** Longest pause between two chunks of an answer's body, in milliseconds. Default `timeoutMs`. */
  bodyTimeoutMs?: number
  /** Most sockets open to the upstream at once (undici Pool `connections`). Default 10. */
  connections?: number
  /** Most calls waiting for a socket; beyond, calls fail fast with `TRB_ERR_UPSTREAM_UNAVAILABLE`. Default 1000. */
  maxQueue?: number
  /** Largest answer accepted, in bytes; a longer one is aborted with `TRB_ERR_UPSTREAM_TOO_LARGE`. Default 10485760 (10 MiB). */
  maxResponseBytes?: number
  /** Retries of idempotent calls (GET, HEAD, PUT, DELETE, OPTIONS). Defaults `{ retries: 2, baseDelayMs: 100, maxDelayMs: 5000 }`. */
  retry?: Partial<RetryOptions>
  /** Circuit breaker, or `false` for none. Defaults `{ threshold: 5, halfOpenAfterMs: 10000 }`. */
  circuitBreaker?: Partial<CircuitBreakerOptions> | false
  /** Timeout of one `/health` probe (HEAD on the base URL), in milliseconds. Default 1000. */
  healthTimeoutMs?: number
  /** Hosts (`host` or `host:port`) a redirect of the document URL may lead to, besides its own origin. Default []. */
  redirectHosts?: string[]
  /**
   * Credentials per security scheme of the document (`components.securitySchemes`, or Swagger 2.0
   * `securityDefinitions`), by scheme name; applied to each call as its operation's `security`
   * requires (see `security.ts`). Default none (operations are called without credentials).
   */
  security?: Record<string, SecurityCredentials>
  /**
   * Headers sent with every upstream request. Values may be templates filled per call:
   * `{{claims.<name>}}` (the verified token) and `{{request.headers.<name>}}` (the incoming request);
   * a header whose placeholder has no value is not sent (gateway/auth/header-templates.ts). Default none.
   */
  headers?: Record<string, string>
  /** Request headers forwarded from the client request, by name (lower-case), e.g. ['authorization']. Default []. */
  forwardHeaders?: string[]
}

/** Defaults of {@link RestSourceOptions}. */
export const REST_DEFAULTS = {
  timeoutMs: 5000,
  connections: 10,
  maxQueue: 1000,
  maxResponseBytes: 10 * 1024 * 1024,
  retry: { retries: 2, baseDelayMs: 100, maxDelayMs: 5000 },
  circuitBreaker: { threshold: 5, halfOpenAfterMs: 10_000 },
  healthTimeoutMs: 1000,
} as const

/**
 * Loads the OpenAPI document (a remote one through its cache, `generated/sources/<name>.openapi.json`),
 * converts it (GET → Query fields, other methods → Mutation fields, named by `operationId`) and
 * opens one keep-alive undici Pool to the base URL, behind retries and a circuit breaker. The
 * schema is built with the source's namespace applied (`namespaced`), so `compose/` does not rename
 * it; `schema`, with the document's own names, is converted on first read.
 * @returns a {@link LocalSubschema}: the executable schema, `health` (never waits more than about
 *   25 ms; see `request.ts`) and `close` (closes the pool).
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`) when the document cannot be loaded or parsed (and
 *   is not cached), `security` names an undeclared scheme or lacks a field its scheme needs, is neither OpenAPI 3.x nor Swagger 2.0, yields no http(s) base URL, or cannot be converted.
 */
export async function createRestSource(options: RestSourceOptions, context: ConnectorContext): Promise<LocalSubschema> {
  const timeoutMs = options.timeoutMs ?? REST_DEFAULTS.timeoutMs
  let loaded: Awaited<ReturnType<typeof loadDocument>>
  let baseUrl: string
  try {
    loaded = await loadDocument(options.openapi, {
      cwd: context.cwd,
      timeoutMs,
      cacheFile: join(context.cacheDir, `${context.sourceName.replace(/[^A-Za-z0-9_.-]/g, '_')}.openapi.json`),
      redirectHosts: options.redirectHosts ?? [],
      warn: (message) => context.logger.warn({ openapi: options.openapi }, message),
    })
    baseUrl = resolveBaseUrl(loaded.document, loaded.url, options.baseUrl)
  } catch (err) {
    if (err instanceof DocumentError) throw new SourceLoadError(context.sourceName, err.message)
    throw err
  }
  let authenticator: ReturnType<typeof createAuthenticator>
  try {
    authenticator = createAuthenticator(loaded.document, options.security, { documentUrl: loaded.url, sourceName: context.sourceName, timeoutMs, logger: context.logger })
  } catch (err) {
    if (err instanceof SecurityConfigError) throw new SourceLoadError(context.sourceName, err.message)
    throw err
  }
  const upstream = createUpstream({
    baseUrl,
    connectTimeoutMs: options.connectTimeoutMs ?? timeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? timeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs ?? timeoutMs,
    connections: options.connections ?? REST_DEFAULTS.connections,
    maxQueue: options.maxQueue ?? REST_DEFAULTS.maxQueue,
    maxResponseBytes: options.maxResponseBytes ?? REST_DEFAULTS.maxResponseBytes,
    retry: { ...REST_DEFAULTS.retry, ...options.retry },
    circuitBreaker: options.circuitBreaker === false ? false : { ...REST_DEFAULTS.circuitBreaker, ...options.circuitBreaker },
    healthTimeoutMs: options.healthTimeoutMs ?? REST_DEFAULTS.healthTimeoutMs,
    headers: options.headers ?? {},
    forwardHeaders: options.forwardHeaders ?? [],
    sourceName: context.sourceName,
    logger: context.logger,
    namespace: context.namespace,
    ...(context.originHooks ? { originHooks: context.originHooks } : {}),
    ...(authenticator ? { authenticate: authenticator.authenticate } : {}),
  })
  try {
    // Built with its public (namespaced) names: compose/ need not copy it to rename it. The schema with
    // the document's own names (`schema`) is converted only if something reads it (tests, tools).
    const { schema, warnings } = convertOpenApi(loaded.document, { request: upstream.request, namespace: context.namespace })
    for (const warning of warnings) context.logger.warn({ openapi: options.openapi }, warning)
    context.logger.debug({ baseUrl, openapi: options.openapi }, 'REST source ready')
    const document = loaded.document
    let own: GraphQLSchema | undefined
    return {
      kind: 'local',
      get schema() {
        return (own ??= context.namespace ? convertOpenApi(document, { request: upstream.request }).schema : schema)
      },
      namespaced: { namespace: context.namespace, schema },
      health: () => upstream.health(),
      close: () => upstream.close(),
    }
  } catch (err) {
    await upstream.close()
    throw new SourceLoadError(context.sourceName, `cannot convert ${options.openapi}: ${(err as Error).message}`)
  }
}
