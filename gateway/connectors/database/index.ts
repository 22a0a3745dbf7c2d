/**
 * The database connector: a SQL database (SQLite, PostgreSQL, MySQL/MariaDB) becomes a Prisma-style
 * CRUD subschema (docs/architecture.md §4) whose root fields each compile to one SQL statement.
 *
 * Startup: open the database (`createKnex`), run the migrations, introspect it, cache the
 * introspection in `<cacheDir>/<source>.introspection.json` (or read that cache when the database
 * is unreachable), then build the schema.
 */
import { readFile } from 'node:fs/promises'
import { saveCacheFile } from '../../cache-file.js'
import { join } from 'node:path'
import type { Knex } from 'knex'
import { ConfigInvalidError, PackageMissingError, SourceLoadError, isTributaryError } from '../../errors.js'
import type { ConnectorContext, LocalSubschema, SourceHealth } from '../types.js'
import { buildSchema, installRowFilters, modelsOf } from './build-schema.js'
import { CHANGELOG_TABLE, createSourceChanges, type DatabaseChangesOptions, type SourceChanges } from './changes/index.js'
import { Db } from './compiler/db.js'
import { SqlDialect, type MysqlFlavor } from './compiler/dialect.js'
import { createKnex, parseDatabaseUrl, type PoolOptions } from './connection.js'
import { SqliteWorkers, type SqliteWorkerLimits } from './sqlite-workers.js'
import { introspect } from './introspect.js'
import type { DatabaseIntrospection } from './model.js'
import { countRejectedEvent, registerPool } from '../../observability/probes.js'

/** One Knex migration. */
type DatabaseMigration = { up(knex: Knex): Promise<void>; down?(knex: Knex): Promise<void> }

