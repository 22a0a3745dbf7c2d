/**
 * Issue 28, the eight defects found on Sakila, on a Sakila-like slice made by the test
 * (test/fixtures/sakila/<engine>/*.sql), through a gateway on 127.0.0.1, each answer compared with
 * the engine's own SQL:
 * 1. a key whose sequence is not OWNED BY its column is drawn from the column's own default;
 * 2. a create that an INSERT rule redirects under another key fails with a coded error, nothing written;
 * 3. a view with `uniqueKeys` and a configured relation starts (no duplicate `…RelationFilter` type);
 * 4. `contains`/`startsWith` on a `tsvector` column answer a coded 400 pointing at `search`, and
 *    `search` works (PostgreSQL `websearch_to_tsquery`);
 * 5. MariaDB: `distinct` on a nested list (emulated with window functions);
 * 6. MariaDB: an `INT UNSIGNED` key drawn past 2^31-1 is refused before commit (`TRB_ERR_DB_VALUE`);
 * 7. SQLite: a TIMESTAMP column whose rows hold dates only keeps the time written to it, and an
 *    untyped view aggregate reads without float noise in one statement.
 * One private schema per engine, dropped at teardown; an unreachable engine skips its part.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { DatabaseSourceOptions } from '../gateway/connectors/database/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway, startLoggedGateway, type Answer } from './helpers/db-gateway.js'

interface Env {
  gql(query: string, variables?: Record<string, unknown>): Promise<Answer>
  sql(text: string, bindings?: unknown[]): Promise<Record<string, unknown>[]>
}

/** The slice on one engine behind a gateway, and a direct connection; null (a skipped test) when the engine is unreachable. */
async function setup(t: Test, dialect: Dialect, options: Partial<DatabaseSourceOptions> = {}): Promise<Env | null> {
  const db = await realworldDatabase(dialect, 'sakila28', 'sakila')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const server = await startDatabaseGateway(t, [database({ url: db.url, ...(dialect === 'postgres' ? { schema: db.schema! } : {}), ...options })])
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, dialect, text, bindings, db.schema)
  return { gql: (q, v) => server.gql(q, v), sql }
}

t.test('postgres', async (t) => {
  const env = await setup(t, 'postgres', { uniqueKeys: { CustomerList: [['id']] }, relations: [{ from: 'CustomerList.id', to: 'Customer.customerId' }] })
  if (!env) return

  t.test('3: a view with uniqueKeys and a configured relation starts, and its relation reads', async (t) => {
    const res = await env.gql(`{ findManyCustomerList(orderBy: { id: asc }, where: { customer: { is: { storeId: { equals: 1 } } } }) { id name customer { lastName } } }`)
    t.same(res.body.errors ?? [], [])
    const rows = await env.sql(`select l.id, l.name, c.last_name from customer_list l join customer c on c.customer_id = l.id where c.store_id = 1 order by l.id`)
    t.same(res.body.data?.['findManyCustomerList'], rows.map((r) => ({ id: r['id'], name: r['name'], customer: { lastName: r['last_name'] } })))
  })

  t.test('1: a key whose sequence is not OWNED BY the column is drawn from its default', async (t) => {
    const before = Number((await env.sql(`select last_value from payment_payment_id_seq`))[0]!['last_value'])
    const res = await env.gql(`mutation { createOnePayment(data: { customer: { connect: { customerId: 1 } }, amount: "1.25", paymentDate: "2005-06-01T10:00:00.000Z" }) { paymentId amount customer { firstName } } }`)
    t.same(res.body.errors ?? [], [])
    const created = res.body.data?.['createOnePayment'] as { paymentId: number }
    t.equal(created.paymentId, before + 1, 'the next value of the column default')
    const rows = await env.sql(`select payment_id, amount::text as amount from only payment where payment_id = ?`, [created.paymentId])
    t.same(res.body.data, { createOnePayment: { paymentId: rows[0]!['payment_id'], amount: rows[0]!['amount'], customer: { firstName: 'MARY' } } })
  })

  t.test('2: a create an INSERT rule writes under another key fails with a code, nothing written', async (t) => {
    const count = async (): Promise<number> => Number((await env.sql(`select count(*) as n from payment`))[0]!['n'])
    const before = await count()
    const res = await env.gql(`mutation { createOnePayment(data: { customer: { connect: { customerId: 2 } }, amount: "3.50", paymentDate: "2007-01-15T12:00:00.000Z" }) { paymentId } }`)
    t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_UNREADABLE_WRITE')
    t.match(res.body.errors?.[0]?.message, /Payment/)
    t.equal(res.body.data?.['createOnePayment'] ?? null, null)
    t.equal(await count(), before, 'rolled back')
  })

  t.test('4: tsvector refuses contains/startsWith with a coded 400 and answers search', async (t) => {
    for (const op of ['contains', 'startsWith']) {
      const res = await env.gql(`{ findManyFilm(where: { fulltext: { ${op}: "epic" } }) { filmId } }`)
      t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_INPUT', op)
      t.match(res.body.errors?.[0]?.message, /search/, `${op} points at search`)
    }
    const q = 'astounding -lumberjack'
    const res = await env.gql(`query($q: String) { findManyFilm(where: { fulltext: { search: $q } }, orderBy: { filmId: asc }) { title } }`, { q })
    t.same(res.body.errors ?? [], [])
    const rows = await env.sql(`select title from film where fulltext @@ websearch_to_tsquery(?) order by film_id`, [q])
    t.same(res.body.data?.['findManyFilm'], rows)
    t.equal(rows.length, 1)
    const odd = '"unterminated -( & | ! :*'
    const bad = await env.gql(`query($q: String) { findManyFilm(where: { fulltext: { search: $q } }) { title } }`, { q: odd })
    t.same(bad.body.errors ?? [], [], 'websearch syntax never raises')
    t.same(bad.body.data?.['findManyFilm'], await env.sql(`select title from film where fulltext @@ websearch_to_tsquery(?)`, [odd]))
    const text = await env.gql(`{ findManyFilm(where: { title: { search: "dinosaur" } }) { title } }`)
    t.same(text.body.data?.['findManyFilm'], await env.sql(`select title from film where to_tsvector(title) @@ websearch_to_tsquery('dinosaur')`))
  })
})

