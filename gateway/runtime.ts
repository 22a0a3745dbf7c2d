/**
 * The gateway runtime: loads every data source through its connector, composes the schema and
 * compiles the stored operations. `http/` serves a {@link Gateway}; development mode builds a new
 * one on every change and swaps it in.
 */
import { createHash } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { GraphQLSchema } from 'graphql'
import type { Logger } from 'pino'
import type { DataSourceDefinition, TributaryConfig } from './config/index.js'
import type { ConnectorContext, ConnectorSubschema, SourceHealth } from './connectors/types.js'
import { createDatabaseSource } from './connectors/database/index.js'
import { createRestSource } from './connectors/rest/index.js'
import { createGraphQLSource } from './connectors/graphql/index.js'
import { createSchemaSource } from './connectors/schema/index.js'
import { createEventsSource } from './connectors/events/index.js'
import type { createFederationSource } from './connectors/federation/index.js'
import type { MergedTypeOptions } from './compose/merge.js'
import { composeSchema } from './compose/index.js'
import { applyLinks } from './compose/links.js'
import { toSubgraphSchema } from './compose/subgraph.js'
import { loadOperations, withOperationDefaults } from './operations/load.js'
import { compileTypeScriptOperation } from './operations/typescript.js'
import { compileOperation, type CompiledOperation } from './operations/compile.js'
import { ConfigInvalidError, OperationInvalidError, SourceLoadError, isTributaryError } from './errors.js'
import type { RowFilterRule } from './connectors/database/compiler/row-filter.js'
import { applyPermissions, inheritPermissionGuards } from './auth/permissions.js'
import { createJwtVerifier, type JwtVerifier } from './auth/jwt.js'
import { createIdentityVerifier, createSessionCodec, type SessionCodec } from './auth/session.js'
import type { OriginHookSlot, ResolvedHooks } from './hooks/index.js'
import { startEventTriggers, type EventTriggersRuntime } from './events/index.js'

/** One data source once loaded. */
export interface LoadedSource {
  /** The namespace, or `''`. */
  namespace: string
  /** The namespace, or `source#<index>` when there is none. */
  name: string
  kind: DataSourceDefinition['kind']
  subschema: ConnectorSubschema
  /** The source's merged types (graphql and federation sources), when it has any. */
  merge?: Readonly<Record<string, MergedTypeOptions>>
}

/** Everything `http/` needs to serve one version of the deployment. */
export interface Gateway {
  readonly config: TributaryConfig
  readonly schema: GraphQLSchema
  readonly sources: readonly LoadedSource[]
  /** Every stored operation by URL name (`users/GetUser`), internal ones included. */
  readonly operations: ReadonlyMap<string, CompiledOperation>
  /** The logger the gateway was created with (TypeScript operations log through it when a call has no request). */
  readonly logger: Logger
  /**
   * The identity verifier: tokens of `auth.jwt` and the session cookie of `auth.oidc`
   * (gateway/auth/session.ts `createIdentityVerifier`), or null when neither is configured.
   */
  readonly jwt: JwtVerifier | null
  /** The login session codec of `auth.oidc` (cookies, CSRF tokens, logout), or null when off. */
  readonly session: SessionCodec | null
  /** Config `hooks`, or null when none is set (README "Hooks"). */
  readonly hooks: ResolvedHooks | null
  /**
   * The global hooks the connectors read (`hooks.global`): one slot shared with the version this one
   * replaces, so that a reused source sees the reloaded hooks.
   */
  readonly originHooks: OriginHookSlot
  /**
   * The build key of each source, in the order of `sources`: a stable hash of its definition and of
   * what else shapes its subschema ({@link sourceBuildKey}); null when the definition cannot be hashed.
   */
  readonly sourceKeys: readonly (string | null)[]
  /** The names of the sources this version built; the others were reused from the previous version. */
  readonly built: readonly string[]
  /** The event-trigger deliverers (README "Event triggers"), or null when the config has none or `deliverEvents` is false. */
  readonly events: EventTriggersRuntime | null
  /** Probes every source. */
  health(): Promise<Record<string, SourceHealth>>
  /** Closes every source, except those `keep` (the version that replaces this one) shares. */
  close(keep?: Gateway): Promise<void>
}