/** Options of a `database` data source (the config author writes these). */
export interface DatabaseSourceOptions {
  /** `sqlite:<path>` (relative to cwd), `postgres://…` or `mysql://…`. */
  url: string
  /** PostgreSQL schema to introspect. Default `public`. */
  schema?: string
  /** Knex migrations run at startup in key order, before introspection: `{ '001-create-todo': { up(knex), down?(knex) } }`. Default none. */
  migrations?: Record<string, { up(knex: Knex): Promise<void>; down?(knex: Knex): Promise<void> }>
  /**
   * Connection pool: bounds (default SQLite `{ min: 1, max: 1 }`, others `{ min: 0, max: 10 }`) and
   * `acquireTimeoutMs`, the longest wait for a connection (default 10000), see {@link PoolOptions}.
   */
  pool?: PoolOptions
  /** Largest `|take|` of any list of this source, nested lists included; more is refused with `TRB_ERR_DB_INPUT`. Default 1000. */
  maxTake?: number
  /**
   * Most nested writes one request may make (the relation fields of `createOne`/`updateOne`/
   * `upsertOne` data: each item — `create`, `connect`, `update`, `delete`… — counts one, refused with
   * `TRB_ERR_DB_INPUT` before anything is written; the rows each `set`, `updateMany` and
   * `deleteMany` changes count too, as they run, the transaction rolled back when passed); 0 turns
   * nested writes off. Default 100.
   */
  maxNestedWrites?: number
  /**
   * PostgreSQL: most keys of one batched lookup statement. Concurrent `findUnique<Model>` lookups
   * (direct plans) of the same statement — same selection, one single-column key of an integer,
   * text, varchar or uuid column, bound to different values — made in the same event-loop turn are
   * sent as ONE statement over `unnest($1::<type>[])` and split back by key (README "Batched
   * lookups"); 1 turns batching off. Default 100.
   */
  lookupBatchSize?: number
  /**
   * Adds the root fields `queryRaw` (Query) and `executeRaw` (Mutation): any client may then run any
   * SQL the database user may run (read and write every table). On SQLite, statements that reach
   * another file or code (`ATTACH`, `VACUUM INTO`, `load_extension()`, `PRAGMA`) are refused with
   * `TRB_ERR_DB_RAW_REFUSED` (sqlite-raw-guard.ts). Only for trusted clients. `'development'`: only
   * when the gateway runs in development mode (the demo's choice), never in production. Default
   * false: the fields do not exist.
   */
  rawSql?: boolean | 'development'
  /**
   * Longest run of one statement, in milliseconds, enforced by the engine (PostgreSQL
   * `statement_timeout`, MariaDB `max_statement_time`, MySQL `max_execution_time` for SELECT; SQLite
   * files: the worker process running it is killed). A statement past it fails with
   * `TRB_ERR_DB_TIMEOUT` (504) and is not run again. Default 10000.
   */
  statementTimeoutMs?: number
  /**
   * SQLite files: the limits of the worker processes (sqlite-workers.ts). `maxQueue` statements
   * (and transactions) wait for a worker at most (default 256), each at most `maxWaitMs` (default
   * 2000); past either, the statement is refused with 503 `TRB_ERR_CAPACITY` and `Retry-After`.
   * `requestBudgetMs` (default `statementTimeoutMs`): the worker time one request's reads may use
   * together; past it, `TRB_ERR_DB_TIMEOUT`.
   */
  sqliteWorkers?: SqliteWorkerLimits
  /**
   * PostgreSQL, and MySQL/MariaDB stored functions (`MODIFIES SQL DATA`: Mutation, others: Query;
   * introspect/mysql.ts): expose the schema's functions as root fields (`true`: every function that
   * qualifies; a list: those function names). Stable and immutable functions become Query fields,
   * volatile ones Mutation fields, named in camelCase. Functions left out (overloads, `RETURNS TABLE`,
   * `void`, OUT arguments…) are named in a startup warning; a listed name that is not exposed fails
   * the start. Default: none (functions run whatever SQL they contain, with the gateway's rights).
   */
  functions?: boolean | string[]
  /**
   * Unique keys the database does not declare, by model name (GraphQL names): each key a list of
   * field names. Gives views `findUnique` (and a stable order); also for tables. Default none.
   */
  uniqueKeys?: Record<string, string[][]>
  /**
   * Relations the database does not declare (views, databases without foreign keys): `from` is the
   * `Model.field` holding the key (a many-to-one field is added there), `to` the referenced
   * `Model.field` (a one-to-many field, or one-to-one when `from` is unique). GraphQL names; an
   * unknown model or field fails the start with `TRB_ERR_CONFIG_INVALID`. Default none.
   */
  relations?: { from: string; to: string }[]
  /**
   * Per-column settings, keyed `table.column`, overriding what introspection detects. Default none.
   * - `filledByDatabase: true`: the database fills the column (a trigger the introspection cannot
   *   read): optional in create inputs.
   * - `dateTimeFormat` (SQLite DateTime columns): how the column stores date-times, see
   *   `ColumnInfo.dateTimeFormat` (`YYYY-MM-DD HH:mm:ss`, `YYYY-MM-DDTHH:mm:ss.SSSZ`, `YYYY-MM-DD`,
   *   `unixepoch`, `unixepoch-ms`); values are written and compared in it.
   */
  columns?: Record<string, DatabaseColumnOptions>
  /**
   * Change streams (README "Database change streams"): `<Model>Changed(where)` and
   * `<model>Stream(cursor, batchSize, where)` subscriptions that see every insert, update and delete
   * (plain SQL from other programs included), row filters applied per subscriber. `true` takes every
   * default of {@link DatabaseChangesOptions}. Default off.
   */
  changes?: boolean | DatabaseChangesOptions
}

/** Settings of one column (`DatabaseSourceOptions.columns`). */
export interface DatabaseColumnOptions {
  /** The database fills the column (e.g. a trigger): optional in create inputs. */
  filledByDatabase?: boolean
  /** SQLite: the stored date-time format (see `ColumnInfo.dateTimeFormat`). */
  dateTimeFormat?: string
}

/**
 * Applies `columns` settings to an introspection document (a copy: the cached document keeps what
 * the database says).
 * @throws SourceLoadError when a key names no `table.column` of the document
 */
