/**
 * Attack (issue 7, items 3 and 4): raw SQL and runaway statements, over real HTTP, on SQLite,
 * PostgreSQL and MariaDB.
 *
 * - `queryRaw`/`executeRaw` do not exist unless the source says `rawSql: true`.
 * - A statement past `statementTimeoutMs` (a recursive CTE through `queryRaw`, and the same CTE
 *   behind a view read with `findMany`, which takes the direct JSON path) answers
 *   `TRB_ERR_DB_TIMEOUT` (504 on /operations), is sent exactly once (statements counted from the
 *   debug SQL log), and `/health` keeps answering meanwhile.
 * - A write whose statement times out (an insert with a slow trigger) is rolled back, and the next
 *   write goes through (on SQLite the worker process held for the transaction was killed).
 * - When the client disconnects, its statement stops on the server (gone from `pg_stat_activity` /
 *   the MariaDB process list; on SQLite the worker process is killed, so the workers are free again).
 * - Afterwards normal requests still work.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import pg from 'pg'
import mysql from 'mysql2/promise'
import { database } from '../gateway/config/index.js'
import { startLoggedGateway } from './helpers/db-gateway.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase, mysqlUrl, postgresUrl } from './helpers/chinook.js'

const BIG = 1_000_000_000
/**
 * Rows for minutes on every engine: a recursive CTE (SQLite, PostgreSQL); on MariaDB, whose
 * `max_recursive_iterations` may stop a CTE at 1000 rows, a cross join of its sequence tables.
 */
const rowsSql = (dialect: Dialect): string =>
  dialect === 'mysql'
    ? 'SELECT a.seq * 100000 + b.seq AS x FROM seq_1_to_100000 a, seq_1_to_100000 b WHERE (a.seq * b.seq) % 7 <> 3'
    : `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${BIG}) SELECT x FROM c`
/** A statement that runs for minutes; `marker` finds it in the server's process list. */
const heavy = (dialect: Dialect, marker: string): string => `SELECT count(*) AS n, '${marker}' AS marker FROM (${rowsSql(dialect)}) r`

type Json = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] }

/**
 * A gateway over `url` with one source: `short` (400 ms timeout, raw SQL enabled) or `long` (60 s,
 * raw SQL left at its default, off).
 */
async function start(t: Test, url: string, kind: 'short' | 'long') {
  const statements: string[] = []
  const dir = mkdtempSync(join(tmpdir(), 'trb-attack-db-'))
  if (kind === 'short') {
    writeFileSync(join(dir, 'Heavy.graphql'), 'query Heavy($sql: String!) { short_queryRaw(query: $sql) }\n')
    writeFileSync(join(dir, 'SlowView.graphql'), 'query SlowView { short_findManySlow(take: 1, orderBy: [{ id: desc }]) { id } }\n')
    writeFileSync(join(dir, 'Items.graphql'), 'query Items { short_findManyItem { id name } }\n')
  }
  const source = kind === 'short' ? database({ namespace: 'short', url, rawSql: true, statementTimeoutMs: 400 }) : database({ namespace: 'long', url, statementTimeoutMs: 60_000 })
  const base = await startLoggedGateway(t, [source], dir, (s) => statements.push(s.sql))
  const graphql = async (query: string, signal?: AbortSignal) => {
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query }), ...(signal ? { signal } : {}) })
    return { status: res.status, body: (await res.json()) as Json }
  }
  const get = async (path: string) => {
    const res = await fetch(base + path, { headers: { accept: 'application/json' } })
    return { status: res.status, body: (await res.json()) as Json }
  }
  /** Milliseconds `/health` takes. */
  const health = async () => {
    const t0 = performance.now()
    const res = await fetch(`${base}/health`)
    await res.arrayBuffer()
    return performance.now() - t0
  }
  return { graphql, get, health, statements }
}

