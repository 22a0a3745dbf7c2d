/**
 * Loads the Chinook database into PostgreSQL or MySQL/MariaDB from the dumps shipped beside this file
 * (`sql/Chinook_PostgreSql.sql.gz`, `sql/Chinook_MySql.sql.gz`: Chinook 1.4.5, MIT, see LICENSE.md).
 *
 * Command line (from the repository root):
 *
 *   npm run chinook:load -- postgres://postgres@127.0.0.1:5432/app            # into schema `chinook`
 *   npm run chinook:load -- 'postgres://postgres@127.0.0.1:5432/app?schema=music'
 *   npm run chinook:load -- mysql://root@127.0.0.1:3306/chinook               # into database `chinook`
 *
 * It REPLACES the target: PostgreSQL drops and recreates the schema (`?schema=`, default `chinook`)
 * in one transaction; MySQL drops and recreates the database named in the URL's path (default
 * `chinook`). It prints each step and, at the end, the `CHINOOK_DATABASE_URL` to start the example with.
 *
 * The script's own `DROP DATABASE`, `CREATE DATABASE`, `\c` and `USE` lines are skipped. On MySQL the
 * text columns become `VARCHAR` in a `utf8mb4_bin` database (the script's `NVARCHAR` is utf8mb3 with a
 * case-insensitive collation) and the script runs with `NO_BACKSLASH_ESCAPES`, so that equality,
 * ordering and the `\` in a few track names behave as on SQLite and PostgreSQL. The test suite loads
 * its shared copies with the same functions (test/helpers/chinook.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'
import mysql from 'mysql2/promise'

/** The folder of this file (`examples/chinook/`). */
export const chinookDir = path.dirname(fileURLToPath(import.meta.url)).replace(/([\\/])dist\1examples\1chinook$/, '$1examples$1chinook')

/** The gzipped dump of one engine: `examples/chinook/sql/Chinook_<Engine>.sql.gz`. */
export function chinookDumpFile(dialect: 'postgres' | 'mysql'): string {
  return path.join(chinookDir, 'sql', dialect === 'postgres' ? 'Chinook_PostgreSql.sql.gz' : 'Chinook_MySql.sql.gz')
}

/** The SQLite copy shipped with the example (`examples/chinook/chinook.sqlite`). */
export const chinookSqliteFile = path.join(chinookDir, 'chinook.sqlite')

/**
 * The dump of one engine as SQL text, ready to run in an already selected schema/database: the
 * `DROP DATABASE`, `CREATE DATABASE`, `\c` and `USE` lines removed, and for MySQL `NVARCHAR(` → `VARCHAR(`.
 * Throws when the file is missing.
 */
export function chinookScript(dialect: 'postgres' | 'mysql'): string {
  const sql = zlib.gunzipSync(fs.readFileSync(chinookDumpFile(dialect))).toString('utf8')
  const kept = sql
    .split('\n')
    .filter((line) => !/^\s*(DROP DATABASE|CREATE DATABASE|\\c\b|USE\s)/i.test(line))
    .join('\n')
  return dialect === 'mysql' ? kept.replace(/\bNVARCHAR\(/g, 'VARCHAR(') : kept
}

const ident = (name: string): string => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Not a plain identifier: ${JSON.stringify(name)}`)
  return name
}

/**
 * Replaces the PostgreSQL schema `schema` with Chinook, in one transaction, on a connected client.
 * `comment`, when given, is stored as the schema's comment (the tests use it as a "loaded" marker).
 */
export async function loadChinookIntoPostgres(client: pg.Client, schema: string, comment?: string): Promise<void> {
  const s = ident(schema)
  const script = chinookScript('postgres')
  await client.query('begin')
  try {
    await client.query(`drop schema if exists "${s}" cascade`)
    await client.query(`create schema "${s}"`)
    await client.query(`set local search_path to "${s}"`)
    await client.query(script)
    if (comment !== undefined) await client.query(`comment on schema "${s}" is '${comment.replace(/'/g, "''")}'`)
    await client.query('commit')
  } catch (err) {
    await client.query('rollback').catch(() => {})
    throw err
  }
}

/**
 * Replaces the MySQL database `database` with Chinook (`utf8mb4_bin`, `NO_BACKSLASH_ESCAPES`) on a
 * connection opened with `multipleStatements: true`. `comment`, when given, is stored as the table
 * comment of `PlaylistTrack` (the last table loaded; the tests use it as a "loaded" marker).
 */
