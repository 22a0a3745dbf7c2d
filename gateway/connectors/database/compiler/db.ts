/**
 * Statement execution below knex: connections come from knex's pool, statements go straight to the
 * driver (better-sqlite3 with a prepared-statement cache, pg with named prepared statements, mysql2),
 * so that the hot path does no query building. Every statement is reported to `onQuery` (the
 * debug log, statement counters) before it is sent.
 *
 * Time limits and cancellation (README "Database statements and raw SQL"):
 * - PostgreSQL and MySQL/MariaDB enforce the source's statement timeout themselves (a session
 *   setting made by connection.ts); their timeout errors become `TRB_ERR_DB_TIMEOUT`. When the
 *   client of a running statement disconnects, the statement is cancelled (`pg_cancel_backend` /
 *   `KILL QUERY`, sent on a separate connection) and rejects with `TRB_ERR_DB_CANCELLED`.
 * - SQLite files: statements run in worker processes (sqlite-workers.ts), killed on timeout or
 *   disconnect, transactions included (one held worker from BEGIN IMMEDIATE to COMMIT). Only
 *   statements the caller marks `cheap` (a primary-key lookup of one row without relations) run on
 *   the gateway's own connection, skipping the pool's acquire/release when a connection is idle
 *   (see `Db.idleSqliteConnection`). `sqlite::memory:` databases cannot be shared with another
 *   process: everything runs in the gateway process, without a time limit.
 * - No statement is ever retried here.
 *
 * A database that cannot be reached (db-errors.ts `unavailableReason`: connection refused or lost,
 * pool timeout, server shutting down, a SQLite file that cannot be opened) fails the connection or
 * statement with `TRB_ERR_DB_UNAVAILABLE` (503). A SQLite file removed or replaced under the running
 * gateway does not fail the connections already open (they keep the old file), so the file's
 * identity is checked at most once per {@link SQLITE_FILE_CHECK_MS} before a statement.
 */
import { statSync } from 'node:fs'
import type { Knex } from 'knex'
import { DbCancelledError, DbRawRefusedError, DbTimeoutError, DbUnavailableError, isTributaryError } from '../../../errors.js'
import { unavailableReason } from '../db-errors.js'
import type { Dialect } from '../model.js'
import { fullTextSyntaxError } from '../db-errors.js'
import { isHeldWorker, type CancelWatch, type SqliteExecResult, type SqliteWorkers } from '../sqlite-workers.js'
import { explainRefusal } from '../sqlite-raw-guard.js'
import { startStatement } from '../../../observability/probes.js'
import { discardConnection, latin1Ready, pgJsonAsLatin1, pgJsonAsText } from '../connection.js'
import { textLength } from '../../../result-budget.js'

export type { CancelWatch } from '../sqlite-workers.js'

/** Options of {@link Db}. */
export interface DbOptions {
  /** The statement timeout the engine enforces, in milliseconds (reported in `TRB_ERR_DB_TIMEOUT`). Default 10000. */
  timeoutMs?: number
  /** SQLite files: the worker processes that run every statement not marked cheap. */
  sqliteWorkers?: SqliteWorkers
  /** The data source's name: the `source` label of `tributary_sql_duration_seconds` and of SQL spans. Default `db`. */
  sourceName?: string
  /** SQLite files: the file's path, whose removal or replacement makes the source unavailable. */
  sqliteFile?: string
}

/** How often (at most, in milliseconds) statements check that the SQLite file is still the one opened. */
export const SQLITE_FILE_CHECK_MS = 1000

/** Per-statement options. */
export interface RunOptions {
  /** The client's disconnect: the statement is cancelled when it fires (see {@link cancelWatchOf}). */
  cancel?: CancelWatch | undefined
  /** SQLite: the statement is a primary-key lookup of one row without relations; it may run in the gateway process. */
  cheap?: boolean
  /** SQLite worker processes: the most JSON text the result may hold (see gateway/result-budget.ts). */
  maxResultChars?: number | undefined
  /** SQLite worker processes: light work (no relation filter of the request), which may use the process kept for it (sqlite-workers.ts). */
  light?: boolean
  /** SQLite worker processes: the request charged with the statement's worker time (`requestBudgetMs`, sqlite-workers.ts); its resolver context. */
  owner?: object | undefined
  /**
   * PostgreSQL {@link Db.values}: the rows' text as latin1-coded UTF-8 (each character one byte of
   * the server's UTF-8 text; `Buffer.from(text, 'latin1')` is that text's UTF-8), which skips the
   * UTF-8 decoding of the rows (see connection.ts `pgJsonAsLatin1`). Other engines ignore it.
   */
  latin1?: boolean
}

