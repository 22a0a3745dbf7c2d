/**
 * Hooks (README "Hooks", docs/architecture.md §5.2): the deployment's own code run around stored
 * operations, upstream requests and authentication, set in config `hooks`. This module holds their
 * types and the one runner that calls a hook with its time limit and turns what it throws into a
 * coded error. It imports nothing of `http/` or the connectors: those call {@link runHook} with the
 * hooks the runtime gives them (the connectors through {@link OriginHookSlot} in their context).
 *
 * Nothing here runs when `hooks` is not configured: the gateway then holds no {@link ResolvedHooks}
 * and each call site tests one null.
 */
import type { Logger } from 'pino'
import type { AuthInfo } from '../auth/jwt.js'
import { AuthInvalidError, HookCancelledError, HookError, HookTimeoutError } from '../errors.js'

/** The logger hooks get: the request's pino logger (a source's for origin hooks outside a request). */
export type HookLogger = Pick<Logger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'>

/** The identity hooks see: the verified token's claims, its roles and the token itself (`context.auth`). */
export type HookUser = AuthInfo

/** What a hook knows of the client's request. Headers are the incoming ones, lower-case names. */
export interface ClientRequestInfo {
  method: string
  /** The path and query string, as received (`/operations/TodoById?id=1`). */
  url: string
  headers: Readonly<Record<string, string | string[] | undefined>>
}

/** A response of a stored operation as hooks see and return it (the JSON body of `/operations/*`). */
export interface OperationResponse<R = unknown> {
  data?: R | null
  errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[]
}

/** The arguments of every operation hook. */
export interface OperationHookArgs<I = Record<string, unknown>> {
  /** The stored operation's name (`TodoById`, `users/get`). */
  operationName: string
  /** The variables as the client sent them (checked against the operation's variables schema; `@fromClaim` variables are not among them). */
  input: I
  /** The caller's identity, or null for an anonymous caller. */
  user: HookUser | null
  clientRequest: ClientRequestInfo
  /** The request's pino logger. */
  log: HookLogger
  /** One object per request, shared by every hook of that request (pre → resolve → post): a place to pass values along. */
  context: Record<string, unknown>
}

/** The arguments of the hooks that run after the operation: the same, and its response. */
export interface OperationPostHookArgs<I = Record<string, unknown>, R = unknown> extends OperationHookArgs<I> {
  response: OperationResponse<R>
}

type MaybePromise<T> = T | Promise<T>

/**
 * The hooks of one stored operation, in the order they run: `mockResolve` (when enabled: answers,
 * nothing else runs), `preResolve`, `mutatingPreResolve`, `customResolve` (an answer ends it),
 * the operation itself, `postResolve`, `mutatingPostResolve`.
 */
export interface OperationHooks<I = Record<string, unknown>, R = unknown> {
  /** Observes the input before the operation runs. Its result is ignored. */
  preResolve?(args: OperationHookArgs<I>): MaybePromise<void>
  /** Returns the input the operation runs with; it is checked again against the variables schema (else `TRB_ERR_HOOK`). */
  mutatingPreResolve?(args: OperationHookArgs<I>): MaybePromise<I>
  /** Returns a response to send instead of running the operation, or null/undefined to run it. */
  customResolve?(args: OperationHookArgs<I>): MaybePromise<OperationResponse<R> | null | undefined>
  /** Observes the response before it is sent. */
  postResolve?(args: OperationPostHookArgs<I, R>): MaybePromise<void>
  /** Returns the response to send instead of the operation's. */
  mutatingPostResolve?(args: OperationPostHookArgs<I, R>): MaybePromise<OperationResponse<R>>
  /**
   * A mock answer: when `enabled` (default: true in development, false in production), `handler`'s
   * response is sent and the operation never runs (no other hook of the operation runs either).
   */
  mockResolve?: { enabled?: boolean; handler(args: OperationHookArgs<I>): MaybePromise<OperationResponse<R>> }
}