/** Creates `item` (3 rows) and the view `slow` (the CTE's rows) before the gateway starts. */
async function prepare(url: string, dialect: Dialect): Promise<void> {
  const { knex } = createKnex(url)
  try {
    await knex.schema.createTable('item', (tb) => {
      tb.integer('id').primary()
      tb.string('name', 50).notNullable()
    })
    await knex('item').insert([1, 2, 3].map((id) => ({ id, name: `item ${id}` })))
    // SQLite gives a view column computed by an expression no declared type (String in GraphQL): text it is.
    const id = dialect === 'sqlite' ? 'CAST(x AS TEXT)' : 'x'
    await knex.raw(`CREATE VIEW slow AS SELECT ${id} AS id FROM (${rowsSql(dialect)}) r`)
    // A table whose inserts run for minutes (a trigger reads the view): for the atomicity of a write that times out.
    await knex.schema.createTable('slowwrite', (tb) => {
      tb.integer('id').primary()
      tb.integer('n').notNullable()
    })
    if (dialect === 'sqlite') {
      await knex.raw('CREATE TRIGGER slowwrite_insert AFTER INSERT ON slowwrite BEGIN SELECT count(*) FROM slow; END')
    } else if (dialect === 'postgres') {
      await knex.raw('CREATE FUNCTION slowwrite_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM count(*) FROM slow; RETURN NEW; END $$')
      await knex.raw('CREATE TRIGGER slowwrite_insert BEFORE INSERT ON slowwrite FOR EACH ROW EXECUTE FUNCTION slowwrite_insert()')
    } else {
      await knex.raw('CREATE TRIGGER slowwrite_insert BEFORE INSERT ON slowwrite FOR EACH ROW SET NEW.n = (SELECT count(*) FROM slow)')
    }
  } finally {
    await knex.destroy()
  }
}

/** True while a statement reading the view `slow` runs on the server (PostgreSQL, MariaDB). */
async function running(dialect: Dialect): Promise<boolean> {
  if (dialect === 'postgres') {
    const c = new pg.Client({ connectionString: postgresUrl() })
    await c.connect()
    try {
      const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%\"slow\"%' AND state = 'active' AND pid <> pg_backend_pid()")
      return (r.rows[0] as { n: number }).n > 0
    } finally {
      await c.end()
    }
  }
  const c = await mysql.createConnection(mysqlUrl())
  try {
    const [rows] = await c.query("SELECT count(*) AS n FROM information_schema.processlist WHERE info LIKE '%`slow`%' AND command = 'Query' AND id <> CONNECTION_ID()")
    return Number((rows as { n: number }[])[0]!.n) > 0
  } finally {
    await c.end()
  }
}

async function until(cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await cond()) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return cond()
}

