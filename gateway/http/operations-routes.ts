/**
 * `/operations/*` and the custom REST routes of the config: stored operations served as REST
 * endpoints (docs/architecture.md §5). No GraphQL is parsed or validated at request time: variables are
 * coerced and checked by ajv, the operation runs through graphql-jit, and the data object is
 * serialised by fast-json-stringify from the operation's response schema.
 */
import { hash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { limitResponse } from './response-limit.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from 'graphql'
import type { CompiledOperation, Variables, VariablesError } from '../operations/compile.js'
import type { DirectFailure } from '../operations/direct-plan.js'
import { codedGraphQLError, codesOf, formatGraphQLErrors, sendError, setRetryAfter, withRetryAfter } from './format-error.js'
import { checkCsrf, identityOf } from './auth.js'
import type { AuthInfo } from '../auth/jwt.js'
import { authorize } from '../auth/directives.js'
import { AuthInvalidError, BadRequestError, CapacityError, DbNotFoundError, OperationMethodError, OperationNotFoundError, recordErrorCode } from '../errors.js'
import { refuseNonJsonBody } from './json-body.js'
import type { GatewayHolder } from './gateway-holder.js'
import type { EarlyGraphQL } from './graphql-endpoint.js'
import { LivePollers } from './live.js'
import { SharedEventStreams, type EventStreamMember, type EventStreamSource } from './shared-event-streams.js'
import { sharingKey } from './shared-subscriptions.js'
import { resultBudget } from '../result-budget.js'
import { deepFreeze } from '../deep-freeze.js'
import { ResponseCache, operationTags, type CacheLookup, type CachePolicy } from '../cluster/response-cache.js'
import { activity, observeOperation, observers } from '../observability/probes.js'
import { hookFailure, runHook, type OperationHookArgs, type OperationHooks, type OperationPostHookArgs, type OperationResponse, type ResolvedHooks } from '../hooks/index.js'

type Query = Record<string, string | string[] | undefined>

declare module 'fastify' {
  interface FastifyInstance {
    /** The live-query pollers of `/operations/*?live=true`: `size` is the number running (one per operation + variables + credentials). */
    livePollers: LivePollers
    /** The shared response cache of `# @cache` queries (its in-process copy: `localSize`). */
    responseCache: ResponseCache
    /**
     * Stored database queries run before fastify (README "Stored operations before fastify"): answered
     * there, or handed to the route with their result; `memoised()`: the query strings whose variables
     * are remembered, over every operation (at most 1,000 per operation).
     */
    earlyDirect: { answered: number; handedOver: number; memoised: () => number }
  }
}

function json(reply: FastifyReply, status: number, body: { errors?: GraphQLFormattedError[]; data?: unknown }) {
  setRetryAfter(reply, codesOf(body.errors))
  return reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(limitResponse(reply, JSON.stringify(body)))
}

/** Bodies from this many UTF-16 units on are hashed natively ({@link weakEtag}). */
const NATIVE_HASH_FROM = 1024

/**
 * A weak ETag of a body (RFC 9110 §8.8.3): `W/"<length in base 36>-<hash>"`, deterministic for a body.
 * `bytes`: the body already encoded as UTF-8, hashed instead of encoding it again (the same ETag).
 * A weak validator needs no cryptographic strength. Short bodies take cyrb53 (a public-domain 53-bit
 * string hash, as two base-36 numbers `<31 bits>-<22 bits>`), about 0.2 µs for 120 characters where a
 * native call costs 1–2 µs under load; from {@link NATIVE_HASH_FROM} units on, SHA-1 through `crypto.hash` (base64url), one native
 * call that beats the JS loop (7.1 µs against 10.3 µs on a 6 KB body).
 */
export function weakEtag(body: string, bytes?: Buffer): string {
  if (body.length >= NATIVE_HASH_FROM) return `W/"${body.length.toString(36)}-${hash('sha1', bytes ?? body, 'base64url')}"`
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < body.length; i++) {
    const ch = body.charCodeAt(i)
    h1 = Math.imul(h1 ^ ch, 2654435761)
    h2 = Math.imul(h2 ^ ch, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  // The 53 bits as two small integers (31 + 22 bits), each printed in base 36: V8 prints a 53-bit
  // double in a radix through a loop of fmod calls. 7.0 k instructions per call before, 4.3 k now
  // (bench/price-pieces.mjs etag-old, etag-new).
  return `W/"${body.length.toString(36)}-${(h1 >>> 1).toString(36)}-${(h2 & 0x3fffff).toString(36)}"`
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const bare = etag.replace(/^W\//, '')
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === bare)
}

/** Cache-Control of a successful GET (ANCHORS: WunderGraph defaults; private when the request carries credentials). */
function cacheControl(op: CompiledOperation, request: FastifyRequest): string {
  const credentialed = request.headers.authorization !== undefined || request.headers.cookie !== undefined
  let values = cacheControlValues.get(op)
  if (!values) cacheControlValues.set(op, (values = [cacheControlValue(op, false), cacheControlValue(op, true)]))
  return values[credentialed ? 1 : 0]
}

/** The two Cache-Control values of an operation (anonymous, credentialed), computed once. */
const cacheControlValues = new WeakMap<CompiledOperation, [string, string]>()

function cacheControlValue(op: CompiledOperation, credentialed: boolean): string {
  const c = op.stored.directives.cache
  if (!c) return `${credentialed ? 'private' : 'public'}, max-age=0, must-revalidate`
  const parts = [credentialed || !c.public ? 'private' : 'public', `max-age=${c.maxAge}`]
  if (c.staleWhileRevalidate !== undefined) parts.push(`stale-while-revalidate=${c.staleWhileRevalidate}`)
  if (c.mustRevalidate) parts.push('must-revalidate')
  return parts.join(', ')
}

/** ajv says `must be integer,null`; clients read `must be integer or null`. */
function readableMessage(message: string): string {
  return message.replace(/^must be ([a-z]+(?:,[a-z]+)+)$/, (_m, list: string) => `must be ${list.split(',').join(' or ')}`)
}

function variablesProblem(reply: FastifyReply, err: VariablesError) {
  recordErrorCode('TRB_ERR_OPERATION_VARIABLES')
  return json(reply, 400, {
    errors: err.problems.map((p) => ({
      message: `Variable "${p.path.slice(1).replace(/\//g, '.') || p.variable}" ${readableMessage(p.message)}`,
      path: p.path ? p.path.slice(1).split('/') : undefined,
      extensions: { code: 'TRB_ERR_OPERATION_VARIABLES', variable: p.variable, instancePath: p.path, schemaPath: p.schemaPath },
    })),
  })
}

/** The shared response cache of an app and the tags of its operations. */
interface CacheState {
  cache: ResponseCache
  tags: WeakMap<CompiledOperation, string[]>
}

function tagsOf(op: CompiledOperation, holder: GatewayHolder, state: CacheState): string[] {
  let tags = state.tags.get(op)
  if (!tags) {
    // A TypeScript operation's reads are unknown: its cached answers expire by maxAge only.
    tags =
      op.stored.language === 'graphql'
        ? operationTags(holder.current.schema, op.stored.document, op.stored.operation, holder.current.sources.map((s) => s.namespace))
        : [`operation:${op.name}`]
    state.tags.set(op, tags)
  }
  return tags
}

/** The `# @cache` policy of a query that the shared cache stores (maxAge above 0), else undefined. */
function cachePolicy(op: CompiledOperation): CachePolicy | undefined {
  const c = op.kind === 'query' ? op.stored.directives.cache : undefined
  return c && c.maxAge > 0 ? c : undefined
}

/** Re-runs a stale cached query in the background (one instance at a time) and stores the new body. */
async function revalidate(op: CompiledOperation, variables: Variables, request: FastifyRequest, holder: GatewayHolder, state: CacheState, lookup: CacheLookup, policy: CachePolicy, auth: AuthInfo | null): Promise<void> {
  if (!(await state.cache.claimRevalidation(lookup))) return
  try {
    const result = await op.execute(variables, { request, headers: request.headers, cluster: holder.cluster, resultBudget: resultBudget(holder.current.config.server.maxResponseBytes), auth })
    if (!result.errors?.length) {
      const body = op.stringifyData(result.data ?? {})
      await state.cache.store(lookup, body, weakEtag(body), policy)
    }
  } catch (err) {
    request.log.warn({ err, operation: op.name }, 'revalidating a cached response failed')
  } finally {
    await state.cache.endRevalidation(lookup)
  }
}

/**
 * Runs a query or mutation and sends its data (200), its errors (4xx/5xx) or 304; serves and fills the
 * shared cache (keyed by the credential headers, so by identity too: `auth` never crosses callers).
 */
async function respond(op: CompiledOperation, variables: Variables, request: FastifyRequest, reply: FastifyReply, holder: GatewayHolder, notFoundWhenNull: boolean, state: CacheState, auth: AuthInfo | null) {
  const policy = cachePolicy(op)
  let lookup: CacheLookup | null = null
  if (policy) {
    lookup = await state.cache.lookup(op.stored.source, variables, request.headers, tagsOf(op, holder, state), policy)
    if (lookup?.entry) {
      reply.header('x-tributary-cache', lookup.state === 'fresh' ? 'hit' : 'stale').header('age', String(Math.max(0, Math.floor((Date.now() - lookup.entry.storedAt) / 1000))))
      if (lookup.state === 'stale') void revalidate(op, variables, request, holder, state, lookup, policy, auth)
      return sendData(op, lookup.entry.body, request, reply, lookup.entry.etag)
    }
    reply.header('x-tributary-cache', 'miss')
  }
  const fill = lookup && policy ? (body: string) => void state.cache.store(lookup, body, weakEtag(body), policy) : undefined
  // What answerEarly already ran for this request (then handed here): answered, not run again.
  const early = takeEarly(request, op)
  const context = { reply, request, headers: request.headers, cluster: holder.cluster, resultBudget: resultBudget(holder.current.config.server.maxResponseBytes), auth }
  // Database-only queries: the SQL already produced the body. A custom route needs the data object
  // to tell a missing row, so it takes the normal path.
  if (op.direct && !notFoundWhenNull) {
    const body = await (early?.result ?? op.direct.runValidated(variables, context))
    if (typeof body === 'string') {
      fill?.(body)
      return sendData(op, body, request, reply)
    }
    if (body !== null) {
      // The statement failed once sent (a timeout, a cancellation...): reported, never run again.
      // Or a link value failed (`data` set): answered as GraphQL execution's partial result is.
      const { errors, status, critical } = formatGraphQLErrors(body.errors, { mode: holder.current.config.mode, logger: request.log })
      const data = critical ? undefined : body.data
      if (data) return json(reply, status, { errors, data })
      return json(reply, withRetryAfter(reply, body.errors, status), { errors, data: null })
    }
  }
  const result = await (early?.executed ?? op.execute(variables, context))
  // A mutation invalidates the cached queries that read what it touched, before its answer leaves.
  if (op.kind === 'mutation' && result.data) {
    await state.cache.invalidate(tagsOf(op, holder, state)).catch((err: unknown) => request.log.error({ err, operation: op.name }, 'invalidating cached responses failed'))
  }
  if (result.errors?.length) {
    const { errors, status, critical } = formatGraphQLErrors(result.errors, { mode: holder.current.config.mode, logger: request.log })
    const body: { errors: GraphQLFormattedError[]; data?: unknown } = { errors }
    const data = critical ? null : result.data
    if (data) body.data = data
    return json(reply, data ? status : withRetryAfter(reply, result.errors, status), body)
  }
  // A TypeScript operation may answer null (or any JSON value); a GraphQL data object is never null here.
  const data = result.data === undefined ? {} : result.data
  if (notFoundWhenNull && foundNothing(data)) return notFound(request, reply)
  const body = op.stringifyData(data)
  fill?.(body)
  return sendData(op, body, request, reply)
}

/**
 * Answers a query or mutation that has hooks (README "Hooks"), in their order: `mockResolve` when
 * enabled (and nothing else), `preResolve`, `mutatingPreResolve` (its input checked again against
 * the variables schema), `customResolve`, the operation, `postResolve`, `mutatingPostResolve`.
 * Without a post hook the operation runs as {@link respond} runs it (shared cache, direct SQL plan);
 * with one, it runs through graphql-jit and its answer is neither read from nor stored in the shared
 * cache, so that the hook sees and may change every answer.
 * @throws HookError / HookTimeoutError (500) from a hook; the auth errors of `op.authorize`.
 */
async function respondHooked(op: CompiledOperation, hooks: OperationHooks, resolved: ResolvedHooks, variables: Variables, request: FastifyRequest, reply: FastifyReply, holder: GatewayHolder, notFoundWhenNull: boolean, state: CacheState, auth: AuthInfo | null) {
  const args: OperationHookArgs = { operationName: op.name, input: variables, user: auth, clientRequest: { method: request.method, url: request.url, headers: request.headers }, log: request.log, context: {} }
  const mock = hooks.mockResolve
  if (mock && (mock.enabled ?? !resolved.production)) return sendHookResponse(op, checkedResponse(resolved, `mockResolve of ${op.name}`, await runHook(resolved, `mockResolve of ${op.name}`, mock.handler, args)), request, reply, 500, notFoundWhenNull)
  if (hooks.preResolve) await runHook(resolved, `preResolve of ${op.name}`, hooks.preResolve, args)
  if (hooks.mutatingPreResolve) {
    const what = `mutatingPreResolve of ${op.name}`
    const input = await runHook(resolved, what, hooks.mutatingPreResolve, args)
    try {
      if (input === null || input === undefined) throw hookFailure(resolved, what, 'it must return the input, an object of variables')
      args.input = op.variablesFromBody(input)
    } catch (err) {
      if ((err as { code?: string }).code !== 'TRB_ERR_OPERATION_VARIABLES') throw err
      const problems = (err as VariablesError).problems.map((p) => `${p.path.slice(1).replace(/\//g, '.') || p.variable || 'input'} ${readableMessage(p.message)}`).join('; ')
      throw hookFailure(resolved, what, `the input it returned does not fit the variables schema: ${problems}`)
    }
  }
  if (hooks.customResolve) {
    const what = `customResolve of ${op.name}`
    const answer = await runHook(resolved, what, hooks.customResolve, args)
    if (answer !== null && answer !== undefined) return sendHookResponse(op, checkedResponse(resolved, what, answer), request, reply, 500, notFoundWhenNull)
  }
  const vars = op.authorize(args.input, auth)
  if (!hooks.postResolve && !hooks.mutatingPostResolve) return respond(op, vars, request, reply, holder, notFoundWhenNull, state, auth)
  const result = await op.execute(vars, { reply, request, headers: request.headers, cluster: holder.cluster, resultBudget: resultBudget(holder.current.config.server.maxResponseBytes), auth })
  if (op.kind === 'mutation' && result.data) {
    await state.cache.invalidate(tagsOf(op, holder, state)).catch((err: unknown) => request.log.error({ err, operation: op.name }, 'invalidating cached responses failed'))
  }
  let response: OperationResponse = { data: result.data ?? null }
  let status = 200
  if (result.errors?.length) {
    const formatted = formatGraphQLErrors(result.errors, { mode: holder.current.config.mode, logger: request.log })
    status = withRetryAfter(reply, result.errors, formatted.status)
    response = { data: formatted.critical ? null : (result.data ?? null), errors: formatted.errors as OperationResponse['errors'] }
  }
  const post: OperationPostHookArgs = { ...args, response }
  if (hooks.postResolve) await runHook(resolved, `postResolve of ${op.name}`, hooks.postResolve, post)
  if (hooks.mutatingPostResolve) {
    const what = `mutatingPostResolve of ${op.name}`
    response = checkedResponse(resolved, what, await runHook(resolved, what, hooks.mutatingPostResolve, post))
  }
  return sendHookResponse(op, response, request, reply, status === 200 ? 500 : status, notFoundWhenNull)
}

/**
 * True for the answer of a custom route that found nothing: `null`, or an object whose every root
 * field is null (README "HTTP contract" → "Custom routes"). An empty object found nothing either.
 */
function foundNothing(data: unknown): boolean {
  return data === null || data === undefined || (typeof data === 'object' && !Array.isArray(data) && Object.values(data).every((v) => v === null))
}

/** 404 `TRB_ERR_DB_NOT_FOUND` for a custom route that found nothing (whatever path produced the answer: SQL, graphql-jit, a hook). */
function notFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, new DbNotFoundError('matching', `${request.method} ${request.url}`))
}

