/**
 * Event triggers (README "Event triggers"): a webhook's `Retry-After` answer (delay-seconds or an
 * HTTP-date) sets the delay of the next attempt, bounded by the trigger's `backoff.maxMs` (a real
 * webhook on 127.0.0.1, a SQLite database); and at start the database triggers the gateway
 * installed for event triggers no longer in the config are dropped, on SQLite, PostgreSQL and
 * MariaDB (the last two skip when unreachable), a user's own trigger kept.
 */
import t from 'tap'
import { createServer } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import type { Knex } from 'knex'
import { database, resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { Outbox } from '../gateway/events/outbox.js'
import { retryAfterMs } from '../gateway/events/index.js'
import { freshDatabase } from './helpers/chinook.js'
import { eventually } from './helpers/eventually.js'

t.test('Retry-After is parsed as delay-seconds or an HTTP-date', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  t.equal(retryAfterMs('120', now), 120_000)
  t.equal(retryAfterMs(' 0 ', now), 0)
  t.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000)
  t.equal(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a date in the past: at once')
  t.equal(retryAfterMs(['5', '9'], now), 5000, 'the first of repeated headers')
  for (const bad of [undefined, '', 'soon', '-5', '1.5', '12abc']) t.equal(retryAfterMs(bad, now), undefined, `${JSON.stringify(bad)}: ignored`)
  t.equal(retryAfterMs('99999999999999', now), 2 ** 31 * 1000, 'a huge number is capped (the trigger bounds it further)')
})

