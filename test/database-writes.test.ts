/**
 * The write side of the database connector on the real-world fixture (issue 10 items 1, 2, 3, 4, 6, 7),
 * on SQLite, PostgreSQL and MariaDB/MySQL: the `w_*` tables of test/fixtures/realworld/<engine>/50-writes.sql,
 * written through the gateway's execution (graphql-js `execute` and graphql-jit) and checked against
 * direct SQL. PostgreSQL and MySQL skip when unreachable.
 */
import t, { type Test } from 'tap'
import type { ExecutionResult, GraphQLInputObjectType, GraphQLObjectType, GraphQLSchema } from 'graphql'
import type { Knex } from 'knex'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import type { LocalSubschema } from '../gateway/connectors/types.js'
import { EXEC_MODES, plain, run, testContext, type ExecMode } from './helpers/database-source.js'
import { realworldDatabase } from './helpers/realworld.js'

/** The `code` of each error of a result, in order. */
function codes(res: ExecutionResult): (string | undefined)[] {
  return (res.errors ?? []).map((e) => (e.originalError as { code?: string } | undefined)?.code ?? (e.extensions?.['code'] as string | undefined))
}

/** Rows of a direct SQL query, as plain objects. */
async function rows(knex: Knex, dialect: Dialect, text: string, bindings: unknown[] = []): Promise<Record<string, unknown>[]> {
  const res = (await knex.raw(text, bindings as Knex.RawBinding[])) as unknown
  if (dialect === 'sqlite') return res as Record<string, unknown>[]
  if (dialect === 'postgres') return (res as { rows: Record<string, unknown>[] }).rows
  return (res as [Record<string, unknown>[]])[0]
}

interface Env {
  dialect: Dialect
  schema: GraphQLSchema
  knex: Knex
  sql(text: string, bindings?: unknown[]): Promise<Record<string, unknown>[]>
  gql(mode: ExecMode, query: string, variables?: Record<string, unknown>): Promise<ExecutionResult>
}

/** A private real-world database on one engine, its gateway source (`rawSql` on) and a direct connection. */
async function setup(t: Test, dialect: Dialect): Promise<Env | null> {
  const db = await realworldDatabase(dialect, 'writes')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const { ctx } = testContext('rw')
  const source = (await createDatabaseSource({ url: db.url, rawSql: true }, ctx)) as LocalSubschema
  t.teardown(() => source.close())
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  return {
    dialect,
    schema: source.schema,
    knex,
    sql: (text, bindings = []) => rows(knex, dialect, text, bindings),
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