/** A hook's response, checked: an object with `data` and/or an `errors` array of `{ message }`. @throws HookError */
function checkedResponse(resolved: ResolvedHooks, what: string, response: unknown): OperationResponse {
  const r = response as OperationResponse | null
  const ok = r !== null && typeof r === 'object' && !Array.isArray(r) && ('data' in r || 'errors' in r)
    && (r.errors === undefined || (Array.isArray(r.errors) && r.errors.every((e) => e !== null && typeof e === 'object' && typeof e.message === 'string')))
  if (!ok) throw hookFailure(resolved, what, 'it must return a response { data?, errors? }')
  return r
}

/**
 * Sends the response of a hook: its data object as a successful answer (200, ETag on GET), or
 * `{ errors, data? }` with 200 when it carries data, else `errorStatus`. On a custom route
 * (`notFoundWhenNull`), an answer without errors that found nothing is 404 `TRB_ERR_DB_NOT_FOUND`.
 */
function sendHookResponse(op: CompiledOperation, response: OperationResponse, request: FastifyRequest, reply: FastifyReply, errorStatus: number, notFoundWhenNull: boolean) {
  if (!response.errors?.length) {
    if (notFoundWhenNull && foundNothing(response.data)) return notFound(request, reply)
    return sendData(op, JSON.stringify(response.data ?? null), request, reply)
  }
  const body: { errors: GraphQLFormattedError[]; data?: unknown } = { errors: response.errors as GraphQLFormattedError[] }
  if (response.data !== undefined && response.data !== null) body.data = response.data
  return json(reply, body.data ? 200 : errorStatus, body)
}

