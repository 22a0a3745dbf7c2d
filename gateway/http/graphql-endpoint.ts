/**
 * `/graphql`: GraphQL over HTTP (spec draft, https://graphql.github.io/graphql-over-http/draft/).
 * Documents run through graphql-jit from this module's own cache of parsed, validated and compiled
 * documents (mercurius' `app.graphql()` re-coerces variables with graphql-js on every call, which
 * measured as a quarter of the endpoint's overhead); mercurius stays the app's GraphQL plugin for
 * `app.graphql()` in code. POST with JSON, GET for queries,
 * `application/graphql-response+json` and `application/json` responses, the playground for browsers,
 * and `graphql-transport-ws` subscriptions on the same path; automatic persisted queries (Apollo's
 * protocol, gateway/http/persisted.ts) and, with `graphql.batching.maxOperations`, batches (a JSON array).
 *
 * Every distinct document is parsed (with a token limit), validated and checked against the depth
 * and alias limits once, then cached until the schema changes.
 */
import { limitLatin1Response, limitResponse } from './response-limit.js'
import { markAnswerWithoutErrors } from './answer-errors.js'
import { isMultipartRequest, registerGraphQLMultipart } from './graphql-multipart.js'
import { parseJsonSafely } from '../safe-keys.js'
import { deepFreeze } from '../deep-freeze.js'
import {
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  execute,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
} from 'graphql'
import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify'
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit'
import { buildCostPlan, checkCost, checkDocumentLimits, checkFragmentLimits, checkVariablesDepth, type CostPlan } from './limits.js'
import { filterCost } from '../operations/filter-cost.js'
import { isJitSafe } from '../operations/jit-safety.js'
import { compileDirectOperation, type DirectOperation } from '../operations/direct-plan.js'
import type { Latin1Context } from '../connectors/database/direct.js'
import { codedGraphQLError, codesOf, formatGraphQLErrors, sendError, setRetryAfter, withRetryAfter } from './format-error.js'
import { AuthRequiredError, GraphQLMethodError, GraphQLRequestError, InternalError, PersistedNotFoundError, PersistedOnlyError, RouteNotFoundError, isTributaryError } from '../errors.js'
import type { OperationLimiter } from './rate-limit.js'
import { randomUUID } from 'node:crypto'
import { refuseNonJsonBody } from './json-body.js'
import { PLAYGROUND_ASSETS_PREFIX, playgroundContentSecurityPolicy, playgroundQuery, renderPlaygroundHtml } from './playground.js'
import type { GatewayHolder } from './gateway-holder.js'
import { invalidateTags, operationTags } from '../cluster/response-cache.js'
import { sha256, type PersistedOperations } from './persisted.js'
import { checkCsrf, identityOf } from './auth.js'
import type { AuthInfo } from '../auth/jwt.js'
import { authorize, claimVariables, extractAuthDirectives, type OperationAuthRules } from '../auth/directives.js'
import { resultBudget } from '../result-budget.js'
import { observeOperation, observers } from '../observability/probes.js'
import { graphqlTrafficName } from '../observability/traffic.js'
import { slimLocations } from './slim-document.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { DirectFailure } from '../operations/direct-plan.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * `POST /graphql` requests the early path took (README "GraphQL before fastify"): `answered`
     * there, or `handedOver` to the route after their body was read (with their run's result when
     * one ran).
     */
    earlyGraphQL: { answered: number; handedOver: number }
    /** How many request bodies the early path remembers now (at most `EARLY_BODIES`). */
    earlyGraphQLBodies: () => number
  }
}

const GRAPHQL_RESPONSE = 'application/graphql-response+json'
const JSON_TYPE = 'application/json'

interface Prepared {
  document?: DocumentNode
  /** The `@requireAuthentication`/`@rbac`/`@fromClaim` rules of its operations, by name (`''` when anonymous). */
  rules?: Map<string, OperationAuthRules>
  errors?: readonly GraphQLError[]
  /** False when graphql-jit cannot compile it (recursive input variables): run with graphql-js. */
  jitSafe?: boolean
  /** graphql-jit compilations of the document, by operation name (`''` for an anonymous one). */
  compiled?: Map<string, CompiledQuery>
  /** Direct JSON plans of its database-only queries, by operation name; null when there is none. */
  direct?: Map<string, DirectOperation | null>
  /** Cost plans, by operation name (built on first use). */
  cost?: Map<string, CostPlan>
  /** Cache tags a mutation touches, by operation name (gateway/cluster/response-cache.ts). */
  tags?: Map<string, string[]>
  /** The `operation` label of its metrics and spans (set on first use). */
  label?: string
  /** Operations that select introspection fields only, by name (their answers are bounded by `server.maxIntrospectionBytes`). */
  introspection?: Map<string, boolean>
  /** What the early path ({@link EarlyGraphQL}) needs of an operation, by name; null when it leaves the operation to the route. */
  early?: Map<string, EarlyPlan | null>
}

/** One operation of a prepared document as {@link EarlyGraphQL} runs it (built on its first request; its cost plan is the route's, `Prepared.cost`). */
interface EarlyPlan {
  readonly operation: OperationDefinitionNode
  /** `direct`: its direct JSON plan (database-only roots); `jit`: its graphql-jit compilation. */
  readonly kind: 'direct' | 'jit'
  readonly direct: DirectOperation | null
  readonly jit: CompiledQuery | null
  /** Its `@requireAuthentication`/`@rbac` rules (never `@fromClaim`: those go to the route). */
  readonly rules: OperationAuthRules | undefined
}

