/**
 * `defineConfig()` and the data-source helpers a deployment's `config.ts` uses, plus the one place
 * where every option has its doc comment and its default (cf. fastify `initial-config-validation.js`).
 *
 * ```ts
 * import { defineConfig } from './gateway/config/index.js'
 * import todo from './datasources/todo/index.js'
 * export default defineConfig({ datasources: [todo], server: { port: 4000 } })
 * ```
 */
import { readFileSync } from 'node:fs'
import type { IExecutableSchemaDefinition } from '@graphql-tools/schema'
import type { DatabaseSourceOptions } from '../connectors/database/index.js'
import type { RestSourceOptions } from '../connectors/rest/index.js'
import type { GraphQLSourceOptions } from '../connectors/graphql/index.js'
import type { SchemaSourceOptions } from '../connectors/schema/index.js'
import type { EventsSourceOptions } from '../connectors/events/index.js'
import type { FederationSourceOptions, SubgraphOptions } from '../connectors/federation/index.js'
import type { MergedTypeOptions } from '../compose/merge.js'
import type { RunMode } from '../connectors/types.js'
import type { LinkDefinition, LinkBatch } from '../compose/links.js'
import { DEFAULT_MAX_REPRESENTATIONS } from '../compose/subgraph.js'
import type { PermissionRule } from '../auth/permissions.js'
import type { JwtConfig, AuthConfigInput, AuthConfig, OidcConfigInput, OidcConfig } from '../auth/config.js'
import type { MetricsConfig } from '../observability/metrics.js'
import type { TelemetryConfig } from '../observability/tracing.js'
import { validateConfig } from './validate.js'
import { ConfigInvalidError } from '../errors.js'
import { deepFreeze } from '../deep-freeze.js'
import { resolveHooks, type HooksConfigInput, type ResolvedHooks } from '../hooks/index.js'
import { resolveEventTriggers, type EventTrigger, type EventTriggerInput, type EventsDelivery, type EventsDeliveryInput } from './event-triggers.js'

export type { EventTrigger, EventTriggerInput, EventTriggerOp, EventDeliveryTarget, EventsDelivery, EventsDeliveryInput } from './event-triggers.js'

export type { EventsSourceOptions }
export type { RunMode, LinkDefinition, LinkBatch, PermissionRule, JwtConfig, AuthConfigInput, AuthConfig, OidcConfigInput, OidcConfig }

/** What every data source declaration carries besides its connector's options. */
export interface DataSourceBase {
  /**
   * Prefix applied by `compose/` to the source's root fields (`<ns>_<field>`) and types (`<ns>_<Type>`).
   * A GraphQL name without `__` and without a trailing `_`, e.g. `todo`. Omit it to merge the source as it is.
   */
  namespace?: string
  /** Name in logs, `/health` and cache files. Default: the namespace, else `source#<index>`. */
  name?: string
}

/** A SQL database (SQLite, PostgreSQL, MySQL/MariaDB) introspected through Knex. */
export interface DatabaseDataSource extends DataSourceBase, DatabaseSourceOptions {
  kind: 'database'
}
/** A REST API described by an OpenAPI 3 document. */
export interface RestDataSource extends DataSourceBase, RestSourceOptions {
  kind: 'rest'
}
/**
 * What a remote source (`graphql`, `federation`) may add: type merging with other remote sources
 * (README "Merged types").
 */
export interface MergeableSource {
  /**
   * Types this source serves that are one entity with a same-named type of another remote source,
   * by their name in this source (which becomes their public name: merged types are not
   * namespaced). Each type must be listed by at least two sources. Default none.
   */
  merge?: Record<string, MergedTypeOptions>
}

/** A remote GraphQL API, introspected and called through undici. */
export interface GraphQLDataSource extends DataSourceBase, GraphQLSourceOptions, MergeableSource {
  kind: 'graphql'
}
/** Apollo Federation subgraphs, composed into one source (README "Apollo Federation subgraphs"). */
export interface FederationDataSource extends DataSourceBase, FederationSourceOptions, MergeableSource {
  kind: 'federation'
}
/** A local schema: SDL and resolvers run in the gateway process. */
export interface SchemaDataSource extends DataSourceBase, SchemaSourceOptions {
  kind: 'schema'
}

/** A message broker (NATS, AMQP, MQTT, Redis) served as subscriptions, publish mutations and NATS request–reply queries (README "Events (message brokers)"). */
export interface EventsDataSource extends DataSourceBase, EventsSourceOptions {
  kind: 'events'
}

/** One data source: a connector kind, its options and an optional namespace. */
export type DataSourceDefinition = DatabaseDataSource | RestDataSource | GraphQLDataSource | FederationDataSource | SchemaDataSource | EventsDataSource

