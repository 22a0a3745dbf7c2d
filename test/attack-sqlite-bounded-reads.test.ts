/**
 * Attack (issue 7's rule, relaxed for issue 9's speed target): on a SQLite file, only reads whose rows
 * read are provably bounded run on the gateway's event loop; everything else goes to a worker process.
 *
 * A `findMany`/`findFirst` of one table with no `where`/`cursor`/`skip`/`distinct`, a bound `take`
 * of at most 100 and a query plan that is one scan in index order runs in process (README "Where
 * SQLite statements run"). Queries shaped like that one but heavy on a big table — an `orderBy` on
 * an unindexed column (a sort of every row), a `where` on any column, an OFFSET, a larger `take`
 * (inline or through a variable), a nested relation, `distinct`, a cursor, and a view whose own
 * query scans `big AS t0` with a filter (its plan line looks exactly like a cheap scan) — must run
 * in a worker: the debug `sql` log line says `"worker": true`, and the unindexed sort on 400,000
 * rows is stopped by the statement timeout, which only worker processes enforce. A bounded read whose
 * rows turn out wide (100 rows of 20,000 characters) runs in process once, then in a worker.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import Database from 'better-sqlite3'
import { database } from '../gateway/config/index.js'
import { startLoggedGateway, type LoggedStatement } from './helpers/db-gateway.js'
import { IN_PROCESS_MAX_CHARS } from '../gateway/connectors/database/compiler/db.js'

const ROWS = 400_000

type Json = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] }

const dir = mkdtempSync(join(tmpdir(), 'trb-bounded-reads-'))
const file = join(dir, 'big.sqlite')
{
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec(`
    CREATE TABLE big (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT NOT NULL, n INTEGER NOT NULL);
    CREATE INDEX big_n ON big (n);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${ROWS})
      INSERT INTO big (id, name, tag, n) SELECT x, 'name ' || x, hex(randomblob(8)), (x * 7919) % ${ROWS} FROM c;
    CREATE TABLE part (id INTEGER PRIMARY KEY, bigId INTEGER NOT NULL REFERENCES big (id));
    CREATE INDEX part_bigId ON part (bigId);
    INSERT INTO part (id, bigId) VALUES (1, 1), (2, 1), (3, 2);
    CREATE VIEW bigview AS SELECT t0.id AS id, t0.name AS name FROM big AS t0 WHERE t0.tag = 'none';
    CREATE TABLE wide (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100)
      INSERT INTO wide (id, body) SELECT x, hex(randomblob(10000)) FROM c;
  `)
  db.close()
}
writeFileSync(join(dir, 'FirstBig.graphql'), 'query FirstBig($take: Int!) { b_findManyBig(take: $take, orderBy: [{ id: asc }]) { id } }\n')

/** Each statement the sources sent: its SQL and whether it went to a worker process. */
const statements: LoggedStatement[] = []
// `b` with the default timeout; `s`, the same file, with a 25 ms one for the timeout check.
const base = await startLoggedGateway(t, [database({ namespace: 'b', url: `sqlite:${file}` }), database({ namespace: 's', url: `sqlite:${file}`, statementTimeoutMs: 25 })], dir, (s) => statements.push(s))

/** Runs a query over HTTP; returns its answer and where its one statement ran. */
async function run(query: string, variables?: Record<string, unknown>): Promise<{ body: Json; worker: boolean | undefined; count: number }> {
  statements.length = 0
  const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
  const body = (await res.json()) as Json
  const own = statements.filter((s) => /"big"|"bigview"|"wide"/.test(s.sql))
  return { body, worker: own[0]?.worker, count: own.length }
}

t.test('bounded reads run in the gateway process', async (t) => {
  const cases: [string, string][] = [
    ['primary-key order', '{ b_findManyBig(take: 50, orderBy: [{ id: asc }]) { id name } }'],
    ['primary-key order, descending', '{ b_findManyBig(take: 50, orderBy: [{ id: desc }]) { id } }'],
    // ORDER BY n, id (the primary key is added as a tiebreak): the index on n holds its rows in that order.
    ['indexed column order', '{ b_findManyBig(take: 100, orderBy: [{ n: asc }]) { id n } }'],
    ['no order', '{ b_findManyBig(take: 3) { id } }'],
    ['findFirst', '{ b_findFirstBig(orderBy: [{ id: asc }]) { id } }'],
    ['findUnique', '{ b_findUniqueBig(where: { id: 7 }) { id } }'],
  ]
  for (const [name, query] of cases) {
    const r = await run(query)
    t.notOk(r.body.errors, `${name}: no error`)
    t.equal(r.count, 1, `${name}: one statement`)
    t.equal(r.worker, false, `${name}: in process`)
  }
  const rows = (await run('{ b_findManyBig(take: 50, orderBy: [{ id: asc }]) { id name } }')).body.data?.['b_findManyBig'] as { id: number }[]
  t.same(rows.map((r) => r.id), Array.from({ length: 50 }, (_, i) => i + 1), 'the first 50 rows')
  const variable = await run('query ($take: Int!) { b_findManyBig(take: $take, orderBy: [{ id: asc }]) { id } }', { take: 100 })
  t.equal(variable.worker, false, 'take: $take = 100 in process')
})