/**
 * What {@link EarlyGraphQL} learnt from one request body that passed every check not depending on the
 * caller (JSON, request shape, persisted-only, document validity and limits, an early plan, variable
 * depth and cost): kept by the body's text for as long as the served gateway (`holder.version`), so
 * that the same body sent again is neither parsed nor checked again.
 */
interface EarlyBody {
  readonly prepared: Prepared
  readonly plan: EarlyPlan
  /** The key of its plan: the request's `operationName`, or '' when absent or null. */
  readonly key: string
  /** The request's `variables`, deep-frozen (shared by every request with this body). */
  readonly vars: Readonly<Record<string, unknown>> | undefined
  /** The console's traffic name of the request (`graphqlTrafficName` of its `operationName`). */
  readonly trafficName: string
}

/** Request bodies {@link EarlyGraphQL} remembers (at most this many, then it starts again empty) … */
export const EARLY_BODIES = 1000
/** … of at most this many characters each; a longer body is parsed and checked on every request. */
export const EARLY_BODY_CHARS = 2048

/**
 * What {@link EarlyGraphQL} ran for a request it then handed to the route (a failed statement, an
 * execution with errors, a large answer): the route answers this result instead of running the
 * operation again. `context` is the run's context (its `latin1Used` tells how a direct answer is coded).
 */
interface EarlyGraphQLRun {
  readonly prepared: Prepared
  /** The operation name as the request gave it (`''` for none). */
  readonly key: string
  readonly context: Latin1Context & Record<string, unknown>
  readonly direct?: Promise<string | DirectFailure | null>
  readonly executed?: Promise<ExecutionResult>
}

const kEarlyBody = Symbol('tributary.graphqlEarlyBody')
const kEarlyRun = Symbol('tributary.graphqlEarlyRun')
type EarlyMarked = IncomingMessage & { [kEarlyBody]?: Buffer; [kEarlyRun]?: EarlyGraphQLRun }

/** Largest body, in bytes, that {@link EarlyGraphQL} reads (and at most `server.bodyLimit`); a larger one goes to fastify unread. */
export const EARLY_GRAPHQL_BODY_BYTES = 64 * 1024

/** Media types by `Accept` header, at most this many remembered (client-chosen text: bounded). */
const EARLY_ACCEPT_KEYS = 64

/**
 * Answers a `POST /graphql` before fastify routes it (README "GraphQL before fastify"), or leaves it:
 * - returns false, having touched nothing, unless the request is `POST` with a JSON body
 *   (`Content-Type: application/json`, optionally `; charset=utf-8`) of a `Content-Length` of at most
 *   {@link EARLY_GRAPHQL_BODY_BYTES} and `server.bodyLimit`, no cookie, `Transfer-Encoding` nor
 *   `Upgrade`, an acceptable `Accept`, no hook of any kind configured, and either no token or one the
 *   JWT verifier verified recently (not when `auth.graphql` is `authenticated` and there is none);
 * - else returns true and reads the body: a single request object (no `extensions`, no
 *   `documentId`) whose document is valid and within every limit (the same cache of prepared
 *   documents as the route, the same depth, alias, fragment, cost, variable-depth and persisted-only
 *   checks) and whose operation is a query (not introspection-only, no `@fromClaim`, its
 *   `@requireAuthentication`/`@rbac` passed) runs with its direct plan or its graphql-jit
 *   compilation and is answered 200 `{"data":…}`, counted in the metrics and the console as the
 *   route counts it. Anything else is handed to `fallback` (fastify) with the body kept for the
 *   route, which answers it as if it had come straight there; a run with errors, a failed statement
 *   or an answer over a third of `server.maxResponseBytes` is handed over with its result, answered
 *   by the route without running again.
 */
export type EarlyGraphQL = (req: IncomingMessage, res: ServerResponse, fallback: (req: IncomingMessage, res: ServerResponse) => void) => boolean

const INTROSPECTION_FIELDS = new Set(['__schema', '__type', '__typename'])

/**
 * True when every root field `selections` selects, through inline fragments and fragment spreads, is
 * `__schema`, `__type` or `__typename`: the answer describes the schema, whatever the data. Each
 * fragment is looked up in a map and visited once, so the walk is linear in the document's size.
 */
export function isIntrospectionOnly(document: DocumentNode, selections: readonly SelectionNode[]): boolean {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const seen = new Set<string>()
  const walk = (list: readonly SelectionNode[]): boolean => {
    for (const s of list) {
      if (s.kind === Kind.FIELD) {
        if (!INTROSPECTION_FIELDS.has(s.name.value)) return false
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        if (!walk(s.selectionSet.selections)) return false
      } else if (!seen.has(s.name.value)) {
        seen.add(s.name.value)
        const fragment = fragments.get(s.name.value)
        if (!fragment || !walk(fragment.selectionSet.selections)) return false
      }
    }
    return true
  }
  return walk(selections)
}

/**
 * True when `Accept` asks for HTML before any JSON type (a browser's navigation:
 * `text/html,application/xhtml+xml,…,*\/*;q=0.8`): `GET /graphql` then serves the playground, with
 * `?query=` (a playground link) filled in. A client that lists `application/json` or
 * `application/graphql-response+json` first, or not HTML at all, gets GraphQL over HTTP.
 */
function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false
  const html = accept.indexOf('text/html')
  if (html < 0) return false
  const json = accept.search(/application\/(graphql-response\+)?json/)
  return json < 0 || html < json
}

/** The query, variables and operation name of a playground link (`/graphql?query=…&variables=…`), if any. */
function playgroundLink(q: Record<string, unknown>): { query: string; variables?: string; operationName?: string } | undefined {
  if (typeof q.query !== 'string' || q.query === '') return undefined
  return {
    query: q.query,
    ...(typeof q.variables === 'string' ? { variables: q.variables } : {}),
    ...(typeof q.operationName === 'string' ? { operationName: q.operationName } : {}),
  }
}