t.test('a webhook answering Retry-After is retried after the delay it asked for, at most backoff.maxMs', async (t) => {
  const times = new Map<string, number[]>()
  const server = createServer((req, res) => {
    let text = ''
    req.on('data', (c: Buffer) => (text += c.toString()))
    req.on('end', () => {
      const body = JSON.parse(text) as { id: string }
      const list = times.get(`${req.url}`) ?? []
      list.push(Date.now())
      times.set(`${req.url}`, list)
      if (list.length > 1) return void res.writeHead(200).end('ok')
      if (req.url === '/seconds') return void res.writeHead(503, { 'retry-after': '1' }).end('busy')
      if (req.url === '/date') return void res.writeHead(429, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }).end('slow down')
      res.writeHead(500).end(body.id)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => (server.closeAllConnections(), server.close()))
  const hook = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const dir = mkdtempSync(join(tmpdir(), 'trb-retry-after-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const url = `sqlite:${join(dir, 'db.sqlite')}`
  const { knex } = createKnex(url)
  t.teardown(() => knex.destroy())
  await knex.raw('create table a (id integer primary key)')
  await knex.raw('create table b (id integer primary key)')
  await knex.raw('create table c (id integer primary key)')
  const config = resolveConfig({
    datasources: [database({ namespace: 'db', url })],
    generatedDir: join(dir, 'generated'),
    events: [
      // Retry-After: 1 (s), under maxMs: the next attempt waits a second, not the 10 ms backoff.
      { name: 'secs', source: 'db', table: 'a', deliver: { webhook: `${hook}/seconds` }, backoff: { baseMs: 10, maxMs: 5000 }, timeoutMs: 1000 },
      // An HTTP-date 30 s ahead, over maxMs (300 ms): bounded.
      { name: 'date', source: 'db', table: 'b', deliver: { webhook: `${hook}/date` }, backoff: { baseMs: 10, maxMs: 300 }, timeoutMs: 1000 },
      // No Retry-After: the backoff as before.
      { name: 'plain', source: 'db', table: 'c', deliver: { webhook: `${hook}/plain` }, backoff: { baseMs: 10, maxMs: 20 }, timeoutMs: 1000 },
    ],
    eventsDelivery: { pollIntervalMs: 20 },
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: dir })
  t.teardown(() => gateway.close())
  await knex.raw('insert into a (id) values (1)')
  await knex.raw('insert into b (id) values (1)')
  await knex.raw('insert into c (id) values (1)')
  t.ok(await eventually(() => ['/seconds', '/date', '/plain'].every((p) => (times.get(p)?.length ?? 0) >= 2), 8000), 'each event delivered on its second attempt')
  const gap = (p: string) => times.get(p)![1]! - times.get(p)![0]!
  t.ok(gap('/seconds') >= 950, `Retry-After: 1 → the second attempt ${gap('/seconds')} ms later (≥ 1000 ms less clock rounding)`)
  t.ok(gap('/date') >= 280 && gap('/date') < 5000, `an HTTP-date 30 s ahead, maxMs 300 → ${gap('/date')} ms later (bounded)`)
  t.ok(gap('/plain') < 900, `no Retry-After: the backoff (${gap('/plain')} ms)`)
  const row = async () => ((await knex.raw("select attempts, delivered_at from tributary_event_log where trigger_name = 'secs'")) as { attempts: number; delivered_at: number | null }[])[0]
  t.ok(await eventually(async () => (await row())?.delivered_at != null), 'marked delivered')
  t.equal((await row())?.attempts, 2, 'on the second attempt')
})

for (const dialect of ['sqlite', 'postgres', 'mysql'] as const) {
  t.test(`${dialect}: triggers of event triggers no longer in the config are dropped at start`, async (t) => {
    const db = await freshDatabase(dialect, 'evtstale')
    if (db.skipReason) return void t.pass(`skipped: ${db.skipReason}`)
    t.teardown(db.cleanup)
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const rows = (r: unknown): Record<string, unknown>[] => (dialect === 'postgres' ? (r as { rows: Record<string, unknown>[] }).rows : dialect === 'mysql' ? (r as [Record<string, unknown>[]])[0] : (r as Record<string, unknown>[]))
    await knex.raw('create table item (id integer primary key, name varchar(20))')
    await knex.raw('create table audit (id integer)')
    // A trigger of the user's own, not named trb_evt_…: kept.
    if (dialect === 'postgres') {
      await knex.raw('create function user_trg_fn() returns trigger language plpgsql as $$ begin return null; end $$')
      await knex.raw('create trigger user_trg after insert on item for each row execute function user_trg_fn()')
    } else if (dialect === 'mysql') await knex.raw('create trigger user_trg after insert on item for each row insert into audit (id) values (NEW.id)')
    else await knex.raw('create trigger user_trg after insert on item begin insert into audit (id) values (NEW.id); end')
    const names = async (): Promise<string[]> => {
      const sql =
        dialect === 'postgres'
          ? "select t.tgname as name from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace where not t.tgisinternal and n.nspname = current_schema()"
          : dialect === 'mysql'
            ? 'select trigger_name as name from information_schema.triggers where trigger_schema = database()'
            : "select name from sqlite_master where type = 'trigger'"
      return rows(await knex.raw(sql)).map((r) => String(r['name'] ?? r['NAME'])).sort()
    }
    const triggersOf = (names: string[]) => {
      const input: TributaryConfigInput = {
        datasources: [database({ namespace: 'db', url: db.url })],
        events: names.map((name) => ({ name, source: 'db', table: 'item', deliver: { webhook: 'http://127.0.0.1:1/x' }, on: ['insert', 'delete'] as ('insert' | 'delete')[] })),
      }
      return resolveConfig(input).events
    }
    const install = async (list: string[]) => {
      const triggers = triggersOf(list)
      await new Outbox(knex as Knex, dialect).install(triggers, (x) => triggers.indexOf(x))
    }
    await install(['keep', 'gone'])
    const before = await names()
    const expected = dialect === 'postgres' ? ['trb_evt_gone', 'trb_evt_keep', 'user_trg'] : ['trb_evt_gone_delete', 'trb_evt_gone_insert', 'trb_evt_keep_delete', 'trb_evt_keep_insert', 'user_trg']
    t.same(before, expected, 'both event triggers installed')
    await install(['keep'])
    t.same(await names(), expected.filter((n) => !n.includes('gone')), "the removed trigger's database triggers are dropped, the others and the user's kept")
    if (dialect === 'postgres') {
      const fns = rows(await knex.raw("select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = current_schema() and p.proname like 'trb_evt_%'")).map((r) => r['name'])
      t.same(fns, ['trb_evt_keep'], 'and its trigger function')
    }
    await knex.raw('insert into item (id, name) values (1, ?)', ['x'])
    const log = rows(await knex.raw('select trigger_name from tributary_event_log')).map((r) => r['trigger_name'])
    t.same(log, ['keep'], 'only the kept trigger writes the outbox')
  })
}
