/**
 * PostgreSQL direct answers as latin1-coded UTF-8 (connection.ts `pgJsonAsLatin1`, direct.ts
 * `Latin1Context`, response-limit.ts `limitLatin1Response`): a `/graphql` operation of one database
 * root field takes its rows as bytes and sends them as bytes, never UTF-8 decoding nor encoding them.
 * The answers must be byte for byte the ordinary ones (non-ASCII, 4-byte characters, control
 * characters, quotes), the result budget and `server.maxResponseBytes` must refuse exactly what
 * they refused, with the same errors. Skips without PostgreSQL.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { Kind, parse, type GraphQLSchema, type OperationDefinitionNode } from 'graphql'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { database } from '../gateway/config/index.js'
import { LATIN1_PG_MAJOR, createKnex, latin1Ready } from '../gateway/connectors/database/connection.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import type { DirectFieldExtension, Latin1Context } from '../gateway/connectors/database/direct.js'
import { resultBudget } from '../gateway/result-budget.js'
import { startLoggedGateway } from './helpers/db-gateway.js'
import { freshDatabase, postgresUrl, type TestDatabase } from './helpers/chinook.js'
import { testContext } from './helpers/database-source.js'

const NAMES = ['Antônio Carlos Jobim', '日本語のタイトル', 'emoji 😀 and 𝄞', 'control \u0001 and \u001f', 'quote " and backslash \\', 'plain ascii', 'Motörhead ü ß é', '']

async function setup(t: Test, label: string): Promise<{ db: TestDatabase; schema: GraphQLSchema } | null> {
  const db = await freshDatabase('postgres', label)
  t.teardown(db.cleanup)
  if (db.skipReason) return (t.skip(db.skipReason, async () => {}), null)
  const admin = new pg.Client({ connectionString: postgresUrl() })
  t.teardown(() => admin.end())
  await admin.connect()
  const s = `"${db.schema!}"`
  await admin.query(`create table ${s}.l1_item (id int primary key, name text)`)
  await admin.query(`create table ${s}.l1_part (id int primary key, item_id int not null references ${s}.l1_item(id), title text not null)`)
  for (let i = 0; i < NAMES.length; i++) {
    await admin.query(`insert into ${s}.l1_item values ($1, $2)`, [i + 1, NAMES[i]])
    for (let j = 0; j < 3; j++) await admin.query(`insert into ${s}.l1_part values ($1, $2, $3)`, [i * 10 + j + 1, i + 1, `${NAMES[(i + j) % NAMES.length]} #${j}`])
  }
  await admin.query(`insert into ${s}.l1_item values (100, null)`)
  // A view whose rows each raise a notice (non-ASCII text) while the statement sends its rows.
  await admin.query(`create function ${s}.l1_noisy(t text) returns text language plpgsql as $$ begin raise notice 'ñotice %', t; return t; end $$`)
  await admin.query(`create view ${s}.l1_noisy_item as select id, ${s}.l1_noisy(name) as name from ${s}.l1_item`)
  const { ctx } = testContext('l1')
  const source = await createDatabaseSource({ url: db.url }, ctx)
  t.teardown(() => source.close())
  return { db, schema: source.schema }
}

const QUERY = '{ findManyL1Item(orderBy: [{ id: asc }]) { id name parts: l1Parts(orderBy: [{ id: asc }]) { id title } } }'

/** The direct plan of the document's single root field. */
function planOf(schema: GraphQLSchema, query: string) {
  const operation = parse(query).definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!
  const field = operation.selectionSet.selections[0]!
  if (field.kind !== Kind.FIELD) throw new Error('a field')
  const ext = schema.getQueryType()!.getFields()[field.name.value]!.extensions['tributary'] as DirectFieldExtension
  const plan = ext.direct!({ schema, field, fragments: {}, variableDefinitions: [] })
  if (!plan) throw new Error(`no direct plan: ${query}`)
  return plan
}

t.test('postgres: a latin1 run gives the ordinary answer\'s bytes; the result budget refuses exactly as before', async (t) => {
  const s = await setup(t, 'l1-plan')
  if (!s) return
  const plan = planOf(s.schema, QUERY)
  const ordinary = await plan.run({}, {})
  t.match(ordinary, /Antônio/, 'non-ASCII text in the answer')
  const context: Latin1Context = { latin1Json: true }
  const latin1 = await plan.run({}, context)
  t.equal(context.latin1Used, true, 'the plan says its text is latin1-coded')
  t.equal(latin1.length, Buffer.byteLength(ordinary), 'one character per UTF-8 byte')
  t.equal(Buffer.from(latin1, 'latin1').toString('utf8'), ordinary, 'the same answer, byte for byte')
  t.same(JSON.parse(ordinary).map((r: { name: string }) => r.name), [...NAMES, null])

  // The budget counts the rows' UTF-16 units (the answer without its brackets and commas): exactly
  // enough passes, one unit less fails, in both forms.
  const units = ordinary.length - (JSON.parse(ordinary).length + 1)
  t.ok(units < latin1.length - (JSON.parse(ordinary).length + 1), 'fewer units than bytes: the budget must not count bytes')
  const exact = { latin1Json: true, resultBudget: resultBudget(units) }
  t.equal(Buffer.from(await plan.run({}, exact), 'latin1').toString('utf8'), ordinary, 'a budget of exactly its units passes')
  await t.rejects(plan.run({}, { resultBudget: resultBudget(units - 1) }), { code: 'TRB_ERR_GRAPHQL_LIMIT' }, 'ordinary: one unit less fails')
  await t.rejects(plan.run({}, { latin1Json: true, resultBudget: resultBudget(units - 1) }), { code: 'TRB_ERR_GRAPHQL_LIMIT' }, 'latin1: one unit less fails the same way')
})

