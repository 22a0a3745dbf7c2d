/**
 * Synthetic introspection benchmark (issue 3, "Speed"): a database of 300 tables with foreign keys,
 * introspected and turned into a GraphQL schema. Target: under 3 s for introspect + buildSchema.
 *
 *   npx tsx bench/introspect-300.ts                 # SQLite, in a temp file
 *   npx tsx bench/introspect-300.ts --postgres      # also on TEST_POSTGRES_URL (a throwaway schema)
 *   npx tsx bench/introspect-300.ts --mysql         # also on TEST_MYSQL_URL (a throwaway database)
 *   npx tsx bench/introspect-300.ts --tables 1000   # another size
 *
 * Each table `t0001…t0300` has 10 columns of mixed types, a unique index, a foreign key to the
 * previous table and (every third table) a second one to `t0001` and a compound unique constraint.
 * Prints one JSON line per engine: { dialect, tables, introspectMs, buildSchemaMs, totalMs, types, pass }.
 */
import { performance } from 'node:perf_hooks'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { introspect } from '../gateway/connectors/database/introspect.js'
import type { DatabaseIntrospection, Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase } from '../test/helpers/chinook.js'

const args = process.argv.slice(2)
const TABLES = Number(args[args.indexOf('--tables') + 1]) > 0 && args.includes('--tables') ? Number(args[args.indexOf('--tables') + 1]) : 300
const TARGET_MS = 3000

function ddl(dialect: Dialect, n: number): string[] {
  const name = (i: number): string => `t${String(i).padStart(4, '0')}`
  const pk = dialect === 'sqlite' ? 'integer primary key' : dialect === 'postgres' ? 'serial primary key' : 'int auto_increment primary key'
  const text = dialect === 'mysql' ? 'varchar(100)' : 'text'
  const json = dialect === 'postgres' ? 'jsonb' : 'json'
  const ts = dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime' : 'datetime'
  const out: string[] = []
  for (let i = 1; i <= n; i++) {
    const cols = [
      `id ${pk}`,
      `code ${dialect === 'mysql' ? 'varchar(40)' : 'varchar(40)'} not null`,
      `title ${text}`,
      `amount decimal(12,2)`,
      `ratio double precision`,
      `qty integer not null default 0`,
      `big bigint`,
      `active boolean not null default ${dialect === 'postgres' ? 'true' : '1'}`,
      `created_at ${ts}`,
      `meta ${json}`,
    ]
    const cons = [`unique (code)`]
    if (i > 1) {
      cols.push(`parent_id integer`)
      cons.push(`foreign key (parent_id) references ${name(i - 1)}(id)`)
    }
    if (i > 1 && i % 3 === 0) {
      cols.push(`root_id integer`)
      cons.push(`foreign key (root_id) references ${name(1)}(id)`, `unique (title${dialect === 'mysql' ? '(50)' : ''}, qty)`)
    }
    out.push(`create table ${name(i)} (${[...cols, ...cons].join(', ')})`)
  }
  return out
}

type BuildSchema = (doc: DatabaseIntrospection) => unknown
async function loadBuildSchema(): Promise<BuildSchema | null> {
  for (const file of ['schema.js', 'build-schema.js', 'index.js']) {
    try {
      const mod = (await import(`../gateway/connectors/database/${file}`)) as Record<string, unknown>
      if (typeof mod.buildSchema === 'function') return mod.buildSchema as BuildSchema
    } catch {
      // not this file
    }
  }
  return null
}

async function run(dialect: Dialect): Promise<void> {
  const db = await freshDatabase(dialect, 'bench300')
  if (db.skipReason) {
    console.log(JSON.stringify({ dialect, skipped: db.skipReason }))
    return
  }
  try {
    const setup = createKnex(db.url)
    const t0 = performance.now()
    if (dialect === 'sqlite') {
      await setup.knex.transaction(async (trx) => { for (const s of ddl(dialect, TABLES)) await trx.raw(s) })
    } else {
      for (const s of ddl(dialect, TABLES)) await setup.knex.raw(s)
    }
    const setupMs = performance.now() - t0
    await setup.knex.destroy()

    // A new connection, as at gateway start.
    const buildSchema = await loadBuildSchema()
    const start = performance.now()
    const { knex } = createKnex(db.url)
    const doc = await introspect(knex, dialect)
    const introspectMs = performance.now() - start
    let buildSchemaMs: number | null = null
    let types: number | null = null
    if (buildSchema) {
      const b = performance.now()
      // graphql-js collects types recursively: a very long foreign-key chain (--tables 1000) can
      // exceed the default stack; run node with --stack-size=8000 for those sizes.
      const built = buildSchema(doc) as { getTypeMap?: () => Record<string, unknown>; schema?: { getTypeMap(): Record<string, unknown> } }
      buildSchemaMs = performance.now() - b
      const typeMap = built.getTypeMap?.() ?? built.schema?.getTypeMap()
      types = typeMap ? Object.keys(typeMap).length : null
    }
    await knex.destroy()
    const totalMs = introspectMs + (buildSchemaMs ?? 0)
    const fks = doc.tables.reduce((n, t) => n + t.foreignKeys.length, 0)
    console.log(JSON.stringify({
      dialect, tables: doc.tables.length, foreignKeys: fks, setupMs: Math.round(setupMs),
      introspectMs: Math.round(introspectMs), buildSchemaMs: buildSchemaMs === null ? 'buildSchema not found' : Math.round(buildSchemaMs),
      totalMs: Math.round(totalMs), types, targetMs: TARGET_MS, pass: totalMs < TARGET_MS,
    }))
  } finally {
    await db.cleanup()
  }
}

const dialects: Dialect[] = ['sqlite']
if (args.includes('--postgres')) dialects.push('postgres')
if (args.includes('--mysql')) dialects.push('mysql')
for (const d of dialects) await run(d)