/**
 * Sends a successful data object: ETag and Cache-Control for GET (304 on a match), no-store otherwise.
 * `storedEtag`: the ETag stored with a cached body (the {@link weakEtag} of that body), not computed again.
 */
function sendData(op: CompiledOperation, body: string, request: FastifyRequest, reply: FastifyReply, storedEtag?: string) {
  if (request.method === 'GET' || request.method === 'HEAD') {
    const etag = storedEtag ?? weakEtag(body)
    reply.header('etag', etag).header('cache-control', cacheControl(op, request))
    if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send()
  } else {
    reply.header('cache-control', 'no-store')
  }
  return reply.code(200).type('application/json; charset=utf-8').send(limitResponse(reply, body))
}

/** An open Server-Sent Events response: `send` writes one `data:` event (no-op once closed). */
type SseStream = EventStreamMember

/**
 * Events one Server-Sent Events connection may have waiting in the server's memory (written while
 * the socket's buffer was full, not yet taken by the client): one more closes the stream with a
 * last `data:` event carrying `TRB_ERR_CAPACITY`, counted in `tributary_event_streams_slow_closed_total`.
 * A client that does not read cannot make the gateway buffer events without end.
 */
export const MAX_WAITING_SSE_EVENTS = 1000

/**
 * Takes over the response and starts a `text/event-stream` (HTML Living Standard §9.2): a comment
 * line at once (so proxies and clients see the stream open), a `: ping` comment every 15 s, one
 * `data:` line per event. A client that disconnects closes the stream (socket `close`).
 * @returns undefined when `open` already holds `server.maxEventStreams` streams: the request was then
 *   answered 503 `TRB_ERR_CAPACITY` with `Retry-After: 5`, and nothing was started
 */
