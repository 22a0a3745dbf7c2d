/**
 * Database change streams (README "Database change streams") on real SQLite, PostgreSQL and
 * MariaDB/MySQL: `<Model>Changed` over graphql-ws sees inserts, updates and deletes made by plain SQL
 * outside the gateway, filtered by `where` and by the model's row filter per subscriber (a deleted row
 * on its old values); `<model>Stream` sends ordered batches after its cursor, then new rows; the
 * limits (batchSize, a slow subscriber) answer with codes; a malformed or oversized notification or
 * changelog row is counted and skipped; PostgreSQL's LISTEN connection, cut, is re-opened; missing
 * triggers without `install` fail the start with a code.
 * Each engine gets its own database (schema, file) and one gateway.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Client } from 'graphql-ws'
import type { Knex } from 'knex'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'
import { testContext } from './helpers/database-source.js'
import { mint } from './helpers/auth.js'
import { until } from './helpers/events-gateway.js'
import { subscribeWs, type Received } from './helpers/ws-subscribe.js'

const secret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(secret)
const sign = (sub: string) => mint(key, { sub }, { expiresIn: '1h' })

const migrations = {
  '001_chg': {
    async up(knex: Knex) {
      await knex.schema.createTable('chg_note', (tb) => {
        tb.integer('id').primary()
        tb.string('owner_id', 40).notNullable()
        tb.string('title', 200).notNullable()
      })
      await knex.schema.createTable('chg_bulk', (tb) => {
        tb.integer('id').primary()
      })
      await knex.schema.createTable('chg_plain', (tb) => {
        tb.integer('id').primary()
      })
    },
  },
}

type Got = Received

for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  t.test(`change streams on ${dialect}`, async (t: Test) => {
    const db = await freshDatabase(dialect, 'changes')
    if (db.skipReason) {
      t.comment(db.skipReason)
      t.pass('skipped: ' + db.skipReason)
      return
    }
    t.teardown(() => db.cleanup())
    const channel = `trb_chg_${process.pid}_${dialect}`
    const dir = mkdtempSync(join(tmpdir(), 'trb-changes-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const config = resolveConfig({
      datasources: [database({ namespace: 'ch', url: db.url, migrations, changes: { install: true, channel, tables: ['chg_note', 'chg_bulk'], pollIntervalMs: 20, maxBufferedEvents: 100, maxBatchSize: 50, maxPayloadBytes: 1024 } })],
      generatedDir: join(dir, 'generated'),
      auth: { jwt: { secret }, graphql: 'public' },
      permissions: { ch_ChgNote: { filter: { ownerId: { equals: { claim: 'sub' } } } } },
    })
    const { url } = await serveGateway(t, config, { cwd: dir })
    const { knex } = createKnex(db.url, { cwd: dir })
    t.teardown(() => knex.destroy())
    const clients: Client[] = []
    t.teardown(async () => {
      for (const c of clients) await c.dispose()
    })
    const subscribe = async (user: string, query: string): Promise<Got> => subscribeWs(url, query, user ? { authorization: `Bearer ${await sign(user)}` } : {}, clients)
    const note = (id: number, owner: string, title: string) => knex('chg_note').insert({ id, owner_id: owner, title })
    // Rows 1 and 2 are the warm-up's: on a loaded machine its last events may arrive after it ended.
    const rowsOf = (r: Got) => r.events.map((e) => e.data?.['ch_ChgNoteChanged']).filter((e) => e && e.key.id > 2).map((e) => [e.operation, e.key.id, e.new?.title ?? null, e.old?.id ?? null])

    const selection = '{ operation key { id } old { id } new { id title ownerId } }'
    const ada = await subscribe('ada', `subscription { ch_ChgNoteChanged ${selection} }`)
    const adaX = await subscribe('ada', `subscription { ch_ChgNoteChanged(where: { title: { startsWith: "x" } }) ${selection} }`)
    const bob = await subscribe('bob', `subscription { ch_ChgNoteChanged ${selection} }`)

    // Warm-up: rows 1 (ada) and 2 (bob) updated until every subscription saw one event.
    await note(1, 'ada', 'x0')
    await note(2, 'bob', 'x0')
    let n = 0
    while (!(ada.events.length && adaX.events.length && bob.events.length) && n++ < 200) {
      await knex('chg_note').whereIn('id', [1, 2]).update({ title: `x${n}` })
      await until(() => !!(ada.events.length && adaX.events.length && bob.events.length), 150)
    }
    t.ok(ada.events.length && adaX.events.length && bob.events.length, 'every subscription runs')
    await new Promise((r) => setTimeout(r, 60))
    for (const s of [ada, adaX, bob]) s.events.length = 0

    // Plain SQL from outside the gateway, one change at a time (`new` is the row as it is when the
    // event is read: the test waits for each event before the next write).
    const seen = (r: Got, op: string, id: number) => until(() => rowsOf(r).some((e) => e[0] === op && e[1] === id), 5000)
    await note(10, 'ada', 'hello')
    t.ok(await seen(ada, 'INSERT', 10), 'insert seen')
    await knex('chg_note').where({ id: 10 }).update({ title: 'xray' })
    t.ok(await seen(ada, 'UPDATE', 10), 'update seen')
    await note(11, 'bob', 'bob one')
    t.ok(await seen(bob, 'INSERT', 11), 'bob\'s insert seen')
    await knex('chg_note').where({ id: 10 }).delete()
    t.ok(await seen(ada, 'DELETE', 10), 'delete seen')
    await knex('chg_note').where({ id: 11 }).update({ title: 'xfence' })
    t.ok(await seen(bob, 'UPDATE', 11) && await seen(adaX, 'DELETE', 10), 'the last events arrived')
    await new Promise((r) => setTimeout(r, 50))
    t.same(rowsOf(ada), [['INSERT', 10, 'hello', null], ['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'ada sees her rows: insert, update, delete (new is null)')
    t.same(rowsOf(bob), [['INSERT', 11, 'bob one', null], ['UPDATE', 11, 'xfence', 11]], 'the row filter hides ada\'s row from bob, even its delete')
    t.same(rowsOf(adaX), [['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'where: only changes of rows matching it (a delete on its old values)')
    t.same(ada.events.map((e) => e.data?.['ch_ChgNoteChanged']).find((e) => e?.key.id === 10)?.new, { id: 10, title: 'hello', ownerId: 'ada' }, 'new is read through the selection set')

    // <model>Stream: ordered batches after the cursor, then the rows that come.
    await knex('chg_note').insert([20, 21, 22].map((id) => ({ id, owner_id: 'ada', title: `s${id}` })))
    await note(23, 'bob', 's23')
    const streamQuery = 'subscription { ch_chgNoteStream(cursor: { column: id, initialValue: 19 }, batchSize: 2, where: { title: { startsWith: "s" } }) { id title } }'
    const stream = await subscribe('ada', streamQuery)
    const batches = () => stream.events.map((e) => (e.data?.['ch_chgNoteStream'] as { id: number }[] | undefined)?.map((r) => r.id))
    t.ok(await until(() => batches().length >= 2, 5000), 'the first batches came')
    t.same(batches(), [[20, 21], [22]], 'batches of at most batchSize, in cursor order, row filter applied')
    await note(24, 'ada', 's24')
    t.ok(await until(() => batches().length >= 3, 5000), 'a new row came')
    t.same(batches()[2], [24], 'rows after the cursor only')

    // Limits.
    const big = await subscribe('ada', streamQuery.replace('batchSize: 2', 'batchSize: 51'))
    await until(() => big.done, 5000)
    t.match(JSON.stringify(big.error ?? big.events), /TRB_ERR_DB_INPUT/, 'batchSize above maxBatchSize: TRB_ERR_DB_INPUT')

    const objectCursor = await subscribe('ada', streamQuery.replace('initialValue: 19', 'initialValue: { a: 1 }'))
    await until(() => objectCursor.done, 5000)
    t.match(JSON.stringify(objectCursor.error ?? objectCursor.events), /TRB_ERR_DB_INPUT/, 'an object as cursor value: TRB_ERR_DB_INPUT')
    // The JSON initialValue reaches the statement without GraphQL's coercion: a value of another type
    // than the cursor column's (an Int id here) is refused too, on every engine.
    for (const value of ['true', '"x"', '1.5', '[1]']) {
      const forged = await subscribe('ada', streamQuery.replace('initialValue: 19', `initialValue: ${value}`))
      await until(() => forged.done, 5000)
      t.match(JSON.stringify(forged.error ?? forged.events), /TRB_ERR_DB_INPUT/, `${value} as cursor value of an Int column: TRB_ERR_DB_INPUT`)
    }

    const anonymous = await subscribe('', `subscription { ch_ChgNoteChanged ${selection} }`)
    await until(() => anonymous.done, 5000)
    t.match(JSON.stringify(anonymous.error ?? anonymous.events), /TRB_ERR_AUTH_REQUIRED/, 'no token on a row-filtered type: refused when subscribing')

    const slow = await subscribe('ada', 'subscription { ch_ChgBulkChanged { operation key { id } } }')
    let warm = 1000
    while (slow.events.length === 0 && warm < 1100) {
      await knex('chg_bulk').insert({ id: warm++ })
      await until(() => slow.events.length > 0, 50)
    }
    await knex('chg_bulk').insert(Array.from({ length: 400 }, (_, i) => ({ id: i + 1 })))
    t.ok(await until(() => slow.events.some((e) => e.errors?.[0]?.extensions?.code === 'TRB_ERR_EVENTS_SLOW_SUBSCRIBER'), 5000), 'a subscriber more than maxBufferedEvents behind is told TRB_ERR_EVENTS_SLOW_SUBSCRIBER')
    t.ok(await until(() => slow.done, 5000), 'and its subscription ends')

    // Malformed and oversized notifications or changelog rows are skipped; the stream goes on.
    if (dialect === 'postgres') {
      await knex.raw(`select pg_notify(?, 'not json')`, [channel])
      await knex.raw(`select pg_notify(?, ?)`, [channel, JSON.stringify({ s: db.schema, t: 'chg_note', op: 'INSERT', k: 'x'.repeat(2000) })])
      await knex.raw(`select pg_notify(?, ?)`, [channel, JSON.stringify({ s: db.schema, t: 'chg_note', op: 'TRUNCATE', k: {} })])
    } else {
      await knex('tributary_changes').insert([{ tbl: 'chg_note', op: 'INSERT', k: 'not json' }, { tbl: 'chg_note', op: 'INSERT', k: JSON.stringify({ id: 'x'.repeat(2000) }) }, { tbl: 'chg_note', op: 'NOPE', k: '{}' }])
    }
    ada.events.length = 0
    await note(30, 'ada', 'after')
    t.ok(await until(() => rowsOf(ada).some((e) => e[1] === 30), 5000), 'changes still arrive after malformed ones')
    const metrics = await (await fetch(`${url}/metrics`)).text()
    const rejected = metrics.split('\n').find((l) => l.startsWith('tributary_events_rejected_total{') && l.includes('ch_changes'))
    t.ok(rejected && Number(rejected.split(' ').pop()) >= 2, `malformed ones are counted (${rejected})`)

    if (dialect === 'postgres') {
      // The LISTEN connection is cut: the gateway reconnects (changes made meanwhile are lost).
      const cut = (await knex.raw('select pg_terminate_backend(pid) as ok from pg_stat_activity where query = ?', [`LISTEN "${channel}"`])) as { rows: { ok: boolean }[] }
      t.equal(cut.rows.length, 1, 'the LISTEN connection was cut')
      ada.events.length = 0
      let id = 40
      while (!rowsOf(ada).length && id < 100) {
        await note(id++, 'ada', 'again')
        await until(() => rowsOf(ada).length > 0, 100)
      }
      t.ok(rowsOf(ada).length > 0, 'changes arrive again after the reconnect')
    }

    // Without install, missing triggers fail the start with a code.
    const { ctx } = testContext('plain')
    await t.rejects(createDatabaseSource({ url: db.url, changes: { tables: ['chg_plain'] } }, { ...ctx, cwd: dir }), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE' }, 'missing triggers: TRB_ERR_DB_CHANGES_UNAVAILABLE')
  })
}
