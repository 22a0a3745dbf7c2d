/**
 * Error masking (cf. envelop `use-masked-errors`): only GraphQL errors and errors from
 * `gateway/errors.ts` reach clients. Anything else is logged with an id and replaced with
 * `TRB_ERR_INTERNAL`. SQL text and stacks never reach a client.
 */
import { randomUUID } from 'node:crypto'
import { GraphQLError, type ASTNode, type GraphQLFormattedError } from 'graphql'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import { DB_RETRY_AFTER_SECONDS, errorBody, isErrorCode, isTributaryError, recordErrorCode } from '../errors.js'
import type { RunMode } from '../connectors/types.js'
import { publicUpstreamMessage, upstreamDetailsOf, type UpstreamDetails } from '../connectors/upstream-details.js'

/** Options of {@link formatGraphQLError}. */
export interface FormatErrorOptions {
  mode: RunMode
  logger: FastifyBaseLogger
}

/** A formatted error plus the HTTP status it implies (used by /operations/*). */
export interface FormattedErrorWithStatus {
  error: GraphQLFormattedError
  /** 400 for request errors, the error's own status for gateway errors, 500 for masked ones. */
  status: number
}

const SUGGESTION = / ?Did you mean .*\?$/

/** HTTP status of a GraphQL error by its `extensions.code`; other codes (validation, coercion) are 400. */
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  TRB_ERR_UPSTREAM: 502,
  TRB_ERR_UPSTREAM_TIMEOUT: 504,
  TRB_ERR_DB_TIMEOUT: 504,
  TRB_ERR_DB_UNAVAILABLE: 503,
  TRB_ERR_UPSTREAM_UNAVAILABLE: 503,
  TRB_ERR_UPSTREAM_TOO_LARGE: 502,
  TRB_ERR_INTERNAL: 500,
}

/**
 * An error an upstream provided (it carries `extensions.upstream`, set by the REST and GraphQL
 * connectors). Production: the message becomes {@link publicUpstreamMessage}, only `code`, `originalCode` and `http`
 * stay, and the upstream's text is logged (warn, msg `"upstream error"`). Development: the message
 * stays, with `extensions.upstream` = `{ method, path, status, body? }` (body: an excerpt).
 */
function formatUpstreamError(
  message: string,
  extensions: Record<string, unknown>,
  upstream: UpstreamDetails,
  base: Pick<GraphQLFormattedError, 'locations' | 'path'>,
  options: FormatErrorOptions,
): GraphQLFormattedError {
  const code = typeof extensions.code === 'string' ? extensions.code : 'TRB_ERR_UPSTREAM'
  if (options.mode === 'production') {
    options.logger.warn({ upstream, upstreamMessage: message, code, path: base.path }, 'upstream error')
    const kept = { ...(extensions.originalCode !== undefined ? { originalCode: extensions.originalCode } : {}), ...(extensions.http ? { http: extensions.http } : {}) }
    return { message: publicUpstreamMessage(upstream), ...base, extensions: { code, ...kept } }
  }
  const { source: _source, ...shown } = upstream
  return { message, ...base, extensions: { ...extensions, code, upstream: shown } }
}

/**
 * graphql-tools delegation reports several errors of one upstream result at one path as an
 * `AggregateError` of GraphQL errors (e.g. two merged fields from a source that failed): such an
 * error is formatted as its first member, which carries the upstream's code and extensions.
 */
function firstOfAggregate(original: Error | undefined): Error | undefined {
  if (!(original instanceof AggregateError)) return original
  const first: unknown = original.errors[0]
  return first instanceof GraphQLError && original.errors.every((e) => e instanceof GraphQLError) ? first : original
}

/**
 * The error a gateway-side failure hides behind GraphQL errors, or undefined. graphql-tools
 * delegation wraps what a stitched schema executed in-process reported (the federation connector's
 * supergraph, merged types, links) into new GraphQL errors whose `originalError` is the inner one
 * (relocatedError), so a `TypeError` thrown inside the gateway arrives as a GraphQLError wrapping a
 * GraphQLError wrapping the `TypeError`. Followed down the `originalError` chain: an error that is
 * neither a GraphQLError nor one of gateway/errors.ts, reached without passing a level that carries
 * a code of ours or an upstream's details (`extensions.upstream`, the upstream-message contract),
 * is returned; a chain that ends in a GraphQLError (written by graphql-js, a resolver or an
 * upstream) or a TributaryError gives undefined.
 */
function hiddenInternalError(err: GraphQLError): Error | undefined {
  let current: Error | undefined = err
  for (let level = 0; current instanceof GraphQLError && level < 32; level++) {
    if (isErrorCode(current.extensions.code) || upstreamDetailsOf(current.extensions)) return undefined
    current = firstOfAggregate(current.originalError ?? undefined)
  }
  return current && !(current instanceof GraphQLError) && !isTributaryError(current) ? current : undefined
}