for (const dialect of ['sqlite', 'postgres', 'mysql'] as const) {
  t.test(`${dialect}: raw SQL and runaway statements over HTTP`, async (t) => {
    const db = await freshDatabase(dialect, 'attack-db')
    if (db.skipReason) {
      t.comment(`skipped: ${db.skipReason}`)
      return
    }
    t.teardown(db.cleanup)
    await prepare(db.url, dialect)
    const gw = await start(t, db.url, 'short')
    const long = await start(t, db.url, 'long')

    t.test('raw SQL is off unless the source enables it', async (t) => {
      const q = await long.graphql('{ long_queryRaw(query: "ATTACH DATABASE \'pwn.sqlite\' AS pwn") }')
      t.equal(q.body.data, undefined, 'not executed')
      t.match(q.body.errors?.[0]?.message, /Cannot query field "long_queryRaw"/)
      const m = await long.graphql('mutation { long_executeRaw(query: "select 1") }')
      t.match(m.body.errors?.[0]?.message, /Cannot query field "long_executeRaw"/)
      const ok = await gw.graphql('{ short_queryRaw(query: "select 1 as one") }')
      t.same(ok.body, { data: { short_queryRaw: [{ one: 1 }] } }, 'a source with rawSql: true has it')
    })

    t.test('a runaway raw statement times out (504 on /operations), runs once, /health stays fast', async (t) => {
      gw.statements.length = 0
      const sql = heavy(dialect, 'trb-timeout-raw')
      const t0 = performance.now()
      const pending = gw.get(`/operations/Heavy?sql=${encodeURIComponent(sql)}`)
      await new Promise((r) => setTimeout(r, 100))
      const healthMs = await gw.health()
      const res = await pending
      const elapsed = performance.now() - t0
      t.equal(res.status, 504)
      t.equal(res.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_TIMEOUT')
      t.notMatch(JSON.stringify(res.body), /SELECT/i, 'no SQL in the answer')
      t.ok(elapsed < 5000, `answered in ${Math.round(elapsed)} ms`)
      t.ok(healthMs < 1000, `/health answered in ${Math.round(healthMs)} ms meanwhile`)
      t.equal(gw.statements.filter((s) => s.includes('trb-timeout-raw')).length, 1, 'sent exactly once')
    })

    t.test('a runaway model query (direct JSON path) times out and is not run again', async (t) => {
      gw.statements.length = 0
      const viaOperation = await gw.get('/operations/SlowView')
      t.equal(viaOperation.status, 504)
      t.equal(viaOperation.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_TIMEOUT')
      t.equal(gw.statements.filter((s) => /slow/i.test(s)).length, 1, '/operations: one statement')
      gw.statements.length = 0
      const viaGraphql = await gw.graphql('{ short_findManySlow(take: 1, orderBy: [{ id: desc }]) { id } }')
      t.equal(viaGraphql.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_TIMEOUT')
      t.equal(viaGraphql.body.data, null)
      t.equal(gw.statements.filter((s) => /slow/i.test(s)).length, 1, '/graphql: one statement')
    })

    t.test('a write that times out is rolled back and does not hold the database', async (t) => {
      const res = await gw.graphql('mutation { short_createOneSlowwrite(data: { id: 1, n: 0 }) { id } }')
      t.equal(res.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_TIMEOUT')
      const rows = await gw.graphql('{ short_findManySlowwrite { id } }')
      t.same(rows.body, { data: { short_findManySlowwrite: [] } }, 'nothing was written')
      const t0 = performance.now()
      const write = await gw.graphql('mutation { short_updateOneItem(where: { id: 3 }, data: { name: { set: "item 3" } }) { id } }')
      t.same(write.body, { data: { short_updateOneItem: { id: 3 } } }, 'the next write goes through')
      t.ok(performance.now() - t0 < 3000, `in ${Math.round(performance.now() - t0)} ms`)
    })

    t.test('a client that disconnects has its statement cancelled', async (t) => {
      const controllers = [new AbortController(), new AbortController()]
      const requests = controllers.map((c) => long.graphql('{ long_findManySlow(take: 1, orderBy: [{ id: desc }]) { id } }', c.signal).catch((err: Error) => err))
      if (dialect !== 'sqlite') t.ok(await until(() => running(dialect), 5000), 'the statement runs on the server')
      else await new Promise((r) => setTimeout(r, 300))
      for (const c of controllers) c.abort()
      for (const r of await Promise.all(requests)) t.ok(r instanceof Error, 'the client gave up')
      if (dialect !== 'sqlite') t.ok(await until(async () => !(await running(dialect)), 5000), 'the statements are gone from the server')
      // Both SQLite worker processes were busy with the two statements: a read needing a worker
      // answers at once only because they were killed (otherwise it would wait for minutes).
      const t0 = performance.now()
      const after = await long.graphql('{ long_findManyItem(orderBy: [{ id: asc }]) { id name } }')
      t.same(after.body, { data: { long_findManyItem: [1, 2, 3].map((id) => ({ id, name: `item ${id}` })) } })
      t.ok(performance.now() - t0 < 3000, `a normal query answered in ${Math.round(performance.now() - t0)} ms`)
    })

    t.test('a document with many aliases watches its client with one close listener', async (t) => {
      // Each statement in flight watches the client's disconnect; 12 aliases run 12 at once. They
      // share one `close` listener per response, so Node never warns of a listener leak.
      const warnings: string[] = []
      const onWarning = (w: Error) => void warnings.push(w.name)
      process.on('warning', onWarning)
      t.teardown(() => void process.off('warning', onWarning))
      const aliases = Array.from({ length: 12 }, (_, i) => `a${i}: long_findManyItem(orderBy: [{ id: asc }]) { id }`).join(' ')
      const res = await long.graphql(`{ ${aliases} }`)
      t.equal(res.status, 200)
      t.same(Object.keys(res.body.data ?? {}).length, 12, 'every alias answered')
      t.same(res.body.data?.a11, [{ id: 1 }, { id: 2 }, { id: 3 }])
      await new Promise((r) => setImmediate(r))
      t.notOk(warnings.includes('MaxListenersExceededWarning'), 'no MaxListenersExceededWarning')
    })

    t.test('normal requests still work', async (t) => {
      const items = await gw.get('/operations/Items')
      t.equal(items.status, 200)
      t.same(items.body, { short_findManyItem: [1, 2, 3].map((id) => ({ id, name: `item ${id}` })) }, '/operations answers the data object')
      const one = await gw.graphql('{ short_findUniqueItem(where: { id: 2 }) { id name } }')
      t.same(one.body, { data: { short_findUniqueItem: { id: 2, name: 'item 2' } } })
      const write = await gw.graphql('mutation { short_createOneItem(data: { id: 4, name: "item 4" }) { id name } }')
      t.same(write.body, { data: { short_createOneItem: { id: 4, name: 'item 4' } } })
      t.ok((await gw.health()) < 1000)
    })
  })
}