interface ResponseLike {
  writableFinished: boolean
  destroyed?: boolean
  socket?: { destroyed: boolean } | null
  once(event: 'close', fn: () => void): unknown
  off(event: 'close', fn: () => void): unknown
}

/**
 * The disconnect of a resolver context's client: `context.signal` (an AbortSignal: subscriptions,
 * server-sent events) or, for an HTTP request, the `close` of `context.reply.raw` before the
 * response finished. Undefined when the context has neither.
 */
export function cancelWatchOf(context: unknown): CancelWatch | undefined {
  if (typeof context !== 'object' || context === null) return undefined
  const c = context as { signal?: unknown; reply?: { raw?: ResponseLike } }
  const signal = c.signal
  if (signal instanceof AbortSignal) {
    return (fn) => {
      if (signal.aborted) {
        fn()
        return () => undefined
      }
      signal.addEventListener('abort', fn, { once: true })
      return () => signal.removeEventListener('abort', fn)
    }
  }
  const res = c.reply?.raw
  if (res && typeof res.once === 'function') {
    return (fn) => {
      // Gone already (e.g. while the statement waited for a pooled connection): no `close` will come.
      if (!res.writableFinished && (res.destroyed === true || !res.socket || res.socket.destroyed)) {
        fn()
        return () => undefined
      }
      return onDisconnect(res, fn)
    }
  }
  return undefined
}

/**
 * The cancel callbacks of the statements in flight for one response. One `close` listener per
 * response serves them all: a document with 30 aliases runs 30 statements at once, and 30 listeners
 * would trip Node's MaxListeners warning.
 */
const disconnectWatchers = new WeakMap<ResponseLike, Set<() => void>>()

function onDisconnect(res: ResponseLike, fn: () => void): () => void {
  let set = disconnectWatchers.get(res)
  if (!set) {
    const fns = new Set<() => void>()
    set = fns
    disconnectWatchers.set(res, fns)
    res.once('close', () => {
      disconnectWatchers.delete(res)
      if (!res.writableFinished) for (const f of fns) f()
    })
  }
  set.add(fn)
  const fns = set
  return () => void fns.delete(fn)
}

/**
 * Called with every statement sent, before it is sent. `worker` is true when the statement goes to a
 * SQLite worker process, false when it runs on a connection of the gateway process (every statement
 * of PostgreSQL and MySQL/MariaDB, in-memory SQLite, and SQLite's cheap reads).
 */
export type QueryListener = (sql: string, bindings: readonly unknown[], worker: boolean) => void

/** The result of a statement run for its rows or its effect. */
export interface ExecResult {
  rows: Record<string, unknown>[]
  affected: number
  /** MySQL's LAST_INSERT_ID() for the statement. */
  insertId?: number
}

interface SqliteStatement {
  reader: boolean
  pluck(on?: boolean): SqliteStatement
  all(...params: unknown[]): unknown[]
  run(...params: unknown[]): { changes: number }
}
interface SqliteConnection {
  prepare(sql: string): SqliteStatement
}
interface PgConnection {
  processID?: number
  query(config: { text: string; values?: unknown[]; name?: string; rowMode?: 'array'; types?: typeof pgJsonAsText }): Promise<{ rows: unknown[]; rowCount: number | null }>
}
interface MysqlConnection {
  threadId?: number
  query(options: { sql: string; rowsAsArray?: boolean }, values: unknown[], cb: (err: Error | null, result: unknown) => void): void
}

const MAX_CACHED_STATEMENTS = 1000

/**
 * SQLite files (with worker processes): a read allowed in the gateway process (a primary-key lookup
 * or a bounded scan, see `cheap`) whose JSON rows came to more than this many UTF-16 units runs in a
 * worker process from then on (by SQL text): its rows were wider than a cheap read's (say 100 rows
 * with large TEXT or BLOB values), so the event loop pays for it once. Measured in characters, not
 * milliseconds, so that a GC pause or a busy machine never moves a small read out; 512 Ki
 * characters take SQLite and `JSON.parse` about 1–2 ms.
 */
export const IN_PROCESS_MAX_CHARS = 512 * 1024

/** How often {@link Db.boundedScan} reads `PRAGMA schema_version` (itself a statement: not on every call), in milliseconds. */
const SCHEMA_RECHECK_MS = 1000