t.test('mysql', async (t) => {
  const env = await setup(t, 'mysql')
  if (!env) return
  const count = async (): Promise<number> => Number((await env.sql('SELECT COUNT(*) AS n FROM rental'))[0]!['n'])

  t.test('6: an INT UNSIGNED key drawn past 2^31-1 is refused before commit', async (t) => {
    const create = `mutation { createOneRental(data: { customer: { connect: { customerId: 1 } }, inventoryId: 15, rentalDate: "2005-06-01T00:00:00.000Z" }) { rentalId } }`
    const first = await env.gql(create)
    t.same(first.body, { data: { createOneRental: { rentalId: 2147483647 } } }, 'the largest Int is answered')
    t.same(await env.sql('SELECT rental_id FROM rental WHERE inventory_id = 15'), [{ rental_id: 2147483647 }])
    const before = await count()
    const second = await env.gql(create)
    t.equal(second.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_VALUE')
    t.match(second.body.errors?.[0]?.message, /rentalId/)
    t.equal(await count(), before, 'nothing written: a retry cannot write it twice')
  })

  t.test('5: distinct on a nested list, through window functions', async (t) => {
    const res = await env.gql(`{ findManyCustomer(orderBy: { customerId: asc }) { customerId rentals(distinct: [inventoryId], orderBy: { rentalDate: desc }, take: 2) { rentalId inventoryId } } }`)
    t.same(res.body.errors ?? [], [])
    const rows = await env.sql(`SELECT customer_id, rental_id, inventory_id FROM (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY customer_id, inventory_id ORDER BY rental_date DESC, rental_id) AS rn FROM rental r) x WHERE rn = 1 ORDER BY customer_id, rental_date DESC, rental_id`)
    const customers = await env.sql('SELECT customer_id FROM customer ORDER BY customer_id')
    const expected = customers.map((c) => ({
      customerId: c['customer_id'],
      rentals: rows.filter((r) => r['customer_id'] === c['customer_id']).slice(0, 2).map((r) => ({ rentalId: r['rental_id'], inventoryId: r['inventory_id'] })),
    }))
    t.same(res.body.data?.['findManyCustomer'], expected)
    t.ok(expected.every((c) => c.rentals.length === 2))
  })
})

t.test('sqlite', async (t) => {
  const db = await realworldDatabase('sqlite', 'sakila28', 'sakila')
  t.teardown(db.cleanup)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-sakila28-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const statements: string[] = []
  const base = await startLoggedGateway(t, [database({ url: db.url })], dir, (s) => statements.push(s.sql))
  const gql = async (query: string): Promise<Answer['body']> => {
    statements.length = 0
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
    return (await res.json()) as Answer['body']
  }
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = async (text: string): Promise<Record<string, unknown>[]> => (await knex.raw(text)) as Record<string, unknown>[]

  t.test('7: a TIMESTAMP column holding dates only keeps the time of a written date-time', async (t) => {
    const res = await gql(`mutation { createOnePayment(data: { store: { connect: { storeId: 2 } }, amount: "1.5", paymentDate: "2005-06-20T10:30:15.000Z" }) { paymentId paymentDate } }`)
    t.same(res.errors ?? [], [])
    const created = res.data?.['createOnePayment'] as { paymentId: number; paymentDate: string }
    t.equal(created.paymentDate, '2005-06-20T10:30:15.000Z')
    const stored = (await sql(`SELECT strftime('%Y-%m-%dT%H:%M:%fZ', payment_date) AS d FROM payment WHERE payment_id = ${created.paymentId}`))[0]!['d']
    t.equal(stored, '2005-06-20T10:30:15.000Z', 'the time is stored')
    const byDay = await gql(`{ findManyPayment(where: { paymentDate: { equals: "2005-05-25T00:00:00.000Z" } }) { paymentId } }`)
    t.same(byDay.data?.['findManyPayment'], await sql(`SELECT payment_id AS paymentId FROM payment WHERE payment_date = '2005-05-25'`), 'date-only rows still compare')
    const later = await gql(`{ findManyPayment(where: { paymentDate: { gt: "2005-06-20T10:00:00.000Z" } }) { paymentId } }`)
    t.same(later.data?.['findManyPayment'], [{ paymentId: created.paymentId }])
    await sql(`DELETE FROM payment WHERE payment_id = ${created.paymentId}`)
  })

  t.test('7: an untyped view aggregate reads without float noise, in one statement', async (t) => {
    const res = await gql(`{ findManySalesByStore(orderBy: { store: asc }) { store totalSales payments } }`)
    t.same(res.errors ?? [], [])
    t.equal(statements.length, 1, 'one statement')
    const rows = await sql(`SELECT store, total_sales, payments FROM sales_by_store ORDER BY store`)
    t.same(res.data?.['findManySalesByStore'], rows.map((r) => ({ store: r['store'], totalSales: String(Math.round(Number(r['total_sales']) * 100) / 100), payments: String(r['payments']) })))
    t.ok(rows.some((r) => String(r['total_sales']) === '0.30000000000000004'), 'the engine\'s double carries the noise')
  })
})