/** Options of {@link createGateway}. */
export interface CreateGatewayOptions {
  logger: Logger
  /** Base for relative paths. Default `process.cwd()`. */
  cwd?: string
  /**
   * The version being replaced (development reload): each of its sources whose build key is unchanged
   * is reused as built (no connection, introspection or migration again) unless `rebuild` names it.
   */
  previous?: Gateway
  /** Sources (by name or namespace) to build again even when their key is unchanged. */
  rebuild?: ReadonlySet<string>
  /**
   * Install the event triggers of config `events` and deliver their events (README "Event
   * triggers"). Default true; `tributary generate` passes false.
   */
  deliverEvents?: boolean
  /**
   * Awaited before a source is built (not before one reused): what it needs to be up first, e.g. the
   * side services it reads its document from while the others still start (`tributary start`,
   * gateway/services.ts `servicesNeededBy`). Its rejection is the source's load error. Default: nothing.
   */
  beforeLoad?: (def: DataSourceDefinition) => Promise<void>
}

/** Hashes `value` canonically: keys sorted, functions by their source text; null when it cannot (a cycle). */
function canonical(value: unknown, seen: Set<object>): string | null {
  if (value === null || value === undefined) return String(value)
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value}:${String(value)}`
    case 'function':
      return `fn:${value.toString()}`
    case 'symbol':
      return `sym:${value.toString()}`
  }
  const obj = value as object
  if (obj instanceof RegExp || obj instanceof Date || obj instanceof URL) return `${obj.constructor.name}:${String(obj)}`
  if (ArrayBuffer.isView(obj)) return `bytes:${Buffer.from(obj.buffer, obj.byteOffset, obj.byteLength).toString('base64')}`
  if (seen.has(obj)) return null
  seen.add(obj)
  try {
    const parts: string[] = []
    if (Array.isArray(obj)) {
      for (const item of obj) {
        const c = canonical(item, seen)
        if (c === null) return null
        parts.push(c)
      }
      return `[${parts.join(',')}]`
    }
    const entries = obj instanceof Map ? [...obj.entries()].map(([k, v]) => [String(k), v] as const) : Object.keys(obj).map((k) => [k, (obj as Record<string, unknown>)[k]] as const)
    for (const [k, v] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const c = canonical(v, seen)
      if (c === null) return null
      parts.push(`${JSON.stringify(k)}:${c}`)
    }
    const proto = Object.getPrototypeOf(obj) as { constructor?: { name?: string } } | null
    return `${proto && proto !== Object.prototype ? (proto.constructor?.name ?? '?') : ''}{${parts.join(',')}}`
  } finally {
    seen.delete(obj)
  }
}

/**
 * The build key of a source: a SHA-256 of its definition (functions by their source text) and of the
 * rest of the config that shapes its subschema (the mode, the row-filtered types and their rules,
 * `generatedDir`). Two equal keys build the same subschema, so development reload reuses it.
 * @returns null when the definition cannot be hashed (a cycle): the source is then built every time.
 */
export function sourceBuildKey(def: DataSourceDefinition, config: TributaryConfig): string | null {
  const filters = Object.entries(config.permissions).filter(([, rule]) => rule.filter !== undefined)
  const text = canonical({ def, mode: config.mode, generatedDir: config.generatedDir, filters }, new Set())
  return text === null ? null : createHash('sha256').update(text).digest('hex')
}

function sourceName(def: DataSourceDefinition, index: number): string {
  return def.name || def.namespace || `source#${index}`
}

async function loadSource(def: DataSourceDefinition, ctx: ConnectorContext): Promise<ConnectorSubschema> {
  const { kind, namespace: _ns, name: _name, ...options } = def
  delete (options as { merge?: unknown }).merge
  switch (def.kind) {
    case 'database':
      return createDatabaseSource(options as Parameters<typeof createDatabaseSource>[0], ctx)
    case 'rest':
      return createRestSource(options as Parameters<typeof createRestSource>[0], ctx)
    case 'graphql':
      return createGraphQLSource(options as Parameters<typeof createGraphQLSource>[0], ctx)
    case 'federation': {
      // Loaded on use: @graphql-tools/federation and its planner are a few hundred modules that
      // a gateway without a federation source never needs (each costs start-up time).
      const federation = await import('./connectors/federation/index.js')
      return federation.createFederationSource(options as Parameters<typeof createFederationSource>[0], ctx)
    }
    case 'schema':
      return createSchemaSource(options as Parameters<typeof createSchemaSource>[0], ctx)
    case 'events':
      return createEventsSource(options as Parameters<typeof createEventsSource>[0], ctx)
    default:
      throw new SourceLoadError(ctx.sourceName, `unknown connector kind ${String(kind)}`)
  }
}