/** Chooses the response media type from `Accept` (GraphQL over HTTP §5.2.3); null when none is acceptable. */
export function negotiate(accept: string | undefined): string | null {
  if (!accept) return JSON_TYPE
  const ranges = accept.split(',').map((part) => {
    const [type, ...params] = part.trim().split(';')
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return { type: type.trim().toLowerCase(), q: q ? Number(q.slice(2)) : 1 }
  })
  ranges.sort((a, b) => b.q - a.q)
  for (const r of ranges) {
    if (r.q <= 0) continue
    if (r.type === GRAPHQL_RESPONSE) return GRAPHQL_RESPONSE
    if (r.type === JSON_TYPE || r.type === 'application/*' || r.type === '*/*') return JSON_TYPE
  }
  return null
}

class DocumentCache {
  private map = new Map<string, Prepared>()
  constructor(private readonly max: number) {}
  get(key: string): Prepared | undefined {
    const v = this.map.get(key)
    if (v) {
      this.map.delete(key)
      this.map.set(key, v)
    }
    return v
  }
  set(key: string, value: Prepared): void {
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as string)
    this.map.set(key, value)
  }
  clear(): void {
    this.map.clear()
  }
}

/**
 * A stand-in for `reply` while one operation of a batch runs: status, headers and body are kept
 * (`captured`: the JSON text sent) instead of sent; everything else (`raw`, `request`, `log`,
 * `server`) is the real reply's.
 */
function capturingReply(reply: FastifyReply): FastifyReply & { captured: string } {
  const headers = new Map<string, unknown>()
  const one = Object.create(reply) as FastifyReply & { captured: string }
  Object.assign(one, {
    captured: 'null',
    // A fastify reply is thenable (it resolves once sent): the stand-in, awaited, must not be.
    then: undefined,
    code: () => one,
    status: () => one,
    type: () => one,
    header: (name: string, value: unknown) => (headers.set(name.toLowerCase(), value), one),
    getHeader: (name: string) => headers.get(name.toLowerCase()),
    removeHeader: (name: string) => (headers.delete(name.toLowerCase()), one),
    // A Buffer is UTF-8 JSON text (limitResponse's large bodies, limitLatin1Response's answers).
    send: (payload: unknown) => ((one.captured = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : JSON.stringify(payload)), one),
  })
  return one
}

interface GraphQLParams {
  query?: unknown
  variables?: unknown
  operationName?: unknown
  extensions?: unknown
  documentId?: unknown
}

/**
 * Registers `POST /graphql` on `app`, and `GET /graphql` (queries, the playground, and `wsHandler`
 * for WebSocket upgrades) on `wsScope`, the scope where @fastify/websocket is registered.
 * `limitOperation` (from `server.rateLimit`) counts every operation of a batch after the first,
 * which the request itself counted.
 * @returns the early path of `POST /graphql` ({@link EarlyGraphQL}), for the app's request
 *   listener to call before fastify's (operations-routes.ts `answerEarly` installs it on the same
 *   conditions as its own).
 */
