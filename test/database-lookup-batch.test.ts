/**
 * Batched lookups (gateway/connectors/database/lookup-batch.ts): concurrent `findUnique` direct plans
 * of one statement on PostgreSQL share one `unnest($1::<type>[]) WITH ORDINALITY` statement, whose
 * rows are split back by key. Answers must equal the unbatched ones; different selections never
 * share; the statement's error reaches every member; a member's client gone leaves the batch alone;
 * the batch size is capped. Statements are counted from the debug "sql" log. Skips without PostgreSQL.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { Kind, getVariableValues, parse, type FragmentDefinitionNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { database } from '../gateway/config/index.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { startLoggedGateway } from './helpers/db-gateway.js'
import type { DirectFieldExtension, DirectJsonPlan } from '../gateway/connectors/database/direct.js'
import { freshDatabase, type TestDatabase } from './helpers/chinook.js'
import { testContext, type SqlLog } from './helpers/database-source.js'

const BATCHED = /^SELECT __k\.i::int4, __b\.j FROM unnest\(\$1::(\w+)\[\]\) WITH ORDINALITY AS __k\(v, i\) CROSS JOIN LATERAL \(/

/** The direct plan of the document's single root field, and a runner with coerced variables. */
function planOf(schema: GraphQLSchema, query: string): (variables: Record<string, unknown>, context?: unknown) => Promise<string> {
  const document = parse(query)
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!
  const fragments: Record<string, FragmentDefinitionNode> = {}
  const field = operation.selectionSet.selections[0]!
  if (field.kind !== Kind.FIELD) throw new Error('a field')
  const ext = schema.getQueryType()!.getFields()[field.name.value]!.extensions['tributary'] as DirectFieldExtension
  const plan: DirectJsonPlan | null = ext.direct!({ schema, field, fragments, variableDefinitions: operation.variableDefinitions ?? [] })
  if (!plan) throw new Error(`no direct plan: ${query}`)
  return (variables, context = {}) => {
    const r = getVariableValues(schema, operation.variableDefinitions ?? [], variables)
    if (r.errors) throw r.errors[0]
    return plan.run(r.coerced, context)
  }
}

interface Setup {
  db: TestDatabase
  schema: GraphQLSchema
  log: SqlLog
  admin: pg.Client
}

async function setup(t: Test, label: string, options: { lookupBatchSize?: number; statementTimeoutMs?: number } = {}): Promise<Setup | null> {
  const db = await freshDatabase('postgres', label)
  t.teardown(db.cleanup)
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return null
  }
  const admin = new pg.Client({ connectionString: process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' })
  await admin.connect()
  t.teardown(() => admin.end())
  const s = `"${db.schema!}"`
  await admin.query(`create table ${s}.lb_item (id int primary key, code varchar(20) not null unique, label text, n int not null)`)
  await admin.query(`insert into ${s}.lb_item select i, 'c' || i, case when i % 3 = 0 then null else 'item "' || i || '"' end, i * 10 from generate_series(1, 30) i`)
  await admin.query(`create table ${s}.lb_tag (id uuid primary key, item_id int not null references ${s}.lb_item(id), name text not null)`)
  await admin.query(`insert into ${s}.lb_tag values ('00000000-0000-0000-0000-000000000001', 1, 'one'), ('00000000-0000-0000-0000-000000000002', 2, 'two')`)
  await admin.query(`create table ${s}.lb_pair (a int, b text, v int, primary key (a, b))`)
  await admin.query(`insert into ${s}.lb_pair values (1, 'x', 1), (2, 'y', 2)`)
  const { ctx, log } = testContext('lb')
  const source = await createDatabaseSource({ url: db.url, ...options }, ctx)
  t.teardown(() => source.close())
  return { db, schema: source.schema, log, admin }
}

/** Runs each lookup alone (one after the other: every batch has one member), as without batching. */
async function alone(run: (v: Record<string, unknown>) => Promise<string>, values: Record<string, unknown>[]): Promise<string[]> {
  const out: string[] = []
  for (const v of values) out.push(await run(v))
  return out
}

const ITEM = 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id code label n __typename tags: lbTags(orderBy: [{ name: asc }]) { name } } }'

