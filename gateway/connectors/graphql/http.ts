/**
 * GraphQL over HTTP to an upstream (POST with a JSON body, through undici), shared by the remote
 * GraphQL connector (one endpoint) and the Apollo Federation connector (one endpoint per subgraph).
 *
 * The upstream-error contract (README "Upstream errors"), the same for both connectors:
 *
 * | Failure | Error | `extensions` |
 * |---|---|---|
 * | connection refused/reset, DNS failure | `UpstreamError` (502) | `{ code: 'TRB_ERR_UPSTREAM', http: { status: 502 } }` |
 * | headers or body not received within `timeoutMs`, or connect timeout | `UpstreamTimeoutError` (504) | `{ code: 'TRB_ERR_UPSTREAM_TIMEOUT', http: { status: 504 } }` |
 * | a body that is not JSON, or JSON without `data` and `errors` | `UpstreamError` (502) | `upstream` (method, path, status, body excerpt) |
 * | each error of the upstream's `errors` list | kept as the upstream sent it | `upstream` added (method, path, status) |
 *
 * `extensions.upstream` marks what an upstream provided, so that production mode masks its text
 * (`../upstream-details.ts`, `http/format-error.ts`). Messages of the gateway's own errors never carry
 * the upstream's address.
 */
import { Kind, isInputType, print, typeFromAST, type GraphQLError, type GraphQLSchema } from 'graphql'
import { transformInputValue, type ExecutionRequest, type ExecutionResult, type Executor } from '@graphql-tools/utils'
import type { Agent } from 'undici'
import { undici } from '../../undici.js'
import { pino, type Logger } from 'pino'
import { UpstreamError } from '../../errors.js'
import { hasOriginHooks, originRequest, originResponse, type OriginHookSlot, type OriginRequest } from '../../hooks/index.js'
import { compileHeaderTemplates, renderHeaderTemplates, type HeaderTemplates } from '../../auth/header-templates.js'
import { toWireValue } from '../../scalars.js'
import { mapNetworkError } from '../rest/request.js'
import { bodyExcerpt, withUpstreamDetails, type UpstreamDetails } from '../upstream-details.js'
import { startUpstream } from '../../observability/probes.js'

/** Options of {@link createGraphQLHttpClient}. */
export interface GraphQLHttpOptions {
  /** Per-request timeout for connecting, for the headers and between two body chunks, in milliseconds. */
  timeoutMs: number
  /**
   * Headers sent with every upstream request. Values may be header templates, `{{claims.<name>}}` and
   * `{{request.headers.<name>}}`, filled per request by {@link GraphQLHttpClient.executor} from its
   * context (gateway/auth/header-templates.ts); a header whose placeholder has no value is not sent.
   */
  headers?: Record<string, string>
  /** Client request headers forwarded upstream, by name (compared lower-case), e.g. `authorization`. */
  forwardHeaders?: readonly string[]
  /** The source's logger: at `debug`, each request logs one line, msg `"upstream"`, with `method` and `url` (no query string). */
  logger?: Logger
  /** The gateway's global hooks: `onOriginRequest`/`onOriginResponse` see each request of {@link GraphQLHttpClient.executor} (README "Hooks"). */
  originHooks?: OriginHookSlot
  /** The data source's namespace, as origin hooks filter and see it. Default `''`. */
  namespace?: string
}

/** One upstream GraphQL endpoint, as seen by a connector. */
export interface GraphQLEndpoint {
  /** The endpoint's URL, `http(s)://host/graphql`. */
  url: string
  /** Name in errors and logs (the data source's name, or `<source>/<subgraph>`). */
  name: string
  /** Headers sent to this endpoint only, over {@link GraphQLHttpOptions.headers}; templates allowed as there. */
  headers?: Record<string, string>
}

