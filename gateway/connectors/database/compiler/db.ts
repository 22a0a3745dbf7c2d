/**
 * Statement execution below knex: connections come from knex's pool, statements go straight to the
 * driver (better-sqlite3 with a prepared-statement cache, pg with named prepared statements, mysql2),
 * so that the hot path does no query building. SQLite reads outside a transaction skip the pool's
 * acquire/release when a connection is idle (see `Db.idleSqliteConnection`); writes and
 * transactions always go through the pool. Every statement is reported to `onQuery` (the
 * debug log, statement counters) before it is sent.
 */
import type { Knex } from 'knex'
import type { Dialect } from '../model.js'

/** Called with every statement sent, before it is sent. */
export type QueryListener = (sql: string, bindings: readonly unknown[]) => void

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
  query(config: { text: string; values?: unknown[]; name?: string; rowMode?: 'array' }): Promise<{ rows: unknown[]; rowCount: number | null }>
}
interface MysqlConnection {
  query(options: { sql: string; rowsAsArray?: boolean }, values: unknown[], cb: (err: Error | null, result: unknown) => void): void
}

const MAX_CACHED_STATEMENTS = 1000

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
  private readonly mysqlReady = new WeakSet<object>()
  /** SQLite: the pooled connection last used for a read without the pool (its statement cache is warm). */
  private sqliteIdle: SqliteConnection | undefined

  constructor(
    readonly knex: Knex,
    readonly dialect: Dialect,
  ) {}

  /** Adds a listener for every statement; returns a function that removes it. */
  onQuery(listener: QueryListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private notify(sql: string, bindings: readonly unknown[]): void {
    for (const l of this.listeners) l(sql, bindings)
  }

  /** Acquires a pooled connection. */
  async acquire(): Promise<unknown> {
    const conn = (await this.knex.client.acquireConnection()) as object
    if (this.dialect === 'mysql' && !this.mysqlReady.has(conn)) {
      this.mysqlReady.add(conn)
      // JSON_ARRAYAGG shares GROUP_CONCAT's length limit on MariaDB (1 MiB by default).
      await this.exec(conn, 'SET SESSION group_concat_max_len = 4294967295', [])
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

  /** Runs `fn` in one transaction on one connection; commits when it resolves, rolls back when it throws. */
  async transaction<T>(fn: (conn: unknown) => Promise<T>): Promise<T> {
    return this.withConnection(async (conn) => {
      await this.exec(conn, this.dialect === 'sqlite' ? 'BEGIN IMMEDIATE' : this.dialect === 'mysql' ? 'START TRANSACTION' : 'BEGIN', [])
      let result: T
      try {
        result = await fn(conn)
      } catch (err) {
        try {
          await this.exec(conn, 'ROLLBACK', [])
        } catch {
          // the engine may have rolled back already
        }
        throw err
      }
      await this.exec(conn, 'COMMIT', [])
      return result
    })
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
   * SQLite only: runs a one-column read synchronously on an idle pooled connection (see
   * {@link idleSqliteConnection}) and returns the column's values, or undefined when no connection is
   * idle (or the engine is not SQLite): then use {@link values}.
   * @throws the driver's error
   */
  valuesNow(sql: string, bindings: unknown[]): unknown[] | undefined {
    if (this.dialect !== 'sqlite') return undefined
    const idle = this.idleSqliteConnection()
    if (!idle) return undefined
    this.notify(sql, bindings)
    return this.sqliteStatement(idle, sql, true).all(...bindings)
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

  /**
   * Runs a statement whose rows have one column and returns that column's values
   * (the compiler's JSON rows). Uses `conn` when given, else a pooled connection (on SQLite, an idle
   * one directly: see {@link idleSqliteConnection}).
   */
  async values(sql: string, bindings: unknown[], conn?: unknown): Promise<unknown[]> {
    if (conn === undefined) {
      if (this.dialect === 'sqlite') {
        const now = this.valuesNow(sql, bindings)
        if (now) return now
        // better-sqlite3 is synchronous: hold the connection only for the call.
        const c = await this.acquire()
        try {
          this.notify(sql, bindings)
          return this.sqliteStatement(c as SqliteConnection, sql, true).all(...bindings)
        } finally {
          await this.release(c)
        }
      }
      return this.withConnection((c) => this.values(sql, bindings, c))
    }
    this.notify(sql, bindings)
    switch (this.dialect) {
      case 'sqlite':
        return this.sqliteStatement(conn as SqliteConnection, sql, true).all(...bindings)
      case 'postgres': {
        const res = await (conn as PgConnection).query({ text: sql, values: bindings, name: this.pgName(sql), rowMode: 'array' })
        return (res.rows as unknown[][]).map((r) => r[0])
      }
      default: {
        const res = await mysqlQuery(conn as MysqlConnection, sql, bindings, true)
        return (res as unknown[][]).map((r) => r[0])
      }
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

  /** Runs any statement on `conn`: rows as objects for queries, the affected row count for the rest. */
  async exec(conn: unknown, sql: string, bindings: readonly unknown[]): Promise<ExecResult> {
    this.notify(sql, bindings)
    switch (this.dialect) {
      case 'sqlite': {
        const stmt = this.sqliteStatement(conn as SqliteConnection, sql, false)
        if (stmt.reader) {
          const rows = stmt.all(...bindings) as Record<string, unknown>[]
          return { rows, affected: rows.length }
        }
        const info = stmt.run(...bindings)
        return { rows: [], affected: info.changes }
      }
      case 'postgres': {
        const res = await (conn as PgConnection).query({ text: sql, values: [...bindings] })
        const rows = (res.rows ?? []) as Record<string, unknown>[]
        return { rows, affected: res.rowCount ?? rows.length }
      }
      default: {
        const res = await mysqlQuery(conn as MysqlConnection, sql, [...bindings], false)
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