function startSse(request: FastifyRequest, reply: FastifyReply, open: Set<SseStream>, holder: GatewayHolder): SseStream | undefined {
  const max = holder.current.config.server.maxEventStreams
  if (open.size >= max) {
    reply.header('retry-after', '5')
    void sendError(reply, new CapacityError(`${max} event streams are open (server.maxEventStreams); retry later`))
    return undefined
  }
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    // A stream is not worth keeping the socket for: once it ends, the socket goes too (so neither a
    // client pool nor the server's close() waits on a half-idle connection).
    connection: 'close',
    'x-accel-buffering': 'no',
  })
  res.write(': stream opened\n\n')
  const heartbeat = setInterval(() => res.write(': ping\n\n'), 15_000)
  heartbeat.unref()
  const closers: (() => void)[] = []
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    open.delete(stream)
    clearInterval(heartbeat)
    for (const fn of closers) {
      try {
        fn()
      } catch (err) {
        request.log.error({ err }, 'closing an event stream failed')
      }
    }
    if (!res.writableEnded) res.end()
    if (left) res.destroy()
  }
  // The response's `close` fires when the client goes away (or after `end()`); the request's
  // `close` can fire as soon as its (empty) body is read, so it is not a disconnect signal.
  let left = false
  const gone = () => {
    left = true
    close()
  }
  res.on('close', gone)
  res.on('error', gone)
  // Events written since the socket's buffer filled (write() returned false); 'drain' empties it.
  let waiting = 0
  res.on('drain', () => (waiting = 0))
  const stream: SseStream = {
    send(payload) {
      if (closed) return
      if (waiting >= MAX_WAITING_SSE_EVENTS) {
        activity.slowEventStreamsClosed++
        const err = codedGraphQLError(new CapacityError(`the client left ${MAX_WAITING_SSE_EVENTS} events unread (MAX_WAITING_SSE_EVENTS); the stream is closed`))
        const { errors } = formatGraphQLErrors([err], { mode: holder.current.config.mode, logger: request.log })
        res.write(`data: ${JSON.stringify({ errors })}\n\n`)
        close()
        // Ended: a client that reads again gets the events and the error; one that does not is cut
        // after 5 s, so that what is buffered is freed.
        const cut = setTimeout(() => res.destroy(), 5000)
        cut.unref()
        res.once('close', () => clearTimeout(cut))
        return
      }
      if (!res.write(`data: ${payload}\n\n`) || waiting > 0) waiting++
    },
    close,
    onClose(fn) {
      if (closed) fn()
      else closers.push(fn)
    },
  }
  open.add(stream)
  return stream
}

/**
 * Streams a subscription as Server-Sent Events: one `data:` event of JSON `{data, errors?}` per
 * result. Equal subscriptions share one execution (./shared-event-streams.ts) unless
 * `graphql.shareSubscriptions` is off. When the last client of a stream leaves, the source iterator
 * is returned (its `finally` blocks run) and `context.signal` is aborted, so upstream resources are
 * released.
 */
function streamSubscription(op: CompiledOperation, variables: Variables, request: FastifyRequest, reply: FastifyReply, holder: GatewayHolder, open: Set<SseStream>, auth: AuthInfo | null, shared: SharedEventStreams) {
  const stream = startSse(request, reply, open, holder)
  if (!stream) return
  closeAtExpiry(stream, auth, holder, request)
  activity.subscriptions++
  stream.onClose(() => activity.subscriptions--)
  const { mode, graphql } = holder.current.config
  const source: EventStreamSource = {
    start: (signal) => op.subscribe(variables, { request, headers: request.headers, signal, cluster: holder.cluster, auth }),
    format(r) {
      const out: { data?: unknown; errors?: GraphQLFormattedError[] } = { data: r.data }
      if (r.errors?.length) out.errors = formatGraphQLErrors(r.errors, { mode, logger: request.log }).errors
      return JSON.stringify(out)
    },
    formatError: (err) => JSON.stringify({ errors: formatGraphQLErrors([toGraphQLError(err)], { mode, logger: request.log }).errors }),
  }
  // Variables, claims and headers are what can change a result (header templates forward headers).
  const key = graphql.shareSubscriptions ? JSON.stringify([holder.version, op.name, variables, sharingKey(auth?.claims ?? null, request.headers)]) : undefined
  shared.join(key, stream, source)
}

