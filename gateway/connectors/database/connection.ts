/**
 * Database URLs -> configured Knex instances.
 *
 * The URL scheme chooses the engine (docs/architecture.md §3, `TODO_DATABASE_URL`):
 *
 * | URL | Engine | Driver |
 * |---|---|---|
 * | `sqlite:<path>` (relative to `process.cwd()`), `sqlite:///abs/path`, `sqlite::memory:` | SQLite | better-sqlite3 |
 * | `postgres://user:pass@host:port/db[?schema=name&sslmode=require]`, `postgresql://…` | PostgreSQL | pg |
 * | `mysql://user:pass@host:port/db`, `mariadb://…` | MySQL / MariaDB | mysql2 |
 *
 * Every connection is set up the same way whatever the caller does next:
 * - SQLite: `PRAGMA foreign_keys = ON`, `journal_mode = WAL` (files only), `busy_timeout = 5000`;
 * - PostgreSQL: session `TimeZone` is UTC; `int8` and `numeric` come back as strings (BigInt / Decimal
 *   without loss); `timestamp without time zone` and `date` are read as UTC instants; geometric and
 *   interval values come back as their text form (they map to String);
 * - MySQL: session `time_zone` is `+00:00`; the driver reads and writes DATETIME/TIMESTAMP as UTC
 *   (`timezone: 'Z'`); BIGINT and DECIMAL come back as strings (`bigNumberStrings`, `decimalNumbers: false`).
 *
 * - MySQL: opening a connection (TCP and handshake) fails after {@link CONNECT_TIMEOUT_MS}, so a
 *   server that does not answer at all (a host gone from the network) is reported as unavailable
 *   within seconds. PostgreSQL waits for the pool's acquire timeout
 *   (`pool.acquireTimeoutMs`, default {@link DEFAULT_POOL_ACQUIRE_TIMEOUT_MS}) instead: pg's
 *   `connectionTimeoutMillis` (pg 8.23) made a request hang for good after the server ended the
 *   pool's sessions (2 runs of 5 of test/attack-db-unavailable.test.ts).
 *
 * Passwords never appear in errors or logs: messages use {@link ParsedDatabaseUrl.redacted}.
 */
import fs from 'node:fs'
import path from 'node:path'
import knexFactory, { type Knex } from 'knex'
import type pg from 'pg'
import { ConfigInvalidError } from '../../errors.js'
import { requireOptional } from '../../optional-package.js'
import { createRequire } from 'node:module'
import type { Dialect } from './model.js'

/** A database URL taken apart. Pure data: nothing is opened. */
export type ParsedDatabaseUrl =
  | {
      dialect: 'sqlite'
      /** Absolute file path, or `:memory:`. */
      filename: string
      /** The URL with any credentials replaced by `***`, safe to log. */
      redacted: string
    }
  | {
      dialect: 'postgres' | 'mysql'
      host: string
      /** TCP port; the engine's default (5432 / 3306) when the URL has none. */
      port: number
      user?: string
      password?: string
      /** Database name; may be empty when the URL has no path. */
      database: string
      /** Query parameters of the URL (`?sslmode=require`…), decoded. */
      params: Record<string, string>
      /** PostgreSQL: the schema named by `?schema=<name>` (Prisma's convention), if any. */
      schema?: string
      /** The URL with the password replaced by `***`, safe to log. */
      redacted: string
    }

/**
 * Connection pool options of a database source (`datasources[].pool`).
 * - `min`, `max`: pool bounds. Defaults: SQLite `{ min: 1, max: 1 }`, PostgreSQL/MySQL `{ min: 0, max: 10 }`.
 * - `acquireTimeoutMs`: longest wait for a pooled connection, in milliseconds (knex
 *   `acquireConnectionTimeout`, whose own default is 60000); then the statement fails with
 *   `TRB_ERR_DB_UNAVAILABLE` ("no connection within the pool's acquire timeout"). Default
 *   {@link DEFAULT_POOL_ACQUIRE_TIMEOUT_MS}.
 */
export interface PoolOptions {
  min?: number
  max?: number
  acquireTimeoutMs?: number
}