/** Sends GraphQL requests to any number of endpoints over one undici `Agent` (keep-alive per origin). */
export interface GraphQLHttpClient {
  /**
   * POSTs one GraphQL request body `{ query, variables?, operationName? }` to `endpoint`, with the
   * static headers (a templated header needs a request context: only the executor sends it).
   * @returns the upstream's `{ data?, errors? }`, its errors marked with `extensions.upstream`.
   * @throws UpstreamError / UpstreamTimeoutError (see the file header); never the upstream's address.
   */
  send(endpoint: GraphQLEndpoint, body: unknown, extraHeaders?: Record<string, string>, seen?: { status: number }): Promise<ExecutionResult>
  /**
   * An executor for `endpoint`: prints the request's document, renders the header templates from the
   * context (`context.auth`, the incoming headers), forwards the configured client headers (from
   * `context.reply.request.headers` or `context.headers`) and sends variables in their
   * wire forms, typed by `types()` (the upstream's schema; a variable of a type it does not know is
   * sent as it is).
   */
  executor(endpoint: GraphQLEndpoint, types: () => GraphQLSchema | undefined): Executor
  /**
   * The headers a request to `endpoint` carries besides the content headers: the static ones, the
   * templates rendered from `context` and the forwarded client headers (lower-case names), as
   * {@link executor} sends them. The federation connector's subscription transports send these.
   */
  requestHeaders(endpoint: GraphQLEndpoint, context: unknown): Record<string, string>
  /** The agent's connection-pool counters for the origin of `url` (undici `Agent.stats`; booleans as 1/0), for the pool gauge. */
  poolStats(url: string): Record<string, number>
  /** Closes the agent's sockets. Idempotent. */
  close(): Promise<void>
}

/** The content headers of every GraphQL request. */
const contentHeaders = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' } as const

/** A request an origin hook saw: what to send, and the hook of its answer. */
interface Hooked {
  request: OriginRequest
  observe(status: number, headers: Record<string, string | string[] | undefined>): Promise<void>
}

interface ContextWithHeaders {
  reply?: { request: { headers: Record<string, string | string[] | undefined> } }
  headers?: Record<string, string | string[] | undefined>
}

/**
 * Creates a {@link GraphQLHttpClient}.
 * @throws Error naming the header when a `headers` value has an unknown placeholder (the connector
 *   reports it as a source load error); an endpoint's own headers are checked by {@link compileHeaderTemplates}
 *   on its first request, so a connector with several endpoints checks them at load.
 */
