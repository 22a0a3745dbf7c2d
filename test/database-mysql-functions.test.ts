/**
 * Issue 28: MySQL/MariaDB stored functions as root fields (`functions: true`), read from
 * `information_schema.ROUTINES`/`PARAMETERS`: `DETERMINISTIC`/`READS SQL DATA` functions are Query
 * fields, `MODIFIES SQL DATA` ones Mutation fields (in the request's transaction). On a Sakila-like
 * slice made by the test (test/fixtures/sakila-fts/mysql), through a gateway on 127.0.0.1; every
 * answer is compared with the engine's own `SELECT fn(…)`. Skipped when MariaDB/MySQL is unreachable.
 */
import t from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway } from './helpers/db-gateway.js'

const db = await realworldDatabase('mysql', 'fn28', 'sakila-fts')
if (db.skipReason) {
  t.test('mysql unreachable', { skip: db.skipReason }, async () => {})
} else {
  t.teardown(db.cleanup)
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, 'mysql', text, bindings)
  await sql(`CREATE FUNCTION film_count_in(p_language_id INT) RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM film WHERE language_id = p_language_id)`)
  await sql(`CREATE FUNCTION title_upper(p_title VARCHAR(128)) RETURNS VARCHAR(128) DETERMINISTIC RETURN UPPER(p_title)`)
  await sql(`CREATE FUNCTION doubled(p DECIMAL(5,2)) RETURNS DECIMAL(6,2) DETERMINISTIC RETURN p * 2`)
  await sql(`CREATE FUNCTION add_language(p_name VARCHAR(20)) RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO language (name) VALUES (p_name); RETURN LAST_INSERT_ID(); END`)
  await sql(`CREATE FUNCTION odd_type(p POINT) RETURNS INT DETERMINISTIC RETURN 1`)
  const server = await startDatabaseGateway(t, [database({ url: db.url, functions: true })])

  t.test('stable functions are Query fields, answering as SELECT fn(…)', async (t) => {
    const res = await server.gql(`query($title: String) { filmCountIn(pLanguageId: 1) none: filmCountIn(pLanguageId: 9) titleUpper(pTitle: $title) nul: titleUpper(pTitle: null) doubled(p: "12.34") }`, { title: "o'brien" })
    t.same(res.body.errors ?? [], [])
    const [row] = await sql(`select film_count_in(1) as a, film_count_in(9) as b, title_upper(?) as c, doubled(12.34) as d`, ["o'brien"])
    t.same(res.body.data, { filmCountIn: Number(row!['a']), none: Number(row!['b']), titleUpper: row!['c'], nul: null, doubled: String(row!['d']) })
  })

  t.test('a MODIFIES SQL DATA function is a Mutation field in the request transaction', async (t) => {
    const schema = await server.gql(`{ __type(name: "Mutation") { fields { name } } }`)
    const names = ((schema.body.data?.['__type'] as { fields: { name: string }[] } | null)?.fields ?? []).map((f) => f.name)
    if (names.length) t.ok(names.includes('addLanguage'))
    const res = await server.gql(`mutation { addLanguage(pName: "Klingon") }`)
    t.same(res.body.errors ?? [], [])
    const id = res.body.data?.['addLanguage']
    t.same(await sql(`select name from language where language_id = ?`, [id]), [{ name: 'Klingon' }])
    const failed = await server.gql(`mutation { a: addLanguage(pName: "Vulcan") b: addLanguage(pName: "${'x'.repeat(40)}") }`)
    const codes = (failed.body.errors ?? []).map((e) => e.extensions.code)
    t.ok(codes.includes('TRB_ERR_DB_VALUE'), `the too-long name is a value error (${codes.join(', ')})`)
    t.ok(codes.includes('TRB_ERR_DB_ROLLED_BACK'), 'the field before it is rolled back')
    t.same(await sql(`select count(*) as n from language where name = 'Vulcan'`), [{ n: 0 }], 'rolled back with the failed field')
  })

  t.test('a function with an unknown argument type is left out; a wrong argument type is a GraphQL error', async (t) => {
    const res = await server.gql(`{ oddType(p: 1) }`)
    t.match(res.body.errors?.[0]?.message, /Cannot query field/)
    const bad = await server.gql(`{ filmCountIn(pLanguageId: "x") }`)
    t.ok(bad.body.errors?.length)
  })
}