/** Declares a SQL database data source. See {@link DatabaseSourceOptions}. */
export function database(options: DataSourceBase & DatabaseSourceOptions): DatabaseDataSource {
  return { kind: 'database', ...options }
}
/** Declares a REST data source from an OpenAPI 3 document. See {@link RestSourceOptions}. */
export function rest(options: DataSourceBase & RestSourceOptions): RestDataSource {
  return { kind: 'rest', ...options }
}
/** Declares a remote GraphQL data source. See {@link GraphQLSourceOptions} and {@link MergeableSource}. */
export function graphql(options: DataSourceBase & GraphQLSourceOptions & MergeableSource): GraphQLDataSource {
  return { kind: 'graphql', ...options }
}
/**
 * Declares an Apollo Federation data source: subgraphs by URL, composed into one source.
 * See {@link FederationSourceOptions} and {@link MergeableSource}.
 */
export function federation(options: DataSourceBase & FederationSourceOptions & MergeableSource): FederationDataSource {
  return { kind: 'federation', ...options }
}
/** Declares a local schema data source (SDL + resolvers). See {@link SchemaSourceOptions}. */
export function schema(options: DataSourceBase & SchemaSourceOptions): SchemaDataSource {
  return { kind: 'schema', ...options }
}

/**
 * Declares an events data source: a message broker whose subjects become `Subscription` fields
 * (`@subscribe`), publish `Mutation` fields (`@publish`) and, for NATS, request–reply `Query` fields
 * (`@request`). See {@link EventsSourceOptions} and README "Events (message brokers)".
 */
export function events(options: DataSourceBase & EventsSourceOptions): EventsDataSource {
  return { kind: 'events', ...options }
}

/** `operations.defaults.<kind>`: what every operation of the kind gets unless it sets its own. */
export interface OperationDefaults {
  /** A valid token is needed (as `@requireAuthentication`); an operation's own `@rbac`/`@requireAuthentication`, or a TypeScript operation's `requireAuthentication: false`, overrides it. Default false. */
  authentication?: boolean
}

/** `operations.defaults.queries.cache`: as `# @cache` (maxAge in seconds). */
export interface OperationCacheDefault {
  maxAge: number
  staleWhileRevalidate?: number
  public?: boolean
  mustRevalidate?: boolean
}

/** A custom REST route mapped to a stored operation, like Hasura's RESTified endpoints. */
export interface RouteDefinition {
  /** HTTP method: GET, POST, PUT, PATCH or DELETE. */
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Path with `:param` segments that feed the operation's variables, e.g. `/api/v1/todo/:id/`. */
  path: string
  /** The stored operation's name (its path under `operations/` without `.graphql`), e.g. `TodoById`. */
  operation: string
}

/** A side process started with the gateway (the demo's role service), stopped with it. */
export interface ServiceDefinition {
  /** Name for logs. */
  name: string
  /** Absolute path of the Node.js script to run (a `.ts` sibling is run through tsx when the `.js` is missing). */
  script: string
  /** The service's base URL, printed at startup. */
  url: string
  /** URL polled until it answers; if it already answers at startup, the service is not started. */
  readyUrl: string
  /** Extra environment variables. */
  env?: Record<string, string>
  /** How long to wait for `readyUrl`, in milliseconds. Default 60000 (a service that exits is reported at once). */
  readyTimeoutMs?: number
}

/**
 * `server.rateLimit`: at most `max` requests per client within `timeWindowMs` (`@fastify/rate-limit`),
 * then 429 `TRB_ERR_RATE_LIMITED` with `Retry-After` (seconds). The health probes and the metrics route are not counted.
 */
export interface RateLimitConfig {
  /** Requests allowed per client and window. */
  max: number
  /** The window, in milliseconds. */
  timeWindowMs: number
  /** Who a client is: `ip` (the socket address; behind a proxy see fastify `trustProxy`) or `sub` (the verified token's subject, the IP for anonymous callers; needs `auth.jwt`). Default `ip`. */
  key?: 'ip' | 'sub'
  /** Redis URL of a counter store shared by every instance. Default `pubsub.redisUrl` (`REDIS_URL` unless `TRIBUTARY_PUBSUB=memory`); without one, counters live in this process. */
  redisUrl?: string
  /** Prefix of the Redis keys. Default `tributary-rate-limit:`. */
  keyPrefix?: string
}

