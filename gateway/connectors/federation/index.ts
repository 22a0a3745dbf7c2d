/**
 * The Apollo Federation connector: Federation v2 (and v1) subgraphs listed by URL become one data
 * source, composed and executed with the libraries Hive Gateway uses (README "Apollo Federation
 * subgraphs"):
 *
 * 1. each subgraph's SDL is read with the subgraph query `{ _service { sdl } }` (Apollo Federation
 *    subgraph specification) and cached in `<cacheDir>/<source>.subgraphs.json`, so the gateway
 *    starts while a subgraph is briefly unreachable;
 * 2. `@theguild/federation-composition` composes the SDLs into a supergraph (a composition error
 *    fails the load with every message);
 * 3. `@graphql-tools/federation` turns the supergraph into a stitched schema whose entities are
 *    merged across subgraphs: fields of another subgraph are fetched through `_entities`, one request
 *    per subgraph and level (representations batched, concurrent requests to one subgraph merged into
 *    one document);
 * 4. every subgraph request goes through `../graphql/http.ts`, so upstream errors, timeouts and
 *    masking follow the remote GraphQL connector's contract.
 *
 * The source is a {@link RemoteSubschema} whose executor runs documents against that stitched schema
 * in the gateway process; `compose/` namespaces it like any remote source. `Subscription` fields of
 * subgraphs are served: each subgraph's subscription operations go over graphql-ws or SSE
 * (`./subscriptions.ts`), entity fields of each event are resolved from the other subgraphs.
 * Progressive override (`@override(label:)`) routes per request (`./override.ts`).
 */
import { parse } from 'graphql'
import { composeServices } from '@theguild/federation-composition'
import { getStitchedSchemaFromSupergraphSdl } from '@graphql-tools/federation'
import { createDefaultExecutor } from '@graphql-tools/delegate'
import type { ExecutionRequest } from '@graphql-tools/utils'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ConnectorContext, RemoteSubschema, SourceHealth } from '../types.js'
import { SourceLoadError } from '../../errors.js'
import { createGraphQLHttpClient, type GraphQLEndpoint } from '../graphql/http.js'
import { compileHeaderTemplates } from '../../auth/header-templates.js'
import { relocateFieldErrors } from '../field-errors.js'
import { createSubscriptionTransport, type SubgraphSubscriptionOptions, type SubscriptionTransport } from './subscriptions.js'
import { progressiveOverride, type OverrideLabelResolver } from './override.js'

/** One subgraph of a federation source. */
export interface SubgraphOptions {
  /** The subgraph's name in the supergraph, in logs and in upstream errors (`<source>/<name>`). Unique in the source. */
  name: string
  /** The subgraph's GraphQL endpoint, `http(s)://host/graphql`. Unique in the source. */
  url: string
  /** Headers sent to this subgraph only (over the source's `headers`); templates as in `headers`. */
  headers?: Record<string, string>
  /**
   * How the gateway subscribes to this subgraph's `Subscription` fields. Default: `graphql-ws` at the
   * subgraph's URL with `http(s)` → `ws(s)`. Used only when the subgraph has a `Subscription` root.
   */
  subscriptions?: SubgraphSubscriptionOptions
}

/** Options of an Apollo Federation data source. */
export interface FederationSourceOptions {
  /** The subgraphs, at least one. */
  subgraphs: SubgraphOptions[]
  /**
   * Per-request timeout of one subgraph request (connect, headers, between body chunks), in
   * milliseconds; for graphql-ws subscriptions, the longest wait for the handshake and for `connection_ack`. Default 5000.
   */
  timeoutMs?: number
  /**
   * Headers sent with every subgraph request. Values may be templates filled per request,
   * `{{claims.<name>}}` and `{{request.headers.<name>}}`, as for remote GraphQL sources. Default none.
   */
  headers?: Record<string, string>
  /** Client request headers forwarded to every subgraph, by lower-case name (e.g. `authorization`). Default none. */
  forwardHeaders?: string[]
  /**
   * Progressive override: decides the `@override` labels that are not `percent(n)`, per request;
   * true resolves the field from the overriding subgraph. Default: every such label is off (the
   * field stays on the subgraph it is overridden from). `percent(n)` labels need nothing: n % of
   * requests, one random draw per request.
   */
  overrideLabels?: OverrideLabelResolver
}

