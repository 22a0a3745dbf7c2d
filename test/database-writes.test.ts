/**
 * The write side of the database connector on the real-world fixture (issue 10 items 1, 2, 3, 4, 6, 7),
 * on SQLite, PostgreSQL and MariaDB/MySQL: the `w_*` tables of test/fixtures/realworld/<engine>/50-writes.sql,
 * written through the gateway's execution (graphql-js `execute` and graphql-jit) and checked against
 * direct SQL. PostgreSQL and MySQL skip when unreachable.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { pino } from 'pino'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import type { ExecutionResult, GraphQLInputObjectType, GraphQLObjectType, GraphQLSchema } from 'graphql'
import type { Knex } from 'knex'
import { createDatabaseSource, type DatabaseSourceOptions } from '../gateway/connectors/database/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { composeSchema } from '../gateway/compose/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import type { LocalSubschema } from '../gateway/connectors/types.js'
import { EXEC_MODES, plain, run, testContext, type ExecMode, type SqlLog } from './helpers/database-source.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { pools } from '../gateway/observability/probes.js'

/** The `code` of each error of a result, in order. */
function codes(res: ExecutionResult): (string | undefined)[] {
  return (res.errors ?? []).map((e) => (e.originalError as { code?: string } | undefined)?.code ?? (e.extensions?.['code'] as string | undefined))
}

interface Env {
  dialect: Dialect
  url: string
  log: SqlLog
  schema: GraphQLSchema
  knex: Knex
  sql(text: string, bindings?: unknown[]): Promise<Record<string, unknown>[]>
  gql(mode: ExecMode, query: string, variables?: Record<string, unknown>): Promise<ExecutionResult>
}

/** A private real-world database on one engine, its gateway source (`rawSql` on) and a direct connection. */
async function setup(t: Test, dialect: Dialect, options: Partial<DatabaseSourceOptions> = {}): Promise<Env | null> {
  const db = await realworldDatabase(dialect, 'writes')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const { ctx, log } = testContext('rw')
  const source = (await createDatabaseSource({ url: db.url, rawSql: true, ...options }, ctx)) as LocalSubschema
  t.teardown(() => source.close())
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  return {
    dialect,
    url: db.url,
    log,
    schema: source.schema,
    knex,
    sql: (text, bindings = []) => rawRows(knex, dialect, text, bindings),
    gql: (mode, query, variables) => run(source.schema, mode, query, variables).then((r) => ({ ...r, data: plain(r.data) as ExecutionResult['data'] })),
  }
}

const DIALECTS: Dialect[] = ['sqlite', 'postgres', 'mysql']