/** Logs `original` with a new error id and returns the `TRB_ERR_INTERNAL` error a client gets instead. */
function maskedError(original: Error, base: Pick<GraphQLFormattedError, 'locations' | 'path'>, options: FormatErrorOptions): FormattedErrorWithStatus {
  const id = randomUUID()
  options.logger.error({ err: original, errorId: id, path: base.path }, 'masked error')
  recordErrorCode('TRB_ERR_INTERNAL')
  return {
    error: {
      message: `Internal error (id ${id})`,
      ...base,
      extensions: { code: 'TRB_ERR_INTERNAL', errorId: id, ...(options.mode === 'development' ? { debug: original.message } : {}) },
    },
    status: 500,
  }
}

/**
 * Formats one GraphQL error for a client (GraphQL spec §7.1.2: message, locations, path, extensions).
 * In production, field suggestions ("Did you mean ...?") are removed, and upstream-provided messages
 * are masked (see {@link formatUpstreamError}). `extensions.code` is always a code of
 * gateway/errors.ts: an error from an upstream GraphQL API becomes `TRB_ERR_UPSTREAM` (502) unless it
 * carries one of ours; any other GraphQL error without one becomes `TRB_ERR_GRAPHQL_VALIDATION` when
 * it has no `path` (syntax, validation, variable coercion: raised before execution) and
 * `TRB_ERR_GRAPHQL_FIELD` when it has one (raised by a resolver); a foreign code it carried
 * (`BAD_USER_INPUT`, a remote API's code) moves to `extensions.originalCode`. An error that is none
 * of these (a `TypeError` of the gateway's, also when graphql-tools wrapped it in GraphQL errors: see
 * {@link hiddenInternalError}) is logged (msg `"masked error"`, with its `errorId`) and becomes
 * `TRB_ERR_INTERNAL` with that id, its message shown only in development (`extensions.debug`).
 */
export function formatGraphQLError(err: GraphQLError, options: FormatErrorOptions): FormattedErrorWithStatus {
  const original = firstOfAggregate(err.originalError)
  const base = { locations: err.locations, path: err.path }
  const strip = (m: string) => (options.mode === 'production' ? m.replace(SUGGESTION, '') : m)
  if (!original || original instanceof GraphQLError) {
    const hidden = original && hiddenInternalError(err)
    if (hidden) return maskedError(hidden, base, options)
    const source = (original as GraphQLError | undefined) ?? err
    const extensions: Record<string, unknown> = { ...source.extensions }
    const own = extensions.code
    const upstream = upstreamDetailsOf(extensions)
    const code = isErrorCode(own) ? own : upstream ? 'TRB_ERR_UPSTREAM' : err.path ? 'TRB_ERR_GRAPHQL_FIELD' : 'TRB_ERR_GRAPHQL_VALIDATION'
    if (own !== undefined && own !== code) extensions.originalCode = own
    extensions.code = code
    recordErrorCode(code)
    // An error an upstream GraphQL API returned is an upstream failure: 502 unless it carries a code of ours.
    if (upstream) return { error: formatUpstreamError(source.message, extensions, upstream, base, options), status: STATUS_BY_CODE[code] || (code === 'TRB_ERR_UPSTREAM' ? 502 : 400) }
    // A federation planning error's text is the library's (`Was not able to find any options for id…`): logged, not shown in production.
    if (extensions.CRITICAL_ERROR === true && options.mode === 'production') {
      options.logger.error({ err: { message: source.message }, path: err.path }, 'federation query plan failed')
      return { error: { message: 'The federation query plan could not be built', ...base, extensions }, status: STATUS_BY_CODE[code] || 400 }
    }
    return { error: { message: strip(source.message), ...base, extensions }, status: STATUS_BY_CODE[code] || 400 }
  }
  if (isTributaryError(original)) {
    let message = original.message
    if (options.mode === 'production' && original.code === 'TRB_ERR_DB_RAW') message = 'Raw query failed'
    // Upstream errors carry the upstream's HTTP status (WunderGraph #822) in `extensions.http`.
    const originalExtensions = (original as { extensions?: { http?: { status?: number } } }).extensions
    const http = originalExtensions?.http
    recordErrorCode(original.code)
    const upstream = upstreamDetailsOf(originalExtensions)
    if (upstream) {
      const extensions = { code: original.code, ...(http ? { http } : {}) }
      return { error: formatUpstreamError(message, extensions, upstream, base, options), status: original.statusCode ?? 502 }
    }
    // A TypeScript operation's OperationError keeps the handler's own code beside ours.
    const originalCode = (original as { originalCode?: unknown }).originalCode
    return {
      error: { message, ...base, extensions: { code: original.code, ...(http ? { http } : {}), ...(typeof originalCode === 'string' ? { originalCode } : {}) } },
      status: original.statusCode ?? 500,
    }
  }
  return maskedError(original, base, options)
}