/**
 * Hands each row filter of `config.permissions` (`'ns_Type': { filter }`) to the database source
 * that defines the type, under the source's own type name.
 * @throws ConfigInvalidError when no database source defines the type, or the filter does not fit it
 */
function installRowFilterRules(config: TributaryConfig, sources: readonly LoadedSource[]): void {
  const filtered = Object.entries(config.permissions).filter(([, rule]) => rule.filter !== undefined)
  if (filtered.length === 0) return
  const pending = new Set(filtered.map(([key]) => key))
  for (const source of sources) {
    if (source.kind !== 'database' || source.subschema.kind !== 'local' || !source.subschema.installRowFilters) continue
    const prefix = source.namespace ? `${source.namespace}_` : ''
    const rules = new Map<string, RowFilterRule>()
    const publicName = new Map<string, string>()
    for (const [key, rule] of filtered) {
      if (!pending.has(key) || !key.startsWith(prefix)) continue
      const own = key.slice(prefix.length)
      publicName.set(own, key)
      rules.set(own, { filter: rule.filter, ...(rule.bypassRoles ? { bypassRoles: rule.bypassRoles } : {}), path: `permissions.${key}.filter` })
    }
    if (rules.size === 0) continue
    const unknown = new Set(source.subschema.installRowFilters(rules))
    for (const own of rules.keys()) if (!unknown.has(own)) pending.delete(publicName.get(own)!)
  }
  const [missing] = pending
  if (missing !== undefined) throw new ConfigInvalidError(`permissions.${missing}.filter: ${missing} is not a table or view of a database source (row filters apply to those only)`)
}

/**
 * Loads the sources (in parallel), composes them and compiles the operations.
 * @throws SourceLoadError, ComposeCollisionError, ComposeNamespaceError, OperationInvalidError; sources
 *   already loaded are closed before the error propagates.
 */
export async function createGateway(config: TributaryConfig, options: CreateGatewayOptions): Promise<Gateway> {
  const cwd = options.cwd ?? process.cwd()
  const logger = options.logger
  const cacheDir = resolve(cwd, config.generatedDir, 'sources')
  const rowFilteredTypes = new Set(Object.entries(config.permissions).filter(([, rule]) => rule.filter !== undefined).map(([key]) => key))
  // The sources' caches are written there (a folder that cannot be made is a warning: cache-file.ts).
  await mkdir(cacheDir, { recursive: true }).catch((err: NodeJS.ErrnoException) => logger?.warn({ dir: cacheDir, err: { code: err.code, message: err.message } }, 'could not create the cache folder; the gateway runs on without its caches'))

  const keys = config.datasources.map((def) => sourceBuildKey(def, config))
  const previous = options.previous
  const originHooks: OriginHookSlot = previous?.originHooks ?? { current: null }
  const hooks = config.hooks
  originHooks.current = hooks?.global ? { timeoutMs: hooks.timeoutMs, production: hooks.production, global: hooks.global } : null
  const reusable = new Map<string, LoadedSource>()
  if (previous) {
    previous.sources.forEach((s, i) => {
      const key = previous.sourceKeys[i]
      if (key && !options.rebuild?.has(s.name) && !(s.namespace && options.rebuild?.has(s.namespace))) reusable.set(key, s)
    })
  }
  const built: string[] = []
  const settled = await Promise.allSettled(
    config.datasources.map(async (def, index): Promise<LoadedSource> => {
      const name = sourceName(def, index)
      const reused = keys[index] ? reusable.get(keys[index]!) : undefined
      if (reused && reused.name === name) return reused
      built.push(name)
      if (options.beforeLoad) await options.beforeLoad(def)
      const started = performance.now()
      const ctx: ConnectorContext = {
        namespace: def.namespace ?? '',
        sourceName: name,
        logger: logger.child({ source: name }),
        mode: config.mode,
        cacheDir,
        cwd,
        rowFilteredTypes,
        originHooks,
      }
      try {
        const subschema = await loadSource(def, ctx)
        logger.debug({ source: name, kind: def.kind, ms: Math.round(performance.now() - started) }, 'data source loaded')
        const merge = 'merge' in def ? def.merge : undefined
        return { namespace: def.namespace ?? '', name, kind: def.kind, subschema, ...(merge ? { merge } : {}) }
      } catch (err) {
        if (isTributaryError(err)) throw err
        throw new SourceLoadError(name, (err as Error).message, { cause: err })
      }
    }),
  )
  const sources = settled.filter((s): s is PromiseFulfilledResult<LoadedSource> => s.status === 'fulfilled').map((s) => s.value)
  const previousSources = new Set(previous?.sources)
  // On a failure, only what this call built is closed: reused sources still serve the previous version.
  const closeAll = (keep?: Gateway) => {
    const kept = new Set(keep?.sources)
    return Promise.allSettled(sources.filter((s) => !kept.has(s)).map((s) => s.subschema.close())).then(() => undefined)
  }
  const closeBuilt = () => Promise.allSettled(sources.filter((s) => !previousSources.has(s)).map((s) => s.subschema.close())).then(() => undefined)
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failed) {
    await closeBuilt()
    throw failed.reason
  }

  try {
    installRowFilterRules(config, sources)
    // Permissions last: a link field (`Type.link`) is protected like any other field.
    const composed = applyPermissions(applyLinks(composeSchema(sources), config.links), config.permissions)
    // A Federation subgraph: `_service` and `_entities` call the wrapped resolvers, so permissions hold there too.
    const merged = sources.flatMap((s) => (s.merge ? [{ namespace: s.namespace, merge: s.merge }] : []))
    const schema = config.server.federation ? toSubgraphSchema(composed, config.server.federation, merged) : composed
    inheritPermissionGuards(composed, schema)
    const operations = await compileStoredOperations(config, schema, cwd, logger, config.mode === 'development' && !!previous)
    const session = config.auth.oidc ? createSessionCodec(config.auth.oidc) : null
    const events = options.deliverEvents === false ? null : await startEventTriggers(config, sources, logger, cwd)
    return {
      config,
      schema,
      sources,
      operations,
      jwt: createIdentityVerifier(config.auth.jwt ? createJwtVerifier(config.auth.jwt) : null, session),
      session,
      logger,
      hooks,
      originHooks,
      sourceKeys: keys,
      built,
      events,
      async health() {
        const entries = await Promise.all(sources.map(async (s) => [s.name, await s.subschema.health()] as const))
        return Object.fromEntries(entries)
      },
      async close(keep?: Gateway) {
        // An operations-only reload (reloadOperations) shares this version's deliverers.
        if (keep?.events !== events) await events?.stop()
        await closeAll(keep)
      },
    }
  } catch (err) {
    await closeBuilt()
    throw err
  }
}

