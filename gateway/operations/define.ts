/**
 * TypeScript operations: what a file under `operations/` (`operations/users/create.ts`) default-exports.
 * The shape follows WunderGraph's `createOperation` (`createOperation.query({ input, handler })`,
 * `operations.query({ operationName, input })`, `OperationError`); docs/architecture.md §5.
 *
 * This module has no runtime import: a definition is a plain object branded with
 * {@link OPERATION_BRAND} (a `Symbol.for` key), so a file that imports `tributary-gateway` from another
 * copy of the package (the compiled `dist/` beside a gateway run from source) is still recognised.
 * The input schema is a zod 4 schema (or any Standard Schema that also implements Standard JSON
 * Schema): the gateway never imports zod itself, users bring their own.
 */
import type { IncomingHttpHeaders } from 'node:http'

/** The brand of a TypeScript operation definition (`Symbol.for('tributary.operation')`). */
export const OPERATION_BRAND: unique symbol = Symbol.for('tributary.operation') as never
/** The brand of an {@link OperationError} (`Symbol.for('tributary.operationError')`). */
export const OPERATION_ERROR_BRAND: unique symbol = Symbol.for('tributary.operationError') as never

/**
 * The part of a Standard Schema v1 (https://standardschema.dev, implemented by zod 3.24+ and 4) the
 * gateway uses: `validate` (refinements, transforms, defaults) and, from zod 4.2 on, the Standard
 * JSON Schema converter `jsonSchema.input`. zod 4.0/4.1 schemas are converted by their own
 * `toJSONSchema()` method instead.
 */
export interface InputSchema<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    validate(value: unknown): StandardResult<Output> | Promise<StandardResult<Output>>
    readonly types?: { readonly input: Input; readonly output: Output } | undefined
  }
}

/** A Standard Schema validation result. */
export type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly { readonly message: string; readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined }[] }

/** The type a schema accepts (zod's `z.input`). */
export type InferInput<S> = S extends InputSchema<infer I, unknown> ? I : Record<string, never>
/** The type a schema produces (zod's `z.output` / `z.infer`). */
export type InferOutput<S> = S extends InputSchema<unknown, infer O> ? O : Record<string, never>

/** `Cache-Control` of GET answers and the shared response cache, as `# @cache` sets them for `.graphql` operations. */
export interface OperationCacheSettings {
  /** Seconds a GET answer is fresh; above 0 the shared response cache stores it. Default 0. */
  maxAge?: number
  /** Seconds a stale answer may still be served while it is refreshed. */
  staleWhileRevalidate?: number
  /** `public` (default true) or `private`. */
  public?: boolean
  /** Adds `must-revalidate`. Default false. */
  mustRevalidate?: boolean
}

/** The verified identity of the caller (a JWT's claims and roles), or null for an anonymous call. */
export interface OperationUser {
  /** The token's `sub` claim, when it has one. */
  readonly sub?: string
  /** The roles read from the token (`auth.jwt.rolesClaim`). */
  readonly roles: readonly string[]
  /** Every claim of the token. */
  readonly claims: Readonly<Record<string, unknown>>
}

/** What a call of another operation through {@link OperationsClient} gives: WunderGraph's `{ data, error }`. */
export interface OperationCallResult<T = unknown> {
  /** The answer (the data object of a `.graphql` operation, the return value of a TypeScript one); undefined on error. */
  data?: T
  /** The error, as a client would see it (`code` from the error table, `statusCode`); undefined on success. */
  error?: { message: string; code: string; statusCode: number; originalCode?: string }
}

/** A call of another operation by name (the untyped form, before `generated/client.ts` exists). */
export interface OperationCall<Name extends string = string, Input = Record<string, unknown>> {
  /** The operation's URL name: `TodoById`, `users/create` (folders are namespaces). */
  operationName: Name
  /** The operation's variables (`.graphql`) or input (TypeScript), checked as an HTTP caller's are. */
  input?: Input
}

/**
 * The stored operations of the project, by name: `{ kind, input, response }` each. Empty in the
 * package; the generated `generated/client.ts` fills it by declaration merging
 * (`declare module 'tributary-gateway' { interface OperationRegistry extends ServerOperations {} }`),
 * which makes the handler's {@link OperationsClient} typed per operation as soon as that file is part
 * of the TypeScript program (a tsconfig that includes `generated/`, or an import of it).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface OperationRegistry {}

/** One entry of an operation table such as {@link OperationRegistry}. */
export interface OperationEntry {
  kind: 'query' | 'mutation' | 'subscription'
  input: unknown
  response: unknown
}

/** The names of the operations of `Ops` whose kind is `K`. */
export type OperationNames<Ops, K extends OperationEntry['kind']> = { [N in keyof Ops]: Ops[N] extends { kind: K } ? N : never }[keyof Ops] & string

