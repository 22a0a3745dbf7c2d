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
import { GraphQLSchema, printSchema } from 'graphql'
import { getStitchedSchemaFromSupergraphSdl } from '@graphql-tools/federation'
import { createDefaultExecutor } from '@graphql-tools/delegate'
import type { ExecutionRequest } from '@graphql-tools/utils'
import { readFile } from 'node:fs/promises'
import { saveCacheFile } from '../../cache-file.js'
import { watch } from 'node:fs'
import { join, resolve } from 'node:path'
import type { ConnectorContext, RemoteSubschema, SourceHealth } from '../types.js'
import { SourceLoadError } from '../../errors.js'
import { createGraphQLHttpClient, type GraphQLEndpoint } from '../graphql/http.js'
import { connectionInitPayload } from '../../hooks/index.js'
import { compileHeaderTemplates } from '../../auth/header-templates.js'
import { relocateFieldErrors } from '../field-errors.js'
import { createSubscriptionTransport, type SubgraphSubscriptionOptions, type SubscriptionTransport } from './subscriptions.js'
import { progressiveOverride, type OverrideLabelResolver } from './override.js'
import { partialUnionRewrite } from './partial-unions.js'
import { composeWithGuild } from './composition.js'
import { expandRequiresFragments } from './requires.js'

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