/**
 * Reads and compiles the stored operations (`.graphql` and TypeScript) of `config.operations.dir`
 * against `schema`, with `operations.defaults` applied.
 * @param fresh import TypeScript operation files afresh (development reload).
 * @throws OperationInvalidError naming file:line:column
 */
async function compileStoredOperations(config: TributaryConfig, schema: GraphQLSchema, cwd: string, logger: Logger, fresh = false): Promise<Map<string, CompiledOperation>> {
  const stored = (await loadOperations(resolve(cwd, config.operations.dir), schema, cwd, fresh)).map((op) => withOperationDefaults(op, config.operations.defaults))
  const withRules = stored.find((op) => op.auth)
  if (withRules && !config.auth.jwt && !config.auth.oidc) {
    throw new OperationInvalidError(`${withRules.file}:1:1: @requireAuthentication, @rbac and @fromClaim (and operations.defaults.*.authentication) need auth.jwt or auth.oidc in the config`)
  }
  const operations = new Map<string, CompiledOperation>()
  const tsOptions = {
    maxInputDepth: config.graphql.maxInputDepth,
    handlerTimeoutMs: config.operations.handlerTimeoutMs,
    maxCallDepth: config.operations.maxCallDepth,
    mode: config.mode,
    logger,
    operations: () => operations,
  }
  for (const op of stored) {
    operations.set(
      op.name,
      op.language === 'typescript'
        ? compileTypeScriptOperation(op, tsOptions)
        : compileOperation(op, schema, { maxInputDepth: config.graphql.maxInputDepth, cost: { maxCost: config.graphql.maxCost, listSize: config.graphql.defaultListSize } }),
    )
  }
  return operations
}

/**
 * A new version of `gateway` with its stored operations read and compiled again against its schema
 * (development reload of an operation file): no source is built again, the sources are shared, so
 * `gateway.close(next)` closes nothing.
 * @throws OperationInvalidError naming file:line:column; `gateway` is untouched
 */
export async function reloadOperations(gateway: Gateway, options: { cwd?: string; logger?: Logger } = {}): Promise<Gateway> {
  const operations = await compileStoredOperations(gateway.config, gateway.schema, options.cwd ?? process.cwd(), options.logger ?? gateway.logger, true)
  const next: Gateway = Object.freeze({ ...gateway, operations, built: [] })
  return next
}
