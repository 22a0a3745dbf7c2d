/**
 * Compiles a TypeScript operation (gateway/operations/define.ts) into the same {@link CompiledOperation}
 * a `.graphql` operation compiles to, so that `/operations/*`, live queries, SSE, the shared cache,
 * OpenAPI and the typed client serve both alike (docs/architecture.md §5):
 *
 * - the input's JSON Schema comes from the zod schema (Standard JSON Schema, or zod's own
 *   `toJSONSchema()`), and ajv checks it first, so a bad input gets the 400 body of a `.graphql`
 *   operation; the schema's own `validate` then runs (refinements, transforms, defaults), its issues
 *   reported in the same body;
 * - `fromClaim` fields (`{ userId: 'sub' }`) leave the public input schema; `authorize` adds their
 *   values from the token (checked against the field's JSON Schema: 403) before the schema's own
 *   validation runs, so the handler's `input` has them;
 * - the handler runs with `{ input, user, operations, context, log, request }`, bounded by
 *   `operations.handlerTimeoutMs` (504 `TRB_ERR_OPERATION_TIMEOUT`, `context.signal` aborted);
 * - `operations` is the in-process client: it looks the callee up in the version's operation map
 *   (internal ones included: the HTTP route's 404 is bypassed, not the auth checks), validates the
 *   input as the route would, checks `@requireAuthentication`/`@rbac`/`@fromClaim` with the caller's
 *   identity and runs the callee's `execute`/`subscribe`; nesting is bounded by `operations.maxCallDepth`;
 * - a thrown {@link OperationError} answers its 4xx status, `TRB_ERR_OPERATION_ERROR` and its code in
 *   `extensions.originalCode`; anything else answers 500 `TRB_ERR_OPERATION_HANDLER`, its message
 *   shown in development only (logged with an id in both modes).
 */
import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { GraphQLError, type ExecutionResult } from 'graphql'
import type { Logger } from 'pino'
import { authorize } from '../auth/directives.js'
import type { AuthInfo } from '../auth/jwt.js'
import {
  OperationCustomError,
  OperationHandlerError,
  OperationInvalidError,
  OperationNotFoundError,
  OperationTimeoutError,
  BadRequestError,
  isTributaryError,
} from '../errors.js'
import { claimReader, variableReaders, variablesError, type CompiledOperation, type Variables } from './compile.js'
import { isOperationError, type InputSchema, type OperationCallResult, type UntypedOperationsClient, type OperationUser, type StandardResult } from './define.js'
import { omitProperties, type JsonSchema } from './json-schema.js'
import type { TypeScriptStoredOperation } from './load.js'

/** Options of {@link compileTypeScriptOperation}. */
export interface CompileTypeScriptOptions {
  /** `graphql.maxInputDepth`. Default 32. */
  maxInputDepth?: number
  /** `operations.handlerTimeoutMs`. Default 10000. */
  handlerTimeoutMs?: number
  /** `operations.maxCallDepth`. Default 8. */
  maxCallDepth?: number
  /** `mode`: in production a handler error's message is not sent. */
  mode: 'development' | 'production'
  /** Where handler errors are logged when the call has no request (live-query re-runs). */
  logger: Logger
  /** The operations of the same gateway version, for the in-process client (a function: the map is built after the compile). */
  operations: () => ReadonlyMap<string, CompiledOperation>
}

/** The execution context the routes, the live pollers and the in-process client pass (`execute(variables, context)`). */
interface CallContext {
  request?: { method: string; url: string; headers: IncomingHttpHeaders; log?: Logger }
  headers?: IncomingHttpHeaders
  auth?: AuthInfo | null
  signal?: AbortSignal
  /** Depth of in-process calls that led here (0 for an HTTP call). */
  callDepth?: number
  [key: string]: unknown
}

/**
 * The draft-07 JSON Schema of a zod schema: Standard JSON Schema (`~standard.jsonSchema`, zod 4.2+),
 * else zod 4's `toJSONSchema()` method.
 * @throws OperationInvalidError when the schema offers neither, or cannot be expressed (a `z.date()`, a transform's output…)
 */