/** The one line of SQLite's `EXPLAIN QUERY PLAN` of a read that stops after LIMIT rows (see {@link Db.boundedScan}). */
const BOUNDED_SCAN = /^SCAN t0(?: USING (?:COVERING )?INDEX [^\s()]+)?$/

/** The session's SQL mode plus `STRICT_ALL_TABLES` (MySQL/MariaDB), set on every pooled connection. */
const MYSQL_STRICT_MODE = "CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES')"

/** The parts of knex's tarn pool that {@link Db} reads (`free` is protected in tarn's typings). */
interface TarnPool {
  numUsed(): number
  numPendingCreates(): number
  free?: { resource: unknown }[]
}

/** Runs statements for one data source. `Tx` is a connection held for a transaction. */
export class Db {
  private readonly listeners = new Set<QueryListener>()
  /** Per SQLite connection: prepared statements by SQL text, one map for plucked ones (`values`) and one for `exec`. */
  private readonly sqliteCache = new WeakMap<object, { pluck: Map<string, SqliteStatement>; rows: Map<string, SqliteStatement> }>()
  private readonly pgNames = new Map<string, string>()
  /** Connections whose session is set up (statement timeout, MySQL's group_concat_max_len). */
  private readonly sessionReady = new WeakSet<object>()
  /** SQLite: {@link boundedScan}'s verdicts by SQL text, valid for {@link scanSchemaVersion}. */
  private readonly scanVerdicts = new Map<string, boolean>()
  private scanSchemaVersion: unknown
  /** When {@link scanSchemaVersion} was last read (`Date.now()`). */
  private scanSchemaCheckedAt = 0
  /** SQLite files: SQL texts of cheap reads whose rows passed {@link IN_PROCESS_MAX_CHARS} in process; they run in a worker now. */
  private readonly wideInProcess = new Set<string>()
  /** SQLite: the pooled connection last used for a read without the pool (its statement cache is warm). */
  private sqliteIdle: SqliteConnection | undefined

  /** The statement timeout, in milliseconds. */
  readonly timeoutMs: number
  private readonly workers: SqliteWorkers | undefined
  /** The source's name, for metrics and spans. */
  readonly sourceName: string

  constructor(
    readonly knex: Knex,
    readonly dialect: Dialect,
    options: DbOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.workers = options.sqliteWorkers
    this.sourceName = options.sourceName ?? 'db'
    this.sqliteFile = options.sqliteFile ? { path: options.sqliteFile, id: undefined, checkedAt: 0 } : undefined
  }

  /** The SQLite file: the identity (`dev:ino`) first seen, and when it was last checked. */
  private readonly sqliteFile: { path: string; id: string | undefined; checkedAt: number } | undefined

  /** A driver or pool error as `TRB_ERR_DB_UNAVAILABLE` when the database cannot be reached; any other error unchanged. */
  private readonly unavailable = (err: unknown): never => {
    const why = unavailableReason(err, this.dialect)
    throw why ? new DbUnavailableError(this.sourceName, why, { cause: err }) : err
  }

  /**
   * SQLite files: why the file is not the one the connections opened (removed, or replaced by
   * another file), else undefined; PostgreSQL and MySQL: always undefined. Stats the file.
   */
  fileProblem(): string | undefined {
    const f = this.sqliteFile
    if (!f) return undefined
    const st = statSync(f.path, { throwIfNoEntry: false })
    const id = st ? `${st.dev}:${st.ino}` : undefined
    f.id ??= id
    if (id === undefined || id !== f.id) return 'the database file was removed or replaced'
    return undefined
  }

  /** {@link fileProblem} at most once per {@link SQLITE_FILE_CHECK_MS} (every time once it failed). @throws DbUnavailableError */
  private checkFile(): void {
    const f = this.sqliteFile
    if (!f) return
    const now = Date.now()
    if (now - f.checkedAt < SQLITE_FILE_CHECK_MS) return
    const problem = this.fileProblem()
    if (problem) throw new DbUnavailableError(this.sourceName, problem)
    f.checkedAt = now
  }

  /** Runs one statement timed (metrics, a span) when observability is on (observability/probes.ts). */
  private async timed<T>(sql: string, run: () => Promise<T>): Promise<T> {
    this.checkFile()
    const end = startStatement(this.sourceName, this.dialect, sql)
    if (!end) return run().catch((err: unknown) => this.failed(err, sql))
    try {
      const result = await run()
      end()
      return result
    } catch (err) {
      end(err)
      return this.failed(err, sql)
    }
  }