/**
 * Default of `pool.acquireTimeoutMs` (ms): a server that accepts connections and never answers is
 * reported unavailable after this long, instead of knex's 60 s.
 */
export const DEFAULT_POOL_ACQUIRE_TIMEOUT_MS = 10_000

/** Options of {@link createKnex}. */
export interface CreateKnexOptions {
  /**
   * Connection pool size. Defaults: SQLite `{ min: 1, max: 1 }` (better-sqlite3 is synchronous, one
   * connection is fastest and keeps `:memory:` databases single); PostgreSQL/MySQL `{ min: 0, max: 10 }`.
   */
  pool?: PoolOptions
  /**
   * PostgreSQL only: the Knex `searchPath` (the schema unqualified names resolve in). Default: the
   * URL's `?schema=` parameter, else the server's default (`public`). Ignored elsewhere.
   */
  schema?: string
  /** Working directory that relative `sqlite:` paths resolve against. Default `process.cwd()`. */
  cwd?: string
  /**
   * Who opens the connection, for the message of a missing driver package: "source 'app'" gives
   * "PostgreSQL source 'app' needs the pg package: npm install pg". Default "a database URL".
   */
  label?: string
  /**
   * SQLite only: `PRAGMA busy_timeout`, the time a statement waits for another connection's write
   * lock, in milliseconds; better-sqlite3 waits synchronously, blocking the process. The event-trigger
   * deliverer (gateway/events/) uses 0 and retries without blocking. Default 5000.
   */
  sqliteBusyTimeoutMs?: number
}

/** What {@link createKnex} returns: the Knex instance and the engine it talks to. */
export interface KnexConnection {
  knex: Knex
  dialect: Dialect
}

/**
 * Knex's logger: its warning on a failed connection attempt, which prints the driver's stack trace, is
 * left out (the error itself reaches the caller, and the CLI reports it in one line); other warnings
 * go to `console.warn` as Knex's own logger sends them.
 */
const knexLog = {
  warn(message: string): void {
    if (!String(message).startsWith('Acquire connection error')) console.warn(message)
  },
}

const SUPPORTED = '`sqlite:<path>`, `postgres://…`, `postgresql://…`, `mysql://…` or `mariadb://…`'

/** Replaces the password of a URL-like string with `***` (best effort, never throws). */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^@/?#]*@/i, '$1:***@')
}

/**
 * Parses a database URL without opening anything.
 *
 * @param url `sqlite:<path>` (relative paths resolve against `cwd`), `sqlite:///abs`, `sqlite::memory:`,
 *   `postgres[ql]://[user[:password]@]host[:port]/database[?params]`, `mysql|mariadb://…` alike.
 * @param cwd base directory for relative SQLite paths; default `process.cwd()`.
 * @returns the {@link ParsedDatabaseUrl}.
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`) for an empty URL, an unsupported scheme or a
 *   malformed network URL. The message shows the URL redacted.
 */