export function createGraphQLHttpClient(options: GraphQLHttpOptions): GraphQLHttpClient {
  const { timeoutMs } = options
  const shared = lowerCaseNames(options.headers)
  compileHeaderTemplates(shared)
  const dispatcher: Agent = new (undici().Agent)({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs, keepAliveTimeout: 10_000 })
  const forward = (options.forwardHeaders ?? []).map((h) => h.toLowerCase())
  // The source's headers under the endpoint's, compiled once per endpoint.
  const compiled = new WeakMap<GraphQLEndpoint, HeaderTemplates>()
  const templatesOf = (endpoint: GraphQLEndpoint): HeaderTemplates => {
    let t = compiled.get(endpoint)
    if (!t) compiled.set(endpoint, (t = compileHeaderTemplates({ ...shared, ...lowerCaseNames(endpoint.headers) })))
    return t
  }
  let closed: Promise<void> | undefined
  const namespace = options.namespace ?? ''
  const log = options.logger ?? pino({ level: 'silent' })

  /** Runs `onOriginRequest` on one request and prepares `onOriginResponse` for its answer. */
  async function hookedRequest(slot: OriginHookSlot, endpoint: GraphQLEndpoint, headers: Record<string, string>, body: string, context: unknown): Promise<Hooked> {
    const request = await originRequest(slot, namespace, { method: 'POST', url: endpoint.url, headers, body }, context, log)
    return {
      request,
      async observe(status, raw) {
        const seen: Record<string, string> = {}
        for (const [name, value] of Object.entries(raw)) if (value !== undefined && name !== 'set-cookie') seen[name] = Array.isArray(value) ? value.join(', ') : value
        await originResponse(slot, namespace, request, { status, headers: seen }, context, log)
      },
    }
  }

  async function send(endpoint: GraphQLEndpoint, body: unknown, extraHeaders: Record<string, string> = {}, seen?: { status: number }, hooked?: Hooked): Promise<ExecutionResult> {
    const path = new URL(hooked?.request.url ?? endpoint.url).pathname
    const details = (status: number, text?: string): UpstreamDetails =>
      ({ source: endpoint.name, method: 'POST', path, status, ...(text !== undefined ? { body: bodyExcerpt(text) } : {}) })
    if (options.logger?.isLevelEnabled('debug')) options.logger.debug({ method: 'POST', url: `${new URL(endpoint.url).origin}${path}` }, 'upstream')
    let res
    try {
      res = hooked
        ? await undici().request(hooked.request.url, { method: hooked.request.method as 'POST', dispatcher, headers: hooked.request.headers, body: hooked.request.body })
        : await undici().request(endpoint.url, { method: 'POST', dispatcher, headers: { ...contentHeaders, ...templatesOf(endpoint).static, ...extraHeaders }, body: JSON.stringify(body) })
    } catch (err) {
      throw mapNetworkError(err, endpoint.name, timeoutMs)
    }
    if (seen) seen.status = res.statusCode
    if (hooked) {
      try {
        await hooked.observe(res.statusCode, res.headers)
      } catch (err) {
        await res.body.dump().catch(() => undefined)
        throw err
      }
    }
    let text: string
    try {
      text = await res.body.text()
    } catch (err) {
      throw mapNetworkError(err, endpoint.name, timeoutMs)
    }
    let json: ExecutionResult
    try {
      json = JSON.parse(text) as ExecutionResult
    } catch (err) {
      throw withUpstreamDetails(new UpstreamError(endpoint.name, `HTTP ${res.statusCode} with a non-JSON body`, { cause: err }), details(res.statusCode, text))
    }
    if (typeof json !== 'object' || json === null || (!('data' in json) && !('errors' in json))) {
      throw withUpstreamDetails(new UpstreamError(endpoint.name, `HTTP ${res.statusCode} without data or errors`), details(res.statusCode, text))
    }
    if (Array.isArray(json.errors)) {
      const upstream = details(res.statusCode)
      json = { ...json, errors: json.errors.map((e) => withUpstreamDetails({ ...e }, upstream) as GraphQLError) }
    }
    return json
  }

  function requestHeaders(endpoint: GraphQLEndpoint, context: unknown): Record<string, string> {
    const ctx = (context ?? {}) as ContextWithHeaders
    const incoming = ctx.reply?.request.headers ?? ctx.headers ?? {}
    const extra: Record<string, string> = renderHeaderTemplates(templatesOf(endpoint), ctx)
    for (const h of forward) {
      const v = incoming[h]
      if (typeof v === 'string') extra[h] = v
    }
    return extra
  }

  function executor(endpoint: GraphQLEndpoint, types: () => GraphQLSchema | undefined): Executor {
    return async (req: ExecutionRequest) => {
      const extra = requestHeaders(endpoint, req.context)
      const payload = { query: print(req.document), variables: wireVariables(req, types()), operationName: req.operationName }
      if (hasOriginHooks(options.originHooks, namespace)) {
        const hooked = await hookedRequest(options.originHooks, endpoint, { ...contentHeaders, ...templatesOf(endpoint).static, ...extra }, JSON.stringify(payload), req.context)
        return send(endpoint, payload, extra, undefined, hooked)
      }
      // Observed (observability/probes.ts): its duration by status, a client span whose traceparent goes upstream.
      const end = startUpstream(endpoint.name, 'POST', endpoint.url, extra)
      if (!end) return send(endpoint, payload, extra)
      const seen = { status: 0 }
      try {
        const result = await send(endpoint, payload, extra, seen)
        end(seen.status)
        return result
      } catch (err) {
        end(seen.status, err)
        throw err
      }
    }
  }

  return {
    send,
    executor,
    requestHeaders: (endpoint, context) => ({ ...templatesOf(endpoint).static, ...requestHeaders(endpoint, context) }),
    poolStats: (url) => numericStats(dispatcher.stats[new URL(url).origin]),
    close: () => (closed ??= dispatcher.close()),
  }
}

/**
 * The request's variables with the shared scalars' parsed values (a Date, a Buffer) in their wire
 * forms, typed by the upstream's own schema: the gateway parsed them with the shared scalars.
 */
function wireVariables(req: ExecutionRequest, schema: GraphQLSchema | undefined): Record<string, unknown> | undefined {
  const variables = req.variables as Record<string, unknown> | undefined
  const operation = req.document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)
  if (!schema || !variables || !operation?.variableDefinitions?.length) return variables
  const out: Record<string, unknown> = { ...variables }
  for (const def of operation.variableDefinitions) {
    const name = def.variable.name.value
    const type = typeFromAST(schema, def.type)
    if (type && isInputType(type) && out[name] !== undefined) out[name] = transformInputValue(type, out[name], (leaf, value) => toWireValue(leaf.name, value))
  }
  return out
}

/** `headers` with lower-case names, so that an endpoint's header replaces the source's of any case. */
function lowerCaseNames(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = value
  return out
}

/** undici pool stats as numbers (a client's `connected` is a boolean: 1 or 0). */
function numericStats(stats: object | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [k, v] of Object.entries(stats ?? {})) if (typeof v === 'number' || typeof v === 'boolean') out[k] = Number(v)
  return out
}
