/**
 * Database change streams through PostgreSQL logical replication (README "Database change streams",
 * `changes: { method: 'logical' }`), on a private cluster with `wal_level = logical`
 * (helpers/private-postgres.ts; the shared server on 5432 keeps `wal_level = replica`):
 * - plain SQL inserts, updates and deletes reach `<Model>Changed` over graphql-ws, filtered by
 *   `where` and the row filter (a delete on its old values), exactly as the trigger method's events
 *   on the same table (a second source of the same gateway, `method: 'triggers'`);
 * - `/health` shows the stream; a walsender killed with `pg_terminate_backend` is re-opened and the
 *   change made meanwhile still arrives (the slot kept it);
 * - a gateway restarted on the same slot gets the changes made while it was down, and none it
 *   had acknowledged;
 * - `auto` picks logical replication on the private cluster, triggers (with `install`) or the coded
 *   error naming `wal_level` (without) on the shared server; missing slot and publication without
 *   `install`, `logical` on SQLite and a malformed slot name are refused with codes.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Client } from 'graphql-ws'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway, type ServedGateway } from './helpers/serve.js'
import { testContext } from './helpers/database-source.js'
import { mint } from './helpers/auth.js'
import { until } from './helpers/events-gateway.js'
import { startPrivatePostgres } from './helpers/private-postgres.js'
import { subscribeWs, type Received } from './helpers/ws-subscribe.js'

const secret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(secret)
const sign = (sub: string) => mint(key, { sub }, { expiresIn: '1h' })

type Got = Received

const SLOT = 'pgrepl_slot'
const PUBLICATION = 'pgrepl_pub'

t.test('PostgreSQL logical replication', async (t) => {
  const pg = await startPrivatePostgres({ wal_level: 'logical', max_replication_slots: 4, max_wal_senders: 4 })
  if ('skipReason' in pg) {
    t.comment(pg.skipReason)
    t.pass('skipped: ' + pg.skipReason)
    return
  }
  t.teardown(() => pg.stop())
  const dir = mkdtempSync(join(tmpdir(), 'trb-logical-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { knex } = createKnex(pg.url, { cwd: dir })
  t.teardown(() => knex.destroy())
  await knex.raw('create table lg_note (id integer primary key, owner_id varchar(40) not null, title varchar(200) not null)')

  const config = resolveConfig({
    datasources: [
      database({ namespace: 'lg', url: pg.url, changes: { method: 'logical', install: true, slot: SLOT, publication: PUBLICATION, tables: ['lg_note'], maxReconnectDelayMs: 500 } }),
      database({ namespace: 'tg', url: pg.url, changes: { method: 'triggers', install: true, channel: 'pgrepl_chg', tables: ['lg_note'] } }),
    ],
    generatedDir: join(dir, 'generated'),
    auth: { jwt: { secret }, graphql: 'public' },
    permissions: {
      lg_LgNote: { filter: { ownerId: { equals: { claim: 'sub' } } } },
      tg_LgNote: { filter: { ownerId: { equals: { claim: 'sub' } } } },
    },
  })
  /** A gateway closed by the test itself (the restart), or at the end. */
  const serve = async (): Promise<ServedGateway & { clients: Client[]; close(): Promise<void> }> => {
    const closers: (() => unknown)[] = []
    const served = await serveGateway({ teardown: (fn) => void closers.push(fn) }, config, { cwd: dir })
    const clients: Client[] = []
    let closed = false
    const close = async (): Promise<void> => {
      if (closed) return
      closed = true
      for (const c of clients) await c.dispose()
      for (const fn of closers.reverse()) await fn()
    }
    t.teardown(close)
    return { ...served, clients, close }
  }
  const subscribe = async (g: { url: string; clients: Client[] }, user: string, query: string): Promise<Got> => subscribeWs(g.url, query, { authorization: `Bearer ${await sign(user)}` }, g.clients)
  const note = (id: number, owner: string, title: string) => knex('lg_note').insert({ id, owner_id: owner, title })
  const rowsOf = (r: Got, ns: string) => r.events.map((e) => e.data?.[`${ns}_LgNoteChanged`]).filter(Boolean).map((e) => [e.operation, e.key.id, e.new?.title ?? null, e.old?.id ?? null])
  const seen = (r: Got, ns: string, op: string, id: number, ms = 5000) => until(() => rowsOf(r, ns).some((e) => e[0] === op && e[1] === id), ms)
  const selection = '{ operation key { id } old { id } new { id title ownerId } }'

  const a = await serve()
  const health = async () => ((await (await fetch(`${a.url}/health`)).json()) as { status: string; sources: Record<string, { changes?: Record<string, unknown> }> })
  const before = await health()
  t.match(before.sources['lg']?.changes, { method: 'logical', status: 'up', state: 'waiting', slot: SLOT, publication: PUBLICATION }, '/health: the logical stream waits for a first subscriber')
  t.match(before.sources['tg']?.changes, { method: 'triggers', status: 'up' }, '/health: the trigger stream')

  const subs: Record<string, { ada: Got; adaX: Got; bob: Got }> = {}
  for (const ns of ['lg', 'tg']) {
    subs[ns] = {
      ada: await subscribe(a, 'ada', `subscription { ${ns}_LgNoteChanged ${selection} }`),
      adaX: await subscribe(a, 'ada', `subscription { ${ns}_LgNoteChanged(where: { title: { startsWith: "x" } }) ${selection} }`),
      bob: await subscribe(a, 'bob', `subscription { ${ns}_LgNoteChanged ${selection} }`),
    }
  }
  const all = Object.values(subs).flatMap((s) => [s.ada, s.adaX, s.bob])
  // Warm-up: rows 1 (ada) and 2 (bob) updated until every subscription saw one event.
  await note(1, 'ada', 'x0')
  await note(2, 'bob', 'x0')
  let n = 0
  while (!all.every((s) => s.events.length) && n++ < 100) {
    await knex('lg_note').whereIn('id', [1, 2]).update({ title: `x${n}` })
    await until(() => all.every((s) => s.events.length > 0), 150)
  }
  t.ok(all.every((s) => s.events.length), 'every subscription runs')
  // Every subscription has seen the last warm-up update before the events are forgotten.
  const last = `x${n}`
  const sawLast = (s: Got) => s.events.some((e) => Object.values(e.data ?? {}).some((v) => (v as { new?: { title?: string } } | null)?.new?.title === last))
  // (An earlier update's event read late shows the last title too: also wait until no more come.)
  let counts = ''
  const quiet = async () => {
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 200))
      const now = all.map((x) => x.events.length).join()
      if (now === counts && all.every(sawLast)) return true
      counts = now
    }
    return false
  }
  t.ok(await quiet(), 'the warm-up is over')
  for (const s of all) s.events.length = 0

  // Plain SQL from outside the gateway, one change at a time (`new` is read when the event is).
  const both = async (who: 'ada' | 'adaX' | 'bob', op: string, id: number) => (await seen(subs['lg']![who], 'lg', op, id)) && (await seen(subs['tg']![who], 'tg', op, id))
  await note(10, 'ada', 'hello')
  t.ok(await both('ada', 'INSERT', 10), 'insert seen')
  await knex('lg_note').where({ id: 10 }).update({ title: 'xray' })
  t.ok(await both('ada', 'UPDATE', 10), 'update seen')
  await note(11, 'bob', 'bob one')
  t.ok(await both('bob', 'INSERT', 11), 'bob\'s insert seen')
  await knex('lg_note').where({ id: 10 }).delete()
  t.ok(await both('ada', 'DELETE', 10), 'delete seen')
  await knex('lg_note').where({ id: 11 }).update({ title: 'xfence' })
  t.ok(await both('bob', 'UPDATE', 11) && await both('adaX', 'DELETE', 10), 'the last events arrived')
  await new Promise((r) => setTimeout(r, 100))
  const lg = subs['lg']!
  t.same(rowsOf(lg.ada, 'lg'), [['INSERT', 10, 'hello', null], ['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'ada sees her rows: insert, update, delete (new is null)')
  t.same(rowsOf(lg.bob, 'lg'), [['INSERT', 11, 'bob one', null], ['UPDATE', 11, 'xfence', 11]], 'the row filter hides ada\'s row from bob, even its delete')
  t.same(rowsOf(lg.adaX, 'lg'), [['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'where: only changes of rows matching it (a delete on its old values)')
  for (const who of ['ada', 'adaX', 'bob'] as const) {
    t.same(lg[who].events.map((e) => e.data?.['lg_LgNoteChanged']), subs['tg']![who].events.map((e) => e.data?.['tg_LgNoteChanged']), `${who}: the same events as the trigger method`)
  }

  const streaming = await health()
  t.match(streaming.sources['lg']?.changes, { method: 'logical', status: 'up', state: 'streaming', confirmedLsn: /^[0-9A-F]+\/[0-9A-F]+$/ }, '/health: streaming, with the LSN acknowledged')
  const slotRow = async () => ((await knex.raw('select active_pid, confirmed_flush_lsn::text as lsn from pg_replication_slots where slot_name = ?', [SLOT])) as { rows: { active_pid: number | null; lsn: string }[] }).rows[0]
  t.ok((await slotRow())?.lsn, 'the slot has a confirmed position')

  // The walsender is killed: the gateway reconnects, and the change made meanwhile is not lost.
  const pid = (await slotRow())?.active_pid
  t.ok(pid, 'the slot is read by a walsender')
  await knex.raw('select pg_terminate_backend(?)', [pid])
  for (const s of all) s.events.length = 0
  await note(40, 'ada', 'during the cut')
  t.ok(await seen(lg.ada, 'lg', 'INSERT', 40, 10_000), 'a change made while the replication connection was down arrives after the reconnect')
  t.not((await slotRow())?.active_pid, pid, 'read by a new walsender')
  // The stream reports itself streaming once the new walsender's first message arrives: poll for it.
  let reconnected = await health()
  for (const end = Date.now() + 15_000; Date.now() < end && (reconnected.sources['lg']?.changes as { state?: string } | undefined)?.state !== 'streaming'; reconnected = await health()) {
    await new Promise((r) => setTimeout(r, 200))
  }
  t.match(reconnected.sources['lg']?.changes, { status: 'up', state: 'streaming' }, '/health: streaming again')

  // A restart resumes from the slot: what was written while the gateway was down arrives, once.
  await a.close()
  await note(50, 'ada', 'while down')
  await knex('lg_note').where({ id: 50 }).update({ title: 'while down 2' })
  await knex('lg_note').where({ id: 1 }).delete()
  const b = await serve()
  const again = await subscribe(b, 'ada', `subscription { lg_LgNoteChanged ${selection} }`)
  t.ok(await until(() => rowsOf(again, 'lg').length >= 3, 10_000), 'the changes made while the gateway was down arrive after its restart')
  await new Promise((r) => setTimeout(r, 200))
  t.same(rowsOf(again, 'lg'), [['INSERT', 50, 'while down 2', null], ['UPDATE', 50, 'while down 2', 50], ['DELETE', 1, null, 1]], 'in order, and none of those acknowledged before the restart')

  // A second instance with the same slot (README: give each instance its own): the slot is busy, so
  // it retries with backoff and /health says why; once the first instance is gone it takes over.
  const { ctx: twinCtx } = testContext('lgtwin')
  const twin = await createDatabaseSource({ url: pg.url, changes: { method: 'logical', slot: SLOT, publication: PUBLICATION, tables: ['lg_note'], maxReconnectDelayMs: 300, maxWaitForSubscriberMs: 50 } }, { ...twinCtx, cwd: dir })
  t.teardown(() => twin.close())
  const twinChanges = async () => (await twin.health()).changes as { status?: string; state?: string; lastError?: string } | undefined
  let busy = await twinChanges()
  for (const end = Date.now() + 15_000; Date.now() < end && !/active/.test(busy?.lastError ?? ''); busy = await twinChanges()) await new Promise((r) => setTimeout(r, 100))
  t.match(busy, { state: 'reconnecting', lastError: /replication slot .*pgrepl.* is active/ }, 'a second reader of a busy slot: reconnecting, /health names the busy slot')
  await b.close()
  let took = await twinChanges()
  for (const end = Date.now() + 15_000; Date.now() < end && took?.state !== 'streaming'; took = await twinChanges()) await new Promise((r) => setTimeout(r, 100))
  t.match(took, { state: 'streaming' }, 'the second reader takes the slot over once the first is gone')
  await twin.close()

  // auto on the private cluster: logical replication.
  const { ctx } = testContext('lgauto')
  const auto = await createDatabaseSource({ url: pg.url, changes: { method: 'auto', install: true, slot: 'pgrepl_auto', publication: PUBLICATION, tables: ['lg_note'] } }, { ...ctx, cwd: dir })
  t.match((await auto.health()).changes, { method: 'logical', slot: 'pgrepl_auto' }, 'auto: logical replication where wal_level is logical')
  await auto.close()
  // Without install, a missing slot and publication are named.
  await t.rejects(
    createDatabaseSource({ url: pg.url, changes: { method: 'logical', slot: 'pgrepl_none', publication: 'pgrepl_none', tables: ['lg_note'] } }, { ...ctx, cwd: dir }),
    { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /replication slot pgrepl_none does not exist.*publication pgrepl_none does not exist.*install: true/ },
    'logical without install: the missing slot and publication are named',
  )
  await knex.raw(`select pg_drop_replication_slot('pgrepl_auto')`)
})

t.test('auto and logical where logical replication cannot run', async (t) => {
  const db = await freshDatabase('postgres', 'pgrepl')
  if (db.skipReason) {
    t.comment(db.skipReason)
    t.pass('skipped: ' + db.skipReason)
    return
  }
  t.teardown(() => db.cleanup())
  const { ctx, dir } = testContext('lgmain')
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { knex } = createKnex(db.url, { cwd: dir })
  t.teardown(() => knex.destroy())
  await knex.raw('create table lg_note (id integer primary key, title text)')
  const wal = ((await knex.raw('show wal_level')) as { rows: { wal_level: string }[] }).rows[0]!.wal_level
  if (wal === 'logical') {
    t.pass('skipped: the server on TEST_POSTGRES_URL has wal_level = logical')
    return
  }
  await t.rejects(
    createDatabaseSource({ url: db.url, changes: { method: 'auto', tables: ['lg_note'] } }, ctx),
    { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: new RegExp(`neither logical replication \\(wal_level is ${wal}.*nor triggers \\(the tables lg_note have no tributary_changes trigger`) },
    'auto without install: the coded error names what each method lacks',
  )
  await t.rejects(
    createDatabaseSource({ url: db.url, changes: { method: 'logical', install: true, tables: ['lg_note'] } }, ctx),
    { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /logical replication: wal_level is/ },
    'logical where wal_level is not logical: the coded error names it',
  )
  const auto = await createDatabaseSource({ url: db.url, changes: { method: 'auto', install: true, channel: `pgrepl_${process.pid}`, tables: ['lg_note'] } }, ctx)
  t.teardown(() => auto.close())
  t.match((await auto.health()).changes, { method: 'triggers', status: 'up' }, 'auto with install: triggers')
  const slots = ((await knex.raw(`select count(*)::int as n from pg_replication_slots where slot_name like 'tributary%'`)) as { rows: { n: number }[] }).rows[0]!.n
  t.equal(slots, 0, 'no slot was created on the shared server')

  const lite = await freshDatabase('sqlite', 'pgrepl')
  t.teardown(() => lite.cleanup())
  await t.rejects(createDatabaseSource({ url: lite.url, changes: { method: 'logical' } }, ctx), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /PostgreSQL's/ }, 'logical on SQLite: refused with a code')
  t.throws(() => resolveConfig({ datasources: [database({ url: lite.url, changes: { method: 'logical', slot: 'Bad-Slot' } })] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'a slot name PostgreSQL would not take: TRB_ERR_CONFIG_INVALID')
})