/** The deployment as written in `config.ts`. Every field but `datasources` is optional. */
export interface TributaryConfigInput {
  /** The data sources, composed in this order. At least one. */
  datasources: DataSourceDefinition[]
  /** `development` (default, or `NODE_ENV`) or `production`: masks errors, stored operations only on /graphql. */
  mode?: RunMode
  server?: {
    /** Listening host. Default `HOST` or `127.0.0.1`. */
    host?: string
    /** Listening port. Default `PORT` or 4000. */
    port?: number
    /** Largest request body accepted, in bytes. Default 1 MiB (1048576). */
    bodyLimit?: number
    /** Time allowed to receive a whole request, headers and body, in milliseconds (fastify `requestTimeout`, checked at least every second). Default 30000. */
    requestTimeoutMs?: number
    /** Largest response body sent, in bytes; a larger one is replaced by a 400 `TRB_ERR_GRAPHQL_LIMIT`. Default 16 MiB (16777216). */
    maxResponseBytes?: number
    /**
     * Largest answer of a `/graphql` document that selects introspection fields only (`__schema`,
     * `__type`, `__typename`): the schema of many large sources describes itself in more than
     * `maxResponseBytes`, and a client tool must still read it. Larger is a 400
     * `TRB_ERR_GRAPHQL_LIMIT`. Default 128 MiB (134217728); never below `maxResponseBytes`.
     */
    maxIntrospectionBytes?: number
    /** Most WebSocket connections open at once; one more is closed with 4503. Default 1000. */
    maxWebSockets?: number
    /**
     * Most Server-Sent Events streams open at once (subscriptions and `?live=true` queries on
     * `/operations/*`); one more gets 503 `TRB_ERR_CAPACITY` with `Retry-After: 5`. Default 1000.
     */
    maxEventStreams?: number
    /**
     * Most TCP connections the server holds at once, of any kind (HTTP keep-alive, WebSocket, event
     * stream); Node closes one more as soon as it is accepted (`net.Server#maxConnections`), so a
     * flood of idle sockets cannot take every file descriptor of the process. Default 10000, or 80 %
     * of the process's open-file limit when that is lower ({@link defaultMaxConnections}).
     */
    maxConnections?: number
    /** pino log level. Default `LOG_LEVEL` or `info`. */
    logLevel?: string
    /**
     * Origins (`scheme://host[:port]`, e.g. `https://app.example.com`) besides the gateway's own that
     * browsers may use: a WebSocket upgrade whose `Origin` is neither the gateway's own nor listed is
     * refused with 403 `TRB_ERR_ORIGIN_FORBIDDEN`, and cross-origin HTTP (CORS, through
     * `@fastify/cors`) is allowed for these origins only. The gateway's own origin is an `Origin`
     * with scheme http or https whose host (port included, the scheme's default port left out)
     * equals the request's `Host` header. Requests without `Origin` (non-browser clients) are not
     * affected. Default none.
     */
    allowedOrigins?: string[]
    /**
     * `Host` header values served (a defence against DNS rebinding). `example.com` matches that host
     * on any port, `example.com:4000` that host and port only, `.example.com` the host and its
     * subdomains; matching ignores case. A request whose `Host` is missing or not listed gets 421
     * `TRB_ERR_MISDIRECTED`. Default: not checked (every host).
     */
    allowedHosts?: string[]
    /** Rate limiting per client (README "Rate limiting"). Default: off. */
    rateLimit?: RateLimitConfig
    /**
     * On SIGTERM/SIGINT, how long `/health/ready` answers 503 before the server stops accepting
     * connections and drains in-flight requests, in milliseconds: set it to at least your load
     * balancer's health-check interval. Default 0.
     */
    shutdownDelayMs?: number
    /** Time `/health/ready` waits for each source and for Redis before counting it down, in milliseconds. Default 80. */
    healthTimeoutMs?: number
    /**
     * Serve `/graphql` as an Apollo Federation v2 subgraph (README "Tributary as a subgraph"): `true`,
     * or `{ maxRepresentations }` (most representations one `_entities` field accepts, 1 to 100000;
     * default 1000). Adds `_service { sdl }` (with `@link` and `@key` on every database model with a
     * primary key) and `_entities`. Default: off.
     */
    federation?: boolean | { maxRepresentations?: number }
  }
  /**
   * What several instances share (README "Running several instances"). With a Redis URL, pub/sub,
   * the producer and live-query locks and the response cache of `# @cache` operations live in Redis;
   * without one they live in the process.
   */
  pubsub?: {
    /** `redis://host:port[/db]`. Default `REDIS_URL` (unless `TRIBUTARY_PUBSUB=memory`), else none (in memory). */
    redisUrl?: string
    /** Prefix of every Redis key and channel; instances of one deployment share it. Default `REDIS_KEY_PREFIX` or `tributary:`. */
    keyPrefix?: string
    /** Lifetime of a producer or poller lock, in milliseconds: a dead holder is replaced within about 1.25 times this. Default 2000. */
    lockTtlMs?: number
    /** Timeout of one Redis command, in milliseconds (a cache read that times out is a miss). Default 500. */
    commandTimeoutMs?: number
    /** Most cached responses kept in memory when there is no Redis (the oldest go first). Default 10000. */
    maxCacheEntries?: number
    /**
     * Bytes of fresh cached responses each instance keeps in its own memory, ready to send, beside
     * the shared store (README "Caching"): a hit served from there needs no Redis round trip. The
     * oldest stored go first; 0 turns the copy (and the early answer of hits) off. Default 16 MiB.
     */
    localCacheBytes?: number
    /**
     * Longest time (ms) an instance serves an entry from its own copy without reading the shared
     * store again: the staleness bound when an invalidation message from another instance is lost.
     * Default 1000.
     */
    localCacheRecheckMs?: number
  }
  graphql?: {
    /** Serve introspection. Default: true in development, false in production. */
    introspection?: boolean
    /** Serve GraphiQL at GET /graphql. Default: true in development, false in production. */
    playground?: boolean
    /** Deepest selection set accepted (introspection fields excluded). Default 12. */
    maxDepth?: number
    /** Most aliases in one document. Default 30. */
    maxAliases?: number
    /**
     * Most fragment spreads (`...Name`) in one document, checked before validation: graphql-js'
     * OverlappingFieldsCanBeMergedRule compares fragments pairwise (300 spreads: about 90 ms).
     * Default 100.
     */
    maxFragmentSpreads?: number
    /**
     * Most field selections of one operation with every fragment spread counted as a copy of its
     * fragment, checked before validation (graphql-tools' delegation and graphql-jit walk that many:
     * a federation source spends about 30 ms on 4,000). Default 5000.
     */
    maxSelections?: number
    /** Most lexical tokens in one document (parser limit). Default 5000. */
    maxTokens?: number
    /** Largest cost of one operation, computed before it runs (README "Query cost"). Default 20000. */
    maxCost?: number
    /** Size assumed, in the cost, for a list field without a `take` argument. Default 10. */
    defaultListSize?: number
    /** Deepest nesting of input objects and lists, in literals and in variables. Default 32. */
    maxInputDepth?: number
    /** Most operations running at once on one WebSocket; one more gets an `error` message. Default 100. */
    maxSubscriptionsPerSocket?: number
    /**
     * Equal WebSocket subscriptions on one instance (same document, operation name, variables, token
     * claims and request headers) share one stream and one execution per event (README
     * "Subscriptions"). Turn it off when a local-schema subscription reads something else of its
     * context (the client's address, say) or its stream emits a value of its own when it starts.
     * Default true.
     */
    shareSubscriptions?: boolean
    /** Run raw documents on /graphql in production too (off: stored operations only). Default false. */
    allowArbitraryOperationsInProduction?: boolean
    /**
     * Automatic persisted queries (Apollo's protocol, README "HTTP contract"): a request with
     * `extensions.persistedQuery.sha256Hash` and the `query` whose sha256 it is registers that text,
     * so later requests send the hash alone. Default: true in development, false in production,
     * where it needs `allowArbitraryOperationsInProduction` (registering a document runs it).
     */
    apq?: boolean
    /** Most documents registered by automatic persisted queries, per instance (the least recently used go first). Default 1000. */
    apqMaxEntries?: number
    /** Largest document (UTF-8 bytes) automatic persisted queries register; a longer one runs but is not kept. Default 32768. */
    apqMaxDocumentBytes?: number
    /** Request batching: a JSON array of operations in one POST /graphql, answered by an array in order. */
    batching?: {
      /** Most operations in one batch; 0 turns batching off (an array body is refused). Default 0. */
      maxOperations?: number
    }
  }
  operations?: {
    /** Folder of stored operations, relative to the working directory. Default `operations`. */
    dir?: string
    /** Live-query poll interval in milliseconds, unless an operation sets its own. Default 1000. */
    liveIntervalMs?: number
    /**
     * Longest run of a TypeScript operation's handler, in milliseconds (for a subscription: the wait
     * for each next event is not bounded, the handler's start is). Past it the call answers 504
     * `TRB_ERR_OPERATION_TIMEOUT` and the handler's `context.signal` aborts. Default 10000.
     */
    handlerTimeoutMs?: number
    /** Deepest chain of in-process calls (a TypeScript operation calling one that calls another...). Default 8. */
    maxCallDepth?: number
    /** Settings every operation of a kind gets unless it sets its own (`# @cache`, `# @live`, `@requireAuthentication`, or a TypeScript operation's own settings). */
    defaults?: {
      queries?: OperationDefaults & { cache?: OperationCacheDefault; live?: { intervalMs?: number } | boolean }
      mutations?: OperationDefaults
      subscriptions?: OperationDefaults
    }
  }
  /** Fields added to a source's type and resolved by another source's root field (README "Links"). Default none. */
  links?: LinkDefinition[]
  /** Custom REST routes mapped to stored operations. Default none. */
  routes?: RouteDefinition[]
  /** Side processes to start before the data sources load. Default none. */
  services?: ServiceDefinition[]
  /** Folder for generated files (`schema.graphql`, `introspection.json`, ...), relative to the working directory. Default `generated`. */
  generatedDir?: string
  /** What the codegen writes besides the schema, manifest, OpenAPI document and typed client. */
  codegen?: {
    /**
     * Also write `react.ts`: TanStack Query v5 hooks over the typed client (README "React hooks"). It
     * imports `react` and `@tanstack/react-query`, which the project must then install. Default false.
     */
    react?: boolean
  }
  /** Authentication: JWT verification and who may use `/graphql`. Default: off (no token is read). */
  auth?: AuthConfigInput
  /**
   * Role permissions, Hasura style, keyed by public type name (`todo_Todo`: every field returning the
   * type) or `Type.field` (`todo_Todo.description`): a caller without one of `roles` gets a
   * `TRB_ERR_AUTH_FORBIDDEN` error at the field's path instead of its value. A type of a database
   * source may also have a row `filter` derived from the token's claims
   * (`{ filter: { ownerId: { equals: { claim: 'sub' } } } }`, see {@link PermissionRule}).
   * Needs `auth.jwt`. Default none.
   */
  permissions?: Record<string, PermissionRule>
  /** Prometheus metrics (README "Observability"). Default: on, at `/metrics`, readable from the loopback address only. */
  metrics?: {
    /** Collect and serve the metrics. Default true. */
    enabled?: boolean
    /** The route that serves them (Prometheus text format). Default `/metrics`. */
    path?: string
    /** When set, a scrape must send `Authorization: Bearer <token>` (else 401 `TRB_ERR_METRICS_DENIED`). Default none. */
    bearerToken?: string
    /**
     * Client addresses that may scrape (exact IPv4/IPv6 addresses as the socket reports them); any
     * other gets 403 `TRB_ERR_METRICS_DENIED`. Default: `127.0.0.1` and `::1` without a
     * `bearerToken`, any address with one.
     */
    allowedIps?: string[]
    /**
     * Interval of the event-loop delay histogram behind `nodejs_eventloop_lag_*` (prom-client's
     * `eventLoopMonitoringPrecision`, Node's `monitorEventLoopDelay` resolution), in ms, 1 to 60000.
     * Each sample wakes the process: at 10 an idle gateway spends about 6 ms of CPU a second on it, at
     * 1000 about 0.1 ms. The histogram records whole intervals, so its values are this interval plus
     * the delay (`nodejs_eventloop_lag_min_seconds` ≈ the interval). Read once, when the process first
     * turns metrics on. Default 10 (prom-client's).
     */
    eventLoopPrecisionMs?: number
  }
  /**
   * Hooks (README "Hooks"): code run around stored operations (`operations.<name>`), around every
   * upstream request (`global`) and where identities are established (`authentication`). Type it
   * with the generated `HooksConfig` of `generated/client.ts`. Default none.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any operation name: the generated HooksConfig narrows it
  hooks?: HooksConfigInput<any>
  /** OpenTelemetry traces (README "Observability"). Default: off. */
  telemetry?: {
    /**
     * OTLP/HTTP base URL of a collector (`http://127.0.0.1:4318`): spans are posted as OTLP JSON to
     * `<otlpEndpoint>/v1/traces` (or to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). Default
     * `OTEL_EXPORTER_OTLP_ENDPOINT`, else none: no SDK is started.
     */
    otlpEndpoint?: string
    /** The `service.name` of the spans. Default `OTEL_SERVICE_NAME` or `tributary`. */
    serviceName?: string
    /** Trace health probes (`/health*`) and static assets (playground, console) too. Default false. */
    traceProbesAndAssets?: boolean
  }
  /**
   * The admin console at `/console` (README "Admin console"). Default: on in development (open to
   * loopback clients), off in production.
   */
  console?: ConsoleConfigInput
  /**
   * Event triggers (README "Event triggers"): row changes of database tables delivered at least once
   * to a webhook or a message broker, through an outbox table the gateway installs. Default none
   * (nothing is installed in any database).
   */
  events?: EventTriggerInput[]
  /** How event triggers are delivered: poll interval, lease, batch, limits (README "Event triggers"). */
  eventsDelivery?: EventsDeliveryInput
}

