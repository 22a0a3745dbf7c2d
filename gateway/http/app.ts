/**
 * The HTTP app: a fastify instance serving `/graphql` (mercurius' executor behind a GraphQL-over-HTTP
 * front, the playground, graphql-transport-ws subscriptions), `/operations/*`, the config's custom
 * REST routes, `/health` and `/openapi.json`. Every error leaves as JSON with a code.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify'
import websocket from '@fastify/websocket'
import mercurius from 'mercurius'
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { GraphQLError, NoSchemaIntrospectionCustomRule, execute as graphqlExecute, getOperationAST, subscribe as graphqlSubscribe, type ExecutionArgs } from 'graphql'
import type { Gateway } from '../runtime.js'
import type { GatewayHolder } from './gateway-holder.js'
import type { AuthInfo } from '../auth/jwt.js'
import { adoptSocketIdentity, authenticateSocket, authorizeSocketOperation, checkSocketCsrf, endAtExpiry } from './auth.js'
import { BadRequestError, InternalError, PersistedOnlyError, RouteNotFoundError, isTributaryError, errorBody } from '../errors.js'
import { registerGraphQLEndpoint, type EarlyGraphQL } from './graphql-endpoint.js'
import { registerOperationRoutes } from './operations-routes.js'
import { registerOidcRoutes, type OidcHooks } from './oidc.js'
import { playgroundPlugin } from './playground.js'
import { createSubscriptionHandler, websocketServerOptions } from './subscriptions.js'
import { sharingKey } from './shared-subscriptions.js'
import { codedGraphQLError, formatGraphQLError, sendError } from './format-error.js'
import { PersistedOperations } from './persisted.js'
import { registerOriginGuard, registerUpgradeGuard } from './origin.js'
import { buildOpenApiDocument } from '../codegen/openapi.js'
import { registerRateLimit } from './rate-limit.js'
import { createCluster, type Cluster } from '../cluster/index.js'
import { createRevocationList, type RevocationList } from '../auth/revocations.js'
import { invalidateTags, operationTags } from '../cluster/response-cache.js'
import { registerHealthRoutes } from './health.js'
import { registerMetrics } from './metrics-route.js'
import { registerTracing, traceLogMixin } from '../observability/tracing.js'
import { lazyChildLogger } from '../observability/logs.js'
import { livePollerCounts, observeOperation, observers } from '../observability/probes.js'
import { registerConsole } from './console.js'

export type { GatewayHolder }

declare module 'fastify' {
  interface FastifyInstance {
    /** The served gateway and a way to swap it (development reload). */
    tributary: {
      holder: GatewayHolder
      /** Serves `next` from now on; the previous gateway is returned, not closed. */
      swap(next: Gateway): Gateway
      /**
       * Resolves once every HTTP request that began before the last swap has been answered (or its
       * client went away), or after `timeoutMs`: the previous gateway may then be closed without
       * failing a request it is serving. WebSocket connections are not waited for.
       */
      drained(timeoutMs: number): Promise<void>
    }
  }
}

/** Options of {@link buildApp}. */
export interface BuildAppOptions {
  /** A pino logger or fastify logger options; `false` for none. Default: level from the config. */
  logger?: boolean | FastifyBaseLogger | Record<string, unknown>
  /** The cluster to use. Default: one created from `config.pubsub`, closed with the app. */
  cluster?: Cluster
  /**
   * Count in-flight HTTP requests by the gateway version serving them, so that
   * `app.tributary.drained()` can wait for those of a swapped-out version (the development reload).
   * Default false: no per-request hook, and `drained()` resolves at once.
   */
  trackInFlight?: boolean
  /**
   * The hook points of the OIDC login routes (`revalidate` for `/auth/user?revalidate=true`,
   * `mutatingPostAuthentication` after a login), for the authentication hooks. Default none.
   */
  oidcHooks?: OidcHooks
}

/**
 * Builds (but does not start) the fastify app for a gateway.
 * @returns the app; call `listen()` or `inject()`. Closing the app does not close the gateway.
 */
