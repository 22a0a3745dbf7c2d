/**
 * GraphQL over WebSocket for `/graphql`: the `graphql-transport-ws` protocol
 * (https://github.com/graphql/graphql-over-http/blob/main/rfcs/GraphQLOverWebSocket.md), served by
 * graphql-ws 6's protocol engine (`makeServer`) wired to a `@fastify/websocket` v11 socket.
 *
 * What this adds to graphql-ws (and what mercurius' own WebSocket code lacks, see ANCHORS.md):
 * - every document is parsed (with a token limit) and validated against the *current* schema
 *   (`getSchema()` is called per operation: development mode swaps the schema), with the depth limit
 *   applied to subscriptions as well as queries and mutations (CVE-2026-30241);
 * - a syntax or validation error is answered with an `error` message for that operation id; the
 *   socket stays open;
 * - every error is masked: only GraphQL errors and Tributary's safe errors (`gateway/errors.ts`) keep
 *   their message; anything else is logged with an id and replaced by `TRB_ERR_INTERNAL`;
 * - failures of the server itself close the socket with 4500 and a masked reason, logged through the
 *   fastify logger (never `console`).
 *
 * Close codes (graphql-transport-ws §"Connection"): 4400 invalid message, 4401 `subscribe` before
 * `connection_ack`, 4403 `onConnect` refused, 4406 subprotocol not acceptable, 4408 no
 * `connection_init` within `connectionInitWaitTimeout`, 4409 subscriber id already in use, 4429 a
 * second `connection_init`, 4500 internal error, and this module's 4503: more sockets than
 * `maxSockets` (not fatal for the graphql-ws client, which retries later). An operation beyond
 * `maxSubscriptionsPerSocket` gets an `error` message (`TRB_ERR_GRAPHQL_LIMIT`); the socket stays open.
 * Every `subscribe` message is first shown to `admitOperation` (the rate limit); one it refuses gets
 * an `error` message with its errors and the socket stays open.
 */
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import {
  GraphQLError,
  execute as graphqlExecute,
  getOperationAST,
  parse,
  specifiedRules,
  subscribe as graphqlSubscribe,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type OperationTypeNode,
  type ValidationRule,
} from 'graphql'
import { CloseCode, GRAPHQL_TRANSPORT_WS_PROTOCOL, makeServer, type Context, type SubscribePayload } from 'graphql-ws'
import { GraphQLLimitError, InternalError, isTributaryError } from '../errors.js'
import { DEFAULT_MAX_INTROSPECTION_DEPTH, buildCostPlan, checkCost, checkFragmentLimits, checkVariablesDepth, createDocumentLimitsRule } from './limits.js'
import { filterCost } from '../operations/filter-cost.js'
import { codedGraphQLError } from './format-error.js'
import { extractAuthDirectives, type OperationAuthRules } from '../auth/directives.js'
import { countSubscription } from '../observability/probes.js'
import { SharedSubscriptions } from './shared-subscriptions.js'

/** A value or a promise of it. */
export type MaybePromise<T> = T | Promise<T>

/** The `connection_init` payload, or `{}` when the client sent none. */
export type ConnectionParams = Readonly<Record<string, unknown>>

/** Runs a query or mutation (graphql-js `execute`, or a graphql-jit compiled query wrapped to this shape). */
export type ExecuteFn = (args: ExecutionArgs) => MaybePromise<ExecutionResult>

/** Creates a subscription's event stream (graphql-js `subscribe`): an async generator of results, or one result carrying the errors. */
export type SubscribeFn = (args: ExecutionArgs) => MaybePromise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult>

/** What `onOperation` is told about an operation that passed parsing and validation, just before it runs. */
export interface SubscriptionOperationInfo {
  /** The operation id the client chose (unique per socket while the operation runs). */
  readonly id: string
  /** `query`, `mutation` or `subscription`. */
  readonly operationType: OperationTypeNode
  /** The operation's name, if it has one. */
  readonly operationName: string | undefined
  /** The parsed, validated document. */
  readonly document: DocumentNode
  /** The variables as sent (not yet coerced). */
  readonly variables: Readonly<Record<string, unknown>> | undefined
  /** The HTTP upgrade request of the socket. */
  readonly request: FastifyRequest
  /** The socket's `connection_init` payload. */
  readonly connectionParams: ConnectionParams
  /** The rules of the operation's `@requireAuthentication`/`@rbac`/`@fromClaim` directives (removed from `document` before validation), if any. */
  readonly authRules: OperationAuthRules | undefined
}

