/**
 * Test databases on the three engines.
 *
 * - `chinookSqlite()` / `chinookPostgres()` / `chinookMysql()` give a test the Chinook database shipped
 *   in `examples/chinook/` (loaded by the functions of `examples/chinook/load.ts`):
 *   - SQLite: a fresh copy of `chinook.sqlite` in a temp dir, per call (free to write to);
 *   - PostgreSQL: `sql/Chinook_PostgreSql.sql.gz` loaded into the schema `chinook` of `TEST_POSTGRES_URL`;
 *   - MySQL/MariaDB: `sql/Chinook_MySql.sql.gz` loaded into the database `chinook_test` on `TEST_MYSQL_URL`
 *     (collation `utf8mb4_bin`, so that equality and ordering match SQLite and PostgreSQL `C.UTF-8`).
 *   The PostgreSQL and MySQL copies are shared and loaded once (a marker comment records the fixture's
 *   size; an advisory lock / `GET_LOCK` serialises parallel test files): treat them as READ-ONLY.
 * - `freshDatabase(dialect, label)` gives an empty, private database for write tests: a temp SQLite
 *   file, a new PostgreSQL schema or a new MySQL database, dropped by `cleanup()`.
 *
 * No helper throws when PostgreSQL or MySQL is unreachable: it returns `skipReason`, for `t.skip`.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import mysql from 'mysql2/promise'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { chinookDumpFile, chinookSqliteFile, loadChinookIntoMysql, loadChinookIntoPostgres, mysqlOptions } from '../../examples/chinook/load.js'

/** A database a test can connect to. */
export interface TestDatabase {
  /** Connection URL for `createKnex()` / the database connector. PostgreSQL URLs carry `?schema=`. */
  url: string
  dialect: Dialect
  /** PostgreSQL: the schema holding the tables (also in the URL as `?schema=`). MySQL: the database name. */
  schema?: string
  /** Set when the engine is unreachable or the fixture cannot be loaded; the test should skip with it. */
  skipReason?: string
  /** Removes what the helper created (temp files, schemas, databases). Idempotent; never throws. */
  cleanup: () => Promise<void>
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** The repository root. */
export const repoRoot = path.resolve(here, '..', '..')

/** `TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/test`. */
export const postgresUrl = (): string => process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
/** `TEST_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`. */
export const mysqlUrl = (): string => process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

/** The PostgreSQL schema and the MySQL database that hold the shared Chinook copies. */
export const CHINOOK_PG_SCHEMA = 'chinook'
export const CHINOOK_MYSQL_DATABASE = 'chinook_test'

const noop = async (): Promise<void> => {}
const redact = (url: string): string => url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@')

/** Makes a temp directory removed at process exit. */
function tempDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tributary-${label}-`))
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Adds or replaces a query parameter of a URL. */
function withParam(url: string, key: string, value: string): string {
  const u = new URL(url)
  u.searchParams.set(key, value)
  return u.href
}

/** Replaces the database (path) of a network URL. */
function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.href
}

/** A short marker that changes when the fixture file changes. */
function fixtureMarker(file: string): string {
  const st = fs.statSync(file)
  return `tributary-chinook v3 size=${st.size}`
}

// ----- SQLite -----

/** A fresh copy of `examples/chinook/chinook.sqlite` in a temp dir: `sqlite:<abs path>`. */
export async function chinookSqlite(): Promise<TestDatabase> {
  const src = chinookSqliteFile
  if (!fs.existsSync(src)) {
    return { url: '', dialect: 'sqlite', skipReason: `Chinook fixture not found at ${src}`, cleanup: noop }
  }
  const dir = tempDir('chinook')
  const file = path.join(dir, 'chinook.sqlite')
  fs.copyFileSync(src, file)
  fs.chmodSync(file, 0o644)
  return { url: `sqlite:${file}`, dialect: 'sqlite', cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) }
}

// ----- PostgreSQL -----

async function pgConnect(url: string): Promise<pg.Client | string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on('error', () => {})
  try {
    await client.connect()
    return client
  } catch (err) {
    await client.end().catch(() => {})
    return `PostgreSQL not reachable at ${redact(url)}: ${(err as Error).message}`
  }
}

const PG_LOCK_KEY = 7_357_001 // arbitrary, constant: serialises the Chinook load across test files

/**
 * The Chinook database in the schema `chinook` of `TEST_POSTGRES_URL`, loaded once (READ-ONLY for tests).
 * The URL carries `?schema=chinook`.
 */
export async function chinookPostgres(): Promise<TestDatabase> {
  const base = postgresUrl()
  const result: TestDatabase = { url: withParam(base, 'schema', CHINOOK_PG_SCHEMA), dialect: 'postgres', schema: CHINOOK_PG_SCHEMA, cleanup: noop }
  const file = chinookDumpFile('postgres')
  if (!fs.existsSync(file)) return { ...result, skipReason: `Chinook fixture not found at ${file}` }
  const client = await pgConnect(base)
  if (typeof client === 'string') return { ...result, skipReason: client }
  const marker = fixtureMarker(file)
  try {
    await client.query('select pg_advisory_lock($1)', [PG_LOCK_KEY])
    const { rows } = await client.query<{ d: string | null }>(
      `select obj_description(oid, 'pg_namespace') as d from pg_namespace where nspname = $1`, [CHINOOK_PG_SCHEMA])
    if (rows[0]?.d !== marker) await loadChinookIntoPostgres(client, CHINOOK_PG_SCHEMA, marker)
    return result
  } catch (err) {
    return { ...result, skipReason: `Could not load Chinook into PostgreSQL at ${redact(base)}: ${(err as Error).message}` }
  } finally {
    await client.query('select pg_advisory_unlock($1)', [PG_LOCK_KEY]).catch(() => {})
    await client.end().catch(() => {})
  }
}

// ----- MySQL / MariaDB -----

async function mysqlConnect(url: string): Promise<mysql.Connection | string> {
  try {
    return await mysql.createConnection(mysqlOptions(url))
  } catch (err) {
    return `MySQL not reachable at ${redact(url)}: ${(err as Error).message}`
  }
}

/**
 * The Chinook database as the MySQL database `chinook_test` on `TEST_MYSQL_URL`'s server, loaded once
 * (READ-ONLY for tests). Strings use `utf8mb4_bin` (the script's `NVARCHAR` columns become `VARCHAR`,
 * since MySQL's NVARCHAR is utf8mb3 with a case-insensitive collation), and the script is read with
 * `NO_BACKSLASH_ESCAPES` so that `\` in track names stays as in the other engines.
 */
export async function chinookMysql(): Promise<TestDatabase> {
  const base = mysqlUrl()
  const result: TestDatabase = { url: withDatabase(base, CHINOOK_MYSQL_DATABASE), dialect: 'mysql', schema: CHINOOK_MYSQL_DATABASE, cleanup: noop }
  const file = chinookDumpFile('mysql')
  if (!fs.existsSync(file)) return { ...result, skipReason: `Chinook fixture not found at ${file}` }
  const conn = await mysqlConnect(base)
  if (typeof conn === 'string') return { ...result, skipReason: conn }
  const marker = fixtureMarker(file)
  const db = CHINOOK_MYSQL_DATABASE
  try {
    const [[lock]] = (await conn.query('select get_lock(?, 120) as l', ['tributary_chinook_load'])) as unknown as [[{ l: number }]]
    if (lock?.l !== 1) throw new Error('timed out waiting for the Chinook load lock')
    const [rows] = (await conn.query(
      `select table_comment as c from information_schema.tables where table_schema = ? and table_name = 'PlaylistTrack'`, [db])) as unknown as [{ c: string }[]]
    // NVARCHAR is utf8mb3 with a case-insensitive collation whatever the database says: the loader uses VARCHAR.
    if (rows[0]?.c !== marker) await loadChinookIntoMysql(conn, db, marker)
    return result
  } catch (err) {
    return { ...result, skipReason: `Could not load Chinook into MySQL at ${redact(base)}: ${(err as Error).message}` }
  } finally {
    await conn.query('select release_lock(?)', ['tributary_chinook_load']).catch(() => {})
    await conn.end().catch(() => {})
  }
}

/** The Chinook database on one engine (see the three functions above). */
export function chinook(dialect: Dialect): Promise<TestDatabase> {
  return dialect === 'sqlite' ? chinookSqlite() : dialect === 'postgres' ? chinookPostgres() : chinookMysql()
}

// ----- fresh, private, writable databases -----

function uniqueName(label: string): string {
  const clean = label.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 24) || 'db'
  return `t_${clean}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
}