export async function loadChinookIntoMysql(conn: mysql.Connection, database: string, comment?: string): Promise<void> {
  const db = ident(database)
  const script = chinookScript('mysql')
  await conn.query(`drop database if exists \`${db}\``)
  await conn.query(`create database \`${db}\` character set utf8mb4 collate utf8mb4_bin`)
  await conn.query(`use \`${db}\``)
  await conn.query(`set session sql_mode = concat(@@session.sql_mode, ',NO_BACKSLASH_ESCAPES')`)
  await conn.query('set names utf8mb4 collate utf8mb4_bin')
  await conn.query(script)
  if (comment !== undefined) await conn.query(`alter table \`PlaylistTrack\` comment = ?`, [comment])
}

/** Connection options for mysql2 from a `mysql://` / `mariadb://` URL (no database selected). */
export function mysqlOptions(url: string): mysql.ConnectionOptions {
  const u = new URL(url)
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    multipleStatements: true,
    connectTimeout: 3000,
    charset: 'utf8mb4',
  }
}

/**
 * Loads Chinook into the database a URL names and returns the URL to give `CHINOOK_DATABASE_URL`.
 * `postgres://…[?schema=<s>]` (default schema `chinook`) or `mysql://…/<db>` / `mariadb://…/<db>`
 * (default database `chinook`). `log` receives one line per step. Throws on connection or SQL errors.
 */
export async function loadChinook(url: string, log: (line: string) => void = () => {}): Promise<string> {
  const u = new URL(url)
  const started = Date.now()
  if (u.protocol === 'postgres:' || u.protocol === 'postgresql:') {
    const schema = u.searchParams.get('schema') || 'chinook'
    const conn = new URL(url)
    conn.searchParams.delete('schema')
    const client = new pg.Client({ connectionString: conn.href, connectionTimeoutMillis: 5000 })
    log(`connecting to PostgreSQL at ${redact(conn.href)}`)
    await client.connect()
    try {
      log(`replacing schema "${schema}" with Chinook (${path.basename(chinookDumpFile('postgres'))})`)
      await loadChinookIntoPostgres(client, schema)
      const { rows } = await client.query<{ n: string }>(`select count(*) as n from "${ident(schema)}".track`)
      log(`loaded: ${rows[0]?.n} tracks in ${Date.now() - started} ms`)
    } finally {
      await client.end().catch(() => {})
    }
    u.searchParams.set('schema', schema)
    return u.href
  }
  if (u.protocol === 'mysql:' || u.protocol === 'mariadb:') {
    const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || 'chinook'
    log(`connecting to MySQL at ${redact(url)}`)
    const conn = await mysql.createConnection(mysqlOptions(url))
    try {
      log(`replacing database \`${database}\` with Chinook (${path.basename(chinookDumpFile('mysql'))})`)
      await loadChinookIntoMysql(conn, database)
      const [rows] = (await conn.query(`select count(*) as n from \`${ident(database)}\`.\`Track\``)) as unknown as [{ n: number }[]]
      log(`loaded: ${rows[0]?.n} tracks in ${Date.now() - started} ms`)
    } finally {
      await conn.end().catch(() => {})
    }
    u.pathname = `/${database}`
    return u.href
  }
  throw new Error(`Unsupported URL ${redact(url)}: use postgres://… or mysql://… (the SQLite copy is examples/chinook/chinook.sqlite)`)
}

/** Hides the password of a URL for printing. */
export const redact = (url: string): string => url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@')

async function main(argv: string[]): Promise<number> {
  const url = argv[0]
  if (!url || argv.length > 1 || url === '--help' || url === '-h') {
    console.error('usage: npm run chinook:load -- <postgres://…[?schema=chinook] | mysql://…/chinook>')
    return 2
  }
  try {
    const target = await loadChinook(url, (line) => console.log(`[chinook] ${line}`))
    console.log(`[chinook] start the example with:\n  CHINOOK_DATABASE_URL='${redact(target)}' npm start -- --config examples/chinook/config.ts`)
    return 0
  } catch (err) {
    console.error(`[chinook] failed: ${(err as Error).message}`)
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code })
}