/**
 * Ends an event stream when its token expires: one last `data:` event with a
 * `TRB_ERR_AUTH_INVALID` error, then the stream closes (the client must reconnect with a new token).
 */
function closeAtExpiry(stream: SseStream, auth: AuthInfo | null, holder: GatewayHolder, request: FastifyRequest): void {
  const exp = auth?.claims.exp
  if (typeof exp !== 'number') return
  const timer = setTimeout(() => {
    const { errors } = formatGraphQLErrors([codedGraphQLError(new AuthInvalidError('the token has expired'))], { mode: holder.current.config.mode, logger: request.log })
    stream.send(JSON.stringify({ errors }))
    stream.close()
  }, Math.min(Math.max(0, exp * 1000 - Date.now()), 2_147_483_647))
  stream.onClose(() => clearTimeout(timer))
}

function toGraphQLError(err: unknown): GraphQLError {
  return err instanceof GraphQLError ? err : new GraphQLError((err as Error)?.message ?? String(err), { originalError: err as Error })
}

/** Options of {@link registerOperationRoutes}. */
export interface OperationRoutesOptions {
  /**
   * The app counts its in-flight requests per gateway version (`tributary dev`, which drains them
   * before it closes a reloaded gateway): stored database queries are then not answered before
   * fastify (their statement would run outside that count). Default false.
   */
  trackInFlight?: boolean
  /**
   * The early path of `POST /graphql` (graphql-endpoint.ts), installed before fastify on the same
   * conditions as the early answers of `/operations/*`. Default none.
   */
  graphqlEarly?: EarlyGraphQL
}

/**
 * Registers `/operations/*` and the config's custom routes.
 * - queries: GET (variables from the query string) and POST (JSON body);
 * - mutations: POST only (405 with `Allow: POST` otherwise);
 * - subscriptions, and queries with `?live=true`: GET with `Accept: text/event-stream`.
 */