export function jsonSchemaOf(schema: InputSchema, io: 'input' | 'output', where: string): JsonSchema {
  const std = schema['~standard'] as { jsonSchema?: Record<'input' | 'output', (o: { target: string }) => Record<string, unknown>> }
  let out: Record<string, unknown>
  try {
    if (std.jsonSchema) out = std.jsonSchema[io]({ target: 'draft-07' })
    else if (typeof (schema as { toJSONSchema?: unknown }).toJSONSchema === 'function') out = (schema as unknown as { toJSONSchema(o: object): Record<string, unknown> }).toJSONSchema({ target: 'draft-7', io })
    else throw new Error(`the ${std['vendor' as never] ?? 'schema'} library cannot give a JSON Schema: use zod 4 (Standard JSON Schema)`)
  } catch (err) {
    throw new OperationInvalidError(`${where}: ${(err as Error).message}`, { cause: err })
  }
  const { $schema: _drop, ...rest } = out
  return rest as JsonSchema
}

const NO_INPUT: JsonSchema = { type: 'object', properties: {}, additionalProperties: false }

/** Standard Schema issues as the problems of a 400 `TRB_ERR_OPERATION_VARIABLES`. */
function issuesError(issues: Extract<StandardResult<unknown>, { issues: readonly unknown[] }>['issues']) {
  return variablesError(
    issues.map((issue) => {
      const segments = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p))
      const path = segments.length ? `/${segments.join('/')}` : ''
      return { variable: segments[0] ?? '', path, schemaPath: '#', message: issue.message }
    }),
  )
}

/** The identity a handler sees. */
function userOf(auth: AuthInfo | null | undefined): OperationUser | null {
  if (!auth) return null
  const sub = auth.claims.sub
  return Object.freeze({ ...(typeof sub === 'string' ? { sub } : {}), roles: auth.roles, claims: auth.claims })
}

/** A thrown value as the coded error of an answer (see the module comment). */
function codedError(err: unknown, name: string, mode: 'development' | 'production', log: Logger): Error {
  if (isTributaryError(err)) return err
  if (isOperationError(err) && err.statusCode >= 400 && err.statusCode <= 499) {
    const coded = new OperationCustomError(err.message) as unknown as Error & { statusCode: number; originalCode: string }
    coded.statusCode = err.statusCode
    coded.originalCode = err.code
    return coded
  }
  const id = randomUUID()
  log.error({ err, errorId: id, operation: name }, 'operation handler failed')
  const message = (err as Error)?.message ?? String(err)
  return new OperationHandlerError(name, mode === 'production' ? `id ${id}` : `${message} (id ${id})`)
}

/** An error of an in-process call, as {@link OperationCallResult.error}. */
function callError(err: unknown): NonNullable<OperationCallResult['error']> {
  const original = err instanceof GraphQLError && err.originalError ? err.originalError : err
  if (isTributaryError(original)) {
    const originalCode = (original as { originalCode?: unknown }).originalCode
    return { message: original.message, code: original.code, statusCode: original.statusCode ?? 500, ...(typeof originalCode === 'string' ? { originalCode } : {}) }
  }
  const code = err instanceof GraphQLError ? err.extensions?.code : undefined
  return { message: (original as Error)?.message ?? String(original), code: typeof code === 'string' && code.startsWith('TRB_ERR_') ? code : 'TRB_ERR_GRAPHQL_FIELD', statusCode: 400 }
}