/** An upstream HTTP request as origin hooks see and return it. */
export interface OriginRequest {
  method: string
  /** The full URL, `http(s)://host/path?query`. */
  url: string
  /** Lower-case header names. */
  headers: Record<string, string>
  /** The body when it is text (JSON, form-encoded); undefined for none or a multipart body (which hooks cannot change). */
  body?: string
}

/** An upstream HTTP response as `onOriginResponse` sees it. */
export interface OriginResponse {
  status: number
  /** Lower-case header names (set-cookie left out). */
  headers: Record<string, string>
}

/** The arguments of `onOriginRequest`. */
export interface OriginRequestArgs {
  /** The data source's namespace (`''` for none). */
  namespace: string
  request: OriginRequest
  user: HookUser | null
  /** The client request that led to this upstream call; undefined outside a request (schema reads, probes). */
  clientRequest?: ClientRequestInfo
  log: HookLogger
}

/** The arguments of `onOriginResponse`. */
export interface OriginResponseArgs extends OriginRequestArgs {
  response: OriginResponse
}

/** Which upstream requests an origin hook sees. */
export interface OriginHookFilter {
  /** Default true. */
  enabled?: boolean
  /** Namespaces of the data sources whose requests it sees (`''` for a source without one). Default: every source. */
  namespaces?: string[]
}

/** The arguments of `onConnectionInit`. */
export interface ConnectionInitArgs {
  namespace: string
  /** The subscription endpoint of the upstream: `ws(s)://` for graphql-ws, `http(s)://` for SSE. */
  url: string
  /** The payload the gateway would use: `{ headers }`, the request headers the source sends (static, templates, forwarded). */
  payload: Record<string, unknown>
  user: HookUser | null
  log: HookLogger
}

/** Hooks that see every upstream request of REST, GraphQL and Federation data sources. */
export interface GlobalHooks {
  /**
   * Before an upstream request is sent: return a changed request (`url`, `headers`, `body`), `'cancel'`
   * to fail the field with `TRB_ERR_HOOK_CANCELLED`, or nothing (`'skip'`, undefined) to send it as it is.
   * A REST source keeps its origin: a URL of another origin is a `TRB_ERR_HOOK` error.
   */
  onOriginRequest?: OriginHookFilter & { hook(args: OriginRequestArgs): MaybePromise<OriginRequest | 'cancel' | 'skip' | void> }
  /** After the upstream answered (status and headers; the body is read afterwards): `'cancel'` fails the field with `TRB_ERR_HOOK_CANCELLED`. */
  onOriginResponse?: OriginHookFilter & { hook(args: OriginResponseArgs): MaybePromise<'cancel' | 'skip' | void> }
  /**
   * Runs for every upstream subscription connection of a GraphQL or Federation source, graphql-ws or
   * SSE, with the subscribing caller's `user`; its result replaces the payload: over graphql-ws the
   * `connection_init` payload (its `headers` also go on the upgrade request; sockets are shared only
   * by equal payloads), over SSE its `headers` are the subscription request's.
   */
  onConnectionInit?: OriginHookFilter & { hook(args: ConnectionInitArgs): MaybePromise<Record<string, unknown>> }
}

/** What `mutatingPostAuthentication` and `revalidate` return. */
export type AuthenticationResult = { status: 'ok'; user: HookUser } | { status: 'deny'; message?: string }

/** Hooks run where the caller's identity is established from its token. */
export interface AuthenticationHooks {
  /** Observes the identity of each authenticated request. */
  postAuthentication?(args: { user: HookUser; clientRequest?: ClientRequestInfo; log: HookLogger }): MaybePromise<void>
  /** May replace the identity (its claims and roles: `@fromClaim`, `@rbac` and `permissions` then read it) or deny it (401 `TRB_ERR_AUTH_INVALID`). */
  mutatingPostAuthentication?(args: { user: HookUser; clientRequest?: ClientRequestInfo; log: HookLogger }): MaybePromise<AuthenticationResult>
  /** Re-checks an identity on demand (`revalidateUser` of gateway/http/auth.ts; `/auth/user?revalidate=true`). */
  revalidate?(args: { user: HookUser; log: HookLogger }): MaybePromise<AuthenticationResult>
}

