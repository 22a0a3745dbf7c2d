/**
 * The remote GraphQL connector: introspects an upstream GraphQL API over HTTP and returns its schema
 * with an executor that sends documents to it through undici (GraphQL over HTTP, POST with JSON).
 * `compose/` renames it with graphql-tools transforms at request time, the one place delegation is used.
 */
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery, type GraphQLSchema } from 'graphql'
import { readFile } from 'node:fs/promises'
import { saveCacheFile } from '../../cache-file.js'
import { join } from 'node:path'
import type { ConnectorContext, RemoteSubschema, SourceHealth } from '../types.js'
import { SourceLoadError } from '../../errors.js'
import { createGraphQLHttpClient, type GraphQLEndpoint } from './http.js'
import { registerPool } from '../../observability/probes.js'
import { connectionInitPayload } from '../../hooks/index.js'
import { createSubscriptionTransport, type SubgraphSubscriptionOptions } from '../federation/subscriptions.js'

/** Options of a remote GraphQL data source. */
export interface GraphQLSourceOptions {
  /** The upstream's GraphQL endpoint, `http(s)://host/graphql`. */
  url: string
  /** Per-request timeout for headers and body, in milliseconds. Default 5000. */
  timeoutMs?: number
  /**
   * Headers sent with every upstream request. Values may be templates filled per request:
   * `{{claims.<name>}}` (the verified token) and `{{request.headers.<name>}}` (the incoming request);
   * a header whose placeholder has no value is not sent (gateway/auth/header-templates.ts). Default none.
   */
  headers?: Record<string, string>
  /** Client request headers forwarded upstream, by lower-case name (e.g. `authorization`). Default none. */
  forwardHeaders?: string[]
  /**
   * How the gateway reaches the upstream's `Subscription` fields: `{ protocol: 'graphql-ws' | 'sse', url? }`,
   * as a federation subgraph's (gateway/connectors/federation/subscriptions.ts). Default: graphql-ws
   * at the source's URL with `http(s)` → `ws(s)`. Used only when the upstream has a `Subscription` type.
   */
  subscriptions?: SubgraphSubscriptionOptions
}

/**
 * Introspects the upstream (falling back to the cached introspection when it is unreachable) and
 * returns `{ schema, executor }`.
 * @throws SourceLoadError when the upstream cannot be introspected and nothing is cached.
 */
export async function createGraphQLSource(options: GraphQLSourceOptions, context: ConnectorContext): Promise<RemoteSubschema> {
  let client: ReturnType<typeof createGraphQLHttpClient>
  try {
    // `{{claims.sub}}`-style header values are rendered per request (gateway/auth/header-templates.ts).
    client = createGraphQLHttpClient({ timeoutMs: options.timeoutMs ?? 5000, headers: options.headers, forwardHeaders: options.forwardHeaders, logger: context.logger, namespace: context.namespace, ...(context.originHooks ? { originHooks: context.originHooks } : {}) })
  } catch (err) {
    throw new SourceLoadError(context.sourceName, (err as Error).message)
  }
  const endpoint: GraphQLEndpoint = { url: options.url, name: context.sourceName }
  const send = (body: unknown) => client.send(endpoint, body)
  // The pool gauge (tributary_upstream_pool_connections): the agent's pool for the upstream's origin.
  const unregisterPool = registerPool({ kind: 'http', source: context.sourceName, stats: () => client.poolStats(options.url) })

  const cacheFile = join(context.cacheDir, `${context.sourceName}.introspection.json`)
  let introspection: IntrospectionQuery
  try {
    const result = await send({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) })
    if (!result.data) throw new Error(result.errors?.[0]?.message ?? 'no data')
    introspection = result.data as unknown as IntrospectionQuery
    await saveCacheFile(cacheFile, JSON.stringify(introspection, null, 2) + '\n', context.logger)
  } catch (err) {
    const cached = await readFile(cacheFile, 'utf8').catch(() => null)
    if (cached === null) throw new SourceLoadError(context.sourceName, `cannot introspect ${options.url}: ${(err as Error).message}`, { cause: err })
    context.logger.warn({ err }, 'upstream unreachable; using the cached introspection')
    introspection = JSON.parse(cached) as IntrospectionQuery
  }
  const schema: GraphQLSchema = buildClientSchema(introspection)
  const http = client.executor(endpoint, () => schema)
  // Subscription fields go over graphql-ws (or SSE), each connection through onConnectionInit.
  const transport = schema.getSubscriptionType()
    ? createSubscriptionTransport(context.sourceName, options.url, options.subscriptions, (ctx) => client.requestHeaders(endpoint, ctx), options.timeoutMs ?? 5000,
        context.originHooks ? (url, payload, ctx) => connectionInitPayload(context.originHooks, context.namespace, url, payload, ctx, context.logger) : undefined)
    : undefined
  const subscribe = transport?.executor as typeof http | undefined

  return {
    kind: 'remote',
    schema,
    executor: subscribe ? ((req) => (req.operationType === 'subscription' ? subscribe(req) : http(req))) as typeof http : http,
    async health(): Promise<SourceHealth> {
      const started = performance.now()
      try {
        const r = await send({ query: '{ __typename }' })
        return r.data ? { status: 'up', latencyMs: Math.round(performance.now() - started) } : { status: 'down', message: 'no data' }
      } catch (err) {
        return { status: 'down', message: (err as Error).message }
      }
    },
    close: () => {
      unregisterPool()
      return Promise.all([transport?.close(), client.close()]).then(() => undefined)
    },
  }
}