/** The `console` section of the config (README "Admin console"). */
export interface ConsoleConfigInput {
  /** Serve the console. Default: true in development, false in production. */
  enabled?: boolean
  /** Token roles (`auth.jwt`) that may use the console. Default `['admin']`. */
  roles?: string[]
  /**
   * A secret that opens the console when sent as `X-Tributary-Admin-Secret` (16 characters or more).
   * Default `TRIBUTARY_ADMIN_SECRET`, else none.
   */
  adminSecret?: string
}

/** The resolved `console` section. */
export interface ConsoleConfig {
  readonly enabled: boolean
  readonly roles: readonly string[]
  readonly adminSecret: string | null
}

/** The validated, defaulted and frozen configuration. */
export interface TributaryConfig {
  readonly datasources: readonly DataSourceDefinition[]
  readonly mode: RunMode
  readonly server: Readonly<Required<Omit<NonNullable<TributaryConfigInput['server']>, 'allowedHosts' | 'rateLimit' | 'federation'>>> & {
    /** The subgraph settings when `/graphql` is a Federation subgraph, else null. */
    readonly federation: Readonly<{ maxRepresentations: number }> | null
    /** The rate limit with its defaults, or null when off. */
    readonly rateLimit: Readonly<Required<Omit<RateLimitConfig, 'redisUrl'>> & { redisUrl: string | null }> | null
    /** Normalised origins (`new URL(o).origin`). */
    readonly allowedOrigins: readonly string[]
    /** Lower-cased host patterns; null when the `Host` header is not checked. */
    readonly allowedHosts: readonly string[] | null
  }
  readonly pubsub: Readonly<Required<Omit<NonNullable<TributaryConfigInput['pubsub']>, 'redisUrl'>>> & {
    /** null: in memory. */
    readonly redisUrl: string | null
  }
  readonly graphql: Readonly<Required<NonNullable<TributaryConfigInput['graphql']>>>
  readonly operations: Readonly<Required<NonNullable<TributaryConfigInput['operations']>>>
  readonly links: readonly LinkDefinition[]
  readonly routes: readonly RouteDefinition[]
  readonly services: readonly ServiceDefinition[]
  readonly generatedDir: string
  readonly codegen: Readonly<Required<NonNullable<TributaryConfigInput['codegen']>>>
  readonly auth: AuthConfig
  readonly permissions: Readonly<Record<string, PermissionRule>>
  readonly metrics: MetricsConfig
  readonly telemetry: TelemetryConfig
  /** The configured hooks, or null when none is set (README "Hooks"). */
  readonly hooks: ResolvedHooks | null
  readonly console: ConsoleConfig
  /** The event triggers with their defaults (README "Event triggers"). */
  readonly events: readonly EventTrigger[]
  readonly eventsDelivery: EventsDelivery
}

