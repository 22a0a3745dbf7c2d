/**
 * The remote GraphQL connector: introspects an upstream GraphQL API over HTTP and returns its schema
 * with an executor that sends documents to it through undici (GraphQL over HTTP, POST with JSON).
 * `compose/` renames it with graphql-tools transforms at request time, the one place delegation is used.
 */
import { Kind, buildClientSchema, getIntrospectionQuery, isInputType, print, typeFromAST, type GraphQLError, type IntrospectionQuery, type GraphQLSchema } from 'graphql'
import { transformInputValue, type ExecutionRequest, type ExecutionResult, type Executor } from '@graphql-tools/utils'
import { Agent, request } from 'undici'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ConnectorContext, RemoteSubschema, SourceHealth } from '../types.js'
import { SourceLoadError, UpstreamError } from '../../errors.js'
import { toWireValue } from '../../scalars.js'
import { mapNetworkError } from '../rest/request.js'
import { registerPool, startUpstream } from '../../observability/probes.js'
import { bodyExcerpt, withUpstreamDetails, type UpstreamDetails } from '../upstream-details.js'

/** Options of a remote GraphQL data source. */
export interface GraphQLSourceOptions {
  /** The upstream's GraphQL endpoint, `http(s)://host/graphql`. */
  url: string
  /** Per-request timeout for headers and body, in milliseconds. Default 5000. */
  timeoutMs?: number
  /** Headers sent with every upstream request. */
  headers?: Record<string, string>
  /** Client request headers forwarded upstream, by lower-case name (e.g. `authorization`). Default none. */
  forwardHeaders?: string[]
}

interface ContextWithHeaders {
  reply?: { request: { headers: Record<string, string | string[] | undefined> } }
  headers?: Record<string, string | string[] | undefined>
}

/**
 * Introspects the upstream (falling back to the cached introspection when it is unreachable) and
 * returns `{ schema, executor }`.
 * @throws SourceLoadError when the upstream cannot be introspected and nothing is cached.
 */