/**
 * Config `hooks`. `Ops` maps operation names to `{ input, response }` types: the generated
 * `generated/client.ts` exports `HooksConfig`, this type for the deployment's operations.
 */
export interface HooksConfigInput<Ops extends { [K in keyof Ops]: { input: unknown; response: unknown } } = Record<string, { input: Record<string, unknown>; response: unknown }>> {
  /** Longest time a hook may take, in milliseconds; a slower one fails with `TRB_ERR_HOOK_TIMEOUT`. Default 5000, at most 60000. */
  timeoutMs?: number
  /** Per stored operation, by name. */
  operations?: { [K in keyof Ops]?: OperationHooks<Ops[K]['input'], Ops[K]['response']> }
  global?: GlobalHooks
  authentication?: AuthenticationHooks
}

/** Default of `hooks.timeoutMs`. */
export const DEFAULT_HOOK_TIMEOUT_MS = 5000
/** Largest `hooks.timeoutMs`. */
export const MAX_HOOK_TIMEOUT_MS = 60_000

/** The hooks of a running gateway: null parts are not configured. */
export interface ResolvedHooks {
  readonly timeoutMs: number
  readonly production: boolean
  /** Operation hooks by operation name, as configured (an entry may be empty). */
  readonly operations: ReadonlyMap<string, OperationHooks>
  readonly authentication: AuthenticationHooks | null
  readonly global: GlobalHooks | null
}

/**
 * The runtime form of config `hooks`, or null when no hook is set (the gateway then never calls
 * into this module).
 */
export function resolveHooks(input: HooksConfigInput | undefined, production: boolean): ResolvedHooks | null {
  if (!input) return null
  const operations = new Map<string, OperationHooks>()
  // Read at each request: an entry's hooks may be set after start (tests, a program embedding the gateway).
  for (const [name, hooks] of Object.entries(input.operations ?? {})) if (hooks) operations.set(name, hooks as OperationHooks)
  const authentication = input.authentication && Object.keys(input.authentication).length > 0 ? input.authentication : null
  const global = input.global && Object.keys(input.global).length > 0 ? input.global : null
  if (operations.size === 0 && !authentication && !global && input.timeoutMs === undefined) return null
  return { timeoutMs: input.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS, production, operations, authentication, global }
}

/**
 * Calls one hook with the time limit of `hooks.timeoutMs`.
 * @param name the hook's name in errors (`mutatingPreResolve of TodoById`)
 * @throws HookTimeoutError (`TRB_ERR_HOOK_TIMEOUT`, 500) when it takes longer; HookError
 *   (`TRB_ERR_HOOK`, 500) when it throws: the message names the hook, and in development carries
 *   the hook's own message too.
 */
export async function runHook<A, T>(hooks: Pick<ResolvedHooks, 'timeoutMs' | 'production'>, name: string, fn: (args: A) => MaybePromise<T>, args: A): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HookTimeoutError(name, hooks.timeoutMs)), hooks.timeoutMs)
  })
  try {
    return await Promise.race([Promise.resolve().then(() => fn(args)), timeout])
  } catch (err) {
    if (err instanceof HookTimeoutError) throw err
    throw hookFailure(hooks, name, (err as Error)?.message ?? String(err), err)
  } finally {
    clearTimeout(timer)
  }
}

/** A `TRB_ERR_HOOK` error for hook `name`: its reason in development only. */
export function hookFailure(hooks: Pick<ResolvedHooks, 'production'>, name: string, reason: string, cause?: unknown): Error {
  return new HookError(hooks.production ? `The ${name} hook failed` : `The ${name} hook failed: ${reason}`, { cause })
}