/**
 * Types a deployment's configuration for editors. Validation happens at startup in
 * {@link resolveConfig}, not here, so that `config.ts` can be imported without side effects.
 */
export function defineConfig(config: TributaryConfigInput): TributaryConfigInput {
  return config
}

/**
 * The default of `server.maxConnections`: 10000, or 80 % of the process's soft open-file limit when
 * that is lower (`Max open files` of Linux's `/proc/self/limits`; 10000 where it cannot be read), so
 * that connections leave descriptors for the database pools, upstream sockets and files.
 */
export function defaultMaxConnections(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    if (m) return Math.max(1, Math.min(10_000, Math.floor(Number(m[1]) * 0.8)))
  } catch {
    // Not Linux: the fixed default.
  }
  return 10_000
}

/**
 * Validates a configuration and fills in its defaults, from `env` where docs/architecture.md §3 says so.
 * @returns a deep-frozen {@link TributaryConfig}.
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`) naming the first bad path, e.g. `datasources[1].url: must be string`.
 */
export function resolveConfig(input: unknown, env: NodeJS.ProcessEnv = process.env): TributaryConfig {
  validateConfig(input)
  const c = input as TributaryConfigInput
  const mode: RunMode = c.mode ?? (env.NODE_ENV === 'production' ? 'production' : 'development')
  const dev = mode === 'development'
  // TRIBUTARY_PUBSUB=memory ignores an exported REDIS_URL (the test runner sets it: test gateways stay private).
  const sharedRedisUrl = c.pubsub?.redisUrl ?? (env.TRIBUTARY_PUBSUB === 'memory' ? null : env.REDIS_URL || null)
  const config: TributaryConfig = {
    datasources: c.datasources.map((d) => Object.freeze({ ...d })),
    mode,
    server: {
      host: c.server?.host ?? (env.HOST || '127.0.0.1'),
      port: c.server?.port ?? (env.PORT !== undefined && env.PORT !== '' ? Number(env.PORT) : 4000),
      bodyLimit: c.server?.bodyLimit ?? 1024 * 1024,
      requestTimeoutMs: c.server?.requestTimeoutMs ?? 30_000,
      maxResponseBytes: c.server?.maxResponseBytes ?? 16 * 1024 * 1024,
      maxIntrospectionBytes: Math.max(c.server?.maxIntrospectionBytes ?? 128 * 1024 * 1024, c.server?.maxResponseBytes ?? 16 * 1024 * 1024),
      maxWebSockets: c.server?.maxWebSockets ?? 1000,
      maxEventStreams: c.server?.maxEventStreams ?? 1000,
      maxConnections: c.server?.maxConnections ?? defaultMaxConnections(),
      logLevel: c.server?.logLevel ?? (env.LOG_LEVEL || 'info'),
      allowedOrigins: (c.server?.allowedOrigins ?? []).map(normaliseOrigin),
      allowedHosts: c.server?.allowedHosts ? c.server.allowedHosts.map((h) => h.toLowerCase()) : null,
      rateLimit: c.server?.rateLimit
        ? {
            max: c.server.rateLimit.max,
            timeWindowMs: c.server.rateLimit.timeWindowMs,
            key: c.server.rateLimit.key ?? 'ip',
            // The Redis of pubsub by default (REDIS_URL unless TRIBUTARY_PUBSUB=memory): tests stay in memory.
            redisUrl: c.server.rateLimit.redisUrl ?? sharedRedisUrl,
            keyPrefix: c.server.rateLimit.keyPrefix ?? 'tributary-rate-limit:',
          }
        : null,
      shutdownDelayMs: c.server?.shutdownDelayMs ?? 0,
      healthTimeoutMs: c.server?.healthTimeoutMs ?? 80,
      federation: c.server?.federation
        ? { maxRepresentations: (typeof c.server.federation === 'object' ? c.server.federation.maxRepresentations : undefined) ?? DEFAULT_MAX_REPRESENTATIONS }
        : null,
    },
    pubsub: {
      redisUrl: sharedRedisUrl,
      keyPrefix: c.pubsub?.keyPrefix ?? (env.REDIS_KEY_PREFIX || 'tributary:'),
      lockTtlMs: c.pubsub?.lockTtlMs ?? 2000,
      commandTimeoutMs: c.pubsub?.commandTimeoutMs ?? 500,
      maxCacheEntries: c.pubsub?.maxCacheEntries ?? 10_000,
      localCacheBytes: c.pubsub?.localCacheBytes ?? 16 * 1024 * 1024,
      localCacheRecheckMs: c.pubsub?.localCacheRecheckMs ?? 1000,
    },
    graphql: {
      introspection: c.graphql?.introspection ?? dev,
      playground: c.graphql?.playground ?? dev,
      maxDepth: c.graphql?.maxDepth ?? 12,
      maxAliases: c.graphql?.maxAliases ?? 30,
      maxFragmentSpreads: c.graphql?.maxFragmentSpreads ?? 100,
      maxSelections: c.graphql?.maxSelections ?? 5000,
      maxTokens: c.graphql?.maxTokens ?? 5000,
      maxCost: c.graphql?.maxCost ?? 20_000,
      defaultListSize: c.graphql?.defaultListSize ?? 10,
      maxInputDepth: c.graphql?.maxInputDepth ?? 32,
      maxSubscriptionsPerSocket: c.graphql?.maxSubscriptionsPerSocket ?? 100,
      shareSubscriptions: c.graphql?.shareSubscriptions ?? true,
      allowArbitraryOperationsInProduction: c.graphql?.allowArbitraryOperationsInProduction ?? false,
      apq: c.graphql?.apq ?? dev,
      apqMaxEntries: c.graphql?.apqMaxEntries ?? 1000,
      apqMaxDocumentBytes: c.graphql?.apqMaxDocumentBytes ?? 32_768,
      batching: { maxOperations: c.graphql?.batching?.maxOperations ?? 0 },
    },
    operations: {
      dir: c.operations?.dir ?? 'operations',
      liveIntervalMs: c.operations?.liveIntervalMs ?? 1000,
      handlerTimeoutMs: c.operations?.handlerTimeoutMs ?? 10_000,
      maxCallDepth: c.operations?.maxCallDepth ?? 8,
      defaults: {
        queries: { ...c.operations?.defaults?.queries },
        mutations: { ...c.operations?.defaults?.mutations },
        subscriptions: { ...c.operations?.defaults?.subscriptions },
      },
    },
    links: (c.links ?? []).map((l) => ({ ...l })),
    routes: (c.routes ?? []).map((r) => Object.freeze({ ...r })),
    services: (c.services ?? []).map((s) => Object.freeze({ ...s })),
    generatedDir: c.generatedDir ?? 'generated',
    codegen: { react: c.codegen?.react ?? false },
    auth: resolveAuth(c.auth, dev),
    permissions: c.permissions ?? {},
    metrics: {
      enabled: c.metrics?.enabled ?? true,
      path: c.metrics?.path ?? '/metrics',
      bearerToken: c.metrics?.bearerToken ?? null,
      allowedIps: c.metrics?.allowedIps ?? (c.metrics?.bearerToken ? null : ['127.0.0.1', '::1']),
      eventLoopPrecisionMs: c.metrics?.eventLoopPrecisionMs ?? 10,
    },
    telemetry: {
      otlpEndpoint: c.telemetry?.otlpEndpoint ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT || null),
      serviceName: c.telemetry?.serviceName ?? (env.OTEL_SERVICE_NAME || 'tributary'),
      traceProbesAndAssets: c.telemetry?.traceProbesAndAssets ?? false,
    },
    hooks: resolveHooks(c.hooks, mode === 'production'),
    console: {
      enabled: c.console?.enabled ?? dev,
      roles: [...(c.console?.roles ?? ['admin'])],
      adminSecret: c.console?.adminSecret ?? (env.TRIBUTARY_ADMIN_SECRET || null),
    },
    ...resolveEventTriggers(c.events, c.eventsDelivery, c.datasources),
  }
  if (config.mode === 'production' && config.console.enabled && !config.console.adminSecret && !config.auth.jwt && !config.auth.oidc) {
    throw new ConfigInvalidError('console.enabled: in production the console needs auth.jwt or auth.oidc (a user with a role of console.roles) or console.adminSecret')
  }
  if (config.server.rateLimit?.key === 'sub' && !config.auth.jwt && !config.auth.oidc) throw new ConfigInvalidError("server.rateLimit.key: 'sub' needs auth.jwt or auth.oidc")
  if (config.mode === 'production' && config.graphql.apq && !config.graphql.allowArbitraryOperationsInProduction) {
    throw new ConfigInvalidError('graphql.apq: registering a query runs it; in production it needs graphql.allowArbitraryOperationsInProduction')
  }
  if (Object.keys(config.permissions).length > 0 && !config.auth.jwt && !config.auth.oidc) throw new ConfigInvalidError('permissions: roles come from tokens or login sessions; set auth.jwt or auth.oidc')
  for (const [key, rule] of Object.entries(config.permissions)) {
    if (rule.filter && key.includes('.')) throw new ConfigInvalidError(`permissions.${key}.filter: a row filter applies to a type ('Type'), not to a field`)
    if (rule.bypassRoles && !rule.filter) throw new ConfigInvalidError(`permissions.${key}.bypassRoles: only a rule with a filter has roles that bypass it`)
  }
  c.datasources.forEach((d, i) => {
    if (d.kind === 'federation' && d.subgraphs) uniqueSubgraphs(d, i)
  })
  if (!Number.isInteger(config.server.port) || config.server.port < 0 || config.server.port > 65535) {
    validateConfig({ ...c, server: { ...c.server, port: config.server.port } })
  }
  if (config.pubsub.redisUrl !== null && c.pubsub?.redisUrl === undefined) {
    // REDIS_URL gets the same check as pubsub.redisUrl.
    validateConfig({ ...c, pubsub: { ...c.pubsub, redisUrl: config.pubsub.redisUrl } })
  }
  return deepFreeze(config)
}