export async function createGraphQLSource(options: GraphQLSourceOptions, context: ConnectorContext): Promise<RemoteSubschema> {
  const timeoutMs = options.timeoutMs ?? 5000
  const dispatcher = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs, keepAliveTimeout: 10_000 })
  // The pool gauge (tributary_upstream_pool_connections): the agent's pool for the upstream's origin.
  const origin = new URL(options.url).origin
  const unregisterPool = registerPool({ kind: 'http', source: context.sourceName, stats: () => numericStats(dispatcher.stats[origin]) })
  const forward = (options.forwardHeaders ?? []).map((h) => h.toLowerCase())

  const upstreamPath = new URL(options.url).pathname
  const details = (status: number, text?: string): UpstreamDetails =>
    ({ source: context.sourceName, method: 'POST', path: upstreamPath, status, ...(text !== undefined ? { body: bodyExcerpt(text) } : {}) })

  /**
   * POSTs one GraphQL request. Network failures and timeouts become coded errors without the
   * upstream's address; every error of the upstream's `errors` list gets `extensions.upstream`, so
   * that production mode masks its message (see `../upstream-details.ts`).
   */
  async function send(body: unknown, extraHeaders: Record<string, string>, seen?: { status: number }): Promise<ExecutionResult> {
    let res
    try {
      res = await request(options.url, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...options.headers, ...extraHeaders },
        body: JSON.stringify(body),
      })
    } catch (err) {
      throw mapNetworkError(err, context.sourceName, timeoutMs)
    }
    if (seen) seen.status = res.statusCode
    let text: string
    try {
      text = await res.body.text()
    } catch (err) {
      throw mapNetworkError(err, context.sourceName, timeoutMs)
    }
    let json: ExecutionResult
    try {
      json = JSON.parse(text) as ExecutionResult
    } catch (err) {
      throw withUpstreamDetails(new UpstreamError(context.sourceName, `HTTP ${res.statusCode} with a non-JSON body`, { cause: err }), details(res.statusCode, text))
    }
    if (typeof json !== 'object' || json === null || (!('data' in json) && !('errors' in json))) {
      throw withUpstreamDetails(new UpstreamError(context.sourceName, `HTTP ${res.statusCode} without data or errors`), details(res.statusCode, text))
    }
    if (Array.isArray(json.errors)) {
      const upstream = details(res.statusCode)
      json = { ...json, errors: json.errors.map((e) => withUpstreamDetails({ ...e }, upstream) as GraphQLError) }
    }
    return json
  }

  const executor: Executor = async (req: ExecutionRequest) => {
    const ctx = (req.context ?? {}) as ContextWithHeaders
    const incoming = ctx.reply?.request.headers ?? ctx.headers ?? {}
    const extra: Record<string, string> = {}
    for (const h of forward) {
      const v = incoming[h]
      if (typeof v === 'string') extra[h] = v
    }
    const payload = { query: print(req.document), variables: wireVariables(req), operationName: req.operationName }
    // Observed (observability/probes.ts): its duration by status, a client span whose traceparent goes upstream.
    const end = startUpstream(context.sourceName, 'POST', options.url, extra)
    if (!end) return send(payload, extra)
    const seen = { status: 0 }
    try {
      const result = await send(payload, extra, seen)
      end(seen.status)
      return result
    } catch (err) {
      end(seen.status, err)
      throw err
    }
  }

  /**
   * The request's variables with the shared scalars' parsed values (a Date, a Buffer) in their wire
   * forms, typed by the upstream's own schema: the gateway parsed them with the shared scalars.
   */
  function wireVariables(req: ExecutionRequest): Record<string, unknown> | undefined {
    const variables = req.variables as Record<string, unknown> | undefined
    const operation = req.document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)
    if (!variables || !operation?.variableDefinitions?.length) return variables
    const out: Record<string, unknown> = { ...variables }
    for (const def of operation.variableDefinitions) {
      const name = def.variable.name.value
      const type = typeFromAST(schema, def.type)
      if (type && isInputType(type) && out[name] !== undefined) out[name] = transformInputValue(type, out[name], (leaf, value) => toWireValue(leaf.name, value))
    }
    return out
  }

  let schema: GraphQLSchema
  const cacheFile = join(context.cacheDir, `${context.sourceName}.introspection.json`)
  let introspection: IntrospectionQuery
  try {
    const result = await send({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) }, {})
    if (!result.data) throw new Error(result.errors?.[0]?.message ?? 'no data')
    introspection = result.data as unknown as IntrospectionQuery
    await mkdir(context.cacheDir, { recursive: true })
    const json = JSON.stringify(introspection, null, 2) + '\n'
    const previous = await readFile(cacheFile, 'utf8').catch(() => '')
    if (previous !== json) await writeFile(cacheFile, json)
  } catch (err) {
    const cached = await readFile(cacheFile, 'utf8').catch(() => null)
    if (cached === null) throw new SourceLoadError(context.sourceName, `cannot introspect ${options.url}: ${(err as Error).message}`, { cause: err })
    context.logger.warn({ err }, 'upstream unreachable; using the cached introspection')
    introspection = JSON.parse(cached) as IntrospectionQuery
  }
  schema = buildClientSchema(introspection)

  return {
    kind: 'remote',
    schema,
    executor,
    async health(): Promise<SourceHealth> {
      const started = performance.now()
      try {
        const r = await send({ query: '{ __typename }' }, {})
        return r.data ? { status: 'up', latencyMs: Math.round(performance.now() - started) } : { status: 'down', message: 'no data' }
      } catch (err) {
        return { status: 'down', message: (err as Error).message }
      }
    },
    close: () => {
      unregisterPool()
      return dispatcher.close()
    },
  }
}

/** undici pool stats as numbers (a client's `connected` is a boolean: 1 or 0). */
function numericStats(stats: object | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [k, v] of Object.entries(stats ?? {})) if (typeof v === 'number' || typeof v === 'boolean') out[k] = Number(v)
  return out
}