export function parseDatabaseUrl(url: string, cwd: string = process.cwd()): ParsedDatabaseUrl {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new ConfigInvalidError(`database url is empty; expected ${SUPPORTED}`)
  }
  const trimmed = url.trim()
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1]?.toLowerCase()
  if (scheme === 'sqlite' || scheme === 'sqlite3') {
    let rest = trimmed.slice(scheme.length + 1)
    const q = rest.indexOf('?')
    if (q >= 0) rest = rest.slice(0, q)
    if (rest.startsWith('//')) rest = rest.slice(2) // sqlite:///abs -> /abs ; sqlite://rel -> rel
    rest = decodeURIComponent(rest)
    if (rest === '') {
      throw new ConfigInvalidError(`database url "${trimmed}" has no file path; expected sqlite:<path> or sqlite::memory:`)
    }
    const filename = rest === ':memory:' ? ':memory:' : path.resolve(cwd, rest)
    return { dialect: 'sqlite', filename, redacted: trimmed }
  }
  let dialect: 'postgres' | 'mysql'
  if (scheme === 'postgres' || scheme === 'postgresql') dialect = 'postgres'
  else if (scheme === 'mysql' || scheme === 'mariadb') dialect = 'mysql'
  else {
    throw new ConfigInvalidError(`unsupported database url "${redactUrl(trimmed)}"; expected ${SUPPORTED}`)
  }
  let parsed: URL
  try {
    parsed = new URL(trimmed)
  } catch {
    throw new ConfigInvalidError(`malformed database url "${redactUrl(trimmed)}"`)
  }
  if (parsed.hostname === '') {
    throw new ConfigInvalidError(`database url "${redactUrl(trimmed)}" has no host`)
  }
  const params: Record<string, string> = {}
  for (const [k, v] of parsed.searchParams) params[k] = v
  const redactedUrl = new URL(parsed.href)
  if (redactedUrl.password) redactedUrl.password = '***'
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname
  return {
    dialect,
    host,
    port: parsed.port ? Number(parsed.port) : dialect === 'postgres' ? 5432 : 3306,
    ...(parsed.username ? { user: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
    params,
    ...(dialect === 'postgres' && params.schema ? { schema: params.schema } : {}),
    redacted: redactedUrl.href,
  }
}

// ----- PostgreSQL value parsing -----

const PG_OID = {
  date: 1082,
  timestamp: 1114,
  point: 600,
  lseg: 601,
  box: 603,
  polygon: 604,
  line: 628,
  circle: 718,
  interval: 1186,
  intervalArray: 1187,
  pointArray: 1017,
} as const

const PG_TS = /^(\d{4,})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d):(\d\d)(\.\d+)?)?( BC)?$/

/**
 * Reads a PostgreSQL `timestamp without time zone` / `date` text value as a UTC instant.
 * `infinity` / `-infinity` and anything unexpected are returned as the text.
 */
export function parsePgUtcTimestamp(text: string): Date | string {
  const m = PG_TS.exec(text)
  if (!m) return text
  let year = Number(m[1])
  if (m[8]) year = 1 - year
  const ms = m[7] ? Math.floor(Number(m[7]) * 1000) : 0
  const d = new Date(Date.UTC(2000, Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0), ms))
  d.setUTCFullYear(year)
  return d
}

const asText = (value: string): string => value

/** PostgreSQL type oids of `json` and `jsonb`. */
const PG_JSON_OIDS: ReadonlySet<number> = new Set([114, 3802])

/**
 * pg `types` for the compiler's JSON reads (per query, see compiler/db.ts `values`): `json`/`jsonb`
 * values stay text, as SQLite and MariaDB return them, so a direct plan sends the engine's JSON
 * text as is and the resolvers parse it once (pg's parse followed by the direct plan's
 * re-serialisation topped a CPU profile under the health bench's 1.4 MB PostgreSQL answers: 18 % of
 * busy time in the re-serialisation alone). Every other type as
 * {@link pgTypes} reads it.
 */
export const pgJsonAsText: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format === undefined || format === 'text') && PG_JSON_OIDS.has(oid) ? asText : pgTypes.getTypeParser(oid as never, format as never)) as pg.CustomTypesConfig['getTypeParser'],
}

/**
 * pg `types` of a read whose text columns should arrive as **latin1-coded UTF-8**: each character of
 * a value is one byte of PostgreSQL's UTF-8 text (a "binary string"), decoded without UTF-8 decoding
 * and sent without UTF-8 encoding (`Buffer.from(text, 'latin1')` gives the exact bytes back). The
 * types read as {@link pgJsonAsText}; the object itself is the mark: a connection set up by
 * {@link readsLatin1Rows} decodes the data rows of a query whose `types` is this object as latin1.
 * On a connection without that parser (see {@link latin1Ready}) the rows are ordinary strings.
 */
export const pgJsonAsLatin1: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => pgJsonAsText.getTypeParser(oid as never, format as never)) as pg.CustomTypesConfig['getTypeParser'],
}

/** pg clients whose socket {@link readsLatin1Rows} reads: {@link pgJsonAsLatin1} rows arrive latin1-coded there. */
const latin1Clients = new WeakSet<object>()