t.test('heavy queries shaped like bounded ones go to a worker', async (t) => {
  const cases: [string, string, Record<string, unknown>?][] = [
    ['an orderBy on an unindexed column (a sort of every row)', '{ b_findManyBig(take: 50, orderBy: [{ tag: asc }]) { id } }'],
    ['a where on an unindexed column', '{ b_findManyBig(take: 50, where: { tag: { equals: "none" } }) { id } }'],
    ['a where on the primary key', '{ b_findManyBig(take: 50, where: { id: { lt: 10 } }) { id } }'],
    ['take above 100', '{ b_findManyBig(take: 101, orderBy: [{ id: asc }]) { id } }'],
    ['take above 100 through a variable', 'query ($take: Int!) { b_findManyBig(take: $take, orderBy: [{ id: asc }]) { id } }', { take: 500 }],
    // ORDER BY n DESC, id ASC: the index gives n's order only, rows of equal n are sorted (a group could be the whole table).
    ['an indexed column order that still needs a partial sort', '{ b_findManyBig(take: 50, orderBy: [{ n: desc }]) { id } }'],
    ['no take (the source maxTake)', '{ b_findManyBig(orderBy: [{ id: asc }]) { id } }'],
    ['skip (an OFFSET reads the rows it skips)', '{ b_findManyBig(take: 1, skip: 390000, orderBy: [{ id: asc }]) { id } }'],
    ['a nested relation', '{ b_findManyBig(take: 2, orderBy: [{ id: asc }]) { id parts { id } } }'],
    ['distinct', '{ b_findManyBig(take: 5, distinct: [tag]) { id } }'],
    ['a cursor', '{ b_findManyBig(take: 5, cursor: { id: 10 }, orderBy: [{ id: asc }]) { id } }'],
    ['a view whose plan line reads SCAN t0', '{ b_findManyBigview(take: 1) { id } }'],
    ['a negative take', '{ b_findManyBig(take: -5, orderBy: [{ id: asc }]) { id } }'],
  ]
  for (const [name, query, variables] of cases) {
    const r = await run(query, variables)
    t.equal(r.count, 1, `${name}: one statement`)
    t.equal(r.worker, true, `${name}: in a worker process`)
  }
})

t.test('the unindexed sort is stopped by the statement timeout (only workers have one)', async (t) => {
  // A sort that reads past 300,000 rows (about 230 ms in memory here): far past the 25 ms timeout. The
  // top 50 alone took about 16 ms on a fast machine, so its result could beat the timeout's timer.
  const r = await run('{ s_findManyBig(take: 50, skip: 300000, orderBy: [{ tag: asc }]) { id } }')
  t.equal(r.body.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_TIMEOUT', 'TRB_ERR_DB_TIMEOUT')
  t.equal(r.worker, true)
})

t.test('a stored operation: the LIMIT decides at run time, per request', async (t) => {
  for (const [take, worker] of [[50, false], [100, false], [101, true], [1000, true]] as const) {
    statements.length = 0
    const res = await fetch(`${base}/operations/FirstBig?take=${take}`)
    t.equal(res.status, 200, `take=${take}: 200`)
    const body = (await res.json()) as Record<string, unknown[]>
    t.equal(body['b_findManyBig']?.length, take, `take=${take}: ${take} rows`)
    const own = statements.filter((s) => s.sql.includes('"big"'))
    t.equal(own.length, 1)
    t.equal(own[0]?.worker, worker, `take=${take}: ${worker ? 'worker' : 'in process'}`)
  }
})

t.test('a bounded read whose rows are wide runs in process once, then in a worker', async (t) => {
  // 100 rows of 20,000 characters: 2 MB of JSON, over IN_PROCESS_MAX_CHARS (512 Ki).
  t.ok(IN_PROCESS_MAX_CHARS < 2_000_000)
  const query = '{ b_findManyWide(take: 100, orderBy: [{ id: asc }]) { id body } }'
  const first = await run(query)
  t.notOk(first.body.errors)
  t.equal(first.worker, false, 'the first call: in process (nothing known about its rows yet)')
  const rows = first.body.data?.['b_findManyWide'] as { id: number; body: string }[]
  t.equal(rows.length, 100)
  t.ok(rows.every((r) => r.body.length === 20_000))
  for (let i = 0; i < 2; i++) {
    const next = await run(query)
    t.equal(next.worker, true, `call ${i + 2}: in a worker process`)
    t.same(next.body, first.body, 'the same answer')
  }
  const narrow = await run('{ b_findManyWide(take: 100, orderBy: [{ id: asc }]) { id } }')
  t.equal(narrow.worker, false, 'a narrow read of the same table (another SQL text) stays in process')
})
