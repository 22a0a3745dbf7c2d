/**
 * The identity of an HTTP request (README "Authentication"): its token verified once per request by
 * the gateway's `auth.jwt` verifier (gateway/auth/jwt.ts), shared by the rate limiter (`key: 'sub'`)
 * and the route handlers. The result becomes `context.auth` of the operations the request runs.
 */
import type { FastifyRequest } from 'fastify'
import { GraphQLError, type ExecutionResult } from 'graphql'
import type { Gateway } from '../runtime.js'
import type { AuthInfo } from '../auth/jwt.js'
import { authorize, claimVariables } from '../auth/directives.js'
import { AuthInvalidError, isTributaryError } from '../errors.js'
import { codedGraphQLError } from './format-error.js'
import type { SubscriptionOperationInfo } from './subscriptions.js'
import { authenticated, clientRequestOf, revalidated } from '../hooks/index.js'

const identities = new WeakMap<FastifyRequest, Promise<AuthInfo | null>>()
const ANONYMOUS: Promise<AuthInfo | null> = Promise.resolve(null)

/**
 * The request's verified identity; null when it carries no token or the gateway reads none
 * (`auth.jwt` unset). Verified once per request (the promise is remembered).
 * @throws AuthInvalidError (401) for a bad token; UpstreamUnavailableError (503) when the key set
 *   cannot be fetched.
 */
export function authenticateRequest(gateway: Gateway, request: FastifyRequest): Promise<AuthInfo | null> {
  const verifier = gateway.jwt
  if (!verifier) return ANONYMOUS
  let identity = identities.get(request)
  if (!identity) {
    identity = verifier.authenticate(request.headers)
    const hooks = gateway.hooks
    if (hooks?.authentication) identity = identity.then((user) => (user ? authenticated(hooks, user, clientRequestOf({ request }), request.log) : null))
    identities.set(request, identity)
  }
  return identity
}

/**
 * Refuses a mutation authenticated by the `auth.oidc` session cookie that does not carry the
 * session's CSRF token in `X-CSRF-Token` (README "Cookie login with OpenID Connect"). Requests
 * authenticated by a bearer token, and anonymous ones, pass.
 * @throws CsrfError (403 `TRB_ERR_CSRF`).
 */
export function checkCsrf(gateway: Gateway, request: FastifyRequest, auth: AuthInfo | null): void {
  if (auth?.via === 'cookie' && gateway.session) gateway.session.checkCsrf(auth, request.headers['x-csrf-token'])
}

/**
 * The WebSocket form of {@link checkCsrf}: a mutation sent over a socket authenticated by the
 * `auth.oidc` session cookie (of its upgrade request) must carry the session's CSRF token as
 * `csrfToken` in the socket's `connection_init` payload. Sockets authenticated by a token (the
 * payload's `authorization`, or the upgrade's `Authorization` header), anonymous ones, and queries
 * and subscriptions pass.
 * @returns the operation's refusal (403 `TRB_ERR_CSRF` as a GraphQL error), or undefined to run it.
 */
export function checkSocketCsrf(gateway: Gateway, auth: AuthInfo | null, operationType: string, connectionParams: Readonly<Record<string, unknown>>): readonly GraphQLError[] | undefined {
  if (operationType !== 'mutation' || auth?.via !== 'cookie' || !gateway.session) return undefined
  try {
    gateway.session.checkCsrf(auth, connectionParams.csrfToken, 'connection_init')
    return undefined
  } catch (err) {
    if (isTributaryError(err)) return [codedGraphQLError(err)]
    throw err
  }
}

/**
 * Re-runs the `revalidate` hook of config `hooks.authentication` on an identity (README "Hooks"):
 * for `/auth/user?revalidate=true` and programs embedding the gateway.
 * @returns the identity to keep: the hook's, or `user` when no `revalidate` hook is set
 * @throws AuthInvalidError (401) when the hook denies it; HookError / HookTimeoutError (500).
 */
export function revalidateUser(gateway: Gateway, user: AuthInfo, log: FastifyRequest['log']): Promise<AuthInfo> {
  return revalidated(gateway.hooks, user, log)
}

/**
 * Makes the identity a WebSocket proved on `connection_init` the identity of its upgrade request, so
 * that whatever reads the request's identity afterwards (the rate limiter's `key: 'sub'`, counting
 * each operation of the socket) sees the token the socket runs with, not only the upgrade's headers.
 */
export function adoptSocketIdentity(request: FastifyRequest, auth: AuthInfo | null): void {
  identities.set(request, auth ? Promise.resolve(auth) : ANONYMOUS)
}

/**
 * The request's identity without waiting when it is already known (no token, or a token verified
 * recently): the hot path of a client repeating its token; else {@link authenticateRequest}.
 * @throws (as a rejected promise) what {@link authenticateRequest} throws.
 */
export function identityOf(gateway: Gateway, request: FastifyRequest): AuthInfo | null | Promise<AuthInfo | null> {
  const verifier = gateway.jwt
  if (!verifier) return null
  // Authentication hooks run per request: no shortcut past them.
  if (gateway.hooks?.authentication) return authenticateRequest(gateway, request)
  return verifier.known(request.headers) ?? authenticateRequest(gateway, request)
}

