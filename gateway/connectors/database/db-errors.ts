/**
 * Maps driver errors of constraint violations to the gateway's database errors (gateway/errors.ts):
 * `TRB_ERR_DB_UNIQUE`, `TRB_ERR_DB_FOREIGN_KEY`, `TRB_ERR_DB_NOT_NULL`, `TRB_ERR_DB_CHECK`.
 * Messages name the constraint or the GraphQL fields, never SQL or values; the driver error is kept
 * as `cause` for the logs.
 *
 * Codes read: SQLite `SQLITE_CONSTRAINT_UNIQUE|PRIMARYKEY|FOREIGNKEY|NOTNULL|CHECK`; PostgreSQL
 * SQLSTATE 23505, 23503, 23502, 23514; MySQL/MariaDB errno 1062 (ER_DUP_ENTRY), 1451/1452 (row
 * referenced / no parent), 1048 (column cannot be null), 1364 (no default), 3819 (MySQL check) and
 * 4025 (MariaDB check). Limits of one statement reached by client input become `TRB_ERR_DB_INPUT`:
 * SQLite "too many SQL variables" / "Expression tree is too large", PostgreSQL 22021 (NUL byte) and
 * 54001 (stack depth), MySQL 1390 (too many placeholders) and 1436 (thread stack overrun).
 *
 * {@link unavailableReason} tells a database that cannot be reached (`TRB_ERR_DB_UNAVAILABLE`, 503)
 * from every other failure; compiler/db.ts applies it to every connection and statement.
 */
import { DbCheckError, DbForeignKeyError, DbInputError, DbNotNullError, DbUniqueError, DbValueError, isTributaryError } from '../../errors.js'
import type { Dialect } from './model.js'
import type { Model, Registry, Relation } from './compiler/registry.js'

interface DriverError {
  code?: string | number
  errno?: number
  message?: string
  constraint?: string
  column?: string
  table?: string
}