/** Options of an Apollo Federation data source: `subgraphs` (composed in the gateway) or `supergraph` (composed elsewhere), exactly one. */
export interface FederationSourceOptions {
  /** The subgraphs, at least one, composed by the gateway at load. */
  subgraphs?: SubgraphOptions[]
  /**
   * A supergraph SDL composed elsewhere (Apollo Rover, `@theguild/federation-composition`, a schema
   * registry): a file path (relative to the working directory), or an `http(s)://` URL read with GET
   * (a schema registry's CDN, e.g. Hive's `…/supergraph` with `supergraphHeaders: { 'X-Hive-CDN-Key': key }`).
   * Subgraph URLs and names come from its `join__graph` values. Read once at load; at most 16 MiB.
   */
  supergraph?: string
  /** Headers of the supergraph URL's GET (a registry key). Default none. */
  supergraphHeaders?: Record<string, string>
  /**
   * How often a supergraph URL is polled for a new version, in milliseconds (`If-None-Match` with the
   * last `ETag`: an unchanged supergraph costs a 304). 1000 to 86 400 000; default 10 000. A supergraph
   * file is watched in development mode instead.
   */
  supergraphPollMs?: number
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
/** The largest supergraph SDL read from a file or URL, in bytes. */
const MAX_SUPERGRAPH_BYTES = 16 * 1024 * 1024

/**
 * Reads the subgraphs' SDLs, composes them and builds the stitched supergraph schema.
 * Subgraph names and URLs are distinct (`resolveConfig` checks it).
 * @throws SourceLoadError when a subgraph's SDL can be neither read nor found in the cache, or when
 *   composition fails (the message quotes its errors).
 */
export async function createFederationSource(options: FederationSourceOptions, context: ConnectorContext): Promise<RemoteSubschema> {
  const fail = (message: string, cause?: unknown): never => {
    // @fastify/error formats every argument but a trailing `{ cause }` into the message: no third argument without a cause.
    throw cause === undefined ? new SourceLoadError(context.sourceName, message) : new SourceLoadError(context.sourceName, message, { cause })
  }
  // Header values may be templates (`{{claims.sub}}`), rendered per request: an unknown placeholder fails the load.
  let client: ReturnType<typeof createGraphQLHttpClient>
  try {
    client = createGraphQLHttpClient({ timeoutMs: options.timeoutMs ?? 5000, headers: options.headers, forwardHeaders: options.forwardHeaders, logger: context.logger, namespace: context.namespace, ...(context.originHooks ? { originHooks: context.originHooks } : {}) })
  } catch (err) {
    return fail((err as Error).message)
  }
  const listed = options.subgraphs ?? []
  listed.forEach((s, i) => {
    try {
      compileHeaderTemplates(s.headers)
    } catch (err) {
      void client.close()
      fail(`subgraphs[${i}].${(err as Error).message}`)
    }
  })
  const endpoints = new Map<string, GraphQLEndpoint>(listed.map((s) => [s.url, { url: s.url, name: `${context.sourceName}/${s.name}`, headers: s.headers }]))
  // With a supergraph, the subgraphs are the ones its `join__graph` values name.
  const subgraphs: SubgraphOptions[] = [...listed]
  const transports: SubscriptionTransport[] = []
  try {
    let supergraphSdl: string
    if (options.supergraph !== undefined) {
      supergraphSdl = (await readSupergraph(/^https?:\/\//i.test(options.supergraph) ? options.supergraph : resolve(context.cwd, options.supergraph), options.supergraphHeaders, options.timeoutMs ?? 5000))!.sdl
    } else {
      const sdls = await readSdls(listed, endpoints, client.send, context)
      const composed = await composeWithGuild(listed.map((s) => ({ name: s.name, url: s.url, sdl: sdls[s.name]! })))
      if (composed.errors) {
        const quoted = composed.errors.slice(0, MAX_QUOTED_ERRORS)
        const more = composed.errors.length > MAX_QUOTED_ERRORS ? ` (and ${composed.errors.length - MAX_QUOTED_ERRORS} more)` : ''
        fail(`the subgraphs do not compose: ${quoted.join('; ')}${more}`)
      }
      if (composed.notes.length) context.logger.warn({ fixes: composed.notes }, 'the composition was corrected where it differs from Apollo Federation (README "Apollo Federation subgraphs")')
      supergraphSdl = composed.supergraphSdl!
    }
    const override = progressiveOverride(options.overrideLabels)
    // Builds the stitched schema of one supergraph SDL (at load, and again when a watched supergraph changes).
    const stitch = (supergraphSdl: string): GraphQLSchema => {
      const rewrite = partialUnionRewrite(supergraphSdl)
      const built = getStitchedSchemaFromSupergraphSdl({
        // Fragments on abstract types in @requires, expanded over their object types (./requires.ts).
        supergraphSdl: expandRequiresFragments(supergraphSdl),
        batch: true,
        handleProgressiveOverride: override.handleProgressiveOverride,
        getRng: override.getRng,
        onSubschemaConfig(config) {
          if (options.supergraph !== undefined && !endpoints.has(config.endpoint)) {
            if (!/^https?:\/\//.test(config.endpoint ?? '')) fail(`the supergraph gives subgraph ${config.name} no http(s) URL`)
            endpoints.set(config.endpoint, { url: config.endpoint, name: `${context.sourceName}/${config.name}` })
            subgraphs.push({ name: config.name, url: config.endpoint })
          }
          const endpoint = endpoints.get(config.endpoint)
          if (!endpoint) fail(`the supergraph names an unknown subgraph endpoint for ${config.name}`)
          const subgraphSchema = config.schema
          // The executor types of @graphql-tools/utils 10 (ours) and 12 (federation's) differ only in optional `info` helpers.
          const http = client.executor(endpoint!, () => subgraphSchema) as typeof config.executor
          if (subgraphSchema.getSubscriptionType()) {
            const subgraph = subgraphs.find((s) => s.url === config.endpoint)!
            const transport = createSubscriptionTransport(endpoint!.name, endpoint!.url, subgraph.subscriptions, (ctx) => client.requestHeaders(endpoint!, ctx), options.timeoutMs ?? 5000,
              context.originHooks ? (url, payload, ctx) => connectionInitPayload(context.originHooks, context.namespace, url, payload, ctx, context.logger) : undefined)
            transports.push(transport)
            const subscribe = transport.executor as typeof config.executor
            config.executor = (req) => (req.operationType === 'subscription' ? subscribe(req) : http(req))
          } else {
            config.executor = http
          }
          // Partial unions below shareable paths: the fields of members not common to the candidate subgraphs are not asked (./partial-unions.ts).
          if (rewrite) {
            const send = config.executor
            config.executor = (req) => send({ ...req, document: rewrite(config.name, req.document) })
          }
          override.wrap(config)
        },
      })
      relocateFieldErrors(built)
      return built
    }
    const schema = stitch(supergraphSdl)
    // Progressive override tests only run with a context: every request has one (its draw is keyed by it).
    const withContext = (inner: RemoteSubschema['executor']): RemoteSubschema['executor'] =>
      ((req: ExecutionRequest) => inner(req.context == null ? { ...req, context: {} } : req)) as RemoteSubschema['executor']
    // Every request reads `current` once: a reload swaps it atomically and in-flight requests finish on the plan they started with.
    let current = withContext(createDefaultExecutor(schema) as RemoteSubschema['executor'])
    const watcher =
      options.supergraph === undefined
        ? undefined
        : watchSupergraph(options, supergraphSdl, context, (nextSdl) => {
            const next = stitch(nextSdl)
            if (printSchema(next) !== printSchema(schema)) {
              throw new Error('its schema differs from the served one (types or fields changed): restart the gateway (development mode reloads on a config change) to serve it')
            }
            current = withContext(createDefaultExecutor(next) as RemoteSubschema['executor'])
          })
    return {
      kind: 'remote',
      schema,
      executor: (request) => current(request),
      health: () => probe(subgraphs, endpoints, client.send),
      close: async () => {
        watcher?.close()
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

/**
 * The supergraph SDL of a file path or an `http(s)://` URL (GET with `headers`, at most `timeoutMs`).
 * @throws SourceLoadError-worthy Error naming the file or URL when it cannot be read, is not 2xx, or exceeds 16 MiB.
 */
async function readSupergraph(where: string, headers: Record<string, string> | undefined, timeoutMs: number): Promise<{ sdl: string; etag?: string } | undefined> {
  let text: string
  let etag: string | undefined
  if (/^https?:\/\//i.test(where)) {
    const res = await fetch(where, { headers: { accept: 'text/plain, application/graphql, */*', ...headers }, signal: AbortSignal.timeout(timeoutMs) }).catch((err: Error) => {
      throw new Error(`cannot read the supergraph at ${where}: ${err.message}`)
    })
    if (res.status === 304) return undefined
    if (!res.ok) throw new Error(`cannot read the supergraph at ${where}: HTTP ${res.status}`)
    if (Number(res.headers.get('content-length') ?? 0) > MAX_SUPERGRAPH_BYTES) throw new Error(`the supergraph at ${where} is larger than ${MAX_SUPERGRAPH_BYTES} bytes`)
    etag = res.headers.get('etag') ?? undefined
    text = await readBounded(res, where)
  } else {
    text = await readFile(where, 'utf8').catch((err: Error) => {
      throw new Error(`cannot read the supergraph file ${where}: ${err.message}`)
    })
  }
  if (Buffer.byteLength(text) > MAX_SUPERGRAPH_BYTES) throw new Error(`the supergraph at ${where} is larger than ${MAX_SUPERGRAPH_BYTES} bytes`)
  if (!/\bjoin__Graph\b/.test(text)) throw new Error(`${where} is not a supergraph SDL (no join__Graph enum)`)
  return { sdl: text, etag }
}

/** The body of `res` as text, refused past {@link MAX_SUPERGRAPH_BYTES} while it streams. */
async function readBounded(res: Response, where: string): Promise<string> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).byteLength
    if (size > MAX_SUPERGRAPH_BYTES) throw new Error(`the supergraph at ${where} is larger than ${MAX_SUPERGRAPH_BYTES} bytes`)
    chunks.push(chunk as Uint8Array)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A supergraph watcher: stops polling or watching on close. */
interface SupergraphWatcher {
  close(): void
}

/**
 * Watches `options.supergraph` for a new version: a URL is polled every `supergraphPollMs` with
 * `If-None-Match`; a file is watched with `fs.watch` in development mode. Each new SDL is handed to
 * `apply`; when it or `apply` throws (an invalid supergraph, one that changes the schema's shape) the
 * old one stays served, the error is logged and counted in `failures`.
 */
function watchSupergraph(options: FederationSourceOptions, initialSdl: string, context: ConnectorContext, apply: (sdl: string) => void): SupergraphWatcher | undefined {
  const where = options.supergraph!
  let last = initialSdl
  let failures = 0
  const consider = (sdl: string) => {
    if (sdl === last) return
    try {
      apply(sdl)
      last = sdl
      context.logger.info({ supergraph: where }, 'new supergraph served')
    } catch (err) {
      failures++
      last = sdl
      context.logger.error({ supergraph: where, failures, err: { message: (err as Error).message } }, 'the new supergraph is refused; still serving the previous one')
    }
  }
  if (/^https?:\/\//i.test(where)) {
    let etag: string | undefined
    let running = false
    const timer = setInterval(() => {
      if (running) return
      running = true
      readSupergraph(where, { ...options.supergraphHeaders, ...(etag ? { 'if-none-match': etag } : {}) }, options.timeoutMs ?? 5000)
        .then((read) => {
          if (read === undefined) return
          etag = read.etag
          consider(read.sdl)
        })
        .catch((err: Error) => {
          failures++
          context.logger.warn({ supergraph: where, failures, err: { message: err.message } }, 'cannot poll the supergraph; still serving the previous one')
        })
        .finally(() => (running = false))
    }, options.supergraphPollMs ?? 10_000)
    timer.unref()
    return { close: () => clearInterval(timer) }
  }
  if (context.mode !== 'development') return undefined
  const file = resolve(context.cwd, where)
  let debounce: NodeJS.Timeout | undefined
  const watcher = watch(file, () => {
    clearTimeout(debounce)
    debounce = setTimeout(() => {
      readSupergraph(file, undefined, 0).then((read) => read && consider(read.sdl), (err: Error) => {
        failures++
        context.logger.error({ supergraph: where, failures, err: { message: err.message } }, 'cannot read the supergraph file; still serving the previous one')
      })
    }, 50)
  })
  return { close: () => (clearTimeout(debounce), watcher.close()) }
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
  if (json !== previous) await saveCacheFile(cacheFile, json, context.logger)
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