/** True when the pg client `conn` decodes the rows of {@link pgJsonAsLatin1} reads as latin1-coded UTF-8. */
export function latin1Ready(conn: unknown): boolean {
  return typeof conn === 'object' && conn !== null && latin1Clients.has(conn)
}

/** Asynchronous messages the server may send among a statement's data rows (the rows go on after them). */
const AMONG_ROWS: ReadonlySet<string> = new Set(['notice', 'notification', 'parameterStatus'])

/** The string fields of a message read in latin1 (a command tag, or an error, notice or notification among a statement's rows), decoded as UTF-8 again. */
function redecodeFields(msg: object): void {
  const m = msg as Record<string, unknown>
  for (const key of Object.keys(m)) {
    const v = m[key]
    if (typeof v === 'string' && key !== 'name') m[key] = Buffer.from(v, 'latin1').toString('utf8')
  }
}

/**
 * The pg major version whose `Connection.attachListeners` (pg 8.x: one `data` listener feeding
 * pg-protocol's `Parser`, each message emitted as `message` when `_emitMessage`, then under its name,
 * `errorMessage` for `error`) {@link readsLatin1Rows} reproduces. Under another major version pg's
 * own parser is left in place (rows are then ordinary strings, converted: the contract holds).
 */
export const LATIN1_PG_MAJOR = 8

type PgProtocolParser = new () => { reader?: { encoding?: unknown }; parse(buffer: Buffer, callback: (msg: { name: string }) => void): void }
let latin1ParserClass: PgProtocolParser | null | undefined

/** pg-protocol's `Parser` as pg itself resolves it, when pg's major version is {@link LATIN1_PG_MAJOR}; null otherwise (read once). */
function latin1Parser(): PgProtocolParser | null {
  if (latin1ParserClass !== undefined) return latin1ParserClass
  latin1ParserClass = null
  try {
    const local = createRequire(import.meta.url)
    const version = (local('pg/package.json') as { version?: unknown }).version
    if (typeof version !== 'string' || Number(version.split('.')[0]) !== LATIN1_PG_MAJOR) return null
    const pgRequire = createRequire(local.resolve('pg'))
    latin1ParserClass = (pgRequire('pg-protocol/dist/parser') as { Parser: PgProtocolParser }).Parser
  } catch {
    latin1ParserClass = null
  }
  return latin1ParserClass
}

/**
 * Replaces the message parser of a connected pg client (pg-protocol's `Parser`, fed from the
 * socket's one `data` listener) by an equal one whose text decoding switches to latin1 between a
 * {@link pgJsonAsLatin1} query's row description and the next message that is not a data row, and
 * back to UTF-8 after it (that message's strings, read in latin1, are decoded as UTF-8 again; a
 * notice, notification or parameter status among the rows is decoded again and the rows go on in latin1).
 * Messages are emitted exactly as pg's own `Connection.attachListeners` does. Left as pg made it
 * (and not marked in {@link latin1Ready}) when the socket does not look as expected.
 */
function readsLatin1Rows(client: unknown): void {
  try {
    const c = client as { connection?: { stream?: NodeJS.EventEmitter; _emitMessage?: boolean; emit(event: string, msg: unknown): boolean }; _activeQuery?: { types?: unknown } | null }
    const con = c.connection
    const stream = con?.stream
    if (!con || !stream || typeof stream.listeners !== 'function') return
    const own = stream.listeners('data')
    if (own.length !== 1) return
    const Parser = latin1Parser()
    if (!Parser) return
    const parser = new Parser()
    const reader = parser.reader
    if (!reader || reader.encoding !== 'utf-8') return
    let latin1 = false
    const callback = (msg: { name: string }): void => {
      if (msg.name === 'rowDescription') {
        if (c._activeQuery?.types === pgJsonAsLatin1) latin1 = true
        reader.encoding = latin1 ? 'latin1' : 'utf-8'
      } else if (latin1 && msg.name !== 'dataRow') {
        // Read in latin1: the statement's end (its command tag, an error), or a notice, notification
        // or parameter status among its rows, after which its rows go on.
        redecodeFields(msg)
        if (!AMONG_ROWS.has(msg.name)) {
          latin1 = false
          reader.encoding = 'utf-8'
        }
      }
      // As pg's Connection.attachListeners.
      const event = msg.name === 'error' ? 'errorMessage' : msg.name
      if (con._emitMessage) con.emit('message', msg)
      con.emit(event, msg)
    }
    stream.removeListener('data', own[0] as (...args: unknown[]) => void)
    stream.on('data', (buffer: Buffer) => parser.parse(buffer, callback))
    latin1Clients.add(client as object)
  } catch {
    // pg's own parser stays: its rows are ordinary strings.
  }
}