/** A typed call of operation `N` of `Ops`: `input` is required when the operation has a required field, absent-able otherwise. */
export type TypedOperationCall<Ops, N extends keyof Ops> = Ops[N] extends { input: infer I } ? ({} extends I ? { operationName: N; input?: I } : { operationName: N; input: I }) : never

/** The data of operation `N` of `Ops`. */
export type OperationData<Ops, N extends keyof Ops> = Ops[N] extends { response: infer R } ? R : unknown

/**
 * The in-process client typed by an operation table (WunderGraph's `operations.query({ operationName, input })`):
 * `operationName` must name an operation of that kind, `input` must be its input, and `data` is its
 * response. Behaviour as {@link UntypedOperationsClient}.
 */
export interface TypedOperationsClient<Ops> {
  /** Runs a query. */
  query<N extends OperationNames<Ops, 'query'>>(call: TypedOperationCall<Ops, N>): Promise<OperationCallResult<OperationData<Ops, N>>>
  /** Runs a mutation. */
  mutate<N extends OperationNames<Ops, 'mutation'>>(call: TypedOperationCall<Ops, N>): Promise<OperationCallResult<OperationData<Ops, N>>>
  /** Starts a subscription: each event's data, until the returned iterator is closed. @throws the first error. */
  subscribe<N extends OperationNames<Ops, 'subscription'>>(call: TypedOperationCall<Ops, N>): Promise<AsyncIterableIterator<OperationData<Ops, N>>>
}

/**
 * The in-process client of a handler: calls every other stored operation (`.graphql` or TypeScript,
 * internal ones included) without HTTP, with the caller's identity, so `@requireAuthentication`,
 * `@rbac` and `@fromClaim` hold as over HTTP. Input is validated as over HTTP; failures come back as
 * `{ error }` (never thrown), except a call nested deeper than `operations.maxCallDepth`, which throws.
 * This is its untyped form (any name, `T` for the data), used while no generated code fills
 * {@link OperationRegistry}.
 */
export interface UntypedOperationsClient {
  /** Runs a query. */
  query<T = unknown>(call: OperationCall): Promise<OperationCallResult<T>>
  /** Runs a mutation. */
  mutate<T = unknown>(call: OperationCall): Promise<OperationCallResult<T>>
  /** Starts a subscription: each event's data, until the returned iterator is closed. @throws the first error. */
  subscribe<T = unknown>(call: OperationCall): Promise<AsyncIterableIterator<T>>
}

/**
 * The handler's `operations`: {@link TypedOperationsClient} of {@link OperationRegistry} once the
 * generated code fills it, else {@link UntypedOperationsClient}.
 */
export type OperationsClient = [keyof OperationRegistry] extends [never] ? UntypedOperationsClient : TypedOperationsClient<OperationRegistry>

/** A pino-style logger (the request's, bound to the operation). */
export interface OperationLogger {
  info(obj: unknown, msg?: string): void
  warn(obj: unknown, msg?: string): void
  error(obj: unknown, msg?: string): void
  debug(obj: unknown, msg?: string): void
}

/** What a handler receives. */
export interface HandlerContext<Input> {
  /** The input, validated and transformed by the input schema (its defaults applied). */
  input: Input
  /** The caller's identity; null when anonymous. */
  user: OperationUser | null
  /** The in-process client of the other operations. */
  operations: OperationsClient
  /** Per-call context: `signal` aborts when the client leaves or the handler times out. */
  context: { signal: AbortSignal; headers: IncomingHttpHeaders }
  /** The logger. */
  log: OperationLogger
  /** The HTTP request's method, URL and headers; null for an in-process call or a live-query re-run. */
  request: { method: string; url: string; headers: IncomingHttpHeaders } | null
}

/** `fromClaim`: input field → claim name (a key, or a dotted path such as `org.id`), e.g. `{ userId: 'sub' }`. */
export type ClaimMap<S> = { readonly [K in keyof InferOutput<S>]?: string }

/** Settings shared by queries, mutations and subscriptions. */
interface CommonSettings<S, C = ClaimMap<S>> {
  /** The input schema (a zod object schema). Default: no input. */
  input?: S
  /** An optional response schema (zod), used for the response JSON Schema (OpenAPI, typed client); not checked at run time. */
  response?: InputSchema
  /** A valid token is needed. Default from `operations.defaults.<kind>.authentication`, else false. */
  requireAuthentication?: boolean
  /** Role rules (imply `requireAuthentication`), as `@rbac` on `.graphql` operations. */
  rbac?: { requireMatchAny?: readonly string[]; requireMatchAll?: readonly string[] }
  /**
   * Input fields set from the caller's token, as `@fromClaim` on `.graphql` variables: `{ userId: 'sub' }`.
   * Implies `requireAuthentication`; the fields leave the public input (JSON Schema, OpenAPI, typed
   * client), a caller that sends one gets a 400, and a token without the claim (or with a value the
   * field's schema refuses) a 403. The handler's `input` has them, validated by the input schema.
   */
  fromClaim?: C
}