t.test('postgres: concurrent lookups share one statement, answers as unbatched', async (t) => {
  const s = await setup(t, 'lb-share')
  if (!s) return
  const byId = planOf(s.schema, ITEM)
  const keys = [1, 2, 3, 99, 2, 1, 30, 31]
  s.log.clear()
  const expected = await alone(byId, keys.map((id) => ({ id })))
  t.equal(expected[3], 'null', 'a missing key is null')
  t.match(expected[0], /^\{"id":1,"code":"c1","label":"item \\"1\\"","n":10,"__typename":"LbItem","tags":\[\{"name":"one"\}\]\}$/)
  t.equal(s.log.statements.length, keys.length, 'alone: one statement each')
  t.notOk(s.log.statements.some((x) => BATCHED.test(x.sql)), 'alone: the unbatched statement')
  s.log.clear()
  const got = await Promise.all(keys.map((id) => byId({ id })))
  t.same(got, expected, 'byte for byte the unbatched answers, duplicates and missing keys included')
  t.equal(s.log.statements.length, 1, 'one statement for the 8 lookups')
  const st = s.log.statements[0]!
  t.match(st.sql, BATCHED, 'the batched statement')
  t.equal(BATCHED.exec(st.sql)![1], 'int4')
  t.same(st.bindings, [[1, 2, 3, 99, 30, 31]], 'each key once, in order')

  // A varchar unique key, a uuid key: batched with their own array types.
  const byCode = planOf(s.schema, 'query($c: String!) { findUniqueLbItem(where: { code: $c }) { id label } }')
  const codes = ['c5', 'c6', 'nope', 'c5']
  const codesAlone = await alone(byCode, codes.map((c) => ({ c })))
  s.log.clear()
  t.same(await Promise.all(codes.map((c) => byCode({ c }))), codesAlone, 'varchar key: same answers')
  t.equal(s.log.statements.length, 1)
  t.equal(BATCHED.exec(s.log.statements[0]!.sql)?.[1], 'varchar')
  const byTag = planOf(s.schema, 'query($id: String!) { findUniqueLbTag(where: { id: $id }) { id name } }')
  const tags = ['00000000-0000-0000-0000-000000000002', '00000000-0000-0000-0000-000000000009', '00000000-0000-0000-0000-000000000001']
  const tagsAlone = await alone(byTag, tags.map((id) => ({ id })))
  s.log.clear()
  t.same(await Promise.all(tags.map((id) => byTag({ id }))), tagsAlone, 'uuid key: same answers')
  t.equal(BATCHED.exec(s.log.statements[0]!.sql)?.[1], 'uuid')

  // A malformed uuid is a data exception of one member: each member then runs alone and gets its own answer.
  const bad = [...tags, 'not-a-uuid']
  const settled = await Promise.allSettled(bad.map((id) => byTag({ id })))
  t.same(settled.slice(0, 3).map((r) => (r.status === 'fulfilled' ? r.value : r.reason)), tagsAlone, 'the good keys still answer')
  t.equal(settled[3]!.status, 'rejected', 'the malformed key fails')
  const own = await byTag({ id: 'not-a-uuid' }).then(() => 'resolved', (err: { code?: unknown }) => err.code)
  t.equal((settled[3] as PromiseRejectedResult).reason.code, own, 'with the error it has alone')
})

