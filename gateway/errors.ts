/**
 * The one table of Tributary's error codes. Every error the gateway raises on purpose is created
 * here with `@fastify/error`, so it carries a stable `code` and an HTTP `statusCode`. Every code is
 * documented in the README's "Error codes" table; `test/errors.test.ts` checks that.
 *
 * An error created here is *safe*: its message may reach clients, so messages never contain SQL,
 * credentials or stack traces. Anything else is masked by `http/` (logged with an id, replaced by
 * `TRB_ERR_INTERNAL`).
 */
import { appendFileSync, mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import createError, { type FastifyErrorConstructor } from '@fastify/error'

type Ctor = FastifyErrorConstructor<{ code: string; statusCode?: number }, unknown[]>

// ----- config -----
/** A config file failed validation; the message names the path (`datasources[1].url: ...`). */
export const ConfigInvalidError = createError('TRB_ERR_CONFIG_INVALID', 'Invalid config: %s', 500) as Ctor
/** The config file could not be found or imported. */
export const ConfigLoadError = createError('TRB_ERR_CONFIG_LOAD', 'Cannot load config %s: %s', 500) as Ctor
/**
 * The config uses a part whose package is an optional peer dependency that is not installed (pg,
 * mysql2, ioredis, the OpenTelemetry SDK): `<what> needs the <package> package: npm install <package>`.
 */
export const PackageMissingError = createError('TRB_ERR_PACKAGE_MISSING', '%s needs the %s package: npm install %s', 500) as Ctor

// ----- compose -----
/** Two sources define the same public name in different ways, or a namespace is invalid. */
export const ComposeCollisionError = createError('TRB_ERR_COMPOSE_COLLISION', '%s', 500) as Ctor
/** A namespace is not a valid GraphQL name prefix or is used twice. */
export const ComposeNamespaceError = createError('TRB_ERR_COMPOSE_NAMESPACE', '%s', 500) as Ctor
/** A data source failed to load (its database unreachable with no cached introspection, a bad OpenAPI document...). */
export const SourceLoadError = createError('TRB_ERR_SOURCE_LOAD', 'Data source %s failed to load: %s', 500) as Ctor

// ----- operations -----
/** A stored operation does not parse or validate; the message names file, line and column. */
export const OperationInvalidError = createError('TRB_ERR_OPERATION_INVALID', '%s', 500) as Ctor
/** No stored operation at this path. */
export const OperationNotFoundError = createError('TRB_ERR_OPERATION_NOT_FOUND', 'Unknown operation: %s', 404) as Ctor
/** The operation does not accept this HTTP method. */
export const OperationMethodError = createError('TRB_ERR_OPERATION_METHOD', 'Method %s is not allowed for %s; allowed: %s', 405) as Ctor
/** The variables failed validation against the operation's JSON Schema. */
export const OperationVariablesError = createError('TRB_ERR_OPERATION_VARIABLES', 'Invalid variables: %s', 400) as Ctor
/** A TypeScript operation's handler threw (or a subscription handler is not an async generator); the message is the error's in development only. */
export const OperationHandlerError = createError('TRB_ERR_OPERATION_HANDLER', 'The handler of operation %s failed: %s', 500) as Ctor
/** A TypeScript operation's handler threw an `OperationError`: its 4xx status, its message, its own code in `extensions.originalCode`. */
export const OperationCustomError = createError('TRB_ERR_OPERATION_ERROR', '%s', 400) as Ctor
/** A TypeScript operation's handler ran longer than `operations.handlerTimeoutMs`; its `context.signal` was aborted. */
export const OperationTimeoutError = createError('TRB_ERR_OPERATION_TIMEOUT', 'The handler of operation %s exceeded the time limit of %s ms', 504) as Ctor
/** The request body is not valid JSON or not an object. */
export const BadRequestError = createError('TRB_ERR_BAD_REQUEST', '%s', 400) as Ctor

// ----- graphql endpoint -----
/** A GraphQL request that is not well formed (GraphQL over HTTP §7.1). */
export const GraphQLRequestError = createError('TRB_ERR_GRAPHQL_REQUEST', '%s', 400) as Ctor
/** A mutation sent over GET (GraphQL over HTTP §6.4.1). */
export const GraphQLMethodError = createError('TRB_ERR_GRAPHQL_METHOD', 'Only queries may be sent with GET; use POST', 405) as Ctor
/** The document exceeded a parser or validation limit (depth, aliases, tokens). */
export const GraphQLLimitError = createError('TRB_ERR_GRAPHQL_LIMIT', '%s', 400) as Ctor
/** The document failed to parse or validate, or a variable or argument value could not be coerced (GraphQL spec §5, §6.1.2). */
export const GraphQLValidationError = createError('TRB_ERR_GRAPHQL_VALIDATION', '%s', 400) as Ctor
/** A resolver or a remote GraphQL API raised a GraphQL error without a code of this table (its own code is kept in `extensions.originalCode`). */
export const GraphQLFieldError = createError('TRB_ERR_GRAPHQL_FIELD', '%s', 400) as Ctor
/** An automatic persisted query whose hash the gateway does not know (the message is Apollo's `PersistedQueryNotFound`). */
export const PersistedNotFoundError = createError('TRB_ERR_PERSISTED_NOT_FOUND', 'PersistedQueryNotFound', 400) as Ctor
/** In production mode `/graphql` runs persisted operations only. */
export const PersistedOnlyError = createError('TRB_ERR_PERSISTED_ONLY', 'Only persisted operations are allowed', 400) as Ctor

// ----- upstreams -----
/** An upstream (REST or GraphQL API) answered with an error or could not be reached. */
export const UpstreamError = createError('TRB_ERR_UPSTREAM', 'Upstream %s failed: %s', 502) as Ctor
/** An upstream did not answer in time. */
export const UpstreamTimeoutError = createError('TRB_ERR_UPSTREAM_TIMEOUT', 'Upstream %s timed out after %s ms', 504) as Ctor
/** A REST upstream is not called: its circuit breaker is open (after consecutive failures) or its request queue is full. */
export const UpstreamUnavailableError = createError('TRB_ERR_UPSTREAM_UNAVAILABLE', 'Upstream %s is unavailable: %s', 503) as Ctor
/** A REST upstream's answer exceeded the source's `maxResponseBytes`; it was aborted, not buffered. */
export const UpstreamTooLargeError = createError('TRB_ERR_UPSTREAM_TOO_LARGE', 'Upstream %s answered more than %s bytes', 502) as Ctor

// ----- database -----
/** A unique constraint was violated; nothing was written. */
export const DbUniqueError = createError('TRB_ERR_DB_UNIQUE', 'Unique constraint failed on %s', 409) as Ctor
/** A foreign key constraint was violated; nothing was written. */
export const DbForeignKeyError = createError('TRB_ERR_DB_FOREIGN_KEY', 'Foreign key constraint failed on %s', 409) as Ctor
/** A NOT NULL constraint was violated; nothing was written. */
export const DbNotNullError = createError('TRB_ERR_DB_NOT_NULL', 'Null constraint failed on %s', 400) as Ctor
/** A CHECK constraint was violated; nothing was written. */
export const DbCheckError = createError('TRB_ERR_DB_CHECK', 'Check constraint failed on %s', 400) as Ctor
/** A value the column cannot hold (too long, out of range, malformed); nothing was written. */
export const DbValueError = createError('TRB_ERR_DB_VALUE', 'Invalid value for %s', 400) as Ctor
/**
 * A created row cannot be read back by its key: a PostgreSQL INSERT rule or routing trigger wrote it
 * elsewhere under another key (Sakila's `payment` rules insert `DEFAULT` keys into their partitions).
 * The request's transaction is rolled back: nothing was written.
 */
export const DbUnreadableWriteError = createError('TRB_ERR_DB_UNREADABLE_WRITE', 'The created %s row cannot be read back by its key (an INSERT rule or trigger redirected it); nothing was written', 422) as Ctor
/** A row that an update or delete names does not exist. */
export const DbNotFoundError = createError('TRB_ERR_DB_NOT_FOUND', 'No %s record found for %s', 404) as Ctor
/** A bad argument to a database field (an empty where, a bad cursor...). */
export const DbInputError = createError('TRB_ERR_DB_INPUT', '%s', 400) as Ctor
/** A nested write would disconnect a row whose foreign key is NOT NULL (Prisma's P2014: the change would violate a required relation); nothing was written. */
export const DbRelationRequiredError = createError('TRB_ERR_DB_RELATION_REQUIRED', 'The change would violate a required relation: %s', 400) as Ctor
/** A raw SQL statement failed; the message is the engine's, shown in development mode only. */
export const DbRawError = createError('TRB_ERR_DB_RAW', 'Raw query failed: %s', 400) as Ctor
/** A raw SQL statement on SQLite that would reach another file or code (ATTACH, VACUUM INTO, load_extension, PRAGMA); nothing ran. */
export const DbRawRefusedError = createError('TRB_ERR_DB_RAW_REFUSED', 'Raw SQL refused: %s', 400) as Ctor
/**
 * A database source with `changes` cannot stream its changes: the triggers (or the changelog table)
 * are missing and `changes.install` is not set, or the engine offers no way (an in-memory SQLite).
 */
export const DbChangesUnavailableError = createError('TRB_ERR_DB_CHANGES_UNAVAILABLE', 'Data source %s cannot stream changes: %s', 500) as Ctor
/** A statement ran longer than its source's `statementTimeoutMs`; the engine stopped it and it is not run again. */
export const DbTimeoutError = createError('TRB_ERR_DB_TIMEOUT', 'The database statement exceeded the time limit of %s ms', 504) as Ctor
/**
 * A mutation field was not written: another mutation field of the same request on the same database
 * failed, and a request's fields on one database run in one transaction (all or nothing). The
 * response's status is the failing field's.
 */
export const DbRolledBackError = createError('TRB_ERR_DB_ROLLED_BACK', 'Not written: %s', 400) as Ctor
/** A statement was cancelled because its client disconnected; no response is sent (the client is gone). */
export const DbCancelledError = createError('TRB_ERR_DB_CANCELLED', 'The database statement was cancelled: the client went away', 499) as Ctor
/**
 * 503: the database of a source cannot be reached now (connection refused, reset or lost, server
 * shutting down, too many connections, a SQLite file that cannot be opened or was removed, a lock
 * held past the busy timeout); sent with `Retry-After: {@link DB_RETRY_AFTER_SECONDS}`.
 * Arguments: the source's name, the reason (a fixed phrase, never the driver's message).
 */
export const DbUnavailableError = createError('TRB_ERR_DB_UNAVAILABLE', 'The database of source %s is unavailable: %s', 503) as Ctor
/** The `Retry-After` (seconds) of an answer carrying `TRB_ERR_DB_UNAVAILABLE`. */
export const DB_RETRY_AFTER_SECONDS = 5

// ----- http -----
/** No route at this method and path. */
export const RouteNotFoundError = createError('TRB_ERR_NOT_FOUND', 'Route %s %s not found', 404) as Ctor
/** A browser WebSocket upgrade or CORS preflight from an origin that is neither the gateway's own nor in `server.allowedOrigins`. */
export const OriginForbiddenError = createError('TRB_ERR_ORIGIN_FORBIDDEN', 'Origin not allowed: %s', 403) as Ctor
/** The `Host` header is not in `server.allowedHosts` (a defence against DNS rebinding). */
export const MisdirectedError = createError('TRB_ERR_MISDIRECTED', 'This host is not served here', 421) as Ctor
/** `GET /metrics` without the `metrics.bearerToken` (401) or from an address not in `metrics.allowedIps` (403). */
export const MetricsDeniedError = createError('TRB_ERR_METRICS_DENIED', '%s', 403) as Ctor
/** The admin console's API without access (401: no admin secret or token; 403: a token without a role of `console.roles`). */
export const ConsoleDeniedError = createError('TRB_ERR_CONSOLE_DENIED', '%s', 401) as Ctor

// ----- authentication and authorization -----
/** A token was sent but is not valid: bad signature, expired, not yet valid, wrong issuer or audience, unknown key, `alg: none`. Sent with `WWW-Authenticate: Bearer error="invalid_token"`. */
export const AuthInvalidError = createError('TRB_ERR_AUTH_INVALID', 'Invalid token: %s', 401) as Ctor
/** The operation (or `/graphql` with `auth.graphql: 'authenticated'`) needs a token and none was sent. Sent with `WWW-Authenticate: Bearer`. */
export const AuthRequiredError = createError('TRB_ERR_AUTH_REQUIRED', 'Authentication required: %s', 401) as Ctor
/** A mutation authenticated by the `auth.oidc` session cookie without the session's `X-CSRF-Token` header. */
export const CsrfError = createError('TRB_ERR_CSRF', 'CSRF check failed: %s', 403) as Ctor
/** `/auth/cookie/authorize/<id>` or `/auth/cookie/callback/<id>` names no provider of `auth.oidc.providers`. */
export const OidcProviderUnknownError = createError('TRB_ERR_OIDC_PROVIDER_UNKNOWN', 'Unknown OpenID Connect provider: %s', 404) as Ctor
/** A `redirect_uri` of the OIDC routes that is not in `auth.oidc.redirectUris` (no open redirect). */
export const OidcRedirectError = createError('TRB_ERR_OIDC_REDIRECT', 'Redirect refused: %s', 400) as Ctor
/** An OIDC callback that fails: missing or wrong state or state cookie, an error from the provider, a code refused (replayed, expired), an ID token that does not validate (nonce, issuer, audience, signature), or an oversize parameter. */
export const OidcCallbackError = createError('TRB_ERR_OIDC_CALLBACK', 'Login failed: %s', 400) as Ctor
/** A valid token lacks what the operation or field needs: a role (`@rbac`, `permissions`) or a claim (`@fromClaim`). */
export const AuthForbiddenError = createError('TRB_ERR_AUTH_FORBIDDEN', 'Forbidden: %s', 403) as Ctor
/** 503: the gateway holds as many event streams (SSE) as `server.maxEventStreams` allows, or a SQLite file's worker queue is full (`retryAfterSec` on the error); `Retry-After` says when to try again. */
export const CapacityError = createError('TRB_ERR_CAPACITY', 'The gateway is at capacity: %s', 503) as Ctor
/** More requests than `server.rateLimit.max` within `server.rateLimit.timeWindowMs`; `Retry-After` says when to retry. */
export const RateLimitedError = createError('TRB_ERR_RATE_LIMITED', 'Rate limit exceeded: retry in %s seconds', 429) as Ctor
/**
 * A subscriber of an events source (README "Events (message brokers)") read its events more slowly
 * than they arrived: more than `maxBufferedEvents` waited for it. Its buffered events are dropped and
 * the subscription ends with this error.
 */
export const EventsSlowSubscriberError = createError('TRB_ERR_EVENTS_SLOW_SUBSCRIBER', 'The subscriber fell more than %s events behind; the subscription is closed', 429) as Ctor

// ----- hooks -----
/**
 * A hook of config `hooks` threw, or returned something that does not fit (input failing the
 * variables schema, a user without roles...). 500; in production the message is only the hook's
 * name, in development it carries the hook's own message.
 */
export const HookError = createError('TRB_ERR_HOOK', '%s', 500) as Ctor
/** A hook ran longer than `hooks.timeoutMs` and was cut off (its result is ignored). */
export const HookTimeoutError = createError('TRB_ERR_HOOK_TIMEOUT', 'The %s hook took longer than %s ms', 500) as Ctor
/** An `onOriginRequest` or `onOriginResponse` hook cancelled an upstream request; the error stands at the field's path. */
export const HookCancelledError = createError('TRB_ERR_HOOK_CANCELLED', 'The %s hook cancelled the request to %s', 403) as Ctor

// ----- internal -----
/** Anything unexpected. The message reaching clients is masked; the id finds the log line. */
export const InternalError = createError('TRB_ERR_INTERNAL', 'Internal error (id %s)', 500) as Ctor

/** Every error constructor above, by code; used by tests and by the error formatter. */
export const errorCodes: readonly string[] = [
  ConfigInvalidError, ConfigLoadError, PackageMissingError, ComposeCollisionError, ComposeNamespaceError, SourceLoadError,
  OperationInvalidError, OperationNotFoundError, OperationMethodError, OperationVariablesError, OperationHandlerError, OperationCustomError, OperationTimeoutError, BadRequestError,
  GraphQLRequestError, GraphQLMethodError, GraphQLLimitError, GraphQLValidationError, GraphQLFieldError, PersistedNotFoundError, PersistedOnlyError,
  UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError, UpstreamTooLargeError,
  DbUniqueError, DbForeignKeyError, DbNotNullError, DbCheckError, DbValueError, DbUnreadableWriteError, DbNotFoundError, DbInputError, DbRelationRequiredError, DbRawError, DbRawRefusedError, DbChangesUnavailableError, DbTimeoutError, DbCancelledError, DbRolledBackError, DbUnavailableError,
  RouteNotFoundError, OriginForbiddenError, MisdirectedError, MetricsDeniedError, ConsoleDeniedError,
  AuthInvalidError, AuthRequiredError, CsrfError, OidcProviderUnknownError, OidcRedirectError, OidcCallbackError, AuthForbiddenError, RateLimitedError, CapacityError,
  HookError, HookTimeoutError, HookCancelledError,
  EventsSlowSubscriberError,
  InternalError,
].map((E) => new E().code)

const known: ReadonlySet<string> = new Set(errorCodes)

/** True when `code` is a code of this table. */
export function isErrorCode(code: unknown): code is string {
  return typeof code === 'string' && known.has(code)
}

const codeLog = process.env.TRIBUTARY_ERROR_CODE_LOG ? resolve(process.env.TRIBUTARY_ERROR_CODE_LOG) : undefined
const logged = new Set<string>()

/**
 * Test support: when `TRIBUTARY_ERROR_CODE_LOG=<dir>` is set (the test suite sets it, see .taprc),
 * appends each distinct code this process puts in an error body to `<dir>/<pid>.codes`, one per line.
 * test/error-codes-after.ts then fails the run on any code missing from this table or the README.
 * A no-op otherwise. Never throws.
 */
export function recordErrorCode(code: string): void {
  if (codeLog === undefined || logged.has(code)) return
  logged.add(code)
  try {
    mkdirSync(codeLog, { recursive: true })
    appendFileSync(join(codeLog, `${process.pid}.codes`), `${code}\n`)
  } catch {
    // best effort: the check reports what it finds
  }
}

/** The JSON error body of docs/architecture.md §5 for one error of this table: `{ errors: [{ message, extensions: { code } }] }`. */
export function errorBody(err: Error & { code: string }, extensions: Record<string, unknown> = {}): { errors: { message: string; extensions: Record<string, unknown> }[] } {
  recordErrorCode(err.code)
  return { errors: [{ message: err.message, extensions: { code: err.code, ...extensions } }] }
}

/** True when `err` was created from this table, so its message is safe to send to clients. */
export function isTributaryError(err: unknown): err is Error & { code: string; statusCode: number } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && (err as unknown as { code: string }).code.startsWith('TRB_ERR_')
}