/** True when `filter` lets the hook see requests of the source `namespace`. */
export function hookApplies(filter: OriginHookFilter, namespace: string): boolean {
  return filter.enabled !== false && (!filter.namespaces || filter.namespaces.includes(namespace))
}

/**
 * What connectors receive in their context: the current global hooks. One slot per gateway lineage,
 * so that a source reused by a development reload sees the reloaded config's hooks.
 */
export interface OriginHookSlot {
  current: (Pick<ResolvedHooks, 'timeoutMs' | 'production'> & { global: GlobalHooks }) | null
}

/** The client request of a GraphQL context (`context.request`, a fastify request), if any. */
export function clientRequestOf(context: unknown): ClientRequestInfo | undefined {
  const request = (context as { request?: { method?: unknown; url?: unknown; headers?: unknown } } | null | undefined)?.request
  if (!request || typeof request.method !== 'string') return undefined
  return { method: request.method, url: String(request.url), headers: request.headers as ClientRequestInfo['headers'] }
}

/** The identity of a GraphQL context (`context.auth`), if any. */
export function userOf(context: unknown): HookUser | null {
  return ((context as { auth?: HookUser | null } | null | undefined)?.auth) ?? null
}

/**
 * Runs `onOriginRequest` for one upstream request of the source `namespace` (when the slot holds
 * one that applies to it).
 * @returns the request to send: `request` itself, or the hook's changed copy (its headers lower-cased).
 * @throws HookCancelledError (`TRB_ERR_HOOK_CANCELLED`, 403) when the hook cancels; HookError when it
 *   throws or returns something that is not a request; HookTimeoutError.
 */
export async function originRequest(slot: OriginHookSlot, namespace: string, request: OriginRequest, context: unknown, log: HookLogger): Promise<OriginRequest> {
  const hooks = slot.current
  const entry = hooks?.global.onOriginRequest
  if (!hooks || !entry || !hookApplies(entry, namespace)) return request
  const result = await runHook(hooks, 'onOriginRequest', entry.hook, { namespace, request: { ...request, headers: { ...request.headers } }, user: userOf(context), clientRequest: clientRequestOf(context), log })
  if (result === undefined || result === null || result === 'skip') return request
  if (result === 'cancel') throw new HookCancelledError('onOriginRequest', namespace || 'the source')
  if (typeof result !== 'object' || typeof result.url !== 'string' || !URL.canParse(result.url) || (result.body !== undefined && typeof result.body !== 'string')) {
    throw hookFailure(hooks, 'onOriginRequest', 'it must return a request { method, url, headers, body? }, "skip" or "cancel"')
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(result.headers ?? {})) if (typeof value === 'string') headers[name.toLowerCase()] = value
  return { method: typeof result.method === 'string' ? result.method.toUpperCase() : request.method, url: result.url, headers, body: result.body }
}

/**
 * Runs `onOriginResponse` for one upstream answer (status and headers).
 * @throws HookCancelledError when the hook cancels; HookError; HookTimeoutError.
 */
export async function originResponse(slot: OriginHookSlot, namespace: string, request: OriginRequest, response: OriginResponse, context: unknown, log: HookLogger): Promise<void> {
  const hooks = slot.current
  const entry = hooks?.global.onOriginResponse
  if (!hooks || !entry || !hookApplies(entry, namespace)) return
  const result = await runHook(hooks, 'onOriginResponse', entry.hook, { namespace, request, response, user: userOf(context), clientRequest: clientRequestOf(context), log })
  if (result === 'cancel') throw new HookCancelledError('onOriginResponse', namespace || 'the source')
}

/** True when the slot holds an origin hook for the source `namespace`: the connectors' one test on the hot path. */
export function hasOriginHooks(slot: OriginHookSlot | undefined, namespace: string): slot is OriginHookSlot {
  const g = slot?.current?.global
  return !!g && ((!!g.onOriginRequest && hookApplies(g.onOriginRequest, namespace)) || (!!g.onOriginResponse && hookApplies(g.onOriginResponse, namespace)))
}