t.test('postgres: different selections, compound keys and literals', async (t) => {
  const s = await setup(t, 'lb-shapes')
  if (!s) return
  const a = planOf(s.schema, 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id label } }')
  const b = planOf(s.schema, 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id n } }')
  const a2 = planOf(s.schema, 'query Other($id: Int!) { findUniqueLbItem(where: { id: $id }) { id label } }')
  s.log.clear()
  const got = await Promise.all([a({ id: 1 }), b({ id: 2 }), a({ id: 3 }), b({ id: 4 }), a2({ id: 5 })])
  t.same(got, ['{"id":1,"label":"item \\"1\\""}', '{"id":2,"n":20}', '{"id":3,"label":null}', '{"id":4,"n":40}', '{"id":5,"label":"item \\"5\\""}'])
  t.equal(s.log.statements.length, 2, 'one statement per selection (another document with the same selection shares)')
  t.same(s.log.statements.map((x) => x.bindings).sort(), [[[1, 3, 5]], [[2, 4]]])

  const pair = planOf(s.schema, 'query($a: Int!, $b: String!) { findUniqueLbPair(where: { a_b: { a: $a, b: $b } }) { v } }')
  s.log.clear()
  t.same(await Promise.all([pair({ a: 1, b: 'x' }), pair({ a: 2, b: 'y' }), pair({ a: 2, b: 'x' })]), ['{"v":1}', '{"v":2}', 'null'], 'compound key: answers')
  t.equal(s.log.statements.length, 3, 'compound keys are not batched')
  t.notOk(s.log.statements.some((x) => BATCHED.test(x.sql)))

  const lit1 = planOf(s.schema, '{ findUniqueLbItem(where: { id: 7 }) { id n } }')
  const lit2 = planOf(s.schema, '{ findUniqueLbItem(where: { id: 8 }) { id n } }')
  s.log.clear()
  t.same(await Promise.all([lit1({}), lit2({}), b({ id: 9 })]), ['{"id":7,"n":70}', '{"id":8,"n":80}', '{"id":9,"n":90}'], 'literal keys share with a variable key')
  t.equal(s.log.statements.length, 1)
})

t.test('postgres: the batch size is capped; 1 turns batching off', async (t) => {
  const s = await setup(t, 'lb-cap', { lookupBatchSize: 3 })
  if (!s) return
  const run = planOf(s.schema, 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id } }')
  s.log.clear()
  const got = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((id) => run({ id })))
  t.same(got, [1, 2, 3, 4, 5, 6, 7].map((id) => `{"id":${id}}`))
  // The three statements run at once, each on its own pooled connection: they are logged in the order
  // their connections came (a flake seen in CI), so they are compared as a set.
  const byText = (a: unknown, b: unknown) => JSON.stringify(a).localeCompare(JSON.stringify(b))
  t.same(
    s.log.statements.map((x) => (BATCHED.test(x.sql) ? x.bindings : ['alone', ...x.bindings])).sort(byText),
    [[[1, 2, 3]], [[4, 5, 6]], ['alone', 7]].sort(byText),
    'batches of 3 sent at once, the last lookup alone',
  )
  const off = await setup(t, 'lb-off', { lookupBatchSize: 1 })
  if (!off) return
  const run1 = planOf(off.schema, 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id } }')
  off.log.clear()
  t.same(await Promise.all([1, 2, 3].map((id) => run1({ id }))), ['{"id":1}', '{"id":2}', '{"id":3}'])
  t.equal(off.log.statements.length, 3, 'lookupBatchSize 1: no batching')
  t.notOk(off.log.statements.some((x) => BATCHED.test(x.sql)))
})