/** Options of {@link createSubscriptionHandler}. */
export interface SubscriptionHandlerOptions {
  /** The schema to run against; called once per operation, so a development reload takes effect on the next operation. */
  getSchema(): GraphQLSchema
  /** Runs queries and mutations sent over the socket. Default: graphql-js `execute`. */
  execute?: ExecuteFn
  /**
   * Called after a mutation sent over the socket returned data, before its result is sent (the
   * gateway invalidates the cached responses it touched, as /graphql and /operations do). A throw is
   * logged, never sent.
   */
  afterMutation?(args: ExecutionArgs, operation: OperationDefinitionNode): Promise<void>
  /** Creates subscription streams. Default: graphql-js `subscribe`. */
  subscribe?: SubscribeFn
  /** Builds the GraphQL context value, once per operation. A throw fails that operation only (masked unless safe). */
  context(request: FastifyRequest, connectionParams: ConnectionParams): MaybePromise<Record<string, unknown>>
  /** Extra validation rules, run after graphql-js' `specifiedRules` and the depth limit. */
  validationRules?: readonly ValidationRule[]
  /** Maximum field depth of an operation (`{ a { b } }` has depth 2); introspection fields are allowed {@link DEFAULT_MAX_INTROSPECTION_DEPTH}. Default 10; `Infinity` disables it. */
  maxDepth?: number
  /** Most aliases in one document. Default: unlimited. */
  maxAliases?: number
  /** Most fragment spreads in one document, checked before validation (see limits.ts `checkFragmentLimits`). Default: unlimited. */
  maxFragmentSpreads?: number
  /** Most selections of an operation, its fragments expanded, checked before validation (see limits.ts `checkFragmentLimits`). Default: unlimited. */
  maxSelections?: number
  /** Maximum lexical tokens of a document, enforced by the parser. Default 15000 (Apollo Router's limit). */
  maxTokens?: number
  /**
   * Called for every valid operation before it runs. Return GraphQL errors to refuse it (they are sent
   * as the operation's `error` message, e.g. "only persisted operations"); return `{ variables }` to
   * run it with these variables instead (the `@fromClaim` ones added); return nothing to let it run.
   * A throw refuses it with a masked error.
   */
  onOperation?(info: SubscriptionOperationInfo): MaybePromise<readonly GraphQLError[] | { variables: Record<string, unknown> } | void>
  /**
   * Called for every `subscribe` message (query, mutation or subscription) within
   * `maxSubscriptionsPerSocket`, before anything else is done with it (parsing included): the
   * gateway's rate limit counts it here. Return GraphQL errors
   * to refuse it (sent as the operation's `error` message; the socket stays open), or nothing to go
   * on. A throw refuses it with a masked error.
   */
  admitOperation?(request: FastifyRequest, connectionParams: ConnectionParams): MaybePromise<readonly GraphQLError[] | void>
  /**
   * Called on `connection_init` (authentication). Return `false` to close with 4403 Forbidden, an
   * object to send it as the `connection_ack` payload, or nothing to accept. A throw closes with 4500.
   */
  onConnect?(request: FastifyRequest, connectionParams: ConnectionParams): MaybePromise<boolean | Record<string, unknown> | void>
  /**
   * Formats every error that reaches the client (in `next` results and `error` messages). Default:
   * GraphQL errors without a non-GraphQL cause and Tributary errors keep their message; anything else
   * is logged at `error` with an id and sent as `TRB_ERR_INTERNAL` "Internal error (id …)".
   */
  formatError?(err: GraphQLError): GraphQLFormattedError
  /** Deepest nesting of input objects/lists, in literals and variables (`TRB_ERR_GRAPHQL_LIMIT`). Default: unlimited. */
  maxInputDepth?: number
  /** Largest operation cost (see limits.ts `buildCostPlan`), with `defaultListSize` for lists without `take`. Default: unlimited. */
  maxCost?: number
  /** Size assumed for a list field without `take`, in the cost. Default 10. */
  defaultListSize?: number
  /** Most operations running at once on one socket; one more gets an `error` message (`TRB_ERR_GRAPHQL_LIMIT`) and the socket stays open. Default 100. */
  maxSubscriptionsPerSocket?: number
  /** Most sockets open at once on this handler; one more is closed with 4503 (the graphql-ws client retries it later). Default: unlimited. */
  maxSockets?: number
  /** Milliseconds to wait for `connection_init` before closing with 4408. Default 3000. */
  connectionInitWaitTimeout?: number
  /** Milliseconds between WebSocket pings; a socket that does not pong within as long is terminated. Default 12000; 0 disables. */
  keepAlive?: number
  /**
   * Shares subscription executions (./shared-subscriptions.ts): returns the part of an operation's
   * context that can change its results, as a string (e.g. the token's claims and the request
   * headers resolvers may read). Subscriptions of this handler whose schema, document text, operation
   * name, variables and key are equal run once per event and instance; `undefined` runs that one
   * alone. Default: none is shared (each subscription runs its own stream).
   */
  shareKey?(request: FastifyRequest, connectionParams: ConnectionParams, contextValue: Record<string, unknown>): string | undefined
  /** Called after each shared event was written to its group's sockets: sockets written to and the milliseconds it took (execution excluded). */
  onSharedDelivery?(sockets: number, ms: number): void
  /** Where protocol and internal errors are logged. */
  logger: FastifyBaseLogger
}

