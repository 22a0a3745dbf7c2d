/**
 * The contract between the gateway and its connectors.
 *
 * A connector is a kind of source (database, rest, graphql, schema). Each connector folder exports
 * one factory, `createXSource(options, context)`, that returns a {@link ConnectorSubschema}: the
 * source's schema *without* any namespace prefix. `compose/` applies the namespace.
 */
import type { GraphQLResolveInfo, GraphQLSchema } from 'graphql'
import type { Executor } from '@graphql-tools/utils'
import type { Logger } from 'pino'
import type { RowFilterRule } from './database/compiler/row-filter.js'
import type { OriginHookSlot } from '../hooks/index.js'

/** `production` masks errors and serves stored operations only; `development` is the default. */
export type RunMode = 'development' | 'production'

/** What every connector factory receives besides its own options. */
export interface ConnectorContext {
  /**
   * The data source's namespace, or `''` when it has none. For log and error messages, and for
   * {@link LocalSubschema.namespaced}: `schema` itself never carries the prefix.
   */
  namespace: string
  /** A human name for logs and errors: the namespace, or `source#<index>` when there is none. */
  sourceName: string
  /** A pino child logger bound to `{ source: sourceName }`. */
  logger: Logger
  /** The run mode of the gateway. */
  mode: RunMode
  /** Absolute directory where a connector may cache its introspection (`generated/sources/`). Created by the gateway. */
  cacheDir: string
  /** Absolute base directory for relative paths in options (the process's working directory). */
  cwd: string
  /** Public (namespaced) names of the types that have a row filter in config `permissions`. Default none. */
  rowFilteredTypes?: ReadonlySet<string>
  /** The current `hooks.global` (README "Hooks"): REST, GraphQL and Federation sources call `onOriginRequest`/`onOriginResponse` through it. Default none. */
  originHooks?: OriginHookSlot
}

/** The state of one data source, as reported by `GET /health`. */
export interface SourceHealth {
  /** `up` when the source answered its last probe. */
  status: 'up' | 'down'
  /** Why it is down, safe to show to clients (no SQL, no credentials). */
  message?: string
  /** Round-trip time of the probe, in milliseconds. */
  latencyMs?: number
  /** REST sources: the state of the source's circuit breaker (`open`: calls fail fast with `TRB_ERR_UPSTREAM_UNAVAILABLE`). */
  circuit?: 'closed' | 'open' | 'half-open'
  /** Database sources with `changes`: the change stream's state (`reconnecting` makes `/health` `degraded`, not the source down). */
  changes?: ChangeStreamHealth
}

/** The state of a database source's change stream (README "Database change streams"), in `/health`. */
export interface ChangeStreamHealth {
  /** How changes are captured, as `changes.method` names it: `triggers` (PostgreSQL: with NOTIFY; SQLite, MySQL/MariaDB: a changelog table, polled), `logical` (PostgreSQL logical replication), `binlog` (MySQL/MariaDB). */
  method: 'triggers' | 'logical' | 'binlog'
  /** `up` while changes are read; `reconnecting` while the connection or the poll fails (changes are late, not lost, except NOTIFY's). */
  status: 'up' | 'reconnecting'
  /** Why it is not up: the last error, safe to show to clients. */
  lastError?: string
  /** Logical replication: `waiting` (for a first subscriber), `connecting`, `streaming`, `reconnecting`, `closed`. */
  state?: string
  /** Logical replication: the slot and the publication. */
  slot?: string
  publication?: string
  /** Logical replication: the last LSN acknowledged to the server (a restart resumes after it); null before the first. */
  confirmedLsn?: string | null
}

interface SubschemaLifecycle {
  /** Probes the source (a `select 1`, a HEAD request...). Never throws: failures are reported as `down`. */
  health(): Promise<SourceHealth>
  /** Releases pools, timers and sockets. Idempotent. */
  close(): Promise<void>
}

/**
 * A source executed inside the gateway process (database, REST, local schema). Its schema is
 * executable: resolvers are attached to its fields and survive a rename by `mapSchema`, so they
 * must never depend on public type names. They find their tables or endpoints through the
 * `extensions` of their types and fields, or through closures.
 */