/** The `auth` section with its defaults (see {@link AuthConfigInput}). */
function resolveAuth(input: AuthConfigInput | undefined, dev: boolean): AuthConfig {
  const j = input?.jwt
  const jwt: AuthConfig['jwt'] = j
    ? {
        ...j,
        rolesClaim: j.rolesClaim ?? 'roles',
        clockToleranceSec: j.clockToleranceSec ?? 0,
        requireExp: j.requireExp ?? true,
        jwksCacheMaxAgeMs: j.jwksCacheMaxAgeMs ?? 600_000,
        jwksCooldownMs: j.jwksCooldownMs ?? 30_000,
        jwksTimeoutMs: j.jwksTimeoutMs ?? 5000,
        maxTokenLength: j.maxTokenLength ?? 8192,
      }
    : null
  const oidc = resolveOidc(input?.oidc, jwt?.rolesClaim)
  if (input?.graphql === 'authenticated' && !jwt && !oidc) throw new ConfigInvalidError("auth.graphql: 'authenticated' needs auth.jwt or auth.oidc")
  return { jwt, oidc, graphql: input?.graphql ?? ((jwt || oidc) && !dev ? 'authenticated' : 'public') }
}

/**
 * `auth.oidc` with its defaults (see {@link OidcConfigInput}).
 * @throws ConfigInvalidError for two providers with one id, a redirect URI that is not an absolute URL,
 *   or `sameSite: 'none'` without `secure`.
 */