for (const dialect of DIALECTS) {
  t.test(`${dialect}: createMany skipDuplicates skips only unique conflicts (item 1)`, async (t) => {
    const env = await setup(t, dialect)
    if (!env) return
    for (const mode of EXEC_MODES) {
      await env.sql('DELETE FROM w_entry')
      await env.sql('DELETE FROM w_account')
      const a = `a-${mode}@example.com`
      const ok = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "${a}" }, { email: "b-${mode}@x" }]) { count } }`)
      t.same(ok, { data: { createManyWAccount: { count: 2 } } }, `${mode}: two rows`)
      const dup = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "${a}" }, { email: "c-${mode}@x" }, { email: "c-${mode}@x" }], skipDuplicates: true) { count } }`)
      t.same(dup, { data: { createManyWAccount: { count: 1 } } }, `${mode}: the duplicate of a stored row and of an earlier row are skipped`)
      const one = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "${a}" }], skipDuplicates: true) { count } }`)
      t.same(one, { data: { createManyWAccount: { count: 0 } } }, `${mode}: a single duplicate counts 0`)
      const single = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "d-${mode}@x" }], skipDuplicates: true) { count } }`)
      t.same(single, { data: { createManyWAccount: { count: 1 } } }, `${mode}: a single new row counts 1`)
      t.same((await env.sql('SELECT email FROM w_account ORDER BY email')).map((r) => r['email']), [a, `b-${mode}@x`, `c-${mode}@x`, `d-${mode}@x`].sort(), `${mode}: the table holds exactly the unique rows`)

      // Every other violation fails the whole call and writes nothing.
      const check = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "e-${mode}@x" }, { email: "f-${mode}@x", score: -1 }], skipDuplicates: true) { count } }`)
      t.same(codes(check), ['TRB_ERR_DB_CHECK'], `${mode}: a CHECK violation is an error`)
      const [{ id }] = (await env.sql('SELECT id FROM w_account ORDER BY id')) as [{ id: number }]
      const fk = await env.gql(mode, `mutation { createManyWEntry(data: [{ accountId: ${id}, title: "fine" }, { accountId: 999999, title: "orphan" }], skipDuplicates: true) { count } }`)
      t.same(codes(fk), ['TRB_ERR_DB_FOREIGN_KEY'], `${mode}: a bad foreign key is an error`, { errors: fk.errors?.map((e) => e.message) })
      if (dialect !== 'sqlite') {
        const long = await env.gql(mode, `mutation { createManyWAccount(data: [{ email: "g-${mode}@x" }, { email: "${'x'.repeat(100)}" }], skipDuplicates: true) { count } }`)
        t.same(codes(long), ['TRB_ERR_DB_VALUE'], `${mode}: a value too long for varchar(45) is an error, not truncated`)
      }
      // A row of defaults only ({}) beside rows with values: one statement per column set, each skipping duplicates.
      await env.sql('DELETE FROM w_note')
      const notes = await env.gql(mode, 'mutation { createManyWNote(data: [{ body: "x" }, {}, {}], skipDuplicates: true) { count } }')
      t.same(notes, { data: { createManyWNote: { count: 3 } } }, `${mode}: rows of defaults only are inserted with skipDuplicates`)
      const [{ id: noteId }] = (await env.sql('SELECT MIN(id) AS id FROM w_note')) as [{ id: number }]
      const again = await env.gql(mode, `mutation { createManyWNote(data: [{ id: ${Number(noteId)} }, {}], skipDuplicates: true) { count } }`)
      t.same(again, { data: { createManyWNote: { count: 1 } } }, `${mode}: the duplicate id is skipped, the row of defaults inserted`)
      t.equal((await env.sql('SELECT COUNT(*) AS n FROM w_note'))[0]!['n'] + '', '4', `${mode}: w_note holds the four new rows`)
      const flood = await env.gql(mode, 'mutation ($rows: [WNoteCreateManyInput!]!) { createManyWNote(data: $rows) { count } }', { rows: Array.from({ length: 1001 }, () => ({})) })
      t.same(codes(flood), ['TRB_ERR_DB_INPUT'], `${mode}: more rows than maxTake (1000) in one createMany are refused`)
      t.equal((await env.sql('SELECT COUNT(*) AS n FROM w_note'))[0]!['n'] + '', '4', `${mode}: nothing of the refused call was written`)
      t.equal((await env.sql('SELECT COUNT(*) AS n FROM w_account'))[0]!['n'] + '', '4', `${mode}: nothing of the failed calls was written`)
      t.equal((await env.sql('SELECT COUNT(*) AS n FROM w_entry'))[0]!['n'] + '', '0', `${mode}: no entry written`)
    }
    if (dialect === 'mysql') {
      const res = await env.gql('execute', 'query { queryRaw(query: "SELECT @@SESSION.sql_mode AS m") }')
      t.match((res.data as { queryRaw: { m: string }[] }).queryRaw[0]!.m, /STRICT_ALL_TABLES/, 'pooled connections run in strict SQL mode')
    }
  })

  t.test(`${dialect}: the same GraphQL types on every engine (item 7)`, async (t) => {
    const env = await setup(t, dialect)
    if (!env) return
    const type = (name: string, field: string): string => String((env.schema.getType(name) as GraphQLObjectType).getFields()[field]!.type)
    t.equal(type('WAccount', 'id'), 'Int!', 'an (unsigned) integer key is Int')
    t.equal(type('WEntry', 'accountId'), 'Int!', 'an (unsigned) integer foreign key is Int')
    t.equal(type('WAccount', 'score'), 'Int!')
    if (dialect !== 'mysql') return
    t.equal(type('WAccount', 'visits'), 'Int!', 'smallint unsigned is Int')
    t.equal(type('WAccount', 'bigTotal'), 'BigInt!', 'bigint unsigned stays BigInt')
    for (const mode of EXEC_MODES) {
      t.same(await env.gql(mode, '{ findUniqueWCounter(where: { id: 7 }) { id label } }'), { data: { findUniqueWCounter: { id: 7, label: 'small' } } }, `${mode}: a small unsigned value reads as Int`)
      const big = await env.gql(mode, '{ findManyWCounter(orderBy: { id: asc }) { id label } }')
      t.same(codes(big), ['TRB_ERR_DB_VALUE'], `${mode}: a stored value above 2^31-1 is TRB_ERR_DB_VALUE`)
      t.match(big.errors?.[0]?.message, /4294967295 is above 2147483647/)
      t.same(await env.gql(mode, '{ findManyWCounter(where: { id: { lt: 100 } }) { label } }'), { data: { findManyWCounter: [{ label: 'small' }] } }, `${mode}: rows in range read fine`)
      const neg = await env.gql(mode, 'mutation { createOneWCounter(data: { id: -1, label: "neg" }) { id } }')
      t.same(codes(neg), ['TRB_ERR_DB_VALUE'], `${mode}: a negative value for an unsigned column is TRB_ERR_DB_VALUE`)
    }
  })
}

for (const dialect of DIALECTS) {
  t.test(`${dialect}: columns the database fills are optional or absent in inputs (item 6)`, async (t) => {
    const env = await setup(t, dialect)
    if (!env) return
    const input = (name: string): Record<string, string> =>
      Object.fromEntries(Object.values((env.schema.getType(name) as GraphQLInputObjectType).getFields()).map((f) => [f.name, String(f.type)]))
    const create = input('WEntryCreateInput')
    const update = input('WEntryUpdateInput')
    t.notOk('titleLength' in create, 'a generated column is absent from the create input')
    t.notOk('titleLength' in update, 'a generated column is absent from the update input')
    t.equal(String((env.schema.getType('WEntry') as GraphQLObjectType).getFields()['titleLength']?.type), 'Int', 'a generated column is readable')
    t.equal(create['title'], 'String!', 'an ordinary NOT NULL column stays required')
    if (dialect === 'postgres') {
      t.equal(create['search'], 'String', 'a NOT NULL column a trigger fills (tsvector) is optional')
      t.notOk('id' in create, 'a GENERATED ALWAYS identity is absent from the create input')
      t.notOk('id' in update, 'a GENERATED ALWAYS identity is absent from the update input')
      t.equal(input('WAccountCreateInput')['id'], 'Int', 'a GENERATED BY DEFAULT identity is optional')
    } else if (dialect === 'mysql') {
      t.equal(create['slug'], 'String', 'a NOT NULL column a BEFORE INSERT trigger fills is optional')
      t.equal(create['id'], 'Int', 'an auto-increment key is optional')
    } else {
      t.equal(create['touchedAt'], 'String', 'SQLite: the trigger-filled column is nullable (NOT NULL is checked before AFTER triggers)')
      t.equal(create['id'], 'Int', 'a rowid key is optional')
    }
    for (const mode of EXEC_MODES) {
      const acc = await env.gql(mode, `mutation { createOneWAccount(data: { email: "fill-${mode}@x" }) { id } }`)
      const accountId = (acc.data as { createOneWAccount: { id: number } }).createOneWAccount.id
      const res = await env.gql(mode, `mutation { createOneWEntry(data: { accountId: ${accountId}, title: "Hello World" }) { id title titleLength } }`)
      t.notOk(res.errors, `${mode}: created without the database-filled columns`, { errors: res.errors?.map((e) => e.message) })
      const entry = (res.data as { createOneWEntry: { id: number; titleLength: number } }).createOneWEntry
      t.equal(entry.titleLength, 11, `${mode}: the generated value is read back`)
      const [row] = await env.sql('SELECT * FROM w_entry WHERE id = ?', [entry.id])
      if (dialect === 'postgres') t.equal(row!['search'], "'hello':1 'world':2", `${mode}: the trigger filled the tsvector`)
      if (dialect === 'mysql') t.equal(row!['slug'], 'hello-world', `${mode}: the trigger filled the slug`)
      if (dialect === 'sqlite') t.match(row!['touched_at'], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, `${mode}: the trigger filled touched_at`)
      const upd = await env.gql(mode, `mutation { updateOneWEntry(where: { id: ${entry.id} }, data: { title: { set: "Hi" } }) { titleLength } }`)
      t.same(upd.data, { updateOneWEntry: { titleLength: 2 } }, `${mode}: an update recomputes the generated column`)
    }
  })
}

for (const dialect of DIALECTS) {
  t.test(`${dialect}: a request's mutation fields on one database are one transaction (item 2)`, async (t) => {
    const env = await setup(t, dialect)
    if (!env) return
    await env.sql('DELETE FROM w_entry')
    await env.sql('DELETE FROM w_account')
    await env.sql("INSERT INTO w_account (email) VALUES ('base@x')")
    const baseId = Number((await env.sql("SELECT id FROM w_account WHERE email = 'base@x'"))[0]!['id'])
    const emails = async (): Promise<string[]> => (await env.sql('SELECT email FROM w_account ORDER BY email')).map((r) => String(r['email']))
    for (const mode of EXEC_MODES) {
      // The second field violates a foreign key: the first is rolled back, the third never runs.
      const res = await env.gql(mode, `mutation {
        a: createOneWAccount(data: { email: "a-${mode}@x" }) { email }
        b: createOneWEntry(data: { accountId: 999999, title: "orphan" }) { id }
        c: updateManyWAccount(data: { score: { set: 5 } }) { count }
      }`)
      t.same(res.data, { a: null, b: null, c: null }, `${mode}: no field claims a write`)
      t.same(codes(res), ['TRB_ERR_DB_ROLLED_BACK', 'TRB_ERR_DB_FOREIGN_KEY', 'TRB_ERR_DB_ROLLED_BACK'], `${mode}: each field says what happened`)
      t.same(res.errors?.map((e) => e.path), [['a'], ['b'], ['c']], `${mode}: errors carry their field's path`)
      t.match(res.errors?.[0]?.message, /`a` \(createOneWAccount\) was rolled back because `b` \(createOneWEntry\) failed/)
      t.match(res.errors?.[2]?.message, /was not run because `b` \(createOneWEntry\) failed/)
      t.same(await emails(), ['base@x'], `${mode}: nothing was written`)
      t.same((await env.sql('SELECT score FROM w_account')).map((r) => Number(r['score'])), [0], `${mode}: the later field did not run`)

      // All succeed: every field is written, in document order, and each sees the earlier ones.
      const ok = await env.gql(mode, `mutation {
        a: createOneWAccount(data: { email: "ok-${mode}@x" }) { email }
        n: updateManyWAccount(data: { score: { increment: 1 } }) { count }
        e: createOneWEntry(data: { accountId: ${baseId}, title: "t-${mode}" }) { title account { email } }
      }`)
      t.same(ok, { data: { a: { email: `ok-${mode}@x` }, n: { count: 2 }, e: { title: `t-${mode}`, account: { email: 'base@x' } } } }, `${mode}: all fields written`)
      t.same(await emails(), ['base@x', `ok-${mode}@x`], `${mode}: rows committed`)
      await env.sql('DELETE FROM w_entry')
      await env.sql("DELETE FROM w_account WHERE email <> 'base@x'")
      await env.sql('UPDATE w_account SET score = 0')
    }
  })
}