/** pg `types` for our connections only (the global pg type registry is left alone). */
const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format === undefined || format === 'text') {
      switch (oid) {
        case PG_OID.date:
        case PG_OID.timestamp:
          return parsePgUtcTimestamp
        case PG_OID.point:
        case PG_OID.lseg:
        case PG_OID.box:
        case PG_OID.polygon:
        case PG_OID.line:
        case PG_OID.circle:
        case PG_OID.interval:
        case PG_OID.intervalArray:
        case PG_OID.pointArray:
          return asText
        default:
      }
    }
    // int8 (20) and numeric (1700) already come back as strings from pg's defaults. pg is loaded by
    // then: createKnex required it before opening a PostgreSQL connection.
    return requireOptional<typeof pg>('pg', 'PostgreSQL').types.getTypeParser(oid, format ?? 'text')
  }) as pg.CustomTypesConfig['getTypeParser'],
}

type DoneCallback = (err: Error | null, connection?: unknown) => void

interface SqliteConnection {
  pragma(source: string): unknown
  memory: boolean
}

interface CallbackQueryable {
  query(sql: string, cb: (err: Error | null) => void): unknown
}

/** Host, port, credentials and database of a server URL, leaving out what the URL does not give. */
function serverConnection(parsed: Exclude<ParsedDatabaseUrl, { dialect: 'sqlite' }>): { host?: string; port?: number; user?: string; password?: string; database?: string } {
  return {
    host: parsed.host,
    port: parsed.port,
    ...(parsed.user !== undefined ? { user: parsed.user } : {}),
    ...(parsed.password !== undefined ? { password: parsed.password } : {}),
    ...(parsed.database ? { database: parsed.database } : {}),
  }
}

/** Longest wait for a new MySQL connection to be ready (mysql2 `connectTimeout`, whose default is 10000), in milliseconds. */
export const CONNECT_TIMEOUT_MS = 5000

/** Connections {@link discardConnection} marked: the pool's `validate` refuses them, so they are destroyed instead of reused. */
const discarded = new WeakSet<object>()

/**
 * Marks a pooled PostgreSQL/MySQL connection as dead (a statement on it failed with a
 * connection-level error: the server ended the session, the socket was reset…). Released to the
 * pool, it is destroyed at its next acquire (the pool's `validate`) and a new one is opened.
 *
 * Needed because the driver does not always see the end of its socket: pg only marks a client
 * unusable on a socket `error`/`end` event, and a session ended by the server (57P01) while a
 * statement was on its way may leave the socket open with nobody on the other side (a proxy, a
 * NAT entry): the next statement on it would wait forever.
 */
export function discardConnection(conn: unknown): void {
  if (typeof conn === 'object' && conn !== null) discarded.add(conn)
}

/**
 * Pool bounds (default 0–10), a statement run on every new connection (session time zone), and a
 * `validate` that refuses connections {@link discardConnection} marked.
 */
function sessionPool(pool: PoolOptions, sessionSql: string, created?: (conn: unknown) => void): Knex.PoolConfig {
  return {
    min: pool.min ?? 0,
    max: pool.max ?? 10,
    // A connection still opening after the acquire timeout is given up (tarn's default is 30 s):
    // `knex.destroy()` (the gateway's close) waits for the opens under way, and one to a server that
    // accepts and never answers would hold it that long.
    createTimeoutMillis: pool.acquireTimeoutMs ?? DEFAULT_POOL_ACQUIRE_TIMEOUT_MS,
    afterCreate: (conn: CallbackQueryable, done: DoneCallback) => {
      conn.query(sessionSql, (err) => {
        if (!err) created?.(conn)
        done(err, conn)
      })
    },
    validate: (conn: object) => !discarded.has(conn),
  }
}