function resolveOidc(o: OidcConfigInput | undefined, jwtRolesClaim: string | undefined): OidcConfig | null {
  if (!o) return null
  const ids = new Set<string>()
  for (const p of o.providers) {
    if (ids.has(p.id)) throw new ConfigInvalidError(`auth.oidc.providers: the id "${p.id}" is used twice`)
    ids.add(p.id)
  }
  if (o.cookie.sameSite === 'none' && o.cookie.secure === false) throw new ConfigInvalidError("auth.oidc.cookie: sameSite 'none' needs secure (browsers drop such cookies)")
  const redirectUris = (o.redirectUris ?? []).map((u, i) => {
    if (!URL.canParse(u)) throw new ConfigInvalidError(`auth.oidc.redirectUris[${i}]: not an absolute URL`)
    return new URL(u).href
  })
  return {
    providers: o.providers.map((p) => {
      const scopes = p.scopes ?? ['openid', 'profile', 'email']
      return { ...p, scopes: scopes.includes('openid') ? scopes : ['openid', ...scopes], fetchUserInfo: p.fetchUserInfo ?? true, keepAccessToken: p.keepAccessToken ?? false }
    }),
    cookie: {
      name: o.cookie.name ?? 'trb_session',
      secrets: o.cookie.secrets,
      secure: o.cookie.secure ?? true,
      sameSite: o.cookie.sameSite ?? 'lax',
      maxAgeSeconds: o.cookie.maxAgeSeconds ?? 28_800,
      stateMaxAgeSeconds: o.cookie.stateMaxAgeSeconds ?? 600,
    },
    redirectUris,
    rolesClaim: o.rolesClaim ?? jwtRolesClaim ?? 'roles',
    maxParamLength: o.maxParamLength ?? 2048,
    maxCookieLength: o.maxCookieLength ?? 4096,
    timeoutMs: o.timeoutMs ?? 5000,
    maxRevokedSessions: o.maxRevokedSessions ?? 100_000,
  }
}

/** A federation source's subgraphs have distinct names and URLs. */
function uniqueSubgraphs(source: FederationDataSource, index: number): void {
  for (const key of ['name', 'url'] as const) {
    const seen = new Set<string>()
    source.subgraphs?.forEach((s, j) => {
      if (seen.has(s[key])) throw new ConfigInvalidError(`datasources[${index}].subgraphs[${j}].${key}: another subgraph has the ${key} ${s[key]}`)
      seen.add(s[key])
    })
  }
}

/** `new URL(origin).origin`: lower-cased scheme and host, the scheme's default port left out. */
function normaliseOrigin(origin: string, index: number): string {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    throw new ConfigInvalidError(`server.allowedOrigins[${index}]: must be an origin such as https://app.example.com`)
  }
  return url.origin
}

export type { DatabaseSourceOptions, RestSourceOptions, GraphQLSourceOptions, FederationSourceOptions, SubgraphOptions, MergedTypeOptions, SchemaSourceOptions, IExecutableSchemaDefinition }