t.test('mutation fields on different sources run in order, each with its own result (item 2)', async (t) => {
  const one = await setup(t, 'sqlite')
  const dialect: Dialect = process.env['TEST_POSTGRES_URL'] ? 'postgres' : 'sqlite'
  const other = await realworldDatabase(dialect, 'writes2')
  if (!one || other.skipReason) return
  t.teardown(other.cleanup)
  const { ctx } = testContext('rw2')
  const a = (await createDatabaseSource({ url: one.url }, ctx)) as LocalSubschema
  t.teardown(() => a.close())
  const b = (await createDatabaseSource({ url: other.url }, testContext('rw3').ctx)) as LocalSubschema
  t.teardown(() => b.close())
  const schema = composeSchema([{ namespace: 'a', name: 'a', subschema: a }, { namespace: 'b', name: 'b', subschema: b }])
  const { knex: kb } = createKnex(other.url)
  t.teardown(() => kb.destroy())
  for (const mode of EXEC_MODES) {
    await one.sql('DELETE FROM w_account')
    await rawRows(kb, dialect, 'DELETE FROM w_account')
    // a1 and a2 on database a, b1 on database b (fails): a is committed, b is not; data is partial.
    const res = await run(schema, mode, `mutation {
      a1: a_createOneWAccount(data: { email: "a1@x" }) { email }
      b1: b_createOneWAccount(data: { email: "b1@x", score: -1 }) { email }
      a2: a_createOneWAccount(data: { email: "a2@x" }) { email }
    }`)
    res.data = plain(res.data) as ExecutionResult['data']
    t.same(res.data, { a1: { email: 'a1@x' }, b1: null, a2: { email: 'a2@x' } }, `${mode}: partial data, never data: null hiding a committed write`)
    t.same(codes(res), ['TRB_ERR_DB_CHECK'], `${mode}: only the failed field has an error`)
    t.same(res.errors?.map((e) => e.path), [['b1']])
    t.same((await one.sql('SELECT email FROM w_account ORDER BY email')).map((r) => r['email']), ['a1@x', 'a2@x'], `${mode}: database a committed`)
    t.same(await rawRows(kb, dialect, 'SELECT email FROM w_account'), [], `${mode}: database b wrote nothing`)
  }
})