export function applyColumnOptions(doc: DatabaseIntrospection, columns: Record<string, DatabaseColumnOptions> | undefined, sourceName: string): DatabaseIntrospection {
  if (!columns || Object.keys(columns).length === 0) return doc
  const out = structuredClone(doc)
  for (const [key, opts] of Object.entries(columns)) {
    const dot = key.lastIndexOf('.')
    const col = out.tables.find((t) => t.name === key.slice(0, dot))?.columns.find((c) => c.name === key.slice(dot + 1))
    if (dot < 0 || !col) throw new SourceLoadError(sourceName, `columns["${key}"]: no such table.column`)
    if (opts.filledByDatabase !== undefined) col.filledByTrigger = opts.filledByDatabase
    if (opts.dateTimeFormat !== undefined) col.dateTimeFormat = opts.dateTimeFormat
  }
  return out
}

/** The source's own type names among public (namespaced) `names`. */
function ownNames(names: ReadonlySet<string> | undefined, namespace: string): Set<string> {
  const prefix = namespace ? `${namespace}_` : ''
  return new Set([...(names ?? [])].filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length)))
}

/** Default of {@link DatabaseSourceOptions.statementTimeoutMs}, in milliseconds. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000
/** How many worker processes run the statements of one SQLite file source at once (one more serves single-table reads only: sqlite-workers.ts). */
export const SQLITE_WORKER_PROCESSES = 2

/**
 * Runs the pending migrations. knex refuses at once when another process holds the migration lock
 * (two gateway replicas starting together); this waits for it, up to 30 s, instead of failing.
 * @throws the migration's own error, or knex's lock error after 30 s.
 */
async function migrateLatest(knex: Knex, source: Knex.MigrationSource<string>, ctx: ConnectorContext): Promise<void> {
  const deadline = Date.now() + 30_000
  for (let attempt = 0; ; attempt++) {
    try {
      await knex.migrate.latest({ migrationSource: source, tableName: 'knex_migrations' })
      return
    } catch (err) {
      const message = (err as Error).message
      // The lock, or a race between two processes creating knex's bookkeeping tables.
      const locked = /Migration table is already locked/i.test(message) || /create table .?knex_migrations/i.test(message)
      if (!locked || Date.now() > deadline) throw err
      if (attempt === 0) ctx.logger.info('another process is migrating this database; waiting for it')
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 300))
    }
  }
}

function migrationSource(migrations: Record<string, DatabaseMigration>): Knex.MigrationSource<string> {
  const names = Object.keys(migrations).sort()
  return {
    getMigrations: async () => names,
    getMigrationName: (name) => name,
    getMigration: async (name) => {
      const m = migrations[name]!
      return { up: (knex: Knex) => m.up(knex), down: (knex: Knex) => (m.down ? m.down(knex) : Promise.resolve()) }
    },
  }
}

function safeMessage(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown }
  const code = typeof e?.code === 'string' ? e.code : undefined
  const msg = typeof e?.message === 'string' ? e.message.replace(/\/\/[^@/\s]*@/g, '//***@') : String(err)
  return code ? `${code}: ${msg}` : msg
}

async function detectMysqlFlavor(db: Db): Promise<MysqlFlavor> {
  try {
    const rows = await db.values('SELECT VERSION()', [])
    return /mariadb/i.test(String(rows[0])) ? 'mariadb' : 'mysql'
  } catch {
    return 'mariadb'
  }
}

/**
 * Creates the subschema of one database data source.
 *
 * @param options see {@link DatabaseSourceOptions}
 * @param ctx the connector context (logger, cache directory, source name)
 * @returns `{ kind: 'local', schema, health, close }`; `close()` destroys the pool
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when the URL's driver (pg, mysql2) is not installed
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`) when the URL is invalid, a migration fails, or the
 *   database is unreachable and no cached introspection exists
 */