/** The cache file: each subgraph's last SDL, by subgraph name. */
type SdlCache = Record<string, { url: string; sdl: string }>

/** How many composition errors a load failure quotes. */
const MAX_QUOTED_ERRORS = 5

/**
 * Reads the subgraphs' SDLs, composes them and builds the stitched supergraph schema.
 * Subgraph names and URLs are distinct (`resolveConfig` checks it).
 * @throws SourceLoadError when a subgraph's SDL can be neither read nor found in the cache, or when
 *   composition fails (the message quotes its errors).
 */
export async function createFederationSource(options: FederationSourceOptions, context: ConnectorContext): Promise<RemoteSubschema> {
  const fail = (message: string, cause?: unknown): never => {
    throw new SourceLoadError(context.sourceName, message, cause === undefined ? undefined : { cause })
  }
  // Header values may be templates (`{{claims.sub}}`), rendered per request: an unknown placeholder fails the load.
  let client: ReturnType<typeof createGraphQLHttpClient>
  try {
    client = createGraphQLHttpClient({ timeoutMs: options.timeoutMs ?? 5000, headers: options.headers, forwardHeaders: options.forwardHeaders, logger: context.logger })
  } catch (err) {
    return fail((err as Error).message)
  }
  options.subgraphs.forEach((s, i) => {
    try {
      compileHeaderTemplates(s.headers)
    } catch (err) {
      void client.close()
      fail(`subgraphs[${i}].${(err as Error).message}`)
    }
  })
  const endpoints = new Map<string, GraphQLEndpoint>(
    options.subgraphs.map((s) => [s.url, { url: s.url, name: `${context.sourceName}/${s.name}`, headers: s.headers }]),
  )
  const transports: SubscriptionTransport[] = []
  try {
    const sdls = await readSdls(options.subgraphs, endpoints, client.send, context)
    const composed = composeServices(options.subgraphs.map((s) => ({ name: s.name, url: s.url, typeDefs: parse(sdls[s.name]!) })))
    if (composed.errors) {
      const quoted = composed.errors.slice(0, MAX_QUOTED_ERRORS).map((e) => e.message)
      const more = composed.errors.length > MAX_QUOTED_ERRORS ? ` (and ${composed.errors.length - MAX_QUOTED_ERRORS} more)` : ''
      fail(`the subgraphs do not compose: ${quoted.join('; ')}${more}`)
    }
    const override = progressiveOverride(options.overrideLabels)
    const schema = getStitchedSchemaFromSupergraphSdl({
      supergraphSdl: composed.supergraphSdl!,
      batch: true,
      handleProgressiveOverride: override.handleProgressiveOverride,
      getRng: override.getRng,
      onSubschemaConfig(config) {
        const endpoint = endpoints.get(config.endpoint)
        if (!endpoint) fail(`the supergraph names an unknown subgraph endpoint for ${config.name}`)
        const subgraphSchema = config.schema
        // The executor types of @graphql-tools/utils 10 (ours) and 12 (federation's) differ only in optional `info` helpers.
        const http = client.executor(endpoint!, () => subgraphSchema) as typeof config.executor
        if (subgraphSchema.getSubscriptionType()) {
          const subgraph = options.subgraphs.find((s) => s.url === config.endpoint)!
          const transport = createSubscriptionTransport(endpoint!.name, endpoint!.url, subgraph.subscriptions, (ctx) => client.requestHeaders(endpoint!, ctx), options.timeoutMs ?? 5000)
          transports.push(transport)
          const subscribe = transport.executor as typeof config.executor
          config.executor = (req) => (req.operationType === 'subscription' ? subscribe(req) : http(req))
        } else {
          config.executor = http
        }
        override.wrap(config)
      },
    })
    relocateFieldErrors(schema)
    const inner = createDefaultExecutor(schema) as RemoteSubschema['executor']
    // Progressive override tests only run with a context: every request has one (its draw is keyed by it).
    const executor = ((req: ExecutionRequest) => inner(req.context == null ? { ...req, context: {} } : req)) as RemoteSubschema['executor']
    return {
      kind: 'remote',
      schema,
      executor,
      health: () => probe(options.subgraphs, endpoints, client.send),
      close: async () => {
        await Promise.all(transports.map((t) => t.close()))
        await client.close()
      },
    }
  } catch (err) {
    await Promise.all(transports.map((t) => t.close()))
    await client.close()
    if ((err as { code?: unknown }).code === 'TRB_ERR_SOURCE_LOAD') throw err
    throw new SourceLoadError(context.sourceName, (err as Error).message, { cause: err })
  }
}