export async function buildApp(gateway: Gateway, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = gateway
  const loggerOption = options.logger ?? { level: config.server.logLevel }
  const app = Fastify({
    ...(typeof loggerOption === 'object' && 'child' in loggerOption
      ? { loggerInstance: loggerOption as FastifyBaseLogger }
      // Log lines written while tracing carry traceId and spanId (README "Observability").
      : { logger: typeof loggerOption === 'object' ? { mixin: traceLogMixin, ...loggerOption } : loggerOption }),
    bodyLimit: config.server.bodyLimit,
    requestTimeout: config.server.requestTimeoutMs,
    // Node enforces requestTimeout only while headersTimeout (default 60 s) is not larger, and checks
    // both every connectionsCheckingInterval (default 30 s): without these a trickled body stayed open.
    http: {
      connectionsCheckingInterval: Math.max(100, Math.min(1000, config.server.requestTimeoutMs || 1000)),
      ...(config.server.requestTimeoutMs > 0 ? { headersTimeout: Math.min(60_000, config.server.requestTimeoutMs) } : {}),
    },
    // Per-request info logs cost throughput; errors are still logged, with their request id.
    logController: new LogController({ disableRequestLogging: true }),
    // A child logger per request costs ~1 µs: below debug level it is made only when the request
    // logs something, so that every request's log lines carry its reqId at no cost to the others.
    childLoggerFactory: (logger, bindings, options) =>
      logger.level === 'debug' || logger.level === 'trace' ? logger.child(bindings, options) : lazyChildLogger(logger, bindings, options),
    routerOptions: { ignoreTrailingSlash: true },
    // JSON bodies with `__proto__` or `constructor.prototype` keys are refused (400), never parsed.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Errors Node's HTTP parser raises before fastify sees a request (a request timeout, headers or a
    // URL over the 16 KiB limit, malformed HTTP) get the same coded JSON body as every other error.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return
      const [status, message] =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'The request was not received in time'] :
        err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'The request line or headers are larger than 16 KiB; send long queries with POST'] :
        [400, 'Malformed HTTP request']
      const body = JSON.stringify(errorBody(new BadRequestError(message)))
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
    },
  })
  // Node closes a connection past this at once (net.Server#maxConnections): idle sockets cannot take every file descriptor.
  app.server.maxConnections = config.server.maxConnections
  closeSilentConnectionsOnClose(app)
  const cluster = options.cluster ?? createCluster({ ...config.pubsub, maxEntries: config.pubsub.maxCacheEntries, logger: app.log })
  if (!options.cluster) app.addHook('onClose', () => cluster.close())
  const holder: GatewayHolder = { current: gateway, version: 0, logger: app.log, cluster }
  // Logged-out login sessions, one list for the app's life (reloads included), shared through Redis or IPC.
  let revocations: RevocationList | undefined
  const shareRevocations = (g: Gateway): void => {
    if (!g.session || !g.config.auth.oidc) return
    revocations ??= createRevocationList({ max: g.config.auth.oidc.maxRevokedSessions, cluster })
    g.session.shareRevocations(revocations)
  }
  shareRevocations(gateway)
  app.addHook('onClose', async () => revocations?.close())
  // In-flight HTTP requests by the version served when they began (development reload drains them).
  const inFlight = new Map<number, number>()
  const waiters = new Set<() => void>()
  if (options.trackInFlight) app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.upgrade === undefined) {
      const version = holder.version
      inFlight.set(version, (inFlight.get(version) ?? 0) + 1)
      reply.raw.once('close', () => {
        const left = inFlight.get(version)! - 1
        if (left) inFlight.set(version, left)
        else inFlight.delete(version)
        for (const w of waiters) w()
      })
    }
    done()
  })
  app.decorate('tributary', {
    holder,
    async drained(timeoutMs: number): Promise<void> {
      const version = holder.version
      const older = () => [...inFlight.keys()].some((v) => v < version)
      if (!older()) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, timeoutMs).unref()
        function finish() {
          clearTimeout(timer)
          waiters.delete(check)
          resolve()
        }
        function check() {
          if (!older()) finish()
        }
        waiters.add(check)
      })
    },
    swap(next: Gateway): Gateway {
      const previous = holder.current
      shareRevocations(next)
      holder.current = next
      holder.version++
      app.graphql.replaceSchema(next.schema)
      return previous
    },
  })

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500
    // Errors of the table keep their code. Every other 4xx (fastify's FST_ERR_CTP_* from the body
    // parser: malformed JSON, `__proto__` keys, an unsupported media type (415), a body too large
    // (413); a request timeout (408)...) is TRB_ERR_BAD_REQUEST with the same status and message,
    // so every error body carries a code of gateway/errors.ts.
    if (isTributaryError(err)) return sendError(reply, err, status)
    if (status < 500) return sendError(reply, new BadRequestError(err.message), status)
    const id = randomUUID()
    request.log.error({ err, errorId: id }, 'internal error')
    return sendError(reply, new InternalError(id), 500, { errorId: id })
  })
  app.setNotFoundHandler((request, reply) => sendError(reply, new RouteNotFoundError(request.method, request.url.split('?')[0])))
  // Host (421) and Origin (403 for upgrades and preflights) checks, and CORS, before every route.
  await registerOriginGuard(app, config.server)
  // Traces and metrics (README "Observability"): nothing is registered when they are off.
  await registerTracing(app, config.telemetry)
  if (config.metrics.enabled) registerMetrics(app, config.metrics)
  // 429 past server.rateLimit (when set), before any route runs; the metrics route is not counted.
  // Each WebSocket operation takes from the same budget (limitOperation).
  const limitOperation = await registerRateLimit(app, holder)

  await app.register(mercurius, {
    schema: gateway.schema,
    routes: false,
    graphiql: false,
    jit: 1,
    cache: 1024,
    queryDepth: config.graphql.maxDepth + 20,
    // Keep GraphQLError objects (and their originalError) so that http/format-error.ts masks them;
    // mercurius' default formatter would flatten them, raw messages included.
    errorFormatter: (execution) => ({ statusCode: 200, response: { data: execution.data ?? null, errors: execution.errors } }),
  })
  await app.register(playgroundPlugin, { endpoint: '/graphql', subscriptionEndpoint: '/graphql', title: 'Tributary' })

  const persisted = new PersistedOperations(holder)
  // The identity of each WebSocket, verified once on `connection_init` (keyed by its upgrade request).
  const socketIdentity = new WeakMap<FastifyRequest, AuthInfo | null>()
  const wsHandler = createSubscriptionHandler({
    getSchema: () => holder.current.schema,
    context: (request) => ({ request, headers: request.headers, cluster, auth: socketIdentity.get(request) ?? null }),
    onConnect: async (request, params) => {
      const gateway = holder.current
      if (!gateway.jwt) return undefined
      try {
        const auth = await authenticateSocket(gateway, request, params)
        if (!auth && gateway.config.auth.graphql === 'authenticated') return false
        socketIdentity.set(request, auth)
        adoptSocketIdentity(request, auth)
        return undefined
      } catch (err) {
        if (isTributaryError(err) && err.code === 'TRB_ERR_AUTH_INVALID') return false
        throw err
      }
    },
    execute: (args) => observeSocketOperation(args, () => graphqlExecute(args)),
    subscribe: (args) => observeSocketOperation(args, () => endAtExpiry(graphqlSubscribe(args), (args.contextValue as { auth?: AuthInfo | null }).auth ?? null)),
    // Equal subscriptions share one stream and one execution per event (README "Subscriptions").
    ...(config.graphql.shareSubscriptions
      ? {
          shareKey: (request: FastifyRequest, _params: unknown, context: Record<string, unknown>) => sharingKey((context.auth as AuthInfo | null)?.claims ?? null, request.headers),
          onSharedDelivery: (sockets: number, ms: number) => app.log.debug({ sockets, ms: +ms.toFixed(2) }, 'subscription event written'),
        }
      : {}),
    // Cached `# @cache` queries that read what a WebSocket mutation touched are invalidated before it answers.
    afterMutation: (args, operation) => {
      const gateway = holder.current
      return invalidateTags(cluster, operationTags(gateway.schema, args.document, operation, gateway.sources.map((s) => s.namespace)))
    },
    maxDepth: config.graphql.maxDepth,
    maxAliases: config.graphql.maxAliases,
    maxFragmentSpreads: config.graphql.maxFragmentSpreads,
    maxSelections: config.graphql.maxSelections,
    maxTokens: config.graphql.maxTokens,
    maxInputDepth: config.graphql.maxInputDepth,
    maxCost: config.graphql.maxCost,
    defaultListSize: config.graphql.defaultListSize,
    maxSubscriptionsPerSocket: config.graphql.maxSubscriptionsPerSocket,
    maxSockets: config.server.maxWebSockets,
    validationRules: config.graphql.introspection ? [] : [NoSchemaIntrospectionCustomRule],
    formatError: (err: GraphQLError) => formatGraphQLError(err, { mode: holder.current.config.mode, logger: app.log }).error,
    ...(limitOperation
      ? {
          admitOperation: async (request: FastifyRequest) => {
            const refused = await limitOperation(request)
            // Not wrapping the error (codedGraphQLError): the formatter keeps extensions only of errors it does not wrap.
            return refused ? [new GraphQLError(refused.message, { extensions: { code: refused.code, retryAfter: refused.retryAfter } })] : undefined
          },
        }
      : {}),
    onOperation: (info) => {
      if (persisted.enforced && !persisted.allowsDocument(info.document)) return [codedGraphQLError(new PersistedOnlyError())]
      const auth = socketIdentity.get(info.request) ?? null
      // The session cookie goes with cross-site upgrades from allowed origins: its mutations need the CSRF token too.
      return checkSocketCsrf(holder.current, auth, info.operationType, info.connectionParams) ?? authorizeSocketOperation(info, auth)
    },
    logger: app.log,
  })
  // @fastify/websocket adds onRequest/onResponse hooks to its scope: keep them off the other routes.
  let wsScope: FastifyInstance | undefined
  let graphqlEarly: EarlyGraphQL | undefined
  await app.register(async (scope) => {
    // On close, before @fastify/websocket's own preClose (which closes sockets without a status):
    // 1001 Going Away (RFC 6455 §7.4.1), so graphql-ws clients reconnect, e.g. to another instance.
    scope.addHook('preClose', (done) => {
      for (const client of scope.websocketServer?.clients ?? []) client.close(1001, 'The server is shutting down')
      done()
    })
    await scope.register(websocket, { options: { ...websocketServerOptions, maxPayload: config.server.bodyLimit } })
    registerUpgradeGuard(scope, config.server)
    wsScope = scope
    graphqlEarly = registerGraphQLEndpoint(app, scope, holder, persisted, wsHandler, limitOperation)
  })
  if (!wsScope) throw new Error('the WebSocket scope was not registered')
  registerOperationRoutes(app, holder, { trackInFlight: options.trackInFlight === true, graphqlEarly })
  // Cookie login with OpenID Connect (README "Cookie login with OpenID Connect"): only with auth.oidc.
  registerOidcRoutes(app, holder, options.oidcHooks)
  const livePollers = () => app.livePollers.size
  livePollerCounts.add(livePollers)
  app.addHook('onClose', async () => void livePollerCounts.delete(livePollers))

  registerHealthRoutes(app, holder)
  if (config.console.enabled) await registerConsole(app, holder)

  let openapi: { version: number; body: string } | undefined
  app.get('/openapi.json', async (request, reply) => {
    if (!openapi || openapi.version !== holder.version) {
      const host = request.headers.host
      openapi = { version: holder.version, body: JSON.stringify(buildOpenApiDocument(holder.current, host ? `http://${host}` : undefined)) }
    }
    return reply.type('application/json; charset=utf-8').send(openapi.body)
  })

  return app
}