  /** {@link timed} for a synchronous (better-sqlite3) statement. */
  private timedSync<T>(sql: string, run: () => T): T {
    this.checkFile()
    const end = startStatement(this.sourceName, this.dialect, sql)
    try {
      const result = run()
      end?.()
      return result
    } catch (err) {
      end?.(err)
      return this.failed(err, sql)
    }
  }

  /** A statement's error: a full-text query the engine cannot parse as `TRB_ERR_DB_INPUT` (db-errors.ts), else {@link unavailable}. */
  private failed(err: unknown, sql: string): never {
    const input = fullTextSyntaxError(err, this.dialect, sql)
    if (input) throw input
    return this.unavailable(err)
  }

  /** Adds a listener for every statement; returns a function that removes it. */
  onQuery(listener: QueryListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private notify(sql: string, bindings: readonly unknown[], worker: boolean): void {
    for (const l of this.listeners) l(sql, bindings, worker)
  }

  /**
   * Acquires a pooled connection. A connection's first acquire here sets its session up: the
   * statement timeout (PostgreSQL `statement_timeout` in ms; MariaDB `max_statement_time` in
   * seconds; MySQL `max_execution_time` in ms, which MySQL applies to SELECT only) and, on
   * MySQL/MariaDB, `group_concat_max_len` and strict SQL mode (`STRICT_ALL_TABLES` added to the
   * session's `sql_mode`: too long or out-of-range values are errors, never truncated). Statements knex sends before that (migrations,
   * introspection at startup) have no time limit.
   */
  async acquire(): Promise<unknown> {
    const conn = (await this.knex.client.acquireConnection().catch(this.unavailable)) as object
    if (this.dialect !== 'sqlite' && !this.sessionReady.has(conn)) {
      this.sessionReady.add(conn)
      try {
        // Sent to the driver directly: session setup is not one of the statements `onQuery` reports.
        if (this.dialect === 'postgres') {
          await (conn as PgConnection).query({ text: `SET statement_timeout = ${Math.trunc(this.timeoutMs)}` })
        } else {
          const rows = (await mysqlQuery(conn as MysqlConnection, 'SELECT VERSION()', [], true)) as unknown[][]
          const timeout = /mariadb/i.test(String(rows[0]?.[0])) ? `max_statement_time = ${this.timeoutMs / 1000}` : `max_execution_time = ${Math.trunc(this.timeoutMs)}`
          // JSON_ARRAYAGG shares GROUP_CONCAT's length limit on MariaDB (1 MiB by default); the server
          // clips 4294967295 to its maximum, which strict mode would refuse: it is set first. Strict
          // SQL mode: a value the column cannot hold is an error, never truncated or clipped.
          await mysqlQuery(conn as MysqlConnection, `SET SESSION group_concat_max_len = 4294967295, SESSION ${timeout}, SESSION sql_mode = ${MYSQL_STRICT_MODE}`, [], false)
        }
      } catch (err) {
        this.sessionReady.delete(conn)
        if (unavailableReason(err, this.dialect)) discardConnection(conn)
        await this.release(conn)
        return this.unavailable(err)
      }
    }
    return conn
  }

  /** Returns a connection to the pool. */
  async release(conn: unknown): Promise<void> {
    await this.knex.client.releaseConnection(conn)
  }

  /** Runs `fn` on a pooled connection. */
  async withConnection<T>(fn: (conn: unknown) => Promise<T>): Promise<T> {
    const conn = await this.acquire()
    try {
      return await fn(conn)
    } finally {
      await this.release(conn)
    }
  }

  /**
   * Runs `fn` in one transaction on one connection; commits when it resolves, rolls back when it
   * throws. On a SQLite file the connection is a worker process held for the whole transaction.
   * @param cancel the client's disconnect: cancels the running statement (the transaction rolls back)
   */
  async transaction<T>(fn: (conn: unknown) => Promise<T>, cancel?: CancelWatch): Promise<T> {
    const body = async (conn: unknown): Promise<T> => {
      let cancelled = false
      let cancelling: Promise<void> | undefined
      const off = cancel?.(() => {
        cancelled = true
        if (isHeldWorker(conn)) conn.worker.kill(new DbCancelledError())
        else cancelling = this.cancelOnServer(conn).catch(() => undefined)
      })
      try {
        if (cancelled) throw new DbCancelledError()
        await this.exec(conn, this.dialect === 'sqlite' ? 'BEGIN IMMEDIATE' : this.dialect === 'mysql' ? 'START TRANSACTION' : 'BEGIN', [])
        let result: T
        try {
          result = await fn(conn)
          // Cancelled between two statements (nothing was running to cancel): roll back, do not commit.
          if (cancelled) throw new DbCancelledError()
        } catch (err) {
          try {
            await this.exec(conn, 'ROLLBACK', [])
          } catch {
            // the engine may have rolled back already (or the worker process is gone, and the transaction with it)
          }
          throw err
        }
        await this.exec(conn, 'COMMIT', [])
        return result
      } catch (err) {
        throw cancelled && !(err instanceof DbCancelledError) ? new DbCancelledError({ cause: err }) : err
      } finally {
        off?.()
        // Released only once the cancel is done (see guard).
        if (cancelling) await cancelling
      }
    }
    if (this.workers) {
      const held = await this.workers.hold(cancel)
      try {
        return await body(held)
      } finally {
        this.workers.release(held)
      }
    }
    return this.withConnection(body)
  }

  /**
   * Runs any statement outside a transaction (raw SQL): on a SQLite file in a worker process, else
   * on a pooled connection.
   */
  async execute(sql: string, bindings: readonly unknown[], cancel?: CancelWatch, raw = false): Promise<ExecResult> {
    if (this.workers) {
      this.notify(sql, bindings, true)
      return (await this.timed(sql, () => this.workers!.run({ mode: 'exec', sql, bindings, raw }, cancel))) as SqliteExecResult
    }
    return this.withConnection((conn) => this.exec(conn, sql, bindings, cancel, raw))
  }

  private sqliteStatement(conn: SqliteConnection, sql: string, pluck: boolean): SqliteStatement {
    let caches = this.sqliteCache.get(conn)
    if (!caches) {
      caches = { pluck: new Map(), rows: new Map() }
      this.sqliteCache.set(conn, caches)
    }
    // Keyed by the SQL text itself (not a derived string): plans reuse one string, whose hash V8 caches.
    const cache = pluck ? caches.pluck : caches.rows
    let stmt = cache.get(sql)
    if (!stmt) {
      if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear()
      stmt = conn.prepare(sql)
      if (pluck) stmt.pluck(true)
      cache.set(sql, stmt)
    }
    return stmt
  }

  /**
   * SQLite files (with worker processes) only: true when SQLite's query plan of `sql` (one of the
   * compiler's LIMIT-only reads, see `boundedReads` in ../resolvers.ts) shows that it reads at most
   * LIMIT rows of `table`, so that it may run in the gateway process. That is: `table` is an
   * ordinary table (not a view, whose query could be anything), and `EXPLAIN QUERY PLAN` has one
   * line, `SCAN t0` or `SCAN t0 USING [COVERING] INDEX <name>` — a scan in the order asked, which the
   * LIMIT stops — and nothing else: no `USE TEMP B-TREE` (a sort of every row before the first is
   * returned), no subquery, no virtual table, no other table. The verdict is cached by SQL text
   * until the schema changes (`PRAGMA schema_version`, read at most once a second). False when no connection is idle (the
   * statement then goes to a worker, as any other). Never reported to {@link onQuery} listeners.
   */
  boundedScan(sql: string, bindings: readonly unknown[], table: string): boolean {
    if (this.dialect !== 'sqlite' || !this.workers) return false
    const idle = this.idleSqliteConnection()
    if (!idle) return false
    const now = Date.now()
    if (now - this.scanSchemaCheckedAt >= SCHEMA_RECHECK_MS) {
      // A schema change (an index dropped, a table replaced by a view) may change the plans.
      this.scanSchemaCheckedAt = now
      const version = this.sqliteStatement(idle, 'PRAGMA schema_version', true).all()[0]
      if (version !== this.scanSchemaVersion) {
        this.scanVerdicts.clear()
        this.scanSchemaVersion = version
      }
    }
    let verdict = this.scanVerdicts.get(sql)
    if (verdict === undefined) {
      verdict = false
      try {
        const type = this.sqliteStatement(idle, 'SELECT type FROM sqlite_schema WHERE name = ? COLLATE NOCASE', true).all(table)
        if (type.length === 1 && type[0] === 'table') {
          const plan = idle.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...bindings) as { detail?: unknown }[]
          verdict = plan.length === 1 && typeof plan[0]!.detail === 'string' && BOUNDED_SCAN.test(plan[0]!.detail)
        }
      } catch {
        // Not explainable here: a worker runs it.
      }
      if (this.scanVerdicts.size >= MAX_CACHED_STATEMENTS) this.scanVerdicts.clear()
      this.scanVerdicts.set(sql, verdict)
    }
    return verdict
  }