/**
 * Formats a list of errors; `status` is the most severe one (5xx over 4xx; 504 over 502). `critical`
 * is true when one is a query-planning error of a federation source (`extensions.CRITICAL_ERROR`,
 * set by `@graphql-tools/federation` when the plan cannot be built: a corrupted node id, an
 * interface object no subgraph resolves): the answer then carries `data: null`, as Hive Gateway and
 * the federation gateway audit expect, not partial data.
 */
export function formatGraphQLErrors(errors: readonly GraphQLError[], options: FormatErrorOptions): { errors: GraphQLFormattedError[]; status: number; critical: boolean } {
  const formatted = errors.map((e) => formatGraphQLError(e, options))
  const rank = (s: number) => (s === 504 ? 4 : s === 502 ? 3 : s >= 500 ? 2 : 1)
  let status = 400
  for (const f of formatted) if (rank(f.status) > rank(status) || (rank(f.status) === rank(status) && f.status !== 400)) status = f.status
  const critical = formatted.some((f) => f.error.extensions?.CRITICAL_ERROR === true)
  return { errors: formatted.map((f) => f.error), status, critical }
}

/** `Retry-After` seconds of the codes a client should retry later. */
const RETRY_AFTER_BY_CODE: Readonly<Record<string, number>> = { TRB_ERR_DB_UNAVAILABLE: DB_RETRY_AFTER_SECONDS }

/**
 * Sets `Retry-After` (RFC 9110 §10.2.3, seconds) when one of `codes` calls for it (the longest
 * wins): a database that cannot be reached answers `TRB_ERR_DB_UNAVAILABLE` with it, on
 * `/graphql` as on `/operations/*`.
 */
export function setRetryAfter(reply: FastifyReply, codes: Iterable<unknown>): void {
  let seconds = 0
  for (const code of codes) seconds = Math.max(seconds, typeof code === 'string' ? (RETRY_AFTER_BY_CODE[code] ?? 0) : 0)
  // A longer wait already set (withRetryAfter, from an error's own retryAfterSec) is kept.
  if (seconds > 0 && seconds > Number(reply.getHeader('retry-after') ?? 0)) reply.header('retry-after', String(seconds))
}

/** The codes of formatted errors, for {@link setRetryAfter}. */
export function codesOf(errors: readonly GraphQLFormattedError[] | undefined): unknown[] {
  return (errors ?? []).map((e) => e.extensions?.['code'])
}

/**
 * For an answer in which nothing was answered (`data` null): when one of `errors` asks the client
 * to come back later (its original error carries `retryAfterSec`, e.g. `TRB_ERR_CAPACITY` from a
 * full SQLite worker queue, or its code is one of {@link RETRY_AFTER_BY_CODE}, e.g.
 * `TRB_ERR_DB_UNAVAILABLE`), sets `Retry-After` (the largest, in seconds) on `reply` and returns
 * 503; otherwise returns `status` unchanged.
 */
export function withRetryAfter(reply: FastifyReply, errors: readonly GraphQLError[] | undefined, status: number): number {
  let after = 0
  for (const e of errors ?? []) {
    const original = e.originalError as { retryAfterSec?: unknown; code?: unknown } | undefined
    const code = original?.code ?? e.extensions?.['code']
    const sec = typeof original?.retryAfterSec === 'number' ? original.retryAfterSec : typeof code === 'string' ? (RETRY_AFTER_BY_CODE[code] ?? 0) : 0
    if (sec > after) after = sec
  }
  if (after === 0) return status
  reply.header('retry-after', String(after))
  return 503
}

/** The `WWW-Authenticate` challenge of an auth error code (RFC 6750 §3), or undefined for other codes. */
export function challengeOf(code: string): string | undefined {
  if (code === 'TRB_ERR_AUTH_INVALID') return 'Bearer error="invalid_token"'
  if (code === 'TRB_ERR_AUTH_REQUIRED') return 'Bearer'
  if (code === 'TRB_ERR_AUTH_FORBIDDEN') return 'Bearer error="insufficient_scope"'
  return undefined
}

/**
 * Sends an error of `gateway/errors.ts` as the JSON body of docs/architecture.md §5, never cacheable;
 * the auth errors carry their `WWW-Authenticate` challenge (RFC 6750 §3).
 * @param status overrides the error's own status (e.g. 406 or 415 for `TRB_ERR_BAD_REQUEST`).
 */
export function sendError(reply: FastifyReply, err: Error & { code: string; statusCode?: number }, status = err.statusCode ?? 500, extensions?: Record<string, unknown>) {
  const challenge = challengeOf(err.code)
  if (challenge !== undefined) reply.header('www-authenticate', challenge)
  setRetryAfter(reply, [err.code])
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(errorBody(err, extensions)))
}

/** A GraphQL error carrying an error of `gateway/errors.ts`, so that formatting keeps its code and status. */
export function codedGraphQLError(err: Error & { code: string }, node?: ASTNode): GraphQLError {
  return new GraphQLError(err.message, { originalError: err, extensions: { code: err.code }, ...(node ? { nodes: [node] } : {}) })
}