export function registerGraphQLEndpoint(
  app: FastifyInstance,
  wsScope: FastifyInstance,
  holder: GatewayHolder,
  persisted: PersistedOperations,
  wsHandler: (socket: import('ws').WebSocket, request: FastifyRequest) => void,
  limitOperation?: OperationLimiter,
): EarlyGraphQL {
  /** Bodies already parsed and checked (see {@link EarlyBody}), for the gateway of `bodiesVersion`. */
  const bodies = new Map<string, EarlyBody>()
  let bodiesVersion = holder.version
  const tally = { answered: 0, handedOver: 0 }
  app.decorate('earlyGraphQL', tally)
  app.decorate('earlyGraphQLBodies', () => bodies.size)
  const cache = new DocumentCache(1000)
  // Invalid documents are cached apart, so that a stream of distinct bad documents cannot evict the good ones.
  const errorCache = new DocumentCache(200)
  let cacheVersion = holder.version
  function prepare(query: string): Prepared {
    if (cacheVersion !== holder.version) {
      cache.clear()
      errorCache.clear()
      cacheVersion = holder.version
    }
    const hit = cache.get(query) ?? errorCache.get(query)
    if (hit) return hit
    const { config, schema } = holder.current
    let prepared: Prepared
    try {
      // The auth directives (gateway/auth/directives.ts) are not in the schema: read and removed first.
      const extracted = extractAuthDirectives(parse(query, { maxTokens: config.graphql.maxTokens }))
      const document = extracted.document
      // Before validation, which is quadratic in the fragment spreads (OverlappingFieldsCanBeMergedRule).
      const fragmentLimit = checkFragmentLimits(document, config.graphql)
      if (fragmentLimit) throw fragmentLimit
      const rules = config.graphql.introspection ? specifiedRules : [...specifiedRules, NoSchemaIntrospectionCustomRule]
      const errors = [...extracted.errors, ...validate(schema, document, rules, { maxErrors: 20 })]
      const limitErrors = errors.length ? [] : checkDocumentLimits(document, config.graphql)
      prepared = errors.length || limitErrors.length
        ? { errors: [...errors, ...limitErrors] }
        : {
            document: slimLocations(document),
            ...(extracted.rules.size ? { rules: extracted.rules } : {}),
            jitSafe: document.definitions.every((d) => d.kind !== 'OperationDefinition' || isJitSafe(schema, document, d)),
          }
    } catch (err) {
      prepared = { errors: [err instanceof GraphQLError ? err : new GraphQLError((err as Error).message)] }
    }
    ;(prepared.errors ? errorCache : cache).set(query, prepared)
    return prepared
  }

  /**
   * The document's graphql-jit compilation for one operation, made on first use and cached with the
   * document (so it is dropped when the schema is swapped). Undefined when jit cannot compile it.
   */
  function compiledFor(prepared: Prepared, schema: GraphQLSchema, operationName: string | undefined): CompiledQuery | undefined {
    prepared.compiled ??= new Map()
    const key = operationName ?? ''
    let compiled = prepared.compiled.get(key)
    if (!compiled) {
      const result = compileQuery(schema, prepared.document!, operationName, { disablingCapturingStackErrors: true })
      if (!isCompiledQuery(result)) {
        prepared.jitSafe = false
        return undefined
      }
      compiled = result
      prepared.compiled.set(key, compiled)
    }
    return compiled
  }

  function send(reply: FastifyReply, status: number, mediaType: string, body: { data?: unknown; errors?: GraphQLFormattedError[] }, introspection = false) {
    setRetryAfter(reply, codesOf(body.errors))
    reply.code(status)
    const payload = limitResponse(reply, JSON.stringify(body), introspection)
    if (body.errors === undefined && reply.statusCode === status) markAnswerWithoutErrors(reply, payload)
    return reply.type(`${mediaType}; charset=utf-8`).send(payload)
  }

  /** A request error (GraphQL over HTTP §6.4): 400 for graphql-response+json; 200 for legacy application/json. */
  function requestError(reply: FastifyReply, mediaType: string, errors: readonly GraphQLError[], forceStatus?: number) {
    const { errors: formatted } = formatGraphQLErrors(errors, { mode: holder.current.config.mode, logger: reply.log })
    const status = forceStatus ?? (mediaType === GRAPHQL_RESPONSE ? 400 : 200)
    return send(reply, status, mediaType, { errors: formatted })
  }

  function malformed(reply: FastifyReply, message: string) {
    return sendError(reply, new GraphQLRequestError(message))
  }

  function parseJsonParam(value: unknown, name: string): { ok: true; value: unknown } | { ok: false; message: string } {
    if (value === undefined || value === null || value === '') return { ok: true, value: undefined }
    if (typeof value !== 'string') return { ok: false, message: `${name} must be a JSON object` }
    try {
      return { ok: true, value: parseJsonSafely(value) }
    } catch (err) {
      return { ok: false, message: err instanceof SyntaxError ? `${name} is not valid JSON` : (err as Error).message }
    }
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, params: GraphQLParams, method: 'GET' | 'POST') {
    const gateway = holder.current
    const mediaType = negotiate(request.headers.accept)
    if (!mediaType) {
      return sendError(reply, new GraphQLRequestError(`Not acceptable; use Accept: ${GRAPHQL_RESPONSE} or ${JSON_TYPE}`), 406)
    }
    // An invalid token is refused (401) even where none is needed; `authenticated` needs one.
    let auth = gateway.jwt ? identityOf(gateway, request) : null
    if (auth instanceof Promise) auth = await auth
    if (!auth && gateway.config.auth.graphql === 'authenticated') throw new AuthRequiredError('/graphql needs a token (auth.graphql is "authenticated")')
    let { query } = params
    const { operationName, extensions } = params
    let { variables } = params
    const problem = paramsProblem(params)
    if (problem) return malformed(reply, problem)

    const apqHash = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null)?.persistedQuery?.sha256Hash
    const persistedHash = (typeof params.documentId === 'string' && params.documentId) || (apqHash as string | undefined)
    if (persistedHash !== undefined && query === undefined) {
      const source = persisted.source(String(persistedHash))
      if (!source) return requestError(reply, mediaType, [codedGraphQLError(new PersistedNotFoundError())], 400)
      query = source
    }
    if (typeof query !== 'string' || query.trim() === '') return malformed(reply, 'query must be a non-empty string')
    // Automatic persisted queries (when on): the hash and its query register the query once it validates.
    const registering = gateway.config.graphql.apq && typeof apqHash === 'string' && params.query === query ? apqHash.toLowerCase() : undefined
    if (registering !== undefined && sha256(query) !== registering) {
      return requestError(reply, mediaType, [codedGraphQLError(new GraphQLRequestError('provided sha does not match query'))], 400)
    }
    if (persisted.enforced && !persisted.allowsText(query)) {
      return requestError(reply, mediaType, [codedGraphQLError(new PersistedOnlyError())], 400)
    }

    const prepared = prepare(query)
    if (prepared.errors) return requestError(reply, mediaType, prepared.errors)
    if (registering !== undefined) persisted.register(registering, query)
    const operation = getOperationAST(prepared.document!, (operationName as string | null | undefined) ?? undefined)
    if (!operation) {
      return requestError(reply, mediaType, [new GraphQLError(operationName ? `Unknown operation "${String(operationName)}"` : 'Provide operationName: the document has several operations')])
    }
    const opRules = prepared.rules?.get(operation.name?.value ?? '')
    if (opRules) {
      authorize(opRules, auth, `operation ${operation.name?.value ?? '(anonymous)'}`)
      const sent = Object.keys(opRules.fromClaim).filter((v) => variables && Object.hasOwn(variables, v))
      if (sent.length) {
        return requestError(reply, mediaType, [new GraphQLError(`Variable "$${sent[0]}" comes from the token's "${opRules.fromClaim[sent[0]]}" claim and cannot be sent`)], 400)
      }
      if (Object.keys(opRules.fromClaim).length) variables = { ...(variables as object | null | undefined), ...claimVariables(opRules, auth!) }
    }
    if (method === 'GET' && operation.operation !== 'query') {
      reply.header('allow', 'POST')
      return requestError(reply, mediaType, [codedGraphQLError(new GraphQLMethodError())], 405)
    }
    // A browser's session cookie goes with cross-site requests: its mutations need the CSRF token.
    if (operation.operation === 'mutation') checkCsrf(gateway, request, auth)
    if (operation.operation === 'subscription') {
      return requestError(reply, mediaType, [new GraphQLError('Subscriptions are served over WebSocket (graphql-transport-ws) at this path, or as Server-Sent Events at /operations/<Name>')])
    }
    const overLimit = requestLimitError(gateway, prepared, operation, (operationName as string | null | undefined) ?? '', variables as Record<string, unknown> | undefined)
    if (overLimit) return requestError(reply, mediaType, [overLimit])

    // Labelled by its stored operation's name when the text is one, else `(graphql)`: bounded.
    prepared.label ??= operation.name && persisted.allowsText(query) ? operation.name.value : '(graphql)'
    // `variables` now holds the `@fromClaim` values; `auth` is the caller's `context.auth`.
    // The span names the operation even when the metric label is `(graphql)` (README "Observability").
    return observeOperation(prepared.label, () => run(request, reply, gateway, mediaType, prepared, operation, { ...params, variables }, auth), undefined, operation.name?.value)
  }

  /** Runs a prepared, checked operation and sends its result. */
  async function run(request: FastifyRequest, reply: FastifyReply, gateway: GatewayHolder['current'], mediaType: string, prepared: Prepared, operation: OperationDefinitionNode, params: GraphQLParams, auth: AuthInfo | null) {
    const { variables, operationName } = params
    // What the early path already ran for this request (then handed here): answered, not run again.
    const early = takeEarlyRun(request, prepared, (operationName as string | null | undefined) ?? '')
    if (operation.operation === 'query') {
      const direct = directPlanOf(prepared, gateway.schema, operation, (operationName as string | null | undefined) ?? '')
      if (direct && (early === undefined || early.direct !== undefined)) {
        // One statement on PostgreSQL: its rows may come and go as latin1-coded UTF-8, never decoded nor encoded (Latin1Context).
        const context: Latin1Context & Record<string, unknown> = early?.context ?? { reply, request, headers: request.headers, cluster: holder.cluster, resultBudget: resultBudget(gateway.config.server.maxResponseBytes), auth, latin1Json: direct.roots === 1 && !direct.upstream }
        const data = await (early?.direct ?? direct.run(variables as Record<string, unknown> | undefined, context))
        if (typeof data === 'string') {
          reply.code(200)
          const payload = context.latin1Used === true ? limitLatin1Response(reply, `{"data":${data}}`) : limitResponse(reply, `{"data":${data}}`)
          // Still 200: not refused by server.maxResponseBytes (whose 400 body carries errors).
          if (reply.statusCode === 200) markAnswerWithoutErrors(reply, payload)
          return reply.type(`${mediaType}; charset=utf-8`).send(payload)
        }
        // The statement failed once sent (a timeout, a cancellation...): reported, never run again.
        // Or a link value failed (`data` set): the partial result, as GraphQL execution gives it.
        if (data !== null) {
          const formatted = formatGraphQLErrors(data.errors, { mode: gateway.config.mode, logger: request.log })
          if (data.data && !formatted.critical) return send(reply, 200, mediaType, { errors: formatted.errors, data: data.data })
          return send(reply, withRetryAfter(reply, data.errors, 200), mediaType, { errors: formatted.errors, data: null })
        }
      }
    }

    let result: ExecutionResult
    try {
      const context = { reply, request, headers: request.headers, cluster: holder.cluster, resultBudget: resultBudget(gateway.config.server.maxResponseBytes), auth }
      const vars = (variables ?? undefined) as Record<string, unknown> | undefined
      const opName = (operationName ?? undefined) as string | undefined
      const jit = early?.executed === undefined && prepared.jitSafe ? compiledFor(prepared, gateway.schema, opName) : undefined
      result = early?.executed
        ? await early.executed
        : jit
        ? await jit.query(undefined, context, vars)
        : await execute({ schema: gateway.schema, document: prepared.document!, contextValue: context, variableValues: vars, operationName: opName })
    } catch (err) {
      const e = err as Error & { errors?: GraphQLError[]; code?: string }
      if (Array.isArray(e.errors)) return requestError(reply, mediaType, e.errors)
      throw err
    }
    if (!('data' in result)) return requestError(reply, mediaType, result.errors ?? [])
    if (operation.operation === 'mutation' && result.data) {
      // Cached `# @cache` queries that read what the mutation touched are invalidated before it answers.
      prepared.tags ??= new Map()
      const name = (operationName as string | null | undefined) ?? ''
      let tags = prepared.tags.get(name)
      if (!tags) prepared.tags.set(name, (tags = operationTags(gateway.schema, prepared.document!, operation, gateway.sources.map((s) => s.namespace))))
      await invalidateTags(holder.cluster, tags).catch((err: unknown) => request.log.error({ err }, 'invalidating cached responses failed'))
    }
    const body: { data?: unknown; errors?: GraphQLFormattedError[] } = {}
    let critical = false
    if (result.errors?.length) ({ errors: body.errors, critical } = formatGraphQLErrors(result.errors, { mode: gateway.config.mode, logger: request.log }))
    // A federation plan that cannot be built answers `data: null` (formatGraphQLErrors), not partial data.
    body.data = critical ? null : result.data
    // Nothing answered (data null, or every root field null) because a source is at capacity or
    // unreachable: 503 with Retry-After, not a 200 to retry blindly.
    const nothingAnswered = result.data == null || Object.values(result.data).every((v) => v === null)
    prepared.introspection ??= new Map()
    const opKey = (operationName as string | null | undefined) ?? ''
    let introspection = prepared.introspection.get(opKey)
    if (introspection === undefined) prepared.introspection.set(opKey, (introspection = operation.operation === 'query' && isIntrospectionOnly(prepared.document!, operation.selectionSet.selections)))
    return send(reply, nothingAnswered && result.errors?.length ? withRetryAfter(reply, result.errors, 200) : 200, mediaType, body, introspection)
  }

  wsScope.route({
    method: 'GET',
    url: '/graphql',
    wsHandler,
    handler: async (request, reply) => {
      const q = request.query as Record<string, unknown>
      // With the playground off (production), a browser's ?query= is answered as GraphQL over HTTP.
      if (prefersHtml(request.headers.accept) && (q.query === undefined || holder.current.config.graphql.playground)) {
        if (!holder.current.config.graphql.playground) {
          return sendError(reply, new RouteNotFoundError(request.method, '/graphql (the playground is disabled)'))
        }
        return reply
          .type('text/html; charset=utf-8')
          .header('content-security-policy', `${playgroundContentSecurityPolicy({ endpoint: '/graphql', subscriptionEndpoint: '/graphql' })}; frame-ancestors 'none'`)
          .send(renderPlaygroundHtml({ endpoint: '/graphql', subscriptionEndpoint: '/graphql', assetsPrefix: PLAYGROUND_ASSETS_PREFIX, title: 'Tributary', defaultQuery: playgroundQuery(holder.current.schema, holder.current.operations), initial: playgroundLink(q), ...(holder.current.config.console.enabled ? { consoleUrl: '/console' } : {}) }))
      }
      const variables = parseJsonParam(q.variables, 'variables')
      if (!variables.ok) return malformed(reply, variables.message)
      const extensions = parseJsonParam(q.extensions, 'extensions')
      if (!extensions.ok) return malformed(reply, extensions.message)
      return handle(request, reply, { query: q.query, variables: variables.value, operationName: q.operationName, extensions: extensions.value, documentId: q.documentId }, 'GET')
    },
  })

  registerGraphQLMultipart(app, holder.current.config.server.bodyLimit)
  // A body the early path read and handed over is given to fastify's parser as the request's payload.
  const preParsing: preParsingHookHandler = (request, _reply, payload, done) => {
    const raw = request.raw as EarlyMarked
    const body = raw[kEarlyBody]
    if (body === undefined) return done(null, payload)
    raw[kEarlyBody] = undefined
    done(null, Readable.from([body], { objectMode: false }))
  }
  app.post('/graphql', { preParsing }, async (request, reply) => {
    // A multipart body got here only through graphql-multipart.ts, which demands a CSRF preflight header.
    const refused = isMultipartRequest(request) ? undefined : refuseNonJsonBody(request, reply, 'the GraphQL request')
    if (refused) return refused
    const body = request.body
    if (Array.isArray(body) && holder.current.config.graphql.batching.maxOperations) return batch(request, reply, body)
    if (!body || typeof body !== 'object' || Array.isArray(body)) return malformed(reply, 'The body must be a JSON object {query, variables?, operationName?, extensions?}')
    return handle(request, reply, body as GraphQLParams, 'POST')
  })

  /**
   * A batch (`graphql.batching.maxOperations` > 0): a JSON array of requests, run one after the
   * other with every check of a single request (auth, limits, persisted operations, rate limit per
   * operation), answered 200 with the array of their bodies in order. An empty array or one longer
   * than the bound is a 400 `TRB_ERR_GRAPHQL_REQUEST`, refused before any element is read.
   */
  async function batch(request: FastifyRequest, reply: FastifyReply, body: unknown[]) {
    const max = holder.current.config.graphql.batching.maxOperations!
    if (body.length === 0 || body.length > max) return malformed(reply, `A batch holds 1 to ${max} operations (graphql.batching.maxOperations); got ${body.length}`)
    const mediaType = negotiate(request.headers.accept)
    if (!mediaType) return handle(request, reply, {}, 'POST')
    const answers: string[] = []
    for (let i = 0; i < body.length; i++) {
      const one = capturingReply(reply)
      const element = body[i]
      try {
        const limited = i > 0 && limitOperation ? await limitOperation(request) : undefined
        if (limited) sendError(one, limited)
        else if (!element || typeof element !== 'object' || Array.isArray(element)) malformed(one, 'Each element of a batch must be a JSON object {query, variables?, operationName?, extensions?}')
        else await handle(request, one, element as GraphQLParams, 'POST')
      } catch (err) {
        if (isTributaryError(err)) sendError(one, err)
        else {
          const id = randomUUID()
          request.log.error({ err, errorId: id }, 'internal error')
          sendError(one, new InternalError(id), 500)
        }
      }
      answers.push(one.captured)
    }
    return reply.code(200).type(`${mediaType}; charset=utf-8`).send(limitResponse(reply, `[${answers.join(',')}]`))
  }

  /**
   * The early plan of one operation of a prepared document (see {@link EarlyGraphQL}), made once:
   * null when the operation is not a query, selects introspection only, takes `@fromClaim`
   * variables, or has neither a direct plan nor a graphql-jit compilation.
   */
  function earlyPlan(prepared: Prepared, gateway: GatewayHolder['current'], operationName: string | undefined): EarlyPlan | null {
    prepared.early ??= new Map()
    const key = operationName ?? ''
    let plan = prepared.early.get(key)
    if (plan !== undefined) return plan
    const document = prepared.document!
    const operation = getOperationAST(document, operationName)
    // An unknown name is not remembered: only the document's own operations are keys (bounded by its size).
    if (!operation) return null
    plan = null
    const rules = prepared.rules?.get(operation.name?.value ?? '')
    if (operation.operation === 'query' && !(rules && Object.keys(rules.fromClaim).length) && !isIntrospectionOnly(document, operation.selectionSet.selections)) {
      const direct = directPlanOf(prepared, gateway.schema, operation, key)
      const jit = direct ? undefined : prepared.jitSafe ? compiledFor(prepared, gateway.schema, operationName) : undefined
      if (direct || jit) plan = { operation, kind: direct ? 'direct' : 'jit', direct, jit: jit ?? null, rules }
    }
    prepared.early.set(key, plan)
    return plan
  }

  const mediaTypes = new Map<string, string | null>()
  /** {@link negotiate}, remembered for the commonest `Accept` headers (at most {@link EARLY_ACCEPT_KEYS}). */
  const mediaTypeOf = (accept: string | undefined): string | null => {
    if (accept === undefined) return JSON_TYPE
    let type = mediaTypes.get(accept)
    if (type === undefined) {
      type = negotiate(accept)
      if (mediaTypes.size < EARLY_ACCEPT_KEYS && accept.length <= 256) mediaTypes.set(accept, type)
    }
    return type
  }

  const early: EarlyGraphQL = (req, res, fallback) => {
    const h = req.headers
    if (h.cookie !== undefined || h.upgrade !== undefined || h['transfer-encoding'] !== undefined) return false
    const type = h['content-type']
    if (type !== JSON_TYPE && type !== 'application/json; charset=utf-8') return false
    const length = Number(h['content-length'])
    const gateway = holder.current
    if (!(length > 0 && length <= EARLY_GRAPHQL_BODY_BYTES && length <= gateway.config.server.bodyLimit) || gateway.hooks !== null) return false
    const mediaType = mediaTypeOf(h.accept)
    if (mediaType === null) return false
    let auth: AuthInfo | null = null
    if (gateway.jwt) {
      const known = gateway.jwt.known(h)
      if (known === undefined) return false // a token to verify: the route's
      auth = known
    }
    if (auth === null && gateway.config.auth.graphql === 'authenticated') return false
    const started = performance.now()
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk)
      size += chunk.length
    }
    req.on('data', onData)
    // A client that goes away before its body is in gets nothing (as on the route).
    req.once('error', () => req.removeListener('data', onData))
    req.once('end', () => {
      req.removeListener('data', onData)
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
      const handOver = (run?: EarlyGraphQLRun): void => {
        tally.handedOver++
        const marked = req as EarlyMarked
        marked[kEarlyBody] = body
        if (run) marked[kEarlyRun] = run
        fallback(req, res)
      }
      try {
        // The served gateway was swapped (`app.tributary.swap`) while the body came in: the route runs it on the new one.
        if (holder.current !== gateway) return handOver()
        runEarly(req, res, gateway, body, mediaType, auth, started, handOver)
      } catch (err) {
        // Never the client's answer: the route answers the request as it would have.
        app.log.error({ err }, 'answering /graphql early failed; the route answers it')
        if (!res.headersSent) handOver()
      }
    })
    return true
  }

  /**
   * The {@link EarlyBody} of a request body's text: remembered, or parsed and checked now (and
   * remembered when at most {@link EARLY_BODY_CHARS} long); null when the route must answer it.
   */
  function earlyBodyOf(text: string, gateway: GatewayHolder['current']): EarlyBody | null {
    if (bodiesVersion !== holder.version) {
      bodies.clear()
      bodiesVersion = holder.version
    }
    const known = bodies.get(text)
    if (known !== undefined) return known
    let params: unknown
    try {
      params = parseJsonSafely(text)
    } catch {
      return null // the route's 400
    }
    if (params === null || typeof params !== 'object' || Array.isArray(params)) return null
    const { query, variables, operationName, extensions, documentId } = params as GraphQLParams
    if (typeof query !== 'string' || (extensions !== undefined && extensions !== null) || documentId !== undefined || paramsProblem(params as GraphQLParams)) return null
    if (persisted.enforced && !persisted.allowsText(query)) return null
    const prepared = prepare(query)
    if (prepared.errors) return null
    const name = (operationName ?? undefined) as string | undefined
    const plan = earlyPlan(prepared, gateway, name)
    if (plan === null) return null
    const vars = (variables ?? undefined) as Record<string, unknown> | undefined
    const key = name ?? ''
    if (requestLimitError(gateway, prepared, plan.operation, key, vars)) return null
    prepared.label ??= plan.operation.name && persisted.allowsText(query) ? plan.operation.name.value : '(graphql)'
    const entry: EarlyBody = { prepared, plan, key, vars: vars && deepFreeze(vars), trafficName: graphqlTrafficName(operationName) }
    if (text.length <= EARLY_BODY_CHARS) {
      if (bodies.size >= EARLY_BODIES) bodies.clear()
      bodies.set(text, entry)
    }
    return entry
  }

  /** The body of {@link early}, once the request body is in. */
  function runEarly(req: IncomingMessage, res: ServerResponse, gateway: GatewayHolder['current'], body: Buffer, mediaType: string, auth: AuthInfo | null, started: number, handOver: (run?: EarlyGraphQLRun) => void): void {
    const known = earlyBodyOf(body.toString('utf8'), gateway)
    if (known === null) return handOver()
    const { prepared, plan, key, vars, trafficName } = known
    if (plan.rules) {
      try {
        authorize(plan.rules, auth, `operation ${plan.operation.name?.value ?? '(anonymous)'}`)
      } catch {
        return handOver() // 401/403: the route's
      }
    }
    const maxBytes = gateway.config.server.maxResponseBytes
    const h = req.headers
    const context: Latin1Context & Record<string, unknown> = { reply: { raw: res, request: { headers: h } }, headers: h, cluster: holder.cluster, resultBudget: resultBudget(maxBytes), auth, latin1Json: plan.direct?.roots === 1 && !plan.direct.upstream }
    // `run` a string: the data a direct plan answered now (runNow); its run is made only to hand it over.
    const send = (payload: string, run: EarlyGraphQLRun | string): void => {
      // Over a third of server.maxResponseBytes, the route's size check answers it.
      if (payload.length <= maxBytes / 3) {
        const latin1 = context.latin1Used === true
        try {
          res.writeHead(200, ['content-type', `${mediaType}; charset=utf-8`, 'content-length', String(latin1 ? payload.length : Buffer.byteLength(payload))])
          res.end(latin1 ? Buffer.from(payload, 'latin1') : payload)
          tally.answered++
          const ms = performance.now() - started
          // As the route's hooks count: the metrics' onResponse hook, the console's traffic hook (only when they are on).
          const { metrics, traffic } = observers
          if (metrics && gateway.config.metrics.enabled) {
            metrics.countRequest('/graphql', 'POST', 200)
            metrics.operationSeconds(prepared.label!).observe(ms / 1000)
          }
          if (gateway.config.console.enabled) traffic?.operation(trafficName, ms, false)
          return
        } catch (err) {
          app.log.error({ err }, 'answering /graphql early failed; the route answers it')
          if (res.headersSent) return
        }
      }
      handOver(typeof run === 'string' ? { prepared, key, context, direct: Promise.resolve(run) } : run)
    }
    const fail = (run: EarlyGraphQLRun) => () => handOver(run)
    if (plan.kind === 'direct') {
      // SQLite with an idle connection: answered within this call (DirectOperation.runNow).
      const now = plan.direct!.runNow?.(vars, context)
      if (now !== undefined) return typeof now === 'string' ? send(`{"data":${now}}`, now) : handOver({ prepared, key, context, direct: Promise.resolve(now) })
      const run: EarlyGraphQLRun = { prepared, key, context, direct: plan.direct!.run(vars, context) }
      run.direct!.then((data) => (typeof data === 'string' ? send(`{"data":${data}}`, run) : handOver(run)), fail(run))
      return
    }
    const run: EarlyGraphQLRun = { prepared, key, context, executed: Promise.resolve(plan.jit!.query(undefined, context, vars)) }
    run.executed!.then((result) => (result.errors?.length || !('data' in result) || result.data == null ? handOver(run) : send(JSON.stringify({ data: result.data }), run)), fail(run))
  }

  return early

}