export async function createDatabaseSource(options: DatabaseSourceOptions, ctx: ConnectorContext): Promise<LocalSubschema> {
  const log = ctx.logger
  let conn: ReturnType<typeof createKnex>
  try {
    conn = createKnex(options.url, { ...(options.pool ? { pool: options.pool } : {}), ...(options.schema ? { schema: options.schema } : {}), cwd: ctx.cwd, label: `source '${ctx.sourceName}'` })
  } catch (err) {
    if (err instanceof PackageMissingError) throw err
    throw new SourceLoadError(ctx.sourceName, safeMessage(err), { cause: err })
  }
  const { knex, dialect } = conn
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS
  // SQLite files: statements that may be slow run in worker processes (sqlite-workers.ts). An
  // in-memory database exists in this process only.
  const parsed = parseDatabaseUrl(options.url, ctx.cwd)
  const workers = parsed.dialect === 'sqlite' && parsed.filename !== ':memory:' ? new SqliteWorkers(parsed.filename, SQLITE_WORKER_PROCESSES, timeoutMs, options.sqliteWorkers) : undefined
  const db = new Db(knex, dialect, { timeoutMs, sourceName: ctx.sourceName, ...(workers ? { sqliteWorkers: workers, sqliteFile: workers.filename } : {}) })
  // The pool gauge (tributary_db_pool_connections): tarn's counts, read when metrics are scraped.
  const unregisterPool = registerPool({
    kind: 'db',
    source: ctx.sourceName,
    stats() {
      const pool = (knex.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool
      return pool ? { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() } : { used: 0, free: 0, pending: 0 }
    },
  })
  db.onQuery((sql, bindings, worker) => {
    // `worker` (SQLite files only): the statement went to a worker process, not the gateway's own connection.
    if (log.isLevelEnabled('debug')) log.debug(workers ? { sql, bindings, worker } : { sql, bindings }, 'sql')
  })
  if (log.isLevelEnabled('debug')) {
    // Statements knex sends itself (migrations, introspection).
    knex.on('query', (q: { sql: string; bindings?: unknown[] }) => log.debug({ sql: q.sql, bindings: q.bindings ?? [] }, 'sql'))
  }
  /** Frees what this function holds when the source fails to load: the pool gauge, the workers, the pool. */
  const release = async (): Promise<void> => {
    unregisterPool()
    workers?.close()
    await knex.destroy().catch(() => undefined)
  }
  const cacheFile = join(ctx.cacheDir, `${ctx.sourceName}.introspection.json`)
  let doc: DatabaseIntrospection
  let reachable = true
  try {
    if (options.migrations && Object.keys(options.migrations).length > 0) {
      await migrateLatest(knex, migrationSource(options.migrations), ctx)
    }
    const started = performance.now()
    doc = await introspect(knex, dialect, {
      ...(options.schema ? { schema: options.schema } : {}),
      ...(options.functions ? { functions: options.functions } : {}),
      onWarning: (message) => log.warn(message),
    })
    // Development reload counts these (test/dev-reload.test.ts): editing an operation introspects nothing.
    log.debug({ tables: doc.tables.length, ms: Math.round(performance.now() - started) }, 'database introspected')
  } catch (err) {
    reachable = false
    let cached: string | undefined
    try {
      cached = await readFile(cacheFile, 'utf8')
    } catch {
      cached = undefined
    }
    if (cached === undefined) {
      await release()
      throw new SourceLoadError(ctx.sourceName, safeMessage(err), { cause: err })
    }
    log.warn({ err: safeMessage(err), cache: cacheFile }, 'database unreachable: using the cached introspection')
    doc = JSON.parse(cached) as DatabaseIntrospection
  }
  if (reachable) {
    await saveCacheFile(cacheFile, `${JSON.stringify(doc, null, 2)}\n`, log)
  }
  for (const t of doc.tables) {
    for (const c of t.columns) {
      if (c.unknownType) log.warn({ table: t.name, column: c.name, dataType: c.dataType }, `unknown column type ${c.dataType} of ${t.name}.${c.name}: mapped to String`)
    }
  }
  const mysqlFlavor = dialect === 'mysql' && reachable ? await detectMysqlFlavor(db) : 'mariadb'
  if (Array.isArray(options.functions)) {
    const missing = options.functions.filter((n) => !(doc.functions ?? []).some((f) => f.name === n))
    if (missing.length > 0) {
      await release()
      throw new ConfigInvalidError(`datasource ${ctx.sourceName}: functions: ${missing.join(', ')} cannot be exposed (not found, or not supported: see the startup warnings)`)
    }
  }
  let effective: DatabaseIntrospection
  try {
    effective = applyColumnOptions(doc, options.columns, ctx.sourceName)
  } catch (err) {
    await release()
    throw err
  }
  const rawSql = options.rawSql === true || (options.rawSql === 'development' && ctx.mode === 'development')
  // The changelog of change streams is the gateway's, never a model.
  effective = { ...effective, tables: effective.tables.filter((t) => t.name !== CHANGELOG_TABLE) }
  let changes: SourceChanges | undefined
  if (options.changes) {
    const field = `${ctx.namespace ? `${ctx.namespace}_` : ''}changes`
    changes = createSourceChanges(options.changes, {
      knex,
      d: new SqlDialect(dialect, mysqlFlavor, effective.schema),
      sourceName: ctx.sourceName,
      schema: effective.schema ?? 'public',
      ...(workers ? { sqliteFile: workers.filename } : {}),
      tablesWithKey: effective.tables.filter((t) => t.primaryKey.length > 0).map((t) => t.name),
      reject: (why, details) => {
        countRejectedEvent(ctx.sourceName, field)
        log.warn({ ...details }, `database changes: ${why}`)
      },
      warn: (message, details) => log.warn({ ...details }, message),
    })
  }
  let schema: ReturnType<typeof buildSchema>
  try {
    schema = buildSchema(effective, {
      db,
      mysqlFlavor,
      rawErrors: ctx.mode !== 'production',
      rawSql,
      ...(options.maxTake !== undefined ? { maxTake: options.maxTake } : {}),
      ...(options.maxNestedWrites !== undefined ? { maxNestedWrites: options.maxNestedWrites } : {}),
      ...(options.lookupBatchSize !== undefined ? { lookupBatchSize: options.lookupBatchSize } : {}),
      overrides: { ...(options.uniqueKeys ? { uniqueKeys: options.uniqueKeys } : {}), ...(options.relations ? { relations: options.relations } : {}) },
      rowFiltered: ownNames(ctx.rowFilteredTypes, ctx.namespace),
      ...(changes ? { changes: changes.shared } : {}),
    })
  } catch (err) {
    await release()
    throw new ConfigInvalidError(`datasource ${ctx.sourceName}: ${(err as Error).message}`, { cause: err })
  }
  if (changes) {
    try {
      await changes.start(modelsOf(schema))
    } catch (err) {
      await changes.close()
      await release()
      if (isTributaryError(err)) throw err
      throw new SourceLoadError(ctx.sourceName, `changes: ${safeMessage(err)}`, { cause: err })
    }
    const c = changes
    // The gateway's own writes are looked for at once (SQLite, MySQL/MariaDB: the changelog is polled).
    db.onQuery((sql) => {
      if (/^\s*(insert|update|delete|replace)\b/i.test(sql)) c.poke()
    })
  }
  let closed = false
  return {
    kind: 'local',
    schema,
    installRowFilters(rules) {
      const unknown = installRowFilters(schema, rules)
      const installed = [...rules].find(([name]) => !unknown.includes(name))
      if (rawSql && installed) {
        throw new ConfigInvalidError(`${installed[1].path}: the source ${ctx.sourceName} has rawSql: true, whose queryRaw reads every row; a row filter cannot hold there`)
      }
      return unknown
    },
    async health(): Promise<SourceHealth> {
      const start = performance.now()
      // A SQLite file removed or replaced under the gateway still answers on the connections open.
      const fileProblem = db.fileProblem()
      const stream = changes ? { changes: changes.health() } : {}
      if (fileProblem) return { status: 'down', message: fileProblem, ...stream }
      try {
        await knex.raw('select 1')
        return { status: 'up', latencyMs: Math.round((performance.now() - start) * 100) / 100, ...stream }
      } catch (err) {
        const code = (err as { code?: unknown }).code
        return { status: 'down', message: `database unreachable${typeof code === 'string' ? ` (${code})` : ''}`, ...stream }
      }
    },
    async close(): Promise<void> {
      if (closed) return
      closed = true
      unregisterPool()
      await changes?.close()
      workers?.close()
      await knex.destroy()
    },
  }
}