/**
 * An empty, private database for a write test:
 * - SQLite: a new file in a temp dir (`sqlite:<abs path>`);
 * - PostgreSQL: a new schema `t_<label>_<pid>_<rand>` of `TEST_POSTGRES_URL` (the URL carries `?schema=`);
 * - MySQL: a new database `t_<label>_<pid>_<rand>` on `TEST_MYSQL_URL`'s server (collation `utf8mb4_bin`).
 * Call `cleanup()` (e.g. `t.teardown(db.cleanup)`) to drop it. Never throws; see `skipReason`.
 */
export async function freshDatabase(dialect: Dialect, label = 'test'): Promise<TestDatabase> {
  const name = uniqueName(label)
  if (dialect === 'sqlite') {
    const dir = tempDir(label.replace(/[^a-z0-9]+/gi, '-'))
    return { url: `sqlite:${path.join(dir, 'db.sqlite')}`, dialect, cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) }
  }
  if (dialect === 'postgres') {
    const base = postgresUrl()
    const client = await pgConnect(base)
    const result = { url: withParam(base, 'schema', name), dialect, schema: name }
    if (typeof client === 'string') return { ...result, skipReason: client, cleanup: noop }
    try {
      await client.query(`create schema "${name}"`)
    } catch (err) {
      return { ...result, skipReason: `Cannot create a PostgreSQL schema at ${redact(base)}: ${(err as Error).message}`, cleanup: noop }
    } finally {
      await client.end().catch(() => {})
    }
    let done = false
    return {
      ...result,
      cleanup: async () => {
        if (done) return
        done = true
        const c = await pgConnect(base)
        if (typeof c === 'string') return
        await c.query(`drop schema if exists "${name}" cascade`).catch(() => {})
        await c.end().catch(() => {})
      },
    }
  }
  const base = mysqlUrl()
  const conn = await mysqlConnect(base)
  const result = { url: withDatabase(base, name), dialect, schema: name }
  if (typeof conn === 'string') return { ...result, skipReason: conn, cleanup: noop }
  try {
    await conn.query(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`)
  } catch (err) {
    return { ...result, skipReason: `Cannot create a MySQL database at ${redact(base)}: ${(err as Error).message}`, cleanup: noop }
  } finally {
    await conn.end().catch(() => {})
  }
  let done = false
  return {
    ...result,
    cleanup: async () => {
      if (done) return
      done = true
      const c = await mysqlConnect(base)
      if (typeof c === 'string') return
      await c.query(`drop database if exists \`${name}\``).catch(() => {})
      await c.end().catch(() => {})
    },
  }
}