t.test('postgres: rules, inheritance and partitions (item 4)', async (t) => {
  const env = await setup(t, 'postgres')
  if (!env) return
  const models = Object.keys(env.schema.getTypeMap())
  t.ok(models.includes('WMeasure') && models.includes('WLog'), 'the parents are models')
  t.same(models.filter((n) => /^WMeasure2|^WLog2/.test(n)), [], 'inheritance children and declarative partitions are hidden behind their parent')
  for (const mode of EXEC_MODES) {
    await env.sql('DELETE FROM w_measure')
    const one = await env.gql(mode, 'mutation { createOneWMeasure(data: { takenOn: "2023-05-01T00:00:00.000Z", value: 1 }) { id takenOn value } }')
    t.notOk(one.errors, `${mode}: INSERT through a rewrite rule works (no INSERT RETURNING failure)`, { errors: one.errors?.map((e) => e.message) })
    const created = (one.data as { createOneWMeasure: { id: number; takenOn: string; value: number } }).createOneWMeasure
    t.same({ takenOn: created.takenOn, value: created.value }, { takenOn: '2023-05-01T00:00:00.000Z', value: 1 }, `${mode}: the row is read back`)
    t.same(await env.sql('SELECT id, value FROM ONLY w_measure_2023'), [{ id: created.id, value: 1 }], `${mode}: the rule put the row in the 2023 child`)
    const many = await env.gql(mode, 'mutation { createManyWMeasure(data: [{ takenOn: "2023-06-01T00:00:00.000Z", value: 2 }, { takenOn: "2024-06-01T00:00:00.000Z", value: 3 }]) { count } }')
    t.same(many, { data: { createManyWMeasure: { count: 2 } } }, `${mode}: createMany counts the rows a rule redirected`)
    t.same((await env.sql('SELECT value FROM ONLY w_measure_2024')).map((r) => r['value']), [3], `${mode}: the 2024 row is in its child`)
    t.equal(Number((await env.sql('SELECT COUNT(*) AS n FROM ONLY w_measure'))[0]!['n']), 0, `${mode}: nothing stayed in the parent`)
    const read = await env.gql(mode, '{ findManyWMeasure(orderBy: { value: asc }) { value } aggregateWMeasure { _count { _all } } }')
    t.same(read.data, { findManyWMeasure: [{ value: 1 }, { value: 2 }, { value: 3 }], aggregateWMeasure: { _count: { _all: 3 } } }, `${mode}: the parent reads its children's rows`)
    const skip = await env.gql(mode, 'mutation { createManyWMeasure(data: [{ takenOn: "2023-06-01T00:00:00.000Z", value: 9 }], skipDuplicates: true) { count } }')
    t.same(codes(skip), ['TRB_ERR_DB_INPUT'], `${mode}: skipDuplicates is refused where PostgreSQL cannot apply ON CONFLICT`)

    await env.sql('DELETE FROM w_log')
    const log = await env.gql(mode, 'mutation { createOneWLog(data: { loggedOn: "2024-02-01T00:00:00.000Z", message: "hi" }) { message } createManyWLog(data: [{ loggedOn: "2023-02-01T00:00:00.000Z", message: "a" }, { loggedOn: "2024-03-01T00:00:00.000Z", message: "b" }]) { count } }')
    t.same(log, { data: { createOneWLog: { message: 'hi' }, createManyWLog: { count: 2 } } }, `${mode}: declarative partitions: inserts and counts`)
    t.same((await env.sql('SELECT message FROM w_log_2024 ORDER BY message')).map((r) => r['message']), ['b', 'hi'], `${mode}: rows routed to their partition`)
  }
})