/**
 * Runs the authentication hooks on a verified identity: `postAuthentication`, then
 * `mutatingPostAuthentication`.
 * @returns the identity the request runs with (the hook's, or `user`)
 * @throws AuthInvalidError (401) when the hook denies it; HookError when it throws or returns a user
 *   without an object `claims` and a string array `roles`; HookTimeoutError.
 */
export async function authenticated(hooks: ResolvedHooks, user: HookUser, clientRequest: ClientRequestInfo | undefined, log: HookLogger): Promise<HookUser> {
  const auth = hooks.authentication
  if (!auth) return user
  if (auth.postAuthentication) await runHook(hooks, 'postAuthentication', auth.postAuthentication, { user, clientRequest, log })
  if (!auth.mutatingPostAuthentication) return user
  return checkedResult(hooks, 'mutatingPostAuthentication', await runHook(hooks, 'mutatingPostAuthentication', auth.mutatingPostAuthentication, { user, clientRequest, log }), user)
}

/**
 * Re-checks an identity with the `revalidate` hook (README "Hooks"): the OIDC `/auth/user?revalidate=true`
 * route calls it, and so may an embedding program.
 * @returns the identity to keep (`user` when no `revalidate` hook is set)
 * @throws AuthInvalidError (401) when the hook denies it; HookError; HookTimeoutError.
 */
export async function revalidated(hooks: ResolvedHooks | null, user: HookUser, log: HookLogger): Promise<HookUser> {
  const fn = hooks?.authentication?.revalidate
  if (!hooks || !fn) return user
  return checkedResult(hooks, 'revalidate', await runHook(hooks, 'revalidate', fn, { user, log }), user)
}

/** The user of an {@link AuthenticationResult}, checked. */
function checkedResult(hooks: ResolvedHooks, name: string, result: AuthenticationResult, before: HookUser): HookUser {
  if (result && typeof result === 'object' && result.status === 'deny') {
    throw new AuthInvalidError(`denied by the ${name} hook${typeof result.message === 'string' && result.message ? `: ${result.message}` : ''}`)
  }
  const user = result && typeof result === 'object' && result.status === 'ok' ? (result.user as Partial<HookUser> | undefined) : undefined
  if (!user || typeof user.claims !== 'object' || user.claims === null || !Array.isArray(user.roles) || !user.roles.every((r) => typeof r === 'string')) {
    throw hookFailure(hooks, name, 'it must return { status: "ok", user: { claims, roles } } or { status: "deny", message }')
  }
  return { claims: user.claims, roles: user.roles, token: typeof user.token === 'string' ? user.token : before.token }
}

/**
 * The `connection_init` payload of a WebSocket to an upstream's subscriptions: `payload`, or what
 * `onConnectionInit` returns for it (when the slot holds one that applies to `namespace`).
 * @throws HookError (with `extensions.code`, so that the subscription fails with it) when the hook
 *   throws or returns no object; HookTimeoutError.
 */
export async function connectionInitPayload(slot: OriginHookSlot | undefined, namespace: string, url: string, payload: Record<string, unknown>, context: unknown, log: HookLogger): Promise<Record<string, unknown>> {
  const hooks = slot?.current
  const entry = hooks?.global.onConnectionInit
  if (!hooks || !entry || !hookApplies(entry, namespace)) return payload
  try {
    const result = await runHook(hooks, 'onConnectionInit', entry.hook, { namespace, url, payload, user: userOf(context), log })
    if (result === null || typeof result !== 'object' || Array.isArray(result)) throw hookFailure(hooks, 'onConnectionInit', 'it must return the payload, an object')
    return result
  } catch (err) {
    const e = err as Error & { code: string; statusCode?: number }
    throw Object.assign(e, { extensions: { code: e.code, http: { status: e.statusCode ?? 500 } } })
  }
}