/** The shared-group membership {@link createSubscriptionHandler}'s `onSubscribe` decided for a subscription. */
interface ShareTicket {
  readonly key: string
  readonly socket: WebSocket
  readonly id: string
}

/** Default {@link SubscriptionHandlerOptions.maxDepth}. */
export const DEFAULT_MAX_DEPTH = 10
/** Default {@link SubscriptionHandlerOptions.maxTokens}. */
export const DEFAULT_MAX_TOKENS = 15000

/** What graphql-ws keeps in `ctx.extra` for each socket. */
interface SocketExtra {
  readonly socket: WebSocket
  readonly request: FastifyRequest
}

/**
 * The `handleProtocols` function for the `ws` server (`@fastify/websocket` option
 * `options.handleProtocols`): picks `graphql-transport-ws` when the client offers it, otherwise the
 * client's first protocol, so that the handshake completes and the handler can close with 4406 as
 * the spec asks (refusing the protocol in the handshake would give the client a bare 1006 instead).
 *
 * @param protocols the protocols of the `Sec-WebSocket-Protocol` request header, in order.
 * @returns the protocol to answer with, or `false` for none.
 */
export function handleProtocols(protocols: Set<string>): string | false {
  if (protocols.has(GRAPHQL_TRANSPORT_WS_PROTOCOL)) return GRAPHQL_TRANSPORT_WS_PROTOCOL
  const first = protocols.values().next()
  return first.done === true ? false : first.value
}

/**
 * The `ws` server options `@fastify/websocket` should be registered with:
 * `app.register(fastifyWebsocket, { options: { ...websocketServerOptions, maxPayload: 1048576 } })`.
 */
export const websocketServerOptions: { readonly handleProtocols: (protocols: Set<string>) => string | false } = { handleProtocols }


/**
 * The default error formatter: a GraphQL error raised by graphql-js itself (syntax, validation,
 * variable coercion) or thrown as a `GraphQLError` by a resolver, and any Tributary error, keep their
 * message; any other cause is logged with an id and masked as `TRB_ERR_INTERNAL`.
 */
function createMaskingFormatter(logger: FastifyBaseLogger): (err: GraphQLError) => GraphQLFormattedError {
  return (err) => {
    const cause: unknown = err.originalError
    if (cause === undefined || cause === null || (cause instanceof GraphQLError && cause.originalError == null)) return err.toJSON()
    if (isTributaryError(cause)) {
      const formatted = err.toJSON()
      return { ...formatted, message: cause.message, extensions: { ...formatted.extensions, code: cause.code } }
    }
    const id = randomUUID()
    logger.error({ err: cause, errorId: id, path: err.path }, 'GraphQL over WebSocket: internal error')
    const masked = new InternalError(id)
    return {
      message: masked.message,
      ...(err.locations ? { locations: err.locations } : {}),
      ...(err.path ? { path: err.path } : {}),
      extensions: { code: masked.code },
    }
  }
}

/** Wraps a non-GraphQL failure so that the formatter masks it (or passes it, when it is a safe error). */
function toGraphQLError(err: unknown): GraphQLError {
  if (err instanceof GraphQLError) return err
  const cause = err instanceof Error ? err : new Error(String(err))
  return new GraphQLError(cause.message, { originalError: cause })
}

/**
 * Creates the `wsHandler` of the `/graphql` route for `@fastify/websocket` v11:
 * `app.route({ method: 'GET', url: '/graphql', handler, wsHandler: createSubscriptionHandler({...}) })`.
 * Register `@fastify/websocket` with {@link websocketServerOptions}; if its `ws` server has no
 * `handleProtocols`, the handler installs {@link handleProtocols} on the first connection.
 *
 * Each socket speaks `graphql-transport-ws` (see the module comment for the close codes). Queries,
 * mutations and subscriptions are accepted; each `subscribe` message is parsed (at most
 * `maxTokens` tokens), validated with `specifiedRules`, the depth limit and `validationRules`, shown
 * to `onOperation`, then run with `execute` or `subscribe`. `complete` from the client, or the socket
 * closing, calls `return()` on the operation's async generator, so upstream iterators are released.
 * With `shareKey`, equal subscriptions share one stream, one execution per event and one serialized
 * payload (./shared-subscriptions.ts); each socket still gets `next` messages with its own `id`.
 *
 * @returns `(socket, request) => void`; it attaches its listeners synchronously and never throws.
 */