t.test('sqlite: date-times are written and compared in the format the column uses (item 3)', async (t) => {
  const env = await setup(t, 'sqlite', { columns: { 'w_entry.title': { filledByDatabase: true } } })
  if (!env) return
  const sqlite = env.knex
  for (const mode of EXEC_MODES) {
    await env.sql('DELETE FROM w_event WHERE id > 2')
    const read = await env.gql(mode, '{ findUniqueWEvent(where: { id: 1 }) { startsAt stamp day epochAt addedAt } }')
    t.same(read.data, { findUniqueWEvent: { startsAt: '2006-02-15T22:53:30.000Z', stamp: '2006-02-15T22:53:30.000Z', day: '2006-02-15T00:00:00.000Z', epochAt: '2006-02-15T22:53:30.000Z', addedAt: '2006-02-15T22:53:30.000Z' } }, `${mode}: every stored format reads as ISO 8601 (epoch seconds included)`)
    const at = '2006-03-01T10:00:00.000Z'
    const created = await env.gql(mode, `mutation { createOneWEvent(data: { name: "new", startsAt: "${at}", stamp: "${at}", day: "${at}", epochAt: "${at}" }) { id startsAt epochAt } }`)
    t.notOk(created.errors, `${mode}: created`, { errors: created.errors?.map((e) => e.message) })
    const id = (created.data as { createOneWEvent: { id: number } }).createOneWEvent.id
    t.same((created.data as { createOneWEvent: unknown }).createOneWEvent, { id, startsAt: at, epochAt: at }, `${mode}: read back`)
    const [row] = await env.sql('SELECT starts_at, stamp, day, epoch_at, typeof(epoch_at) AS epoch_type, added_at FROM w_event WHERE id = ?', [id])
    t.same({ ...row, added_at: undefined }, { starts_at: '2006-03-01 10:00:00', stamp: '2006-03-01T10:00:00.000Z', day: '2006-03-01', epoch_at: 1141207200, epoch_type: 'integer', added_at: undefined }, `${mode}: each column keeps its own format; epoch seconds stay integers`)
    t.match(row!['added_at'], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, `${mode}: the CURRENT_TIMESTAMP default is untouched`)

    const precise = await env.gql(mode, 'mutation { createOneWEvent(data: { name: "ms", startsAt: "2006-04-01T10:00:00.250Z" }) { id startsAt } }')
    const preciseId = (precise.data as { createOneWEvent: { id: number; startsAt: string } }).createOneWEvent.id
    t.equal((precise.data as { createOneWEvent: { startsAt: string } }).createOneWEvent.startsAt, '2006-04-01T10:00:00.250Z', `${mode}: milliseconds are kept`)
    t.same(await env.sql('SELECT starts_at FROM w_event WHERE id = ?', [preciseId]), [{ starts_at: '2006-04-01 10:00:00.250' }], `${mode}: a whole-seconds format adds .SSS only when needed`)
    await env.sql('DELETE FROM w_event WHERE id = ?', [preciseId])

    const dup = await env.gql(mode, 'mutation { createOneWEvent(data: { name: "again", startsAt: "2006-02-15T22:53:30.000Z" }) { id } }')
    t.same(codes(dup), ['TRB_ERR_DB_UNIQUE'], `${mode}: the same instant cannot pass the unique index in another format`)

    const updated = await env.gql(mode, `mutation { updateOneWEvent(where: { id: ${id} }, data: { startsAt: { set: "2006-03-02T11:00:00.000Z" } }) { startsAt } }`)
    t.same(updated.data, { updateOneWEvent: { startsAt: '2006-03-02T11:00:00.000Z' } }, `${mode}: update`)
    t.same((await env.sql('SELECT starts_at FROM w_event WHERE id = ?', [id]))[0], { starts_at: '2006-03-02 11:00:00' }, `${mode}: updates keep the format`)

    // [field, filter, expected names, an index must serve it] (range scans on 3 rows: the planner may prefer the rowid order)
    const filters: [string, string, string[], boolean][] = [
      ['startsAt', '{ equals: "2006-02-15T22:53:30.000Z" }', ['opening'], true],
      ['startsAt', '{ gt: "2006-02-15T22:53:30.000Z", lt: "2006-03-02T11:00:00.000Z" }', ['closing'], false],
      ['stamp', '{ equals: "2006-02-16T08:00:00.000Z" }', ['closing'], true],
      ['stamp', '{ gte: "2006-02-16T08:00:00.000Z" }', ['closing', 'new'], false],
      ['epochAt', '{ equals: "2006-02-15T22:53:30.000Z" }', ['opening'], true],
      ['epochAt', '{ lt: "2006-02-16T00:00:00.000Z" }', ['opening'], false],
      ['day', '{ in: ["2006-02-16T00:00:00.000Z", "2006-03-01T00:00:00.000Z"] }', ['closing', 'new'], false],
    ]
    for (const [field, filter, expected, indexed] of filters) {
      env.log.clear()
      const res = await env.gql(mode, `{ findManyWEvent(where: { ${field}: ${filter} }, orderBy: { id: asc }) { name } }`)
      t.same(res.data, { findManyWEvent: expected.map((name) => ({ name })) }, `${mode}: ${field} ${filter}`)
      const stmt = env.log.statements.find((s) => /w_event/.test(s.sql))!
      t.notMatch(stmt.sql, /strftime/, `${mode}: ${field} is compared as stored`)
      if (indexed) {
        const plan = (await sqlite.raw(`EXPLAIN QUERY PLAN ${stmt.sql}`, stmt.bindings as Knex.RawBinding[])) as { detail: string }[]
        t.match(plan.map((p) => p.detail).join('\n'), /USING (COVERING )?INDEX (sqlite_autoindex_w_event_1|w_event_stamp|w_event_epoch)/, `${mode}: ${field}: the index serves the comparison`)
      }
    }
  }
  const input = (env.schema.getType('WEntryCreateInput') as GraphQLInputObjectType).getFields()
  t.equal(String(input['title']!.type), 'String', 'columns: { filledByDatabase: true } makes a column optional')
})