  /**
   * SQLite only: runs a one-column read synchronously on an idle pooled connection (see
   * {@link idleSqliteConnection}) and returns the column's values, or undefined when no connection is
   * idle (or the engine is not SQLite): then use {@link values}.
   * @throws the driver's error
   */
  valuesNow(sql: string, bindings: unknown[]): unknown[] | undefined {
    if (this.dialect !== 'sqlite' || (this.workers && this.wideInProcess.has(sql))) return undefined
    // Only cheap statements may run here; the caller says which (see RunOptions.cheap).
    const idle = this.idleSqliteConnection()
    if (!idle) return undefined
    this.notify(sql, bindings, false)
    const rows = this.timedSync(sql, () => this.sqliteStatement(idle, sql, true).all(...bindings))
    if (this.workers && textLength(rows) > IN_PROCESS_MAX_CHARS) {
      if (this.wideInProcess.size >= MAX_CACHED_STATEMENTS) this.wideInProcess.clear()
      this.wideInProcess.add(sql)
    }
    return rows
  }

  /**
   * SQLite: a pooled connection nobody holds, to run one synchronous statement on without the
   * pool's acquire/release (about 3 µs each), or undefined when every connection is in use.
   *
   * Why this is as safe as acquire → run → release: better-sqlite3 calls are synchronous, so a
   * statement run here starts and ends before any other JS runs; it only runs while the pool
   * reports no connection in use (`numUsed() === 0`: no transaction open, since `transaction()`
   * holds its connection from BEGIN to COMMIT/ROLLBACK, and no acquire granted or being granted,
   * since tarn moves a connection to `used` as soon as it assigns it to a waiting acquire) and
   * none being created. So a read never runs on a connection that is inside another request's
   * transaction; when one is, the read waits for the pool as before. knex's SQLite pool has one
   * connection by default (createKnex: `{ min: 1, max: 1 }`), so every statement of the source
   * goes through that one connection, in the order the event loop runs them, exactly as before;
   * with a larger pool, an idle connection reads the committed state, as an acquired one would.
   */
  private idleSqliteConnection(): SqliteConnection | undefined {
    const pool = (this.knex.client as { pool?: TarnPool }).pool
    if (!pool || pool.numUsed() !== 0 || pool.numPendingCreates() !== 0) return undefined
    const free = pool.free
    if (!free || free.length === 0) return undefined
    const last = this.sqliteIdle
    if (last !== undefined) for (let i = 0; i < free.length; i++) if (free[i]!.resource === last) return last
    this.sqliteIdle = free[0]!.resource as SqliteConnection
    return this.sqliteIdle
  }