/**
 * The identity of a WebSocket, checked once on `connection_init`: the payload's `authorization`
 * (`Bearer <token>` or the bare token), else the upgrade request's `Authorization` header or cookie.
 * @returns null when no token came.
 * @throws AuthInvalidError for a bad token (the socket is then closed with 4403).
 */
export async function authenticateSocket(gateway: Gateway, request: FastifyRequest, params: Readonly<Record<string, unknown>>): Promise<AuthInfo | null> {
  const verifier = gateway.jwt
  if (!verifier) return null
  const sent = params.authorization ?? params.Authorization
  let user: AuthInfo | null
  if (typeof sent === 'string' && sent !== '') user = await verifier.verify(/^bearer /i.test(sent) ? sent.slice(7).trim() : sent)
  else if (sent !== undefined && sent !== null) throw new AuthInvalidError('connection_init "authorization" must be a string')
  else user = await verifier.authenticate(request.headers)
  const hooks = gateway.hooks
  return user && hooks?.authentication ? authenticated(hooks, user, clientRequestOf({ request }), request.log) : user
}

/**
 * Applies an operation's auth directives to a WebSocket operation: refuses it (401/403 as GraphQL
 * errors carrying the codes) or returns its variables with the `@fromClaim` ones added. An identity
 * whose token expired since `connection_init` counts as an invalid token.
 */
export function authorizeSocketOperation(info: SubscriptionOperationInfo, auth: AuthInfo | null): readonly GraphQLError[] | { variables: Record<string, unknown> } | undefined {
  try {
    if (auth && typeof auth.claims.exp === 'number' && auth.claims.exp * 1000 <= Date.now()) throw new AuthInvalidError('the token has expired')
    const rules = info.authRules
    if (!rules) return undefined
    authorize(rules, auth, `operation ${info.operationName ?? '(anonymous)'}`)
    const claimed = Object.keys(rules.fromClaim)
    if (claimed.length === 0) return undefined
    const sent = claimed.find((v) => info.variables && Object.hasOwn(info.variables, v))
    if (sent) return [new GraphQLError(`Variable "$${sent}" comes from the token's "${rules.fromClaim[sent]}" claim and cannot be sent`)]
    return { variables: { ...info.variables, ...claimVariables(rules, auth!) } }
  } catch (err) {
    if (isTributaryError(err)) return [codedGraphQLError(err)]
    throw err
  }
}

/**
 * Completes a subscription when its token expires: the stream yields one result whose error is
 * `TRB_ERR_AUTH_INVALID` ("the token has expired") and ends (graphql-ws then sends `complete`).
 * Streams of anonymous callers or tokens without `exp` are returned as they are.
 */
export async function endAtExpiry(
  started: Promise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult> | AsyncGenerator<ExecutionResult, void, void> | ExecutionResult,
  auth: AuthInfo | null,
): Promise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult> {
  const result = await started
  const exp = auth?.claims.exp
  if (typeof exp !== 'number' || !(Symbol.asyncIterator in result)) return result
  return untilExpiry(result, exp * 1000)
}

/**
 * The stream of {@link endAtExpiry}. Written as an iterator rather than an async generator: a
 * generator's `return()` waits for its pending `next()` (the next event, which may never come), so
 * the timer and the source would outlive the subscriber; here `return()` releases both at once and
 * settles a pending `next()` as done.
 */
function untilExpiry(source: AsyncGenerator<ExecutionResult, void, void>, expiresAt: number): AsyncGenerator<ExecutionResult, void, void> {
  const done: IteratorReturnResult<void> = { done: true, value: undefined }
  let timer: NodeJS.Timeout | undefined
  let finished = false
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), Math.min(Math.max(0, expiresAt - Date.now()), 2_147_483_647))
  })
  let close: () => void = () => undefined
  const closed = new Promise<'closed'>((resolve) => (close = () => resolve('closed')))
  const finish = (): void => {
    if (finished) return
    finished = true
    clearTimeout(timer)
    close()
    // Not awaited: the source's own pending next() may hold its return() back.
    void source.return(undefined).catch(() => undefined)
  }
  const iterator: AsyncGenerator<ExecutionResult, void, void> = {
    async next() {
      if (finished) return done
      let next: IteratorResult<ExecutionResult, void> | 'expired' | 'closed'
      try {
        next = await Promise.race([source.next(), expired, closed])
      } catch (err) {
        finish()
        throw err
      }
      if (next === 'closed') return done
      if (next === 'expired') {
        finish()
        return { done: false, value: { errors: [codedGraphQLError(new AuthInvalidError('the token has expired'))] } }
      }
      if (next.done) finish()
      return next.done ? done : next
    },
    async return() {
      finish()
      return done
    },
    async throw(err: unknown) {
      finish()
      throw err
    },
    [Symbol.asyncIterator]: () => iterator,
  }
  return iterator
}