function fieldsOf(reg: Registry, table: string | undefined, columns: string[]): string {
  const model: Model | undefined = [...reg.models.values()].find((m) => m.table === table)
  if (!model) return columns.map((c) => `\`${c}\``).join(', ')
  const names = columns.map((c) => model.byColumn.get(c)?.name ?? c)
  return `${model.name} (${names.map((n) => `\`${n}\``).join(', ')})`
}

/** Socket errors of every driver: the server is not there, or went away. */
const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection aborted',
  EPIPE: 'connection lost',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
}

/** mysql2's own codes (and MySQL/MariaDB server errors) of a connection that is gone or refused. */
const MYSQL: Record<string, string> = {
  PROTOCOL_CONNECTION_LOST: 'connection lost',
  PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR: 'connection lost',
  PROTOCOL_ENQUEUE_AFTER_QUIT: 'connection lost',
  PROTOCOL_SEQUENCE_TIMEOUT: 'connection timed out',
  ER_CON_COUNT_ERROR: 'too many connections',
  ER_TOO_MANY_USER_CONNECTIONS: 'too many connections',
  ER_SERVER_SHUTDOWN: 'the server is shutting down',
  ER_CONNECTION_KILLED: 'connection killed',
  CR_SERVER_GONE_ERROR: 'connection lost',
  CR_SERVER_LOST: 'connection lost',
}

/**
 * Why the database cannot be reached, when `err` says so; undefined for any other error (a
 * constraint, a syntax error, bad credentials: those are not passing conditions).
 *
 * - Every engine: socket errors (`ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`, `EPIPE`, unreachable or
 *   unknown host) and knex's pool timeout (`KnexTimeoutError`: no connection within
 *   `acquireConnectionTimeout`).
 * - PostgreSQL (pg): SQLSTATE class 08 (connection exception), 57P01/57P02/57P03 (shutdown or
 *   `pg_terminate_backend`, crash, starting up), 53300 (too many connections), and pg's own "Connection terminated…" /
 *   "Client has encountered a connection error" for a connection that died.
 * - MySQL/MariaDB (mysql2): `PROTOCOL_CONNECTION_LOST` and the other protocol codes of a closed
 *   connection, `ER_CON_COUNT_ERROR` (1040), `ER_TOO_MANY_USER_CONNECTIONS` (1203),
 *   `ER_SERVER_SHUTDOWN` (1053), `ER_CONNECTION_KILLED` (1927), client errors 2006/2013.
 * - SQLite (better-sqlite3): `SQLITE_CANTOPEN*` (the file is missing or unreadable),
 *   `SQLITE_IOERR*`, `SQLITE_NOTADB`, `SQLITE_READONLY_DBMOVED`, and `SQLITE_BUSY*`/`SQLITE_LOCKED*`
 *   (another connection held the lock past `busy_timeout`, 5 s): retrying later can succeed.
 * @returns a fixed phrase for clients (never the driver's message, which may name hosts or paths)
 */
export function unavailableReason(err: unknown, dialect: Dialect): string | undefined {
  if (typeof err !== 'object' || err === null || isTributaryError(err)) return undefined
  const e = err as DriverError & { name?: string }
  const code = typeof e.code === 'string' ? e.code : ''
  if (e.name === 'KnexTimeoutError') return 'no connection within the pool\'s acquire timeout'
  if (NETWORK[code]) return NETWORK[code]
  const msg = e.message ?? ''
  if (dialect === 'sqlite') {
    if (code.startsWith('SQLITE_CANTOPEN')) return 'the database file cannot be opened'
    if (code.startsWith('SQLITE_IOERR')) return 'the database file cannot be read or written'
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_READONLY_DBMOVED') return 'the database file was removed or replaced'
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'the database is locked by another writer'
    return undefined
  }
  if (dialect === 'postgres') {
    if (code.startsWith('08')) return 'connection failure'
    // 57P01 admin_shutdown: a server shutting down, or pg_terminate_backend; 57P02 crash_shutdown.
    if (code === '57P01' || code === '57P02') return 'the server ended the connection'
    if (code === '57P03') return 'the server is starting up'
    if (code === '53300') return 'too many connections'
    // pg's connectionTimeoutMillis: "timeout expired" before the socket connects, "Connection
    // terminated due to connection timeout" during the handshake.
    if (code === '' && /^timeout expired$|^Connection terminated due to connection timeout/.test(msg)) return 'connection timed out'
    if (code === '' && /^Connection terminated|^Client has encountered a connection error|^Connection ended/.test(msg)) return 'connection lost'
    return undefined
  }
  if (MYSQL[code]) return MYSQL[code]
  if (e.errno === 1040 || e.errno === 1203) return 'too many connections'
  if (e.errno === 1053) return 'the server is shutting down'
  if (e.errno === 1927) return 'connection killed'
  if (e.errno === 2006 || e.errno === 2013) return 'connection lost'
  if (/^Can't add new command when connection is in closed state/.test(msg)) return 'connection lost'
  return undefined
}

/** How a foreign-key error names a relation: `Comment.note (`noteId`)` (its model, field and key fields). */
export function relationLabel(model: Model, rel: Relation): string {
  return `${model.name}.${rel.name} (${rel.fromFields.map((f) => `\`${f}\``).join(', ')})`
}

function constraintLabel(reg: Registry, name: string): string {
  for (const m of reg.models.values()) {
    const uk = m.uniqueKeys.find((u) => u.constraint === name)
    if (uk) return `${m.name} (${uk.fields.map((f) => `\`${f}\``).join(', ')})`
    for (const r of m.relations.values()) if (r.foreignKey === name && r.holdsKey) return relationLabel(m, r)
  }
  return `constraint \`${name}\``
}