t.test('postgres: notices among the rows leave the rows latin1-coded', async (t) => {
  const s = await setup(t, 'l1-notice')
  if (!s) return
  const plan = planOf(s.schema, '{ findManyL1NoisyItem(orderBy: [{ id: asc }]) { id name } }')
  const ordinary = await plan.run({}, {})
  const context: Latin1Context = { latin1Json: true }
  const latin1 = await plan.run({}, context)
  t.equal(context.latin1Used, true)
  t.equal(Buffer.from(latin1, 'latin1').toString('utf8'), ordinary, 'every row as the ordinary answer\'s')
  t.same(JSON.parse(ordinary).map((r: { name: string }) => r.name), [...NAMES, null])
})

t.test('postgres: /graphql sends a single database field\'s answer as the same bytes; server.maxResponseBytes refuses it as before', async (t) => {
  const s = await setup(t, 'l1-http')
  if (!s) return
  const dir = mkdtempSync(join(tmpdir(), 'trb-l1-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const base = await startLoggedGateway(t, [database({ namespace: 'l1', url: s.db.url })], dir, () => {})
  const post = async (query: string) => {
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
    return { status: res.status, length: res.headers.get('content-length'), type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) }
  }
  const selection = 'findManyL1Item(orderBy: [{ id: asc }]) { id name parts: l1Parts(orderBy: [{ id: asc }]) { id title } }'
  const one = await post(`{ l1_${selection} }`)
  // Two root fields run as ordinary strings: the first field's text is the reference.
  const two = await post(`{ l1_${selection} other: l1_findManyL1Item(take: 1) { id } }`)
  t.equal(one.status, 200)
  t.equal(two.status, 200)
  const text = two.bytes.toString('utf8')
  const reference = `${text.slice(0, text.lastIndexOf(',"other":'))}}}`
  t.equal(one.bytes.toString('utf8'), reference, 'the same answer')
  t.ok(one.bytes.equals(Buffer.from(reference)), 'byte for byte')
  t.equal(one.length, String(Buffer.byteLength(reference)), 'Content-Length is its UTF-8 size')
  t.equal(one.type, 'application/json; charset=utf-8')
  t.same(JSON.parse(reference).data.l1_findManyL1Item[2].name, NAMES[2])
})

t.test('postgres: a batch of /graphql requests carries the same answers as the requests alone', async (t) => {
  const s = await setup(t, 'l1-batch')
  if (!s) return
  const dir = mkdtempSync(join(tmpdir(), 'trb-l1-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { resolveConfig } = await import('../gateway/config/index.js')
  const { serveGateway } = await import('./helpers/serve.js')
  const config = resolveConfig({ datasources: [database({ namespace: 'l1', url: s.db.url })], operations: { dir }, generatedDir: join(dir, 'generated'), graphql: { batching: { maxOperations: 5 } } })
  const { url } = await serveGateway(t, config)
  const query = QUERY.replace('findManyL1Item', 'l1_findManyL1Item')
  const post = async (body: unknown) => Buffer.from(await (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).arrayBuffer()).toString('utf8')
  const alone = await post({ query })
  t.match(alone, /日本語/)
  t.equal(await post([{ query }, { query: '{ l1_findManyL1Item(take: 1) { id } }' }]), `[${alone},{"data":{"l1_findManyL1Item":[{"id":1}]}}]`, 'each element as its request alone')
})

t.test('postgres: a latin1 answer over server.maxResponseBytes is refused with the same 400 as an ordinary one', async (t) => {
  const s = await setup(t, 'l1-limit')
  if (!s) return
  const dir = mkdtempSync(join(tmpdir(), 'trb-l1-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const plan = planOf(s.schema, QUERY)
  const data = await plan.run({}, {})
  const body = `{"data":{"l1_findManyL1Item":${data}}}`
  const bytes = Buffer.byteLength(body)
  // Statement text within the budget (units), the whole answer one byte over the limit.
  const max = bytes - 1
  t.ok(data.length <= max, 'the statement\'s text fits the result budget')
  const { resolveConfig } = await import('../gateway/config/index.js')
  const { serveGateway } = await import('./helpers/serve.js')
  const config = resolveConfig({ datasources: [database({ namespace: 'l1', url: s.db.url })], operations: { dir }, generatedDir: join(dir, 'generated'), server: { maxResponseBytes: max } })
  const { url } = await serveGateway(t, config)
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: QUERY.replace('findManyL1Item', 'l1_findManyL1Item') }) })
  t.equal(res.status, 400)
  const answer = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] }
  t.equal(answer.errors[0]!.extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.equal(answer.errors[0]!.message, `The response would be ${bytes} bytes, more than the maximum of ${max} (maxResponseBytes); ask for less`, 'its size in UTF-8 bytes, as before')
  t.equal(res.headers.get('cache-control'), 'no-store')
})

t.test(`postgres: with pg ${LATIN1_PG_MAJOR} (the lock file's), every pooled connection reads latin1 rows (not the fallback)`, async (t) => {
  const db = await freshDatabase('postgres', 'l1-ready')
  t.teardown(db.cleanup)
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return
  }
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const client = knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<unknown> }
  const conns = [await client.acquireConnection(), await client.acquireConnection()]
  for (const c of conns) t.ok(latin1Ready(c), 'its parser is the latin1 one')
  for (const c of conns) await client.releaseConnection(c)
})