/**
 * Opens a Knex instance for a database URL. Nothing is sent until the first query, except that a
 * SQLite file's parent directory is created.
 *
 * @param url see {@link parseDatabaseUrl}.
 * @param options pool size and acquire timeout, PostgreSQL search path and the base directory for relative SQLite paths.
 * @returns `{ knex, dialect }`. Close it with `knex.destroy()`.
 * @throws ConfigInvalidError (`TRB_ERR_CONFIG_INVALID`) for an unsupported or malformed URL.
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) for a PostgreSQL URL without the `pg`
 *   package installed, a MySQL/MariaDB URL without `mysql2` (optional peer dependencies).
 */
export function createKnex(url: string, options: CreateKnexOptions = {}): KnexConnection {
  const parsed = parseDatabaseUrl(url, options.cwd)
  const pool = options.pool ?? {}
  const acquireTimeoutMs = pool.acquireTimeoutMs ?? DEFAULT_POOL_ACQUIRE_TIMEOUT_MS
  switch (parsed.dialect) {
    case 'sqlite': {
      if (parsed.filename !== ':memory:') fs.mkdirSync(path.dirname(parsed.filename), { recursive: true })
      const knex = knexFactory({
        log: knexLog,
        acquireConnectionTimeout: acquireTimeoutMs,
        client: 'better-sqlite3',
        connection: { filename: parsed.filename },
        useNullAsDefault: true,
        pool: {
          min: pool.min ?? 1,
          max: pool.max ?? 1,
          afterCreate: (conn: SqliteConnection, done: DoneCallback) => {
            try {
              conn.pragma('foreign_keys = ON')
              conn.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.sqliteBusyTimeoutMs ?? 5000))}`)
              if (!conn.memory) conn.pragma('journal_mode = WAL')
              done(null, conn)
            } catch (err) {
              done(err as Error, conn)
            }
          },
        },
      })
      return { knex, dialect: 'sqlite' }
    }
    case 'postgres': {
      requireOptional('pg', `PostgreSQL ${options.label ?? 'database URL'}`)
      const { params } = parsed
      const ssl = params.sslmode && params.sslmode !== 'disable' ? { rejectUnauthorized: params.sslmode === 'verify-full' || params.sslmode === 'verify-ca' } : undefined
      const knex = knexFactory({
        log: knexLog,
        acquireConnectionTimeout: acquireTimeoutMs,
        client: 'pg',
        connection: {
          ...serverConnection(parsed),
          ...(params.application_name ? { application_name: params.application_name } : {}),
          ...(ssl ? { ssl } : {}),
          types: pgTypes,
        } as Knex.PgConnectionConfig,
        ...((options.schema ?? parsed.schema) ? { searchPath: [(options.schema ?? parsed.schema) as string] } : {}),
        pool: sessionPool(pool, "SET TIME ZONE 'UTC'", readsLatin1Rows),
      })
      return { knex, dialect: 'postgres' }
    }
    case 'mysql': {
      requireOptional('mysql2', `MySQL ${options.label ?? 'database URL'}`)
      const knex = knexFactory({
        log: knexLog,
        acquireConnectionTimeout: acquireTimeoutMs,
        client: 'mysql2',
        connection: {
          ...serverConnection(parsed),
          charset: 'utf8mb4',
          connectTimeout: CONNECT_TIMEOUT_MS,
          supportBigNumbers: true,
          bigNumberStrings: true,
          decimalNumbers: false,
          timezone: 'Z',
          dateStrings: false,
        } as Knex.MySql2ConnectionConfig,
        pool: sessionPool(pool, "SET time_zone = '+00:00'"),
      })
      return { knex, dialect: 'mysql' }
    }
  }
}