/**
 * What is wrong with the types of a request's `variables` (an object), `operationName` (a string)
 * or `extensions` (an object), each optional; undefined when nothing is. The route answers it as a
 * malformed request (400 `TRB_ERR_GRAPHQL_REQUEST`); the early path hands such a request to it.
 */
function paramsProblem(params: GraphQLParams): string | undefined {
  const { variables, operationName, extensions } = params
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return 'variables must be an object'
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return 'operationName must be a string'
  if (extensions !== undefined && extensions !== null && (typeof extensions !== 'object' || Array.isArray(extensions))) return 'extensions must be an object'
  return undefined
}

/** The direct JSON plan of operation `key` of a prepared document, compiled on first use and kept with it; null when there is none. */
function directPlanOf(prepared: Prepared, schema: GraphQLSchema, operation: OperationDefinitionNode, key: string): DirectOperation | null {
  prepared.direct ??= new Map()
  let direct = prepared.direct.get(key)
  if (direct === undefined) prepared.direct.set(key, (direct = compileDirectOperation(schema, prepared.document!, operation)))
  return direct
}

/**
 * The per-request limits of `/graphql` on one operation of a prepared document (the document's own
 * limits were checked by `prepare`): the variables' depth (`graphql.maxInputDepth`), then the cost
 * with these variables, filters included, against `graphql.maxCost` (the cost plan built on first
 * use and kept with the document). Returns the first error, or undefined within every limit.
 */