export function registerOperationRoutes(app: FastifyInstance, holder: GatewayHolder, options: OperationRoutesOptions = {}): void {
  const live = new LivePollers(holder)
  app.decorate('livePollers', live)
  const { pubsub } = holder.current.config
  const cacheState: CacheState = {
    cache: new ResponseCache(holder.cluster, (err) => app.log.warn({ err: { message: (err as Error)?.message } }, 'shared cache unavailable'), { maxBytes: pubsub.localCacheBytes, recheckMs: pubsub.localCacheRecheckMs }),
    tags: new WeakMap(),
  }
  app.decorate('responseCache', cacheState.cache)
  app.decorate('earlyDirect', { answered: 0, handedOver: 0, memoised: () => 0 })
  app.addHook('onClose', async () => cacheState.cache.close())
  answerEarly(app, holder, cacheState, { directs: !options.trackInFlight, graphql: options.graphqlEarly })
  // Event streams are long-lived: end them before the server closes, or `close()` would wait for them.
  const open = new Set<SseStream>()
  const sharedStreams = new SharedEventStreams()
  app.addHook('preClose', async () => {
    for (const stream of [...open]) stream.close()
  })
  app.addHook('onClose', async () => live.close())

  const ALLOWED = { query: ['GET', 'POST'], mutation: ['POST'], subscription: ['GET'] } as const
  const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>

  async function serve(name: string, request: FastifyRequest, reply: FastifyReply, pathParams: Record<string, string> = NO_PARAMS, viaCustomRoute = false) {
    const gateway = holder.current
    const op = gateway.operations.get(name)
    if (!op || op.internal) return sendError(reply, new OperationNotFoundError(name))
    // An invalid token is refused even where none is needed (401 TRB_ERR_AUTH_INVALID), never ignored.
    let auth = gateway.jwt ? identityOf(gateway, request) : null
    if (auth instanceof Promise) auth = await auth
    // 401/403 before the variables are looked at: an anonymous caller learns nothing of them.
    if (op.stored.auth) authorize(op.stored.auth, auth, `operation ${name}`)
    // A browser's session cookie goes with cross-site requests: its mutations need the CSRF token.
    if (op.kind === 'mutation') checkCsrf(gateway, request, auth)
    const method = request.method === 'HEAD' ? 'GET' : request.method
    const accept = request.headers.accept
    const wantsStream = accept !== undefined && accept.includes('text/event-stream')
    const allowed: readonly string[] = ALLOWED[op.kind]
    if (!viaCustomRoute && !allowed.includes(method)) {
      reply.header('allow', allowed.join(', '))
      return sendError(reply, new OperationMethodError(method, `${op.kind} ${name}`, allowed.join(', ')))
    }
    let variables: Variables
    try {
      if (method === 'GET' || method === 'DELETE') {
        const query = request.query as Query
        const liveParam = query.live
        let params: Query = query
        if (liveParam !== undefined || pathParams !== NO_PARAMS) {
          const { live: _live, ...rest } = query
          params = { ...rest, ...pathParams }
        }
        variables = op.variablesFromQuery(params)
        if (liveParam !== undefined && liveParam !== 'false') {
          if (op.kind !== 'query') return sendError(reply, new BadRequestError('live=true applies to queries only'))
          if (op.stored.directives.liveOff) return sendError(reply, new BadRequestError(`live queries are off for ${name} (# @live off, live: false, or operations.defaults.queries.live: false)`))
          if (!wantsStream) return sendError(reply, new BadRequestError('Live queries need Accept: text/event-stream'), 406)
          variables = op.authorize(variables, auth)
          const stream = startSse(request, reply, open, holder)
          if (!stream) return reply
          closeAtExpiry(stream, auth, holder, request)
          stream.onClose(live.subscribe(op, variables, (body) => stream.send(body), { headers: request.headers, auth }))
          return reply
        }
      } else {
        // CSRF: a browser may send a cross-site POST without a preflight only with a "simple" content
        // type (text/plain, forms) or none. Variables come as JSON, so anything else is refused, and a
        // body-less cross-site POST too (Sec-Fetch-Site), so no form or no-cors fetch runs a mutation.
        const refused = refuseNonJsonBody(request, reply)
        if (refused) return refused
        const body = request.body
        const fromBody = body === undefined || body === null ? {} : body
        variables = op.variablesFromBody(
          Object.keys(pathParams).length && typeof fromBody === 'object' && !Array.isArray(fromBody)
            ? { ...(fromBody as object), ...coercePathParams(op, pathParams) }
            : fromBody,
        )
      }
    } catch (err) {
      if ((err as { code?: string }).code === 'TRB_ERR_OPERATION_VARIABLES') return variablesProblem(reply, err as VariablesError)
      throw err
    }
    // Operation hooks (README "Hooks"): queries and mutations answered once; one lookup when none is set.
    if (gateway.hooks !== null && op.kind !== 'subscription') {
      const hooks = gateway.hooks.operations.get(name)
      if (hooks) return observeOperation(op.name, () => respondHooked(op, hooks, gateway.hooks!, variables, request, reply, holder, viaCustomRoute, cacheState, auth))
    }
    variables = op.authorize(variables, auth)
    if (op.kind === 'subscription') {
      if (!wantsStream) return sendError(reply, new BadRequestError('Subscriptions need Accept: text/event-stream'), 406)
      streamSubscription(op, variables, request, reply, holder, open, auth, sharedStreams)
      return reply
    }
    return observeOperation(op.name, () => respond(op, variables, request, reply, holder, viaCustomRoute, cacheState, auth))
  }

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/operations/*',
    handler: (request, reply) => {
      const path = (request.params as { '*': string })['*']
      return serve(path.endsWith('/') ? path.replace(/\/+$/, '') : path, request, reply)
    },
  })

  for (const route of holder.current.config.routes) {
    app.route({
      method: route.method,
      url: route.path,
      handler: (request, reply) => serve(route.operation, request, reply, request.params as Record<string, string>, true),
    })
  }
}

/** What {@link answerEarly} knows of one stored operation it may answer. */
interface EarlyOperation {
  readonly op: CompiledOperation
  /**
   * `hit`: a `# @cache` query, answered from the in-process cache when fresh; `direct`: a database
   * query run by its direct plan; `execute`: any other query, run by its compiled execution.
   */
  readonly kind: 'hit' | 'direct' | 'execute'
  /** `Cache-Control` of an anonymous GET. */
  readonly cacheControl: string
  /** `Cache-Control` of a GET with `Authorization` (`direct` only). */
  readonly privateCacheControl: string
  /** Validated variables (before the operation's auth directives apply) by raw query string (at most {@link EARLY_KEYS} of at most {@link EARLY_QUERY_CHARS} characters, then it starts again empty); frozen. */
  readonly variables: Map<string, Variables>
  /** Cache key by raw query string (`hit` only; the same bounds). */
  readonly keys: Map<string, string>
}

const EARLY_KEYS = 1000
const EARLY_QUERY_CHARS = 512
/** A query string every parser reads the same way: `name=value` pairs of unreserved characters, no escapes. */
const PLAIN_QUERY = /^(?:[A-Za-z0-9_.~-]+=[A-Za-z0-9_.~-]*(?:&[A-Za-z0-9_.~-]+=[A-Za-z0-9_.~-]*)*)?$/
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The statement run of a request that {@link answerEarly} started but leaves to the route to answer. */
const kEarlyRun = Symbol('tributary.earlyRun')

interface EarlyRun {
  readonly op: CompiledOperation
  /** The direct plan's result (kind `direct`). */
  readonly result?: Promise<string | DirectFailure | null>
  /** The execution's result (kind `execute`). */
  readonly executed?: Promise<ExecutionResult>
}

/**
 * The run {@link answerEarly} already made for this request and operation (taken once), so that the
 * route answers its result without running the operation again; undefined when none, or for another
 * operation (a reload in between).
 */
function takeEarly(request: FastifyRequest, op: CompiledOperation): EarlyRun | undefined {
  const raw = request.raw as IncomingMessage & { [kEarlyRun]?: EarlyRun }
  const run = raw[kEarlyRun]
  if (run === undefined) return undefined
  raw[kEarlyRun] = undefined
  return run.op === op ? run : undefined
}

/**
 * Answers the commonest stored-query requests before fastify sees them (README "Caching" and
 * "Stored operations before fastify", docs/architecture.md §10): `GET /operations/<Name>?<plain
 * query>` without cookie, body, `live` or `Upgrade`, of a GraphQL query with no injected variables
 * and no operation hook, that is either
 * - an anonymous request of a `# @cache` query without auth directives, with a fresh entry in the
 *   in-process copy of the response cache (`hit`): it
 *   sends what the route would, 200 with the stored body and ETag, `Cache-Control`,
 *   `X-Tributary-Cache: hit` and `Age` (or 304 on a matching `If-None-Match`); or
 * - a query without `# @cache` whose root fields all run as direct SQL (`direct`, README "Direct
 *   JSON execution"), or any other query when no hook of any kind is configured (`execute`: its
 *   compiled execution), anonymous or with a token the JWT verifier knows (verified recently), whose
 *   auth directives (no `@fromClaim`) it passes (a token to verify, authentication hooks and a 401
 *   or 403 go to the route): it runs the operation with that identity and sends a successful answer
 *   as the route would, 200 with the data object, its weak ETag and `Cache-Control` (or 304). A
 *   failed statement, an execution with errors, a plan with no statement for the variables, or an
 *   answer over a third of `server.maxResponseBytes` goes to the route with the run's result
 *   ({@link takeEarly}): the route answers it (error body, status,
 *   `Retry-After`, the size check) without running the operation again.
 * Each counts the request in the metrics and the console as the route's hooks do. Anything else (a
 * miss, a stale entry, a query string with escapes, a cookie, an error) goes to fastify unchanged.
 * Installed only when nothing else must see each request: no rate limit, no Host/Origin hook
 * (`allowedHosts`, `allowedOrigins`), no tracing, no custom route under `/operations/`; hits only
 * with `pubsub.localCacheBytes` > 0, the other kinds only when `directs` (not `tributary dev`, whose
 * reloads drain the requests fastify counts).
 */
function answerEarly(app: FastifyInstance, holder: GatewayHolder, state: CacheState, options: { directs: boolean; graphql?: EarlyGraphQL | undefined }): void {
  const config = holder.current.config
  const hits = config.pubsub.localCacheBytes > 0
  const directs = options.directs
  if ((!hits && !directs) || config.server.rateLimit || config.server.allowedHosts !== null || config.server.allowedOrigins.length > 0 || config.telemetry.otlpEndpoint) return
  if (config.routes.some((r) => r.path.startsWith('/operations'))) return
  const server = app.server
  const [fastifyHandler, ...others] = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[]
  if (!fastifyHandler || others.length) return
  const counted = config.metrics.enabled
  const console = config.console.enabled
  const tally = app.earlyDirect
  // POST /graphql before fastify: only where stored queries may run early too (not `tributary dev`).
  const graphql = directs ? options.graphql : undefined
  let gateway = holder.current
  let known = new Map<string, EarlyOperation | null>()
  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  tally.memoised = () => {
    let n = 0
    for (const e of known.values()) if (e) n += e.variables.size
    return n
  }

  const early = (name: string): EarlyOperation | null | undefined => {
    if (holder.current !== gateway) {
      gateway = holder.current
      known = new Map()
    }
    let e = known.get(name)
    if (e !== undefined) return e
    const op = gateway.operations.get(name)
    // Only names of stored operations are remembered: the table cannot grow with the client's guesses.
    if (!op) return undefined
    const policy = cachePolicy(op)
    const hooked = gateway.hooks !== null && gateway.hooks.operations.has(name)
    // Other queries run by their execution only without hooks of any kind: an upstream hook is given the client's request, which only fastify has.
    const kind = policy ? (hits ? 'hit' : null) : !directs || op.kind !== 'query' ? null : op.direct && (!op.direct.upstream || gateway.hooks === null) ? 'direct' : gateway.hooks === null ? 'execute' : null
    // A direct query may carry auth directives, not `@fromClaim` (its variables would depend on the token).
    const auth = op.stored.auth
    e = kind === null || op.internal || (auth && (kind === 'hit' || Object.keys(auth.fromClaim).length)) || hooked || op.stored.language !== 'graphql' || Object.keys(op.stored.rules.inject).length
      ? null
      : { op, kind, cacheControl: cacheControl(op, NO_CREDENTIALS), privateCacheControl: cacheControl(op, CREDENTIALED), variables: new Map(), keys: new Map() }
    known.set(name, e)
    return e
  }

  const variablesOf = (e: EarlyOperation, query: string): Variables | undefined => {
    let variables = e.variables.get(query)
    if (variables !== undefined) return variables
    if (query.length > EARLY_QUERY_CHARS || !PLAIN_QUERY.test(query)) return undefined
    const params: Query = {}
    if (query !== '') {
      for (const pair of query.split('&')) {
        const eq = pair.indexOf('=')
        const k = pair.slice(0, eq)
        if (k === 'live' || k === '__proto__' || Object.hasOwn(params, k)) return undefined
        params[k] = pair.slice(eq + 1)
      }
    }
    try {
      variables = deepFreeze(e.op.variablesFromQuery(params))
    } catch {
      return undefined // the route answers the error
    }
    if (e.variables.size >= EARLY_KEYS) e.variables.clear()
    e.variables.set(query, variables)
    return variables
  }

  const keyOf = (e: EarlyOperation, query: string): string | undefined => {
    let key = e.keys.get(query)
    if (key !== undefined) return key
    const variables = variablesOf(e, query)
    if (variables === undefined) return undefined
    try {
      key = state.cache.keyFor(e.op.stored.source, e.op.authorize(variables, null))
    } catch {
      return undefined // the route answers the error
    }
    if (e.keys.size >= EARLY_KEYS) e.keys.clear()
    e.keys.set(query, key)
    return key
  }

  const count = (e: EarlyOperation, res: ServerResponse, started: number): void => {
    if (!counted && !console) return
    const ms = performance.now() - started
    if (counted && observers.metrics) {
      observers.metrics.countRequest('/operations/*', 'GET', res.statusCode)
      observers.metrics.operationSeconds(e.op.name).observe(ms / 1000)
    }
    if (console) observers.traffic?.operation(e.op.name, ms, false)
  }

  /** Hands a request whose operation ran to the route, with the run's result. */
  const handOver = (req: IncomingMessage, res: ServerResponse, run: EarlyRun): void => {
    tally.handedOver++
    ;(req as IncomingMessage & { [kEarlyRun]?: EarlyRun })[kEarlyRun] = run
    fastifyHandler(req, res)
  }

  const sendAnswer = (e: EarlyOperation, req: IncomingMessage, res: ServerResponse, body: string, cacheControl: string, started: number): void => {
    // A body long enough to be hashed natively is encoded once, for the hash and the socket.
    const bytes = body.length >= NATIVE_HASH_FROM ? Buffer.from(body) : undefined
    const etag = weakEtag(body, bytes)
    const inm = req.headers['if-none-match']
    if (inm !== undefined && etagMatches(inm, etag)) {
      res.writeHead(304, ['etag', etag, 'cache-control', cacheControl])
      res.end()
    } else if (bytes === undefined) {
      res.writeHead(200, ['etag', etag, 'cache-control', cacheControl, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body))])
      res.end(body)
    } else {
      res.writeHead(200, ['etag', etag, 'cache-control', cacheControl, 'content-type', 'application/json; charset=utf-8', 'content-length', String(bytes.length)])
      res.end(bytes)
    }
    tally.answered++
    count(e, res, started)
  }

  /**
   * Runs a stored query as the route would (its direct plan, or its execution), with a context of
   * its own: `reply.raw` for the disconnect watch, `reply.request.headers` and `headers` for header
   * forwarding and templates, `auth` for row filters.
   */
  const runEarly = (e: EarlyOperation, req: IncomingMessage, res: ServerResponse, variables: Variables, auth: AuthInfo | null, started: number): void => {
    const maxBytes = gateway.config.server.maxResponseBytes
    const cacheControl = req.headers.authorization === undefined ? e.cacheControl : e.privateCacheControl
    const context = { reply: { raw: res, request: { headers: req.headers } }, headers: req.headers, cluster: holder.cluster, resultBudget: resultBudget(maxBytes), auth }
    // `run` undefined: the body was answered now (runValidatedNow); its run is made only to hand it over.
    const send = (body: string, run: EarlyRun | undefined): void => {
      // Over a third of server.maxResponseBytes, the route's size check answers it.
      if (body.length <= maxBytes / 3) {
        try {
          return sendAnswer(e, req, res, body, cacheControl, started)
        } catch (err) {
          app.log.error({ err }, 'answering a stored query early failed; the route answers it')
          if (res.headersSent) return
        }
      }
      handOver(req, res, run ?? { op: e.op, result: Promise.resolve(body) })
    }
    if (e.kind === 'direct') {
      // SQLite with an idle connection: answered within this call (DirectOperation.runValidatedNow).
      const now = e.op.direct!.runValidatedNow?.(variables, context)
      if (now !== undefined) return typeof now === 'string' ? send(now, undefined) : handOver(req, res, { op: e.op, result: Promise.resolve(now) })
      const run: EarlyRun = { op: e.op, result: e.op.direct!.runValidated(variables, context) }
      run.result!.then((body) => (typeof body === 'string' ? send(body, run) : handOver(req, res, run)), () => handOver(req, res, run))
      return
    }
    const run: EarlyRun = { op: e.op, executed: e.op.execute(variables, context) }
    run.executed!.then(
      (result) => {
        if (result.errors?.length) return handOver(req, res, run)
        send(e.op.stringifyData(result.data === undefined ? {} : result.data), run)
      },
      () => handOver(req, res, run),
    )
  }

  const answer = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url
    if (closing || url === undefined) return false
    if (req.method === 'POST') return graphql !== undefined && url === '/graphql' && graphql(req, res, fastifyHandler)
    if (req.method !== 'GET' || !url.startsWith('/operations/')) return false
    const h = req.headers
    if (h.cookie !== undefined || h.upgrade !== undefined || h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false
    const started = performance.now()
    const q = url.indexOf('?', 12)
    const name = q < 0 ? url.slice(12) : url.slice(12, q)
    if (!PLAIN_NAME.test(name)) return false
    const e = early(name)
    if (!e) return false
    // The caller's identity: none, or a token verified recently (JWT cache); a token to verify, and
    // authentication hooks, go to the route.
    let auth: AuthInfo | null = null
    if (gateway.jwt) {
      if (gateway.hooks?.authentication) return false
      const known = gateway.jwt.known(h)
      if (known === undefined) return false
      auth = known
    }
    const query = q < 0 ? '' : url.slice(q + 1)
    if (e.kind !== 'hit') {
      const validated = variablesOf(e, query)
      if (validated === undefined) return false
      let variables: Variables
      try {
        variables = e.op.authorize(validated, auth)
      } catch {
        return false // 401/403: the route answers it
      }
      runEarly(e, req, res, variables, auth, started)
      return true
    }
    // Hits are keyed by the credential headers on the route: only anonymous ones are answered here.
    if (h.authorization !== undefined || auth !== null) return false
    const key = keyOf(e, query)
    if (key === undefined) return false
    const now = Date.now()
    const hit = state.cache.local(key, now)
    if (!hit) return false
    const age = String(Math.max(0, Math.floor((now - hit.storedAt) / 1000)))
    const inm = h['if-none-match']
    if (inm !== undefined && etagMatches(inm, hit.etag)) {
      res.writeHead(304, ['x-tributary-cache', 'hit', 'age', age, 'etag', hit.etag, 'cache-control', e.cacheControl])
      res.end()
    } else {
      res.writeHead(200, ['x-tributary-cache', 'hit', 'age', age, 'etag', hit.etag, 'cache-control', e.cacheControl, 'content-type', 'application/json; charset=utf-8', 'content-length', String(hit.body.length)])
      res.end(hit.body)
    }
    state.cache.earlyAnswers++
    count(e, res, started)
    return true
  }

  server.removeListener('request', fastifyHandler)
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let answered = false
    try {
      answered = answer(req, res)
    } catch (err) {
      app.log.error({ err }, 'answering a stored query early failed; the route answers it')
      answered = res.headersSent
    }
    if (!answered) fastifyHandler(req, res)
  })
}

const NO_CREDENTIALS = { headers: {} } as FastifyRequest
const CREDENTIALED = { headers: { authorization: '' } } as FastifyRequest

/** Path params are strings; for a JSON-body route they are coerced to their variables' JSON types. */
function coercePathParams(op: CompiledOperation, params: Record<string, string>): Variables {
  const out: Variables = {}
  for (const [key, value] of Object.entries(params)) {
    const schema = op.variablesSchema.properties?.[key]
    if (!schema) continue
    const types = Array.isArray(schema.type) ? schema.type : [schema.type]
    if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(value)) out[key] = Number(value)
    else if (types.includes('boolean') && (value === 'true' || value === 'false')) out[key] = value === 'true'
    else out[key] = value
  }
  return out
}