/**
 * A full-text query the engine could not parse, as `TRB_ERR_DB_INPUT` (compiler/fulltext.ts), or
 * undefined for any other error. Only for a statement with a full-text match (`MATCH`): SQLite's
 * FTS5 errors (`fts5: syntax error near …`, `unterminated string`, `no such column: x` for a
 * column filter `x:` naming no column, `unknown special query`), MySQL/MariaDB's boolean-mode
 * parser (errno 1064 `syntax error, unexpected …`, unlike an SQL syntax error's text). PostgreSQL's
 * `websearch_to_tsquery` accepts any text.
 */
export function fullTextSyntaxError(err: unknown, dialect: Dialect, sql: string): Error | undefined {
  if (typeof err !== 'object' || err === null || isTributaryError(err) || !/\bMATCH\b/.test(sql)) return undefined
  const e = err as DriverError
  const msg = e.message ?? ''
  const bad =
    dialect === 'sqlite'
      ? /^(fts5: |unterminated string$|no such column: |unknown special query)/.test(msg)
      : dialect === 'mysql' && e.errno === 1064 && /^syntax error, unexpected/.test(msg)
  return bad ? new DbInputError('the full-text search text is not valid in the engine\'s query syntax (check quotes, parentheses and operators)', { cause: err }) : undefined
}

/** The problem a PostgreSQL data-exception SQLSTATE names. */
function valueProblem(sqlstate: string): string {
  return sqlstate === '22001' ? 'too long' : sqlstate === '22003' ? 'out of range' : 'malformed'
}

/**
 * Converts a driver error to a Tributary database error when it is a constraint violation.
 * @param fallbackModel the model being written, named when the engine does not say which constraint failed
 * @returns the mapped error, or the original error unchanged
 */