  /** True when {@link valuesNow} may run a statement with these options in the gateway process. */
  inProcess(options: RunOptions | undefined): boolean {
    return this.dialect === 'sqlite' && (this.workers === undefined || options?.cheap === true)
  }

  /**
   * Runs a statement whose rows have one column and returns that column's values
   * (the compiler's JSON rows). Uses `conn` when given, else a pooled connection (on SQLite, a
   * worker process, or for a cheap statement an idle connection directly: see {@link idleSqliteConnection}).
   * @throws `TRB_ERR_DB_TIMEOUT`, `TRB_ERR_DB_CANCELLED`, or the driver's error
   */
  async values(sql: string, bindings: unknown[], conn?: unknown, options?: RunOptions): Promise<unknown[]> {
    if (conn === undefined) {
      if (this.workers && (options?.cheap !== true || this.wideInProcess.has(sql))) {
        this.notify(sql, bindings, true)
        return (await this.timed(sql, () => this.workers!.run({ mode: 'values', sql, bindings, ...(options?.maxResultChars !== undefined ? { maxChars: options.maxResultChars } : {}) }, options?.cancel, options?.light === true, options?.owner))) as unknown[]
      }
      if (this.dialect === 'sqlite') {
        const now = this.valuesNow(sql, bindings)
        if (now) return now
        // better-sqlite3 is synchronous: hold the connection only for the call.
        const c = await this.acquire()
        try {
          this.notify(sql, bindings, false)
          return this.timedSync(sql, () => this.sqliteStatement(c as SqliteConnection, sql, true).all(...bindings))
        } finally {
          await this.release(c)
        }
      }
      return this.withConnection((c) => this.values(sql, bindings, c, options))
    }
    this.notify(sql, bindings, isHeldWorker(conn))
    switch (this.dialect) {
      case 'sqlite':
        if (isHeldWorker(conn)) return (await this.timed(sql, () => this.workers!.runOn(conn, { mode: 'values', sql, bindings }, options?.cancel))) as unknown[]
        return this.timedSync(sql, () => this.sqliteStatement(conn as SqliteConnection, sql, true).all(...bindings))
      case 'postgres': {
        const latin1 = options?.latin1 === true
        const rows = (await this.pgArrays(conn, sql, bindings, options?.cancel, latin1)).map((r) => r[0])
        // A connection without the latin1 parser (connection.ts readsLatin1Rows) returned ordinary strings.
        if (latin1 && !latin1Ready(conn)) for (let i = 0; i < rows.length; i++) if (typeof rows[i] === 'string') rows[i] = Buffer.from(rows[i] as string, 'utf8').toString('latin1')
        return rows
      }
      default: {
        const res = await this.timed(sql, () => this.guard(conn, options?.cancel, () => mysqlQuery(conn as MysqlConnection, sql, bindings, true)))
        return (res as unknown[][]).map((r) => r[0])
      }
    }
  }