/**
 * Runs one operation of a WebSocket observed (README "Observability"): a span `operation <name>`
 * (metric label `(graphql)`, attribute `tributary.transport: websocket`; a subscription's span covers
 * its start) and, when the console runs, a count in its traffic window under the operation's name.
 */
function observeSocketOperation<T>(args: ExecutionArgs, run: () => T | Promise<T>): Promise<T> {
  const name = args.operationName ?? getOperationAST(args.document, undefined)?.name?.value
  const started = performance.now()
  const count = (failed: boolean) => observers.traffic?.operation(name ?? '(graphql)', performance.now() - started, failed)
  return observeOperation('(graphql)', async () => run(), { 'tributary.transport': 'websocket' }, name).then(
    (result) => {
      count(Array.isArray((result as { errors?: unknown }).errors))
      return result
    },
    (err: unknown) => {
      count(true)
      throw err
    },
  )
}

/**
 * Makes `app.close()` (SIGTERM, SIGINT, a test's teardown) end the connections that have not sent a byte.
 * Node's `server.close()` ends idle keep-alive connections, but not one that was opened and never
 * used: its headers timer runs, so Node counts it as a request in progress, and close waited for it
 * until `headersTimeout` (30 s by default here; a browser or a load balancer opens such connections
 * ahead of use). At `preClose` every such connection is destroyed, and one accepted while the server
 * closes too. A connection that has sent anything, even part of a request, is left to finish.
 */
function closeSilentConnectionsOnClose(app: FastifyInstance): void {
  const open = new Set<Socket>()
  let closing = false
  app.server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy()
      return
    }
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  app.addHook('preClose', (done) => {
    closing = true
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy()
    done()
  })
}
