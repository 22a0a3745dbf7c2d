/**
 * Database introspection: reads a live database's catalog into the plain-JSON
 * {@link DatabaseIntrospection} document (model.ts). This is the I/O half of the database connector;
 * `buildSchema()` is the pure half (docs/architecture.md §7, "Keep I/O apart from pure transforms").
 *
 * Per engine (the queries live in `introspect/`):
 * - SQLite: `sqlite_master` + `pragma_table_info` / `pragma_foreign_key_list` / `pragma_index_list` /
 *   `pragma_index_info`. Foreign keys have no names in SQLite: `<table>_<cols>_fkey` is synthesised.
 * - PostgreSQL: `pg_catalog`, one schema (`options.schema`, default the current schema, normally
 *   `public`), enum types included.
 * - MySQL/MariaDB: `information_schema` of the connection's database (or `options.schema`); inline
 *   `enum(…)` columns produce enums named `<table>_<column>`.
 *
 * Skipped everywhere: `sqlite_%` tables, `knex_migrations`, `knex_migrations_lock`.
 */
import type { Knex } from 'knex'
import type { DatabaseIntrospection, Dialect } from './model.js'
import { finishEnums, finishTables } from './introspect/common.js'
import { introspectSqlite } from './introspect/sqlite.js'
import { introspectPgFunctions, introspectPostgres } from './introspect/postgres.js'
import { introspectMysql, introspectMysqlFunctions } from './introspect/mysql.js'

/** Options of {@link introspect}. */
export interface IntrospectOptions {
  /**
   * PostgreSQL: the schema to read; default the connection's `current_schema()` (the URL's `?schema=`,
   * which `createKnex` puts on the search path), else `public`. MySQL: the database to read; default
   * the connection's `DATABASE()`. Ignored by SQLite.
   */
  schema?: string
  /**
   * PostgreSQL: also read functions of the schema (`true`: every function; a list: those names) into
   * `functions` (introspect/postgres.ts `introspectPgFunctions` says which ones qualify). Ignored by
   * the other engines. Default: none.
   */
  functions?: boolean | readonly string[]
  /** Called with one message per function left out, and per name of the `functions` list that does not exist. */
  onWarning?: (message: string) => void
}

/**
 * Reads tables, views, columns, keys, unique constraints, foreign keys and enums.
 *
 * @param knex an open Knex instance (see `createKnex`).
 * @param dialect the engine `knex` talks to.
 * @param options see {@link IntrospectOptions}.
 * @returns a JSON-serialisable document: tables sorted by name (code-point order), columns in
 *   declaration order, unique constraints and foreign keys sorted by name, enums sorted by name.
 *   Unique constraints that repeat the primary key (or another constraint) are dropped; foreign keys
 *   to tables outside the document (another schema) are dropped.
 * @throws whatever the driver throws when the database cannot be reached or read (the caller wraps
 *   it in `SourceLoadError`).
 */
export async function introspect(knex: Knex, dialect: Dialect, options: IntrospectOptions = {}): Promise<DatabaseIntrospection> {
  switch (dialect) {
    case 'sqlite': {
      const { tables, enums } = await introspectSqlite(knex)
      return { version: 1, dialect, tables: finishTables(tables), enums: finishEnums(enums) }
    }
    case 'postgres': {
      const schema = options.schema ?? (await currentPgSchema(knex)) ?? 'public'
      const { tables, enums } = await introspectPostgres(knex, schema)
      const doc: DatabaseIntrospection = { version: 1, dialect, schema, tables: finishTables(tables), enums: finishEnums(enums) }
      if (options.functions) {
        const only = options.functions === true ? undefined : options.functions
        const { functions, skipped } = await introspectPgFunctions(knex, schema, doc.tables.map((t) => t.name), only)
        for (const [name, why] of skipped) options.onWarning?.(`function ${schema}.${name} is not exposed: ${why}`)
        for (const name of only ?? []) {
          if (!functions.some((f) => f.name === name) && !skipped.some(([n]) => n === name)) options.onWarning?.(`functions: no function ${schema}.${name}`)
        }
        doc.functions = functions
      }
      return doc
    }
    case 'mysql': {
      const { tables, enums } = await introspectMysql(knex, options.schema)
      const doc: DatabaseIntrospection = { version: 1, dialect, tables: finishTables(tables), enums: finishEnums(enums) }
      if (options.functions) {
        const only = options.functions === true ? undefined : options.functions
        const { functions, skipped } = await introspectMysqlFunctions(knex, options.schema, only)
        for (const [name, why] of skipped) options.onWarning?.(`function ${name} is not exposed: ${why}`)
        for (const name of only ?? []) {
          if (!functions.some((f) => f.name === name) && !skipped.some(([n]) => n === name)) options.onWarning?.(`functions: no function ${name}`)
        }
        doc.functions = functions
      }
      return doc
    }
  }
}

async function currentPgSchema(knex: Knex): Promise<string | null> {
  const res = (await knex.raw('select current_schema() as s')) as { rows: { s: string | null }[] }
  return res.rows[0]?.s ?? null
}