/** Runs `work` with a deadline: past `ms`, `controller` aborts and the promise rejects with TRB_ERR_OPERATION_TIMEOUT. */
async function withDeadline<T>(work: () => Promise<T> | T, ms: number, controller: AbortController, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new OperationTimeoutError(name, ms)
      controller.abort(err)
      reject(err)
    }, ms)
  })
  try {
    return await Promise.race([Promise.resolve().then(work), deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Compiles a TypeScript operation.
 * @throws OperationInvalidError `file:1:1: …` when its input schema is not an object schema or has no JSON Schema.
 */
export function compileTypeScriptOperation(stored: TypeScriptStoredOperation, options: CompileTypeScriptOptions): CompiledOperation {
  const settings = stored.definition.settings
  const where = `${stored.file}:1:1`
  const inputSchema = settings.input
  const fullSchema = inputSchema ? jsonSchemaOf(inputSchema, 'input', where) : NO_INPUT
  if (fullSchema.type !== 'object') throw new OperationInvalidError(`${where}: the input schema must be an object schema (z.object({…})): its fields are the operation's variables`)
  // `fromClaim` fields are set from the token, never by the caller: not in the public schema (sending one is a 400).
  const claimed = Object.keys(stored.auth?.fromClaim ?? {})
  for (const field of claimed) {
    if (!fullSchema.properties?.[field]) throw new OperationInvalidError(`${where}: fromClaim.${field}: the input schema has no field "${field}"`)
  }
  const vSchema = claimed.length ? omitProperties(fullSchema, claimed, true) : fullSchema
  const claimsOf = claimReader(stored.auth, fullSchema)
  /** A caller's input that sets a claimed field is refused (zod's JSON Schema lets unknown fields through). */
  const unclaimed = (vars: Variables): Variables => {
    const sent = claimed.filter((field) => Object.hasOwn(vars, field))
    if (sent.length) throw variablesError(sent.map((field) => ({ variable: field, path: `/${field}`, schemaPath: '#', message: 'is not a variable of this operation (it comes from the token)' })))
    return vars
  }
  const rSchema = settings.response ? jsonSchemaOf(settings.response, 'output', where) : {}
  const readers = variableReaders(vSchema, options.maxInputDepth ?? 32)
  const timeoutMs = options.handlerTimeoutMs ?? 10_000
  const maxDepth = options.maxCallDepth ?? 8
  const what = `operation ${stored.name}`
  /** Inputs whose schema validation is asynchronous (an async refinement): finished in execute. */
  const pending = new WeakMap<object, Promise<StandardResult<unknown>>>()

  /** Runs the schema's own validation on ajv-checked variables: its output, or the promise of it. */
  const finish = (vars: Variables): Variables => {
    if (!inputSchema) return vars
    const result = inputSchema['~standard'].validate(vars)
    if (result instanceof Promise) {
      pending.set(vars, result)
      return vars
    }
    if (result.issues) throw issuesError(result.issues)
    return result.value as Variables
  }
  const inputOf = async (vars: Variables): Promise<unknown> => {
    const later = pending.get(vars)
    if (!later) return vars
    const result = await later
    if (result.issues) throw issuesError(result.issues)
    return result.value
  }

  /** The in-process client of one call. */
  const clientFor = (ctx: CallContext, signal: AbortSignal): UntypedOperationsClient => {
    const depth = (ctx.callDepth ?? 0) + 1
    const checkDepth = () => {
      if (depth > maxDepth) throw new OperationHandlerError(stored.name, `in-process calls are nested deeper than ${maxDepth} (operations.maxCallDepth)`)
    }
    const prepare = (kind: CompiledOperation['kind'], call: { operationName: string; input?: unknown }) => {
      checkDepth()
      const op = options.operations().get(call?.operationName)
      if (!op) throw new OperationNotFoundError(String(call?.operationName))
      if (op.kind !== kind) throw new BadRequestError(`${op.name} is a ${op.kind}: call operations.${op.kind === 'mutation' ? 'mutate' : op.kind}`)
      // The route's 404 for internal operations is not applied: this path is the one they are for.
      const vars = op.authorize(op.variablesFromBody(call.input ?? {}), ctx.auth ?? null)
      return { op, vars, context: { ...ctx, reply: undefined, signal, callDepth: depth } }
    }
    const run = async <T>(kind: 'query' | 'mutation', call: { operationName: string; input?: unknown }): Promise<OperationCallResult<T>> => {
      checkDepth()
      let prepared
      try {
        prepared = prepare(kind, call)
      } catch (err) {
        return { error: callError(err) }
      }
      const result = await prepared.op.execute(prepared.vars, prepared.context)
      if (result.errors?.length) return { ...(result.data ? { data: result.data as T } : {}), error: callError(result.errors[0]) }
      return { data: result.data as T }
    }
    return {
      query: (call) => run('query', call),
      mutate: (call) => run('mutation', call),
      async subscribe<T>(call: { operationName: string; input?: unknown }): Promise<AsyncIterableIterator<T>> {
        const { op, vars, context } = prepare('subscription', call)
        const started = await op.subscribe(vars, context)
        if (!(Symbol.asyncIterator in started)) throw (started.errors?.[0]?.originalError ?? started.errors?.[0] ?? new OperationHandlerError(op.name, 'the subscription did not start'))
        const source = started as AsyncIterableIterator<ExecutionResult>
        const iterator: AsyncIterableIterator<T> = {
          async next() {
            const step = await source.next()
            if (step.done) return { done: true, value: undefined }
            if (step.value.errors?.length) throw step.value.errors[0].originalError ?? step.value.errors[0]
            return { done: false, value: step.value.data as T }
          },
          async return() {
            await source.return?.()
            return { done: true, value: undefined }
          },
          [Symbol.asyncIterator]() {
            return iterator
          },
        }
        return iterator
      },
    }
  }

  /** The handler's argument and the controller whose signal it gets. */
  const handlerArgs = (input: unknown, ctx: CallContext) => {
    const controller = new AbortController()
    if (ctx.signal) {
      if (ctx.signal.aborted) controller.abort(ctx.signal.reason)
      else ctx.signal.addEventListener('abort', () => controller.abort(ctx.signal!.reason), { once: true })
    }
    const log = (ctx.request?.log ?? options.logger).child({ operation: stored.name })
    const headers = ctx.headers ?? ctx.request?.headers ?? {}
    const args = {
      input,
      user: userOf(ctx.auth),
      operations: clientFor(ctx, controller.signal),
      context: { signal: controller.signal, headers },
      log,
      request: ctx.request && (ctx.callDepth ?? 0) === 0 ? { method: ctx.request.method, url: ctx.request.url, headers: ctx.request.headers } : null,
    }
    return { args, controller, log }
  }

  const fail = (err: unknown, log: Logger): ExecutionResult => {
    const coded = codedError(err, stored.name, options.mode, log)
    return { errors: [new GraphQLError(coded.message, { originalError: coded })] }
  }

  return {
    stored,
    name: stored.name,
    kind: stored.kind,
    internal: stored.internal,
    variablesSchema: vSchema,
    responseSchema: rSchema,
    direct: null,
    // With claimed fields, the schema's own validation waits for authorize, which adds them.
    variablesFromQuery: (query) => (claimsOf ? unclaimed(readers.variablesFromQuery(query)) : finish(readers.variablesFromQuery(query))),
    variablesFromBody: (body) => (claimsOf ? unclaimed(readers.variablesFromBody(body)) : finish(readers.variablesFromBody(body))),

    authorize(variables, auth) {
      authorize(stored.auth, auth, what)
      return claimsOf ? finish({ ...variables, ...claimsOf(auth!) }) : variables
    },

    async execute(variables, context) {
      const ctx = context as CallContext
      const { args, controller, log } = handlerArgs(undefined, ctx)
      try {
        args.input = await inputOf(variables)
        const value = await withDeadline(() => settings.handler(args as never), timeoutMs, controller, stored.name)
        return { data: (value === undefined ? null : value) as ExecutionResult['data'] }
      } catch (err) {
        return fail(err, log)
      }
    },

    async subscribe(variables, context) {
      const ctx = context as CallContext
      const { args, controller, log } = handlerArgs(undefined, ctx)
      let generator: AsyncGenerator<unknown, void, unknown>
      try {
        args.input = await inputOf(variables)
        generator = settings.handler(args as never) as AsyncGenerator<unknown, void, unknown>
        if (!generator || typeof (generator as { next?: unknown }).next !== 'function') throw new TypeError('a subscription handler must be an async generator (async function* …)')
      } catch (err) {
        return fail(err, log)
      }
      let finished = false
      // Pull-based: the generator runs only when the stream asks for the next event, so it never
      // gets ahead of the client by more than the one event being written.
      const iterator: AsyncIterableIterator<ExecutionResult> = {
        async next() {
          if (finished) return { done: true, value: undefined }
          try {
            const step = await generator.next()
            if (step.done) {
              finished = true
              return { done: true, value: undefined }
            }
            return { done: false, value: { data: (step.value === undefined ? null : step.value) as ExecutionResult['data'] } }
          } catch (err) {
            finished = true
            return { done: false, value: fail(err, log) }
          }
        },
        async return() {
          finished = true
          controller.abort()
          await generator.return(undefined).catch(() => undefined)
          return { done: true, value: undefined }
        },
        [Symbol.asyncIterator]() {
          return iterator
        },
      }
      return iterator
    },

    stringifyData(data) {
      return JSON.stringify(data === undefined ? null : data)
    },
  }
}