t.test('over HTTP: one transaction per database, partial data across sources, the failing field sets the status (item 2)', async (t) => {
  const one = await realworldDatabase('sqlite', 'http-a')
  const two = await realworldDatabase('sqlite', 'http-b')
  t.teardown(one.cleanup)
  t.teardown(two.cleanup)
  const dir = mkdtempSync(join(tmpdir(), 'trb-writes-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'Pair.graphql'), 'mutation Pair($email: String!, $account: Int!) { account: a_createOneWAccount(data: { email: $email }) { email } entry: a_createOneWEntry(data: { accountId: $account, title: "x" }) { title } }\n')
  const config = resolveConfig({
    datasources: [
      database({ namespace: 'a', url: one.url, columns: { 'w_entry.touched_at': { filledByDatabase: true } } }),
      database({ namespace: 'b', url: two.url }),
    ],
    operations: { dir },
    generatedDir: join(dir, 'generated'),
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: dir })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  const post = async (url: string, body: unknown) => {
    const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, payload: JSON.stringify(body) })
    return { status: res.statusCode, body: res.json() as { data?: Record<string, unknown> | null; errors?: { path?: string[]; extensions?: { code?: string } }[] } }
  }
  const count = async (url: string): Promise<number> => {
    const { knex } = createKnex(url)
    try {
      return Number(((await knex.raw('SELECT COUNT(*) AS n FROM w_account')) as [{ n: number }])[0].n)
    } finally {
      await knex.destroy()
    }
  }
  const mixed = await post('/graphql', {
    query: `mutation {
      a1: a_createOneWAccount(data: { email: "a1@x" }) { email }
      b1: b_createOneWAccount(data: { email: "b1@x" }) { email }
      a2: a_createOneWEntry(data: { accountId: 424242, title: "orphan" }) { title }
    }`,
  })
  t.same(mixed.body.data, { a1: null, b1: { email: 'b1@x' }, a2: null }, 'database a wrote nothing, database b committed and says so')
  t.same(mixed.body.errors?.map((e) => [e.path, e.extensions?.code]), [[['a1'], 'TRB_ERR_DB_ROLLED_BACK'], [['a2'], 'TRB_ERR_DB_FOREIGN_KEY']], 'the response names the failed and the rolled-back field')
  t.equal(await count(one.url), 0, 'database a: nothing written')
  t.equal(await count(two.url), 1, 'database b: committed')

  const stored = await post('/operations/Pair', { email: 'p@x', account: 424242 })
  t.equal(stored.status, 409, 'a stored mutation answers with the failing field\'s status, not the rolled-back one\'s')
  t.same(stored.body.errors?.map((e) => e.extensions?.code), ['TRB_ERR_DB_ROLLED_BACK', 'TRB_ERR_DB_FOREIGN_KEY'])
  t.equal(await count(one.url), 0, 'nothing written')

  t.throws(() => resolveConfig({ datasources: [database({ url: one.url, columns: { 'w_entry.touched_at': { dateTimeFormat: 'dd/mm/yyyy' } } })] }), /dateTimeFormat/, 'a bad dateTimeFormat is refused by the config validation')
  const bad = resolveConfig({ datasources: [database({ namespace: 'c', url: one.url, columns: { 'w_entry.nope': { filledByDatabase: true } } })], operations: { dir: join(dir, 'none') }, generatedDir: join(dir, 'generated2') })
  const poolsBefore = [...pools].filter((p) => p.source === 'c').length
  await t.rejects(createGateway(bad, { logger: pino({ level: 'silent' }), cwd: dir }), /columns\["w_entry\.nope"\]: no such table\.column/, 'a columns key naming no column fails the source load')
  t.equal([...pools].filter((p) => p.source === 'c').length, poolsBefore, 'and leaves no pool gauge behind')
})