export function mapDbError(err: unknown, dialect: Dialect, reg: Registry, fallbackModel?: Model): unknown {
  if (isTributaryError(err) || typeof err !== 'object' || err === null) return err
  const e = err as DriverError
  const msg = e.message ?? ''
  const cause = { cause: err }
  if (dialect === 'sqlite') {
    const code = String(e.code ?? '')
    // Limits of the statement itself, reached by client input (input-limits.ts refuses most before).
    if (/too many SQL variables|Expression tree is too large/.test(msg)) return new DbInputError('the arguments are too large or too deeply nested for SQLite', cause)
    if (!code.startsWith('SQLITE_CONSTRAINT')) return err
    const m = /constraint failed: (.+)$/.exec(msg)
    const detail = m?.[1] ?? ''
    const cols = (): string => {
      // "todo.title, todo.x" → Todo (`title`, `x`)
      const pairs = detail.split(',').map((s) => s.trim().split('.'))
      const table = pairs[0]?.length === 2 ? pairs[0][0] : undefined
      return fieldsOf(reg, table, pairs.map((p) => p[p.length - 1]!))
    }
    if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new DbUniqueError(cols(), cause)
    if (code === 'SQLITE_CONSTRAINT_NOTNULL') return new DbNotNullError(cols(), cause)
    if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new DbForeignKeyError(fallbackModel ? `a relation of ${fallbackModel.name}` : 'a relation', cause)
    if (code === 'SQLITE_CONSTRAINT_CHECK') return new DbCheckError(detail ? `constraint \`${detail}\`` : (fallbackModel?.name ?? 'a row'), cause)
    return err
  }
  if (dialect === 'postgres') {
    switch (e.code) {
      case '23505':
        return new DbUniqueError(e.constraint ? constraintLabel(reg, e.constraint) : (fallbackModel?.name ?? 'a row'), cause)
      case '23503':
        return new DbForeignKeyError(e.constraint ? constraintLabel(reg, e.constraint) : 'a relation', cause)
      case '23502':
        return new DbNotNullError(fieldsOf(reg, e.table, e.column ? [e.column] : []), cause)
      case '23514':
        return new DbCheckError(e.constraint ? `constraint \`${e.constraint}\`` : (fallbackModel?.name ?? 'a row'), cause)
      case '22021':
        // invalid byte sequence: a NUL character in a string
        return new DbInputError('strings must not contain the NUL character (U+0000) on PostgreSQL', cause)
      case '54001':
        return new DbInputError('the arguments are too deeply nested for PostgreSQL', cause)
      default:
        // SQLSTATE class 22: data exceptions (22001 string too long, 22003 out of range, 22P02 bad text representation...).
        if (typeof e.code === 'string' && e.code.startsWith('22')) {
          return new DbValueError(fallbackModel ? `${fallbackModel.name}: ${valueProblem(e.code)}` : valueProblem(e.code), cause)
        }
        return err
    }
  }
  const errno = e.errno
  // ER_PS_MANY_PARAM, ER_STACK_OVERRUN_NEED_MORE, ER_TOO_BIG_SELECT-like limits of the statement itself.
  if (errno === 1390 || errno === 1436) return new DbInputError('the arguments are too large or too deeply nested for MySQL', cause)
  if (errno === 1062) {
    const key = /for key '(?:[^'.]*\.)?([^']+)'/.exec(msg)?.[1]
    const label = key === 'PRIMARY' && fallbackModel ? `${fallbackModel.name} (${fallbackModel.primaryKey.map((f) => `\`${f}\``).join(', ')})` : key ? constraintLabel(reg, key) : 'a unique key'
    return new DbUniqueError(label, cause)
  }
  if (errno === 1451 || errno === 1452) {
    const name = /CONSTRAINT `([^`]+)`/.exec(msg)?.[1]
    return new DbForeignKeyError(name ? constraintLabel(reg, name) : 'a relation', cause)
  }
  if (errno === 1048 || errno === 1364) {
    const column = /(?:Column|Field) '([^']+)'/.exec(msg)?.[1]
    return new DbNotNullError(fallbackModel && column ? fieldsOf(reg, fallbackModel.table, [column]) : (column ? `\`${column}\`` : 'a column'), cause)
  }
  // ER_DATA_TOO_LONG, ER_WARN_DATA_OUT_OF_RANGE, ER_TRUNCATED_WRONG_VALUE(_FOR_FIELD), ER_DATETIME_FUNCTION_OVERFLOW...
  if (errno === 1406 || errno === 1264 || errno === 1292 || errno === 1366 || errno === 1265) {
    const column = /(?:column|Column) '([^']+)'/.exec(msg)?.[1]
    const where = fallbackModel && column ? fieldsOf(reg, fallbackModel.table, [column]) : column ? `\`${column}\`` : (fallbackModel?.name ?? 'a column')
    return new DbValueError(`${where}: ${errno === 1406 ? 'too long' : errno === 1264 ? 'out of range' : 'malformed'}`, cause)
  }
  if (errno === 3819 || errno === 4025) {
    const name = /(?:constraint|CONSTRAINT) [`']([^`']+)[`']/.exec(msg)?.[1]
    return new DbCheckError(name ? `constraint \`${name}\`` : (fallbackModel?.name ?? 'a row'), cause)
  }
  return err
}

/**
 * An error of a statement that calls database functions (function root fields, computed fields):
 * constraint violations as {@link mapDbError} maps them (`TRB_ERR_DB_UNIQUE`…); a data exception
 * (SQLSTATE class 22, e.g. division by zero, a value out of range) or an exception the function
 * raises itself (class P0, `RAISE EXCEPTION`) is the caller's input: `TRB_ERR_DB_VALUE` (400)
 * about `what`, with the engine's message only when `rawErrors` (development mode). Anything else
 * is returned as is.
 */
export function mapFunctionError(err: unknown, reg: Registry, what: string, rawErrors: boolean): unknown {
  const mapped = mapDbError(err, reg.dialect, reg)
  if (mapped !== err) return mapped
  const code = String((err as { code?: unknown } | null)?.code ?? '')
  if (/^(22|P0)/.test(code)) {
    const detail = rawErrors && err instanceof Error ? ` (${err.message})` : ''
    return new DbValueError(`${what}${detail}`, { cause: err })
  }
  return err
}