function requestLimitError(gateway: GatewayHolder['current'], prepared: Prepared, operation: OperationDefinitionNode, key: string, variables: Record<string, unknown> | undefined): GraphQLError | undefined {
  const limits = gateway.config.graphql
  if (variables) {
    const tooDeep = checkVariablesDepth(variables, limits.maxInputDepth)
    if (tooDeep) return tooDeep
  }
  prepared.cost ??= new Map()
  let costPlan = prepared.cost.get(key)
  if (!costPlan) prepared.cost.set(key, (costPlan = buildCostPlan(gateway.schema, prepared.document!, operation, limits.defaultListSize)))
  return checkCost(costPlan.cost(variables) + filterCost(gateway.schema, prepared.document!, operation, limits.defaultListSize, variables), limits.maxCost) ?? undefined
}

/**
 * The run {@link EarlyGraphQL} made for this request, when it is of this prepared document and
 * operation name (taken once); undefined otherwise (none, or the schema was swapped in between).
 */
function takeEarlyRun(request: FastifyRequest, prepared: Prepared, key: string): EarlyGraphQLRun | undefined {
  const raw = request.raw as EarlyMarked
  const run = raw[kEarlyRun]
  if (run === undefined) return undefined
  raw[kEarlyRun] = undefined
  return run.prepared === prepared && run.key === key ? run : undefined
}