t.test('the same mutation document executed twice writes twice (outcomes are kept per execution)', async (t) => {
  const env = await setup(t, 'sqlite')
  if (!env) return
  await env.sql('DELETE FROM w_entry')
  await env.sql('DELETE FROM w_account')
  for (const mode of EXEC_MODES) {
    const doc = `mutation { a: createManyWAccount(data: [{ email: "${mode}-1@x" }], skipDuplicates: true) { count } b: updateManyWAccount(data: { score: { increment: 1 } }) { count } }`
    t.same((await env.gql(mode, doc)).data, { a: { count: 1 }, b: { count: mode === 'jit' ? 4 : 1 } }, `${mode}: first run`)
    t.same((await env.gql(mode, doc)).data, { a: { count: 0 }, b: { count: mode === 'jit' ? 4 : 1 } }, `${mode}: second run runs again`)
    const vars = 'mutation($e: String!) { a: createOneWAccount(data: { email: $e }) { email } b: updateManyWAccount(data: { score: { increment: 1 } }) { count } }'
    t.same((await env.gql(mode, vars, { e: `${mode}-2@x` })).data, { a: { email: `${mode}-2@x` }, b: { count: mode === 'jit' ? 5 : 2 } }, `${mode}: with variables`)
    t.same((await env.gql(mode, vars, { e: `${mode}-3@x` })).data, { a: { email: `${mode}-3@x` }, b: { count: mode === 'jit' ? 6 : 3 } }, `${mode}: with other variables`)
  }
  t.same((await env.sql('SELECT email, score FROM w_account ORDER BY email')).map((r) => [r['email'], Number(r['score'])]), [
    ['execute-1@x', 8], ['execute-2@x', 6], ['execute-3@x', 5], ['jit-1@x', 4], ['jit-2@x', 2], ['jit-3@x', 1],
  ], 'every run wrote')
})
