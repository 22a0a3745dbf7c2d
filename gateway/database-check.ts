/**
 * The check `tributary init --database` and `start --database` run before anything else: the URL
 * names a database that exists and has tables to serve. Without it a missing SQLite file was created
 * empty (better-sqlite3 creates what it opens) and an empty database or PostgreSQL schema ended in
 * `TRB_ERR_COMPOSE_COLLISION: no data source provides a Query field`, which names neither cause.
 *
 * Tables counted: base tables and views, as introspection reads them, without `sqlite_%` and Knex's
 * migration tables.
 */
import { existsSync } from 'node:fs'
import Database from 'better-sqlite3'
import { SourceLoadError } from './errors.js'
import { createKnex, parseDatabaseUrl } from './connectors/database/connection.js'
import { INTERNAL_TABLES } from './connectors/database/introspect/common.js'

/** Tables (and views) per schema (PostgreSQL) or database (MySQL), of those the user can read. */
type Counts = { name: string; tables: number }[]

const internal = [...INTERNAL_TABLES]

function sqliteTables(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    const row = db
      .prepare(`select count(*) as n from sqlite_master where type in ('table', 'view') and name not like 'sqlite\\_%' escape '\\' and name not in (${internal.map(() => '?').join(', ')})`)
      .get(...internal) as { n: number }
    return row.n
  } finally {
    db.close()
  }
}

/** `chinook (11 tables), sales (3 tables)`: the most tables first, at most 10 named. */
function listed(counts: Counts): string {
  const named = counts.slice(0, 10).map((c) => `${c.name} (${c.tables} table${c.tables === 1 ? '' : 's'})`)
  return named.join(', ') + (counts.length > 10 ? ` and ${counts.length - 10} more` : '')
}

/**
 * Refuses a `--database` URL that would serve nothing.
 *
 * @param url the `--database` URL (`sqlite:<path>` relative to `cwd`, `postgres://…[?schema=name]`, `mysql://…`).
 * @param namespace the source's namespace, named in the error.
 * @param cwd the folder relative SQLite paths resolve against.
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`), one line that says what was found and what to pass:
 *   no such SQLite file (nothing is created), a file that is not a database, a database without tables,
 *   a PostgreSQL schema without tables (with the schemas that have tables, and `?schema=<name>`), a
 *   MySQL database without tables (with the databases that have tables), a server that cannot be
 *   reached; ConfigInvalidError for a malformed URL.
 */
export async function checkDatabase(url: string, namespace: string, cwd: string = process.cwd()): Promise<void> {
  const parsed = parseDatabaseUrl(url, cwd)
  const refuse = (why: string): never => {
    throw new SourceLoadError(namespace, why)
  }
  if (parsed.dialect === 'sqlite') {
    if (parsed.filename === ':memory:') refuse('sqlite::memory: is an empty database; pass sqlite:<path> of a database file that has tables')
    if (!existsSync(parsed.filename)) refuse(`no SQLite database at ${parsed.filename} (nothing was created); pass sqlite:<path> of an existing database file, relative to ${cwd}`)
    let tables = 0
    try {
      tables = sqliteTables(parsed.filename)
    } catch (err) {
      refuse(`${parsed.filename} cannot be read as a SQLite database: ${(err as Error).message}`)
    }
    if (tables === 0) refuse(`the SQLite database ${parsed.filename} has no tables; create one first, or run init without --database for a local schema`)
    return
  }
  const { knex } = createKnex(url, { pool: { min: 0, max: 1 }, cwd })
  try {
    let counts: Counts
    let named: string
    const exclude = ['pg_catalog', 'information_schema', 'mysql', 'performance_schema', 'sys']
    try {
      if (parsed.dialect === 'postgres') {
        const current = (await knex.raw('select current_schema() as s')).rows[0]?.s as string | null
        named = parsed.schema ?? current ?? 'public'
      } else {
        named = parsed.database
        if (!named) refuse(`${parsed.redacted} names no database; pass mysql://…/<database>`)
      }
      const rows = (await knex('information_schema.tables')
        .select({ name: 'table_schema' })
        .count({ tables: '*' })
        .whereNotIn('table_schema', exclude)
        .whereNot('table_schema', 'like', 'pg\\_%')
        .whereNotIn('table_name', internal)
        .groupBy('table_schema')
        .orderBy('table_schema')) as { name: string; tables: string | number }[]
      counts = rows.map((r) => ({ name: String(r.name), tables: Number(r.tables) }))
    } catch (err) {
      if (err instanceof SourceLoadError) throw err
      const e = err as Error & { code?: string }
      return refuse(`cannot read ${parsed.redacted}: ${e.code && !e.message.includes(e.code) ? `${e.code}: ` : ''}${e.message}`)
    }
    if (counts.some((c) => c.name === named && c.tables > 0)) return
    const others = counts.filter((c) => c.tables > 0).sort((a, b) => b.tables - a.tables || (a.name < b.name ? -1 : 1))
    if (parsed.dialect === 'postgres') {
      const where = `the PostgreSQL schema "${named}" of database "${parsed.database}" has no tables`
      if (!others.length) refuse(`${where}, and no other schema has any`)
      const u = new URL(url)
      u.searchParams.set('schema', others[0].name)
      if (u.password) u.password = '***'
      refuse(`${where}; schemas with tables: ${listed(others)}; pass ?schema=<name> (${u.href})`)
    }
    const where = `the MySQL database "${named}" has no tables`
    if (!others.length) refuse(`${where}, and no other database this user can read has any`)
    refuse(`${where}; databases with tables: ${listed(others)}; pass mysql://…/<database>`)
  } finally {
    await knex.destroy()
  }
}