export interface LocalSubschema extends SubschemaLifecycle {
  kind: 'local'
  schema: GraphQLSchema
  /**
   * The source's schema built directly with the public names of `namespace` (the context's; `''`:
   * none): types `<ns>_<Type>` and root fields `<ns>_<field>` exactly as `compose/namespace.ts`'s
   * `applyNamespace` would rename `schema` (root types still `Query`/`Mutation`/`Subscription`), its
   * shared scalars the instances of `gateway/scalars.ts`, no foreign scalars. `compose/` then uses it
   * as it is instead of copying `schema` to rename it (the REST connector, whose large documents make
   * that copy costly; its `schema` is then built only when read). Absent: `compose/` renames `schema`.
   */
  namespaced?: { namespace: string; schema: GraphQLSchema }
  /**
   * Database sources: installs the row filters of config `permissions` (README "Authentication"),
   * keyed by the source's own type names (no namespace), before the gateway serves.
   * @returns the keys that name no model of the source (not installed)
   * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`) for a filter that does not fit its model
   */
  installRowFilters?(rules: ReadonlyMap<string, RowFilterRule>): string[]
  /**
   * Events sources: publishes one message through the source's broker connection and waits for the
   * broker's acknowledgement where it has one (event triggers deliver through it, gateway/events/).
   * `stream` (NATS): the JetStream stream that must store it; `msgId`: its JetStream message id.
   * @throws UpstreamUnavailableError, UpstreamError when the broker refuses or is not reachable
   */
  publish?(subject: string, data: Uint8Array, options: { stream?: string; exchange?: string; msgId?: string }): Promise<unknown>
}

/** A remote GraphQL API: its introspected schema and an executor that sends documents to it. */
export interface RemoteSubschema extends SubschemaLifecycle {
  kind: 'remote'
  schema: GraphQLSchema
  executor: Executor
}

/** What a connector factory resolves to. */
export type ConnectorSubschema = LocalSubschema | RemoteSubschema

/** The `extensions` key of a link field (README "Links"), set by `compose/links.ts`. */
export const LINK_EXTENSION = 'tributaryLink'

/**
 * `extensions.tributaryLink` of a link field: the parent type's fields the link reads. A connector
 * that builds parent objects from a selection set (the database compiler) must fetch them whenever
 * the link field is selected, even if the client did not select them.
 */
export interface LinkFieldExtension {
  /** Field names of the parent type (leaf fields). */
  requires: readonly string[]
  /** A batched link whose target is a REST operation: how a direct plan (gateway/operations/direct-links.ts) serves it. */
  direct?: LinkDirectAccess
}

/**
 * A batched link as a direct plan uses it: the parents' keys, read from the statement's JSON, are
 * given all at once and the target's items come back by key, exactly as the link's resolver would
 * have matched them (`batch.match`, compared as strings).
 */
export interface LinkDirectAccess {
  /** The parent field that holds the key (`batch.key`). */
  readonly key: string
  /** `many`: the field is the list of every matching item, else the first one. */
  readonly many: boolean
  /** The target `Query` field (a REST operation returning a list of objects of the item type). */
  readonly target: string
  /**
   * Calls the target for `keys` (distinct, non-null; chunked by `batch.maxKeys`, at most
   * `concurrency` calls at once), with the link field's selection set (`info.fieldNodes[0]`).
   * @param info the link field's resolve info as a direct plan makes it: `schema`, `fragments`,
   *   `operation`, `variableValues`, `fieldNodes: [<the link field's node>]`, `path`.
   * @returns for each key (as `String(key)`), the matching item (or the array of them with `many`), or
   *   the Error of the call that served it; keys that match nothing are absent.
   */
  load(keys: readonly unknown[], info: GraphQLResolveInfo, context: unknown): Promise<Map<string, unknown>>
}

/**
 * The `extensions` key a connector sets on a relation filter input type (README "Query cost"):
 * `'many'` for a to-many filter (`every`/`some`/`none`: each level reads a list of rows per row
 * filtered), `'one'` for a to-one filter (`is`/`isNot`: one row). `operations/filter-cost.ts` prices them.
 */
export const RELATION_FILTER_EXTENSION = 'tributaryRelationFilter'

/**
 * The `extensions` key of a Query root field that can serve a Federation entity (README "Tributary
 * as a subgraph"): a list field with a `where: XWhereInput` argument returning the entity type,
 * whose where input has a scalar filter (`{ equals, in }`) for each key field. `compose/subgraph.ts`
 * answers `_entities` for the field's return type by calling it once per type (per `take` limit).
 */
export const ENTITY_EXTENSION = 'tributaryEntity'

/** `extensions.tributaryEntity` of such a root field (see {@link ENTITY_EXTENSION}). */
export interface EntityFieldExtension {
  /** The key fields of the returned type (its `@key(fields:)`), e.g. `['id']` or `['orderId', 'lineNo']`. */
  key: readonly string[]
}