  /**
   * PostgreSQL only: runs a read on a pooled connection (a named prepared statement, as {@link values})
   * and returns its rows as arrays of column values (JSON columns as text). Used by the batched
   * lookups (../lookup-batch.ts), whose rows are `[key position, JSON text]`.
   * @throws `TRB_ERR_DB_TIMEOUT`, `TRB_ERR_DB_CANCELLED`, `TRB_ERR_DB_UNAVAILABLE`, or the driver's error
   */
  async arrays(sql: string, bindings: unknown[], cancel?: CancelWatch): Promise<unknown[][]> {
    if (this.dialect !== 'postgres') throw new Error(`Db.arrays: PostgreSQL only, not ${this.dialect}`)
    return this.withConnection((conn) => {
      this.notify(sql, bindings, false)
      return this.pgArrays(conn, sql, bindings, cancel)
    })
  }

  /** Runs a PostgreSQL read on `conn` as a named prepared statement, rows as arrays (see {@link guard}, {@link timed}). */
  private async pgArrays(conn: unknown, sql: string, bindings: unknown[], cancel: CancelWatch | undefined, latin1 = false): Promise<unknown[][]> {
    const types = latin1 ? pgJsonAsLatin1 : pgJsonAsText
    const res = await this.timed(sql, () => this.guard(conn, cancel, () => (conn as PgConnection).query({ text: sql, values: bindings, name: this.pgName(sql), rowMode: 'array', types })))
    return res.rows as unknown[][]
  }

  /**
   * Runs a PostgreSQL/MySQL statement on `conn`: its timeout error becomes `TRB_ERR_DB_TIMEOUT`;
   * when `cancel` fires first, the statement is cancelled on the server and the promise rejects
   * with `TRB_ERR_DB_CANCELLED`.
   */
  private async guard<T>(conn: unknown, cancel: CancelWatch | undefined, run: () => Promise<T>): Promise<T> {
    let cancelled = false
    let running = false
    let cancelling: Promise<void> | undefined
    const off = cancel?.(() => {
      if (cancelled) return
      cancelled = true
      // Only a statement sent is cancelled on the server (a cancel of an idle connection could hit its next statement).
      if (running) cancelling = this.cancelOnServer(conn).catch(() => undefined)
    })
    try {
      if (cancelled) throw new DbCancelledError()
      running = true
      return await run()
    } catch (err) {
      // A connection-level failure: the connection is not reused (see discardConnection).
      if (unavailableReason(err, this.dialect)) discardConnection(conn)
      if (cancelled && !isTributaryError(err)) throw new DbCancelledError({ cause: err })
      throw this.timeoutError(err)
    } finally {
      running = false
      off?.()
      // The connection goes back to the pool only once the cancel is done: a late cancel must not
      // hit the next statement sent on it.
      if (cancelling) await cancelling
    }
  }

  /** The engine's statement-timeout error as `TRB_ERR_DB_TIMEOUT`; any other error unchanged. */
  private timeoutError(err: unknown): unknown {
    const e = err as { code?: unknown; errno?: unknown; message?: unknown }
    const timedOut =
      this.dialect === 'postgres'
        ? e.code === '57014' && /statement timeout/i.test(String(e.message))
        : // MariaDB ER_STATEMENT_TIMEOUT, MySQL ER_QUERY_TIMEOUT
          e.errno === 1969 || e.errno === 3024
    return timedOut ? new DbTimeoutError(this.timeoutMs, { cause: err }) : err
  }