/** Polls until a statement of `schema`'s source waits for a lock. */
async function waitForLockWait(admin: pg.Client): Promise<void> {
  for (;;) {
    const r = await admin.query(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%__k.i::int4%'`)
    if ((r.rows[0] as { n: number }).n > 0) return
    await new Promise((r) => setTimeout(r, 10))
  }
}

t.test('postgres: errors and cancellations per member', async (t) => {
  const s = await setup(t, 'lb-errors', { statementTimeoutMs: 400 })
  if (!s) return
  const run = planOf(s.schema, 'query($id: Int!) { findUniqueLbItem(where: { id: $id }) { id n } }')
  await run({ id: 1 }) // warm the pool
  const locker = new pg.Client({ connectionString: process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' })
  await locker.connect()
  t.teardown(() => locker.end())
  const lock = async (): Promise<void> => {
    await locker.query('begin')
    await locker.query(`lock table "${s.db.schema!}".lb_item in access exclusive mode`)
  }

  // The shared statement times out: every member gets TRB_ERR_DB_TIMEOUT, as its own statement would.
  await lock()
  const codes = await Promise.all([1, 2, 3].map((id) => run({ id }).then(() => 'resolved', (err: { code?: unknown }) => err.code)))
  const aloneCode = await run({ id: 4 }).then(() => 'resolved', (err: { code?: unknown }) => err.code)
  await locker.query('rollback')
  t.same(codes, ['TRB_ERR_DB_TIMEOUT', 'TRB_ERR_DB_TIMEOUT', 'TRB_ERR_DB_TIMEOUT'], 'the statement error reaches every member')
  t.equal(aloneCode, 'TRB_ERR_DB_TIMEOUT', 'the same error as alone')

  // One member's client goes away: it is cancelled, the others are answered.
  await lock()
  const aborts = [new AbortController(), new AbortController(), new AbortController()]
  const pending = [5, 6, 7].map((id, i) => run({ id }, { signal: aborts[i]!.signal }).then((v) => v, (err: { code?: unknown }) => err.code))
  await waitForLockWait(s.admin)
  aborts[1]!.abort()
  t.equal(await pending[1], 'TRB_ERR_DB_CANCELLED', 'the member gone is cancelled at once')
  await locker.query('rollback')
  t.same(await Promise.all([pending[0], pending[2]]), ['{"id":5,"n":50}', '{"id":7,"n":70}'], 'the others still get their rows')

  // Every member gone: the statement is cancelled on the server.
  await lock()
  const all = [new AbortController(), new AbortController()]
  const gone = [8, 9].map((id, i) => run({ id }, { signal: all[i]!.signal }).then((v) => v, (err: { code?: unknown }) => err.code))
  await waitForLockWait(s.admin)
  for (const a of all) a.abort()
  t.same(await Promise.all(gone), ['TRB_ERR_DB_CANCELLED', 'TRB_ERR_DB_CANCELLED'])
  for (;;) {
    const r = await s.admin.query(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%__k.i::int4%'`)
    if ((r.rows[0] as { n: number }).n === 0) break
    await new Promise((r) => setTimeout(r, 10))
  }
  t.pass('the shared statement was cancelled while the lock was still held')
  await locker.query('rollback')
  t.same(await Promise.all([10, 11].map((id) => run({ id }))), ['{"id":10,"n":100}', '{"id":11,"n":110}'], 'the pool still serves batches')
})

t.test('postgres, through /graphql: the aliases of one document share a statement', async (t) => {
  const s = await setup(t, 'lb-http')
  if (!s) return
  const dir = mkdtempSync(join(tmpdir(), 'trb-lb-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const statements: string[] = []
  const base = await startLoggedGateway(t, [database({ namespace: 'lb', url: s.db.url })], dir, (x) => statements.push(x.sql))
  const post = async (query: string): Promise<string> => {
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query }) })
    return res.text()
  }
  const doc = '{ a: lb_findUniqueLbItem(where: { id: 1 }) { id label } b: lb_findUniqueLbItem(where: { id: 99 }) { id label } c: lb_findUniqueLbItem(where: { id: 2 }) { label id } d: lb_findUniqueLbItem(where: { id: 3 }) { id label } }'
  await post(doc) // plans, caches
  statements.length = 0
  t.equal(await post(doc), '{"data":{"a":{"id":1,"label":"item \\"1\\""},"b":null,"c":{"label":"item \\"2\\"","id":2},"d":{"id":3,"label":null}}}')
  t.equal(statements.length, 2, 'a, b and d in one statement; c (another selection order) alone')
  t.equal(statements.filter((x) => BATCHED.test(x)).length, 1)
})