export function createSubscriptionHandler(options: SubscriptionHandlerOptions): (socket: WebSocket, request: FastifyRequest) => void {
  const logger = options.logger
  const execute: ExecuteFn = options.execute ?? graphqlExecute
  const subscribe: SubscribeFn = options.subscribe ?? graphqlSubscribe
  const formatError = options.formatError ?? createMaskingFormatter(logger)
  const maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH
  const keepAlive = options.keepAlive ?? 12_000
  const rules: readonly ValidationRule[] = [
    ...specifiedRules,
    createDocumentLimitsRule({ maxDepth, maxAliases: options.maxAliases ?? Infinity, ...(options.maxInputDepth !== undefined ? { maxInputDepth: options.maxInputDepth } : {}) }),
    ...(options.validationRules ?? []),
  ]

  const maxPerSocket = options.maxSubscriptionsPerSocket ?? 100
  const maxSockets = options.maxSockets ?? Infinity
  let openSockets = 0
  const onConnect = options.onConnect
  const shareKey = options.shareKey
  const shared = shareKey ? new SharedSubscriptions({
    formatError,
    ...(options.onSharedDelivery ? { onDelivered: options.onSharedDelivery } : {}),
    onSerializeError: (err) => logger.error({ err }, 'GraphQL over WebSocket: a subscription result cannot be serialized'),
  }) : undefined
  // The execution arguments of shared subscriptions (onSubscribe → subscribe).
  const tickets = new WeakMap<ExecutionArgs, ShareTicket>()
  const server = makeServer<Record<string, unknown> | undefined, SocketExtra>({
    connectionInitWaitTimeout: options.connectionInitWaitTimeout ?? 3000,

    onConnect: onConnect
      ? (ctx: Context<Record<string, unknown> | undefined, SocketExtra>) => onConnect(ctx.extra.request, ctx.connectionParams ?? {})
      : undefined,

    async onSubscribe(ctx, id, payload: SubscribePayload): Promise<ExecutionArgs | readonly GraphQLError[]> {
      // graphql-ws has already registered this id in ctx.subscriptions. Checked before anything is
      // awaited, so that the operations of a burst waiting below do not count as running.
      const running = Object.keys(ctx.subscriptions).length
      if (running > maxPerSocket) {
        return [codedGraphQLError(new GraphQLLimitError(`This socket already runs ${running - 1} operations; the maximum is ${maxPerSocket} (maxSubscriptionsPerSocket)`))]
      }
      if (options.admitOperation) {
        try {
          const refused = await options.admitOperation(ctx.extra.request, ctx.connectionParams ?? {})
          if (refused && refused.length > 0) return refused
        } catch (err) {
          return [toGraphQLError(err)]
        }
      }
      if (options.maxInputDepth !== undefined && payload.variables) {
        const tooDeep = checkVariablesDepth(payload.variables, options.maxInputDepth)
        if (tooDeep) return [tooDeep]
      }
      const schema = options.getSchema()
      let document: DocumentNode
      let authRules: Map<string, OperationAuthRules>
      let directiveErrors: GraphQLError[]
      try {
        ;({ document, rules: authRules, errors: directiveErrors } = extractAuthDirectives(parse(payload.query, { maxTokens })))
      } catch (err) {
        return [toGraphQLError(err)]
      }
      const fragmentLimit = checkFragmentLimits(document, { maxFragmentSpreads: options.maxFragmentSpreads ?? Infinity, maxSelections: options.maxSelections ?? Infinity })
      if (fragmentLimit) return [fragmentLimit]
      const errors = [...directiveErrors, ...validate(schema, document, rules)]
      if (errors.length > 0) return errors
      const operation = getOperationAST(document, payload.operationName)
      if (!operation) {
        return [new GraphQLError(payload.operationName
          ? `Unknown operation named "${payload.operationName}"`
          : 'Must provide an operation name when the document contains several operations')]
      }
      if (options.maxCost !== undefined) {
        const cost = buildCostPlan(schema, document, operation, options.defaultListSize ?? 10).cost(payload.variables) + filterCost(schema, document, operation, options.defaultListSize ?? 10, payload.variables)
        const tooCostly = checkCost(cost, options.maxCost)
        if (tooCostly) return [tooCostly]
      }
      const connectionParams = ctx.connectionParams ?? {}
      const request = ctx.extra.request
      try {
        const decided = await options.onOperation?.({
          id, operationType: operation.operation, operationName: operation.name?.value, document,
          variables: payload.variables ?? undefined, request, connectionParams, authRules: authRules.get(operation.name?.value ?? ''),
        })
        if (decided && 'length' in decided && decided.length > 0) return decided
        const variableValues = decided && 'variables' in decided ? decided.variables : payload.variables
        const contextValue = await options.context(request, connectionParams)
        const args: ExecutionArgs = { schema, document, operationName: payload.operationName, variableValues, contextValue }
        const sharing = shared && operation.operation === 'subscription' ? shareKey!(request, connectionParams, contextValue) : undefined
        if (sharing !== undefined) {
          const key = JSON.stringify([payload.operationName ?? null, payload.query, variableValues ?? null, sharing])
          tickets.set(args, { key, socket: ctx.extra.socket, id })
        }
        return args
      } catch (err) {
        return [toGraphQLError(err)]
      }
    },

    async execute(args) {
      try {
        const result = await execute(args)
        if (options.afterMutation && 'data' in result && result.data) {
          const operation = getOperationAST(args.document, args.operationName ?? undefined)
          if (operation?.operation === 'mutation') {
            await options.afterMutation(args, operation).catch((err: unknown) => options.logger.error({ err }, 'after a WebSocket mutation'))
          }
        }
        return result
      } catch (err) {
        return { errors: [toGraphQLError(err)] }
      }
    },

    async subscribe(args) {
      try {
        const ticket = tickets.get(args)
        const result = ticket && shared
          ? await shared.join(args.schema, ticket.key, ticket.socket, ticket.id, async () => subscribe(args))
          : await subscribe(args)
        // Counted while it runs (tributary_subscriptions_active).
        return Symbol.asyncIterator in result ? countSubscription(result) : result
      } catch (err) {
        return { errors: [toGraphQLError(err)] }
      }
    },

    onNext(_ctx, _id, _payload, _args, result): FormattedExecutionResult {
      if (!result.errors) return result as FormattedExecutionResult
      return { ...result, errors: result.errors.map((e) => formatError(e)) } as FormattedExecutionResult
    },

    onError(_ctx, _id, _payload, errors): readonly GraphQLFormattedError[] {
      return errors.map((e) => formatError(e))
    },
  })

  return function graphqlWebSocketHandler(socket: WebSocket, request: FastifyRequest): void {
    const wss = (request.server as { websocketServer?: { options: { handleProtocols?: unknown } } }).websocketServer
    if (wss && wss.options.handleProtocols === undefined) wss.options.handleProtocols = handleProtocols
    if (openSockets >= maxSockets) {
      socket.close(4503, 'Too many connections; try again later')
      return
    }
    openSockets++
    socket.once('close', () => openSockets--)

    const failInternally = (err: unknown, what: string): void => {
      const errorId = randomUUID()
      logger.error({ err, errorId }, `GraphQL over WebSocket: ${what}`)
      if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) {
        socket.close(CloseCode.InternalServerError, `Internal server error (id ${errorId})`)
      }
    }

    let pingTimer: NodeJS.Timeout | undefined
    let pongTimer: NodeJS.Timeout | undefined
    if (keepAlive > 0 && Number.isFinite(keepAlive)) {
      pingTimer = setInterval(() => {
        if (socket.readyState !== socket.OPEN) return
        pongTimer = setTimeout(() => socket.terminate(), keepAlive)
        socket.once('pong', () => {
          clearTimeout(pongTimer)
          pongTimer = undefined
        })
        socket.ping()
      }, keepAlive)
    }

    const closed = server.opened({
      protocol: socket.protocol,
      send: (data) => new Promise<void>((resolve, reject) => {
        if (socket.readyState !== socket.OPEN) return resolve()
        socket.send(data, (err) => (err ? reject(err) : resolve()))
      }),
      close: (code, reason) => socket.close(code, reason),
      onMessage: (cb) => {
        socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
          const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8')
          cb(text).catch((err: unknown) => failInternally(err, 'message handling failed'))
        })
      },
    }, { socket, request })

    socket.once('close', (code: number, reason: Buffer) => {
      clearInterval(pingTimer)
      clearTimeout(pongTimer)
      closed(code, reason.toString('utf8')).catch((err: unknown) => logger.error({ err }, 'GraphQL over WebSocket: cleanup failed'))
    })
  }
}