/** A query's settings. */
export interface QuerySettings<S, R, C = ClaimMap<S>> extends CommonSettings<S, C> {
  /** Cache settings, as `# @cache`; `false` turns a config default off. */
  cache?: OperationCacheSettings | false
  /** Live-query poll interval: `{ intervalMs }` as `# @live interval=`; `false` turns a config default off. */
  live?: { intervalMs?: number } | false
  handler(ctx: HandlerContext<InferOutput<S>>): Promise<R> | R
}

/** A mutation's settings. */
export interface MutationSettings<S, R, C = ClaimMap<S>> extends CommonSettings<S, C> {
  handler(ctx: HandlerContext<InferOutput<S>>): Promise<R> | R
}

/** A subscription's settings: the handler is an async generator, each `yield` one event. */
export interface SubscriptionSettings<S, R, C = ClaimMap<S>> extends CommonSettings<S, C> {
  handler(ctx: HandlerContext<InferOutput<S>>): AsyncGenerator<R, void, unknown>
}

/** A TypeScript operation definition: what an operation file default-exports. */
export interface TypeScriptOperation<Kind extends 'query' | 'mutation' | 'subscription' = 'query' | 'mutation' | 'subscription', Input = unknown, Response = unknown> {
  readonly [OPERATION_BRAND]: true
  readonly kind: Kind
  readonly settings: CommonSettings<InputSchema> & {
    cache?: OperationCacheSettings | false
    live?: { intervalMs?: number } | false
    handler(ctx: HandlerContext<never>): unknown
  }
  /** Type-only: the input a caller sends (`z.input` of the schema). */
  readonly __input?: Input
  /** Type-only: the answer. */
  readonly __response?: Response
}

function define<Kind extends 'query' | 'mutation' | 'subscription'>(kind: Kind, settings: object): never {
  if (!settings || typeof (settings as { handler?: unknown }).handler !== 'function') throw new TypeError(`createOperation.${kind}: a handler function is required`)
  return Object.freeze({ [OPERATION_BRAND]: true, kind, settings }) as never
}

/**
 * Defines a TypeScript operation; the file default-exports the result.
 *
 * ```ts
 * import { z } from 'zod'
 * import { createOperation } from 'tributary-gateway'
 * export default createOperation.query({
 *   input: z.object({ id: z.number().int() }),
 *   handler: async ({ input, operations }) => (await operations.query({ operationName: 'TodoById', input })).data,
 * })
 * ```
 * @throws TypeError when `handler` is not a function.
 */
export const createOperation = {
  query<S extends InputSchema | undefined = undefined, R = unknown, C extends ClaimMap<S> = {}>(settings: QuerySettings<S, R, C>): TypeScriptOperation<'query', Omit<InferInput<S>, keyof C>, Awaited<R>> {
    return define('query', settings)
  },
  mutation<S extends InputSchema | undefined = undefined, R = unknown, C extends ClaimMap<S> = {}>(settings: MutationSettings<S, R, C>): TypeScriptOperation<'mutation', Omit<InferInput<S>, keyof C>, Awaited<R>> {
    return define('mutation', settings)
  },
  subscription<S extends InputSchema | undefined = undefined, R = unknown, C extends ClaimMap<S> = {}>(settings: SubscriptionSettings<S, R, C>): TypeScriptOperation<'subscription', Omit<InferInput<S>, keyof C>, R> {
    return define('subscription', settings)
  },
}

/** True when `value` is a definition made by {@link createOperation} (of any copy of the package). */
export function isTypeScriptOperation(value: unknown): value is TypeScriptOperation {
  return !!value && typeof value === 'object' && (value as Record<symbol, unknown>)[OPERATION_BRAND] === true
}

/**
 * An error a handler throws to answer with its own code and a 4xx status (WunderGraph's
 * `OperationError`). The answer is `TRB_ERR_OPERATION_ERROR` with this status, the message as given
 * (shown in production too: write it for clients) and `extensions.originalCode` = `code`.
 * A status outside 400–499 is answered 500 with the handler error's masking.
 */
export class OperationError extends Error {
  readonly [OPERATION_ERROR_BRAND] = true
  /** The caller's own code, e.g. `NotFound`. */
  readonly code: string
  /** The HTTP status, 400–499. */
  readonly statusCode: number
  constructor(options: { code: string; statusCode?: number; message: string; cause?: unknown }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'OperationError'
    this.code = options.code
    this.statusCode = options.statusCode ?? 400
  }
}

/** True when `err` is an {@link OperationError} (of any copy of the package). */
export function isOperationError(err: unknown): err is OperationError {
  return !!err && typeof err === 'object' && (err as Record<symbol, unknown>)[OPERATION_ERROR_BRAND] === true
}