type Send = ReturnType<typeof createGraphQLHttpClient>['send']

/**
 * Each subgraph's SDL from `{ _service { sdl } }`, falling back to the cached one (with a warning)
 * when the subgraph cannot be read; writes the cache when something changed.
 */
async function readSdls(subgraphs: readonly SubgraphOptions[], endpoints: ReadonlyMap<string, GraphQLEndpoint>, send: Send, context: ConnectorContext): Promise<Record<string, string>> {
  const cacheFile = join(context.cacheDir, `${context.sourceName.replace(/[^A-Za-z0-9_.-]/g, '_')}.subgraphs.json`)
  const previous = await readFile(cacheFile, 'utf8').catch(() => '')
  let cached: SdlCache = {}
  try {
    cached = previous ? (JSON.parse(previous) as SdlCache) : {}
  } catch {
    context.logger.warn({ cacheFile }, 'the subgraph cache is not JSON; ignored')
  }
  const read = await Promise.all(
    subgraphs.map(async (s): Promise<[string, string]> => {
      try {
        const result = await send(endpoints.get(s.url)!, { query: '{ _service { sdl } }' })
        const sdl = (result.data as { _service?: { sdl?: unknown } } | null | undefined)?._service?.sdl
        if (typeof sdl !== 'string' || sdl.trim() === '') throw new Error(result.errors?.[0]?.message ?? 'no _service.sdl: is it a federation subgraph?')
        return [s.name, sdl]
      } catch (err) {
        const copy = cached[s.name]
        if (!copy || copy.url !== s.url) {
          throw new SourceLoadError(context.sourceName, `cannot read the SDL of subgraph ${s.name} (${s.url}): ${(err as Error).message}`, { cause: err })
        }
        context.logger.warn({ err, subgraph: s.name }, 'subgraph unreachable; using its cached SDL')
        return [s.name, copy.sdl]
      }
    }),
  )
  const sdls = Object.fromEntries(read)
  const next: SdlCache = Object.fromEntries(subgraphs.map((s) => [s.name, { url: s.url, sdl: sdls[s.name]! }]))
  const json = JSON.stringify(next, null, 2) + '\n'
  if (json !== previous) {
    await mkdir(context.cacheDir, { recursive: true })
    await writeFile(cacheFile, json)
  }
  return sdls
}

/** Probes every subgraph with `{ __typename }`: `up` when all answer, else `down` naming the ones that did not. */
async function probe(subgraphs: readonly SubgraphOptions[], endpoints: ReadonlyMap<string, GraphQLEndpoint>, send: Send): Promise<SourceHealth> {
  const started = performance.now()
  const down = (
    await Promise.all(
      subgraphs.map(async (s) => {
        try {
          const r = await send(endpoints.get(s.url)!, { query: '{ __typename }' })
          return r.data ? undefined : `${s.name}: no data`
        } catch (err) {
          return `${s.name}: ${(err as Error).message}`
        }
      }),
    )
  ).filter((m): m is string => m !== undefined)
  return down.length ? { status: 'down', message: down.join('; ') } : { status: 'up', latencyMs: Math.round(performance.now() - started) }
}
