/**
 * The "real-world" fixture schema (issue: the database connector on real-world schemas): a private
 * database on one engine, created by the SQL files of `test/fixtures/realworld/<dialect>/*.sql`, run
 * in file-name order (`10-base.sql`, `50-writes.sql`, …). Each file is one script of several
 * statements, sent as it is:
 * - SQLite: `better-sqlite3` `exec` (triggers with `BEGIN … END;` work);
 * - PostgreSQL: one simple-protocol query with `search_path` set to the fresh schema (`$$` bodies work);
 * - MySQL/MariaDB: one `multipleStatements` query on the fresh database (no `DELIMITER` lines: the
 *   server splits compound statements itself).
 * Never throws for an unreachable engine: the result carries `skipReason`, as `freshDatabase` does.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import mysql from 'mysql2/promise'
import type { Knex } from 'knex'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { mysqlOptions } from '../../examples/chinook/load.js'
import { freshDatabase, postgresUrl, repoRoot, type TestDatabase } from './chinook.js'

/** The fixture's SQL files for one engine, absolute paths in name order (`fixture`: a folder of test/fixtures, default `realworld`). */
export function realworldFiles(dialect: Dialect, fixture = 'realworld'): string[] {
  const dir = path.join(repoRoot, 'test', 'fixtures', fixture, dialect)
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir).filter((f) => f.endsWith('.sql')).sort().map((f) => path.join(dir, f))
}

/**
 * A fresh private database holding the real-world fixture schema (or the schema of another folder of
 * test/fixtures laid out the same way: `fixture`). `label` names the database (see
 * `freshDatabase`); call `cleanup()` to drop it. A script that fails gives `skipReason` only when the
 * engine is unreachable; an SQL error in a fixture file throws (a broken fixture must fail the test).
 */
export async function realworldDatabase(dialect: Dialect, label = 'realworld', fixture = 'realworld'): Promise<TestDatabase> {
  const db = await freshDatabase(dialect, label)
  if (db.skipReason) return db
  const scripts = realworldFiles(dialect, fixture).map((f) => ({ file: f, sql: fs.readFileSync(f, 'utf8') }))
  try {
    if (dialect === 'sqlite') {
      const conn = new Database(db.url.replace(/^sqlite:/, ''))
      try {
        for (const s of scripts) conn.exec(s.sql)
      } finally {
        conn.close()
      }
    } else if (dialect === 'postgres') {
      const client = new pg.Client({ connectionString: postgresUrl() })
      await client.connect()
      try {
        await client.query(`set search_path to "${db.schema}"`)
        for (const s of scripts) await client.query(s.sql)
      } finally {
        await client.end()
      }
    } else {
      const conn = await mysql.createConnection({ ...mysqlOptions(db.url), database: db.schema, multipleStatements: true })
      try {
        for (const s of scripts) await conn.query(s.sql)
      } finally {
        await conn.end()
      }
    }
  } catch (err) {
    await db.cleanup()
    throw new Error(`The ${fixture} fixture failed on ${dialect}: ${(err as Error).message}`)
  }
  return db
}

/**
 * Rows of a direct SQL query through Knex, as plain objects, whatever the engine's raw result shape
 * (SQLite: the rows; PostgreSQL: `{ rows }`; MySQL: `[rows, fields]`).
 * @param schema PostgreSQL: the schema unqualified names resolve in (`set search_path` first)
 */
export async function rawRows(knex: Knex, dialect: Dialect, text: string, bindings: unknown[] = [], schema?: string): Promise<Record<string, unknown>[]> {
  if (dialect === 'postgres' && schema) await knex.raw(`set search_path to "${schema}"`)
  const res = (await knex.raw(text, bindings as Knex.RawBinding[])) as unknown
  if (dialect === 'sqlite') return res as Record<string, unknown>[]
  if (dialect === 'postgres') return (res as { rows: Record<string, unknown>[] }).rows
  return (res as [Record<string, unknown>[]])[0]
}