  /**
   * Cancels the statement running on `conn`, from a new connection of its own (the pool may be
   * full): PostgreSQL `SELECT pg_cancel_backend(pid)`, MySQL/MariaDB `KILL QUERY id`.
   */
  private async cancelOnServer(conn: unknown): Promise<void> {
    const client = this.knex.client as { driver: unknown; connectionSettings: Record<string, unknown> }
    if (this.dialect === 'postgres') {
      const pid = (conn as PgConnection).processID
      if (typeof pid !== 'number') return
      const Client = (client.driver as { Client: new (config: unknown) => { connect(): Promise<void>; query(text: string, values: unknown[]): Promise<unknown>; end(): Promise<void> } }).Client
      const c = new Client(client.connectionSettings)
      await c.connect()
      try {
        await c.query('SELECT pg_cancel_backend($1)', [pid])
      } finally {
        await c.end().catch(() => undefined)
      }
      return
    }
    const id = (conn as MysqlConnection).threadId
    if (typeof id !== 'number') return
    const driver = client.driver as { createConnection(config: unknown): MysqlConnection & { end(cb?: () => void): void; on(e: string, fn: () => void): void } }
    const c = driver.createConnection(client.connectionSettings)
    c.on('error', () => undefined)
    try {
      await mysqlQuery(c, `KILL QUERY ${Math.trunc(id)}`, [], false)
    } finally {
      c.end()
    }
  }

  private pgName(sql: string): string {
    let name = this.pgNames.get(sql)
    if (!name) {
      if (this.pgNames.size >= MAX_CACHED_STATEMENTS) return ''
      name = `trb_${this.pgNames.size + 1}`
      this.pgNames.set(sql, name)
    }
    return name
  }

  /**
   * Runs any statement on `conn`: rows as objects for queries, the affected row count for the rest.
   * @param raw a client's raw SQL: on SQLite, refused when its bytecode reaches files or code (../sqlite-raw-guard.ts)
   * @throws `TRB_ERR_DB_TIMEOUT`, `TRB_ERR_DB_CANCELLED`, `TRB_ERR_DB_RAW_REFUSED`, or the driver's error
   */
  async exec(conn: unknown, sql: string, bindings: readonly unknown[], cancel?: CancelWatch, raw = false): Promise<ExecResult> {
    this.notify(sql, bindings, isHeldWorker(conn))
    switch (this.dialect) {
      case 'sqlite': {
        if (isHeldWorker(conn)) return (await this.timed(sql, () => this.workers!.runOn(conn, { mode: 'exec', sql, bindings, raw }, cancel))) as SqliteExecResult
        const refused = raw ? explainRefusal(conn as SqliteConnection, sql) : null
        if (refused) throw new DbRawRefusedError(refused)
        const stmt = this.sqliteStatement(conn as SqliteConnection, sql, false)
        return this.timedSync(sql, () => {
          if (stmt.reader) {
            const rows = stmt.all(...bindings) as Record<string, unknown>[]
            return { rows, affected: rows.length }
          }
          const info = stmt.run(...bindings)
          return { rows: [], affected: info.changes }
        })
      }
      case 'postgres': {
        const res = await this.timed(sql, () => this.guard(conn, cancel, () => (conn as PgConnection).query({ text: sql, values: [...bindings] })))
        const rows = (res.rows ?? []) as Record<string, unknown>[]
        return { rows, affected: res.rowCount ?? rows.length }
      }
      default: {
        const res = await this.timed(sql, () => this.guard(conn, cancel, () => mysqlQuery(conn as MysqlConnection, sql, [...bindings], false)))
        if (Array.isArray(res)) {
          // A multi-statement result or rows.
          const rows = res as Record<string, unknown>[]
          return { rows, affected: rows.length }
        }
        const h = res as { affectedRows?: number; insertId?: number }
        return { rows: [], affected: h.affectedRows ?? 0, ...(h.insertId ? { insertId: h.insertId } : {}) }
      }
    }
  }
}

function mysqlQuery(conn: MysqlConnection, sql: string, values: unknown[], rowsAsArray: boolean): Promise<unknown> {
  return new Promise((resolve, reject) => {
    conn.query({ sql, rowsAsArray }, values, (err, result) => (err ? reject(err) : resolve(result)))
  })
}
