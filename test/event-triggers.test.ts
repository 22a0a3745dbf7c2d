/**
 * Event triggers (README "Event triggers", issue 26 items 4 and 5) on real SQLite, PostgreSQL and
 * MariaDB/MySQL databases (private per run; the last two skip when unreachable) with a real webhook
 * server on 127.0.0.1: gateway writes and plain SQL writes both reach the webhook with an
 * idempotency key; a rolled-back gateway write emits nothing; a flaky webhook is retried and the
 * event delivered once; an always-failing one ends in the dead-letter table after `retries`; an
 * oversized payload goes there at once; a gateway stopped mid-delivery and a deliverer that claimed
 * and died both lose nothing (the event is delivered again); the metrics count it all. Broker
 * delivery to NATS JetStream (skipped without NATS). Backoffs and polls are short in tests.
 */
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import type { Knex } from 'knex'
import { connect, type NatsConnection } from 'nats'
import { database, events, resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { Outbox } from '../gateway/events/outbox.js'
import { retryDelayMs } from '../gateway/events/index.js'
import { eventDeliveries } from '../gateway/observability/probes.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'
import { eventually } from './helpers/eventually.js'
import { portOpen, unique } from './helpers/events-gateway.js'

/** One request the webhook received. */
interface Hit {
  path: string
  key: string | undefined
  headers: IncomingMessage['headers']
  body: { id: string; trigger: string; source: string; table: string; op: string; old: Record<string, unknown> | null; new: Record<string, unknown> | null; createdAt: string; attempt: number }
}

/** The webhook: records every request; `/ok` answers 200, `/flaky` 500 twice per event then 200, `/fail` always 500, `/hang` hangs the first request of each event then answers 200. */
async function startWebhook(t: Test): Promise<{ url: string; hits: Hit[] }> {
  const hits: Hit[] = []
  const seen = new Map<string, number>()
  const hanging: ServerResponse[] = []
  const server = createServer((req, res) => {
    let text = ''
    req.on('data', (c: Buffer) => (text += c.toString()))
    req.on('end', () => {
      const body = JSON.parse(text) as Hit['body']
      const path = req.url ?? ''
      hits.push({ path, key: req.headers['idempotency-key'] as string | undefined, headers: req.headers, body })
      const n = (seen.get(body.id) ?? 0) + 1
      seen.set(body.id, n)
      if (path === '/fail' || (path === '/flaky' && n <= 2)) return void res.writeHead(500).end('no')
      if (path === '/hang' && n === 1) return void hanging.push(res)
      res.writeHead(200).end('ok')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    for (const res of hanging) res.destroy()
    server.closeAllConnections()
    server.close()
  })
  const address = server.address()
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, hits }
}

const rowsOf = (dialect: Dialect, result: unknown): Record<string, unknown>[] =>
  dialect === 'postgres' ? (result as { rows: Record<string, unknown>[] }).rows : dialect === 'mysql' ? (result as [Record<string, unknown>[]])[0] : (result as Record<string, unknown>[])

const webhook = await startWebhook(t)

t.test('config: triggers are checked at startup', async (t) => {
  const base = { datasources: [database({ namespace: 'db', url: 'sqlite:x.db' }), events({ namespace: 'bus', broker: 'nats', url: 'nats://127.0.0.1:4222', schema: 'type Query { a: Int }' })] }
  const trigger = { name: 'a', source: 'db', table: 'item', deliver: { webhook: 'http://127.0.0.1:1/x' } }
  const bad = (events: unknown, delivery?: unknown) => () => resolveConfig({ ...base, events, ...(delivery ? { eventsDelivery: delivery } : {}) })
  t.throws(bad([{ ...trigger, source: 'bus' }]), /events\[0\]\.source: bus is not the namespace of a database source/)
  t.throws(bad([{ ...trigger, deliver: { broker: 'db', subject: 's' } }]), /events\[0\]\.deliver\.broker: db is not the namespace of an events source/)
  t.throws(bad([{ ...trigger, deliver: { webhook: 'ftp://x' } }]), /events\[0\]\.deliver: must be \{ webhook: url \}/)
  t.throws(bad([trigger, { ...trigger, name: 'A' }]), /events\[1\]\.name: another trigger is named A/)
  t.throws(bad([{ ...trigger, timeoutMs: 5000 }], { leaseMs: 5000 }), /events\[0\]\.timeoutMs: must be less than eventsDelivery\.leaseMs/)
  t.throws(bad([{ ...trigger, name: 'x'.repeat(41) }]), /events\[0\]\.name/)
  t.throws(bad([trigger], { maxPayloadBytes: 10 }), /eventsDelivery\.maxPayloadBytes/)
  const ok = resolveConfig({ ...base, events: [trigger] })
  t.match(ok.events[0], { on: ['insert', 'update', 'delete'], retries: 5, backoff: { baseMs: 1000, maxMs: 60000 }, timeoutMs: 10000 })
  t.same(ok.eventsDelivery, { pollIntervalMs: 1000, leaseMs: 60000, batchSize: 20, maxPayloadBytes: 1048576, maxBacklog: 100000, retainDeliveredMs: 86400000 })
  t.same(resolveConfig(base).events, [], 'no triggers by default')
})

t.test('backoff: exponential, capped, half of it random', async (t) => {
  const backoff = { baseMs: 100, maxMs: 1000 }
  for (let i = 0; i < 200; i++) {
    const [first, third, tenth, huge] = [retryDelayMs(1, backoff), retryDelayMs(3, backoff), retryDelayMs(10, backoff), retryDelayMs(1000, backoff)]
    if (first < 50 || first > 100 || third < 200 || third > 400 || tenth < 500 || tenth > 1000 || huge < 500 || huge > 1000) return void t.fail(`out of bounds: ${first} ${third} ${tenth} ${huge}`)
  }
  t.pass('retry 1 in [50, 100], retry 3 in [200, 400], later ones in [500, 1000]')
})

for (const dialect of ['sqlite', 'postgres', 'mysql'] as const) {
  t.test(dialect, async (t) => {
    const db = await freshDatabase(dialect, 'evt')
    if (db.skipReason) return void t.pass(`skipped: ${db.skipReason}`)
    t.teardown(db.cleanup)
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const sql = async (text: string, bindings: unknown[] = []) => rowsOf(dialect, await knex.raw(text, bindings as Knex.RawBinding[]))
    for (const table of ['item', 'flaky', 'doomed', 'big', 'hanging', 'claimed', 'stuck']) await sql(`create table ${table} (id integer primary key, name varchar(3000))`)
    const dir = mkdtempSync(join(tmpdir(), 'tributary-evt-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const p = `${dialect}_`
    const hook = (path: string) => ({ webhook: `${webhook.url}${path}` })
    const fast = { backoff: { baseMs: 10, maxMs: 20 }, timeoutMs: 1000 }
    const input = (events: TributaryConfigInput['events'], delivery: TributaryConfigInput['eventsDelivery'] = {}): TributaryConfigInput => ({
      datasources: [database({ namespace: 'db', url: db.url })],
      operations: { dir: join(dir, 'operations') },
      generatedDir: join(dir, 'generated'),
      mode: 'production',
      graphql: { allowArbitraryOperationsInProduction: true },
      events,
      eventsDelivery: { pollIntervalMs: 50, leaseMs: 3000, maxPayloadBytes: 2048, ...delivery },
    })
    const { url } = await serveGateway(
      t,
      resolveConfig(
        input([
          { name: `${p}ok`, source: 'db', table: 'item', deliver: hook('/ok'), headers: { 'x-secret': 'from-config' }, ...fast },
          { name: `${p}flaky`, source: 'db', table: 'flaky', on: ['insert'], deliver: hook('/flaky'), retries: 3, ...fast },
          { name: `${p}dead`, source: 'db', table: 'doomed', deliver: hook('/fail'), retries: 2, ...fast },
          { name: `${p}big`, source: 'db', table: 'big', deliver: hook('/ok'), ...fast },
          { name: `${p}claimed`, source: 'db', table: 'claimed', deliver: hook('/ok'), ...fast },
        ]),
      ),
    )
    const gql = async (query: string) => (await (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as { data?: unknown; errors?: { extensions: { code: string } }[] }
    const hitsOf = (trigger: string) => webhook.hits.filter((h) => h.body.trigger === trigger)

    t.test('a gateway write and a plain SQL write both reach the webhook, with an idempotency key', async (t) => {
      t.same(await gql('mutation { db_createOneItem(data: { id: 1, name: "from the gateway" }) { id } }'), { data: { db_createOneItem: { id: 1 } } })
      await sql(`insert into item (id, name) values (2, 'from SQL')`)
      await sql(`update item set name = 'renamed' where id = 2`)
      await sql(`delete from item where id = 1`)
      t.ok(await eventually(() => hitsOf(`${p}ok`).length >= 4), 'four events delivered')
      const hits = hitsOf(`${p}ok`)
      const byOp = (op: string, id: number) => hits.find((h) => h.body.op === op && ((h.body.new ?? h.body.old)!['id'] as number) === id)!
      t.match(byOp('insert', 1).body, { source: 'db', table: 'item', old: null, new: { id: 1, name: 'from the gateway' }, attempt: 1 })
      t.match(byOp('insert', 2).body, { new: { id: 2, name: 'from SQL' } })
      t.match(byOp('update', 2).body, { old: { id: 2, name: 'from SQL' }, new: { id: 2, name: 'renamed' } })
      t.match(byOp('delete', 1).body, { old: { id: 1, name: 'from the gateway' }, new: null })
      for (const h of hits) {
        t.match(h.key, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the idempotency key is a UUID')
        t.equal(h.key, h.body.id, 'the key is the event id')
        t.equal(h.headers['x-secret'], 'from-config', 'configured headers are sent')
        t.ok(!Number.isNaN(Date.parse(h.body.createdAt)))
      }
      t.equal(new Set(hits.map((h) => h.key)).size, hits.length, 'one key per event')
      t.ok(await eventually(async () => (await sql(`select count(*) as n from tributary_event_log where trigger_name = ? and delivered_at is null`, [`${p}ok`]))[0]!['n'] == 0), 'every event is marked delivered')
    })

    t.test('a rolled-back gateway write emits nothing', async (t) => {
      const res = await gql('mutation { a: db_createOneItem(data: { id: 10, name: "rolled back" }) { id } b: db_createOneItem(data: { id: 2, name: "duplicate" }) { id } }')
      t.ok(res.errors?.length, 'the second write fails: the request transaction rolls back')
      t.same(await sql('select id from item where id = 10'), [], 'the first row is not there')
      await sql(`insert into item (id, name) values (11, 'marker')`)
      t.ok(await eventually(() => hitsOf(`${p}ok`).some((h) => h.body.new?.['id'] === 11)), 'a later write is delivered')
      t.notOk(hitsOf(`${p}ok`).some((h) => h.body.new?.['id'] === 10), 'the rolled-back row never was')
    })

    t.test('a webhook answering 500 twice then 200 is retried, and the event delivered once', async (t) => {
      await sql(`insert into flaky (id, name) values (1, 'x')`)
      t.ok(await eventually(async () => (await sql('select delivered_at from tributary_event_log where trigger_name = ?', [`${p}flaky`]))[0]?.['delivered_at'] != null), 'delivered')
      const hits = hitsOf(`${p}flaky`)
      t.equal(hits.length, 3, 'three attempts')
      t.equal(new Set(hits.map((h) => h.key)).size, 1, 'with one idempotency key')
      t.same(hits.map((h) => h.body.attempt), [1, 2, 3])
      const [row] = await sql('select attempts, last_error from tributary_event_log where trigger_name = ?', [`${p}flaky`])
      t.match(row, { last_error: null })
      t.equal(Number(row!['attempts']), 3)
      // The outcome is counted once the database has answered the outbox update, which the poll above
      // may see committed first: wait for the count.
      await eventually(() => eventDeliveries.get(`${p}flaky\u0000delivered`)?.n === 1)
      t.equal(eventDeliveries.get(`${p}flaky\u0000failed`)?.n, 2)
      t.equal(eventDeliveries.get(`${p}flaky\u0000delivered`)?.n, 1)
      await sql(`update flaky set name = 'y' where id = 1`)
      await sql(`insert into item (id, name) values (12, 'marker')`)
      t.ok(await eventually(() => hitsOf(`${p}ok`).some((h) => h.body.new?.['id'] === 12)))
      t.equal(hitsOf(`${p}flaky`).length, 3, "an update fires nothing: the trigger's on is ['insert']")
    })

    t.test('a webhook that always fails ends in the dead-letter table after `retries`', async (t) => {
      await sql(`insert into doomed (id, name) values (1, 'x')`)
      t.ok(await eventually(async () => (await sql('select count(*) as n from tributary_event_dead_letter where trigger_name = ?', [`${p}dead`]))[0]!['n'] == 1), 'dead-lettered')
      const [dead] = await sql('select * from tributary_event_dead_letter where trigger_name = ?', [`${p}dead`])
      t.match(dead, { table_name: 'doomed', op: 'insert', last_error: 'the webhook answered 500' })
      t.equal(Number(dead!['attempts']), 3, 'the first attempt and 2 retries')
      t.match(JSON.parse(String(dead!['new_row'])), { id: 1, name: 'x' }, 'the row is kept')
      t.equal(hitsOf(`${p}dead`).length, 3)
      t.same(await sql('select seq from tributary_event_log where trigger_name = ?', [`${p}dead`]), [], 'no longer in the outbox')
      await eventually(() => eventDeliveries.get(`${p}dead\u0000dead`)?.n === 1) // counted after the database answered (see above)
      t.equal(eventDeliveries.get(`${p}dead\u0000dead`)?.n, 1)
    })

    t.test('attack: an event over maxPayloadBytes goes to the dead-letter table at once, undelivered', async (t) => {
      await sql(`insert into big (id, name) values (1, ?)`, ['x'.repeat(2500)])
      t.ok(await eventually(async () => (await sql('select count(*) as n from tributary_event_dead_letter where trigger_name = ?', [`${p}big`]))[0]!['n'] == 1))
      const [dead] = await sql('select last_error from tributary_event_dead_letter where trigger_name = ?', [`${p}big`])
      t.match(dead!['last_error'], /eventsDelivery\.maxPayloadBytes is 2048/)
      t.equal(hitsOf(`${p}big`).length, 0)
    })

    t.test('a deliverer that claimed an event and died before acknowledging: delivered after its lease', async (t) => {
      // The write and a claim by a deliverer that then dies, committed together: no running deliverer saw the event unclaimed.
      const claimed = await knex.transaction(async (trx) => {
        await trx.raw(`insert into claimed (id, name) values (1, 'x')`)
        return (await new Outbox(trx, dialect).claim([`${p}claimed`], 10, Date.now(), 300)).events
      })
      t.equal(claimed.length, 1, 'the dead deliverer held the event')
      t.ok(await eventually(() => hitsOf(`${p}claimed`).length === 1), 'delivered once its lease ran out')
      t.equal(hitsOf(`${p}claimed`)[0]!.key, claimed[0]!.eventId)
      t.ok(await eventually(async () => (await sql('select delivered_at from tributary_event_log where trigger_name = ?', [`${p}claimed`]))[0]?.['delivered_at'] != null))
    })

    t.test('metrics: deliveries by outcome and the backlog', async (t) => {
      await eventually(async () => (await (await fetch(`${url}/metrics`)).text()).includes(`tributary_events_backlog{trigger="${p}ok"} 0`))
      const text = await (await fetch(`${url}/metrics`)).text()
      t.match(text, `tributary_events_delivered_total{trigger="${p}flaky",outcome="delivered"} 1`)
      t.match(text, `tributary_events_delivered_total{trigger="${p}dead",outcome="dead"} 1`)
      t.match(text, `tributary_events_backlog{trigger="${p}ok"} 0`)
      type Health = { status: string; events: { status: string; backlog: Record<string, number> } }
      const health = async () => (await (await fetch(`${url}/health`)).json()) as Health
      // The backlog is counted at most once a second: wait for a count after the dead-letter move. A
      // delivery failure of another trigger in its last rounds marks the events degraded until the
      // next count (the fresh-clone CI on MariaDB): wait for that count too.
      await eventually(async () => {
        const h = await health()
        return h.events.backlog[`${p}dead`] === 0 && h.status === 'ok'
      })
      t.match(await health(), { status: 'ok', events: { status: 'up', backlog: { [`${p}ok`]: 0, [`${p}dead`]: 0 } } }, '/health shows the backlog')
    })

    t.test('a gateway stopped mid-delivery loses nothing: the next one delivers the event again', async (t) => {
      const config = resolveConfig(input([{ name: `${p}hang`, source: 'db', table: 'hanging', deliver: hook('/hang'), timeoutMs: 2000 }]))
      const first = await createGateway(config, { logger: pino({ level: 'silent' }) })
      let closed = false
      t.teardown(() => (closed ? undefined : first.close()))
      await sql(`insert into hanging (id, name) values (1, 'x')`)
      t.ok(await eventually(() => hitsOf(`${p}hang`).length === 1), 'the webhook got it and hangs')
      await first.close()
      closed = true
      const [row] = await sql('select delivered_at, locked_by, attempts from tributary_event_log where trigger_name = ?', [`${p}hang`])
      t.match(row, { delivered_at: null, locked_by: null }, 'not delivered; the claim was given back')
      t.equal(Number(row!['attempts']), 0, 'the aborted attempt is not counted')
      const second = await createGateway(config, { logger: pino({ level: 'silent' }) })
      t.teardown(() => second.close())
      t.ok(await eventually(() => hitsOf(`${p}hang`).length === 2), 'delivered again')
      const [a, b] = hitsOf(`${p}hang`)
      t.equal(a!.key, b!.key, 'with the same idempotency key')
      t.ok(await eventually(async () => (await sql('select delivered_at from tributary_event_log where trigger_name = ?', [`${p}hang`]))[0]?.['delivered_at'] != null), 'and marked delivered')
    })

    t.test('a backlog over maxBacklog is reported, nothing dropped', { skip: dialect !== 'sqlite' && 'checked on SQLite' }, async (t) => {
      const config = resolveConfig(input([{ name: `${p}stuck`, source: 'db', table: 'stuck', deliver: hook('/fail'), retries: 100, backoff: { baseMs: 600000, maxMs: 600000 }, timeoutMs: 1000 }], { maxBacklog: 1 }))
      const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
      t.teardown(() => gateway.close())
      await sql(`insert into stuck (id, name) values (1, 'a'), (2, 'b')`)
      t.ok(await eventually(() => gateway.events?.status().status === 'degraded'), 'degraded')
      t.match(gateway.events!.status(), { backlog: { [`${p}stuck`]: 2 }, message: `backlog over eventsDelivery.maxBacklog: ${p}stuck` })
      t.equal((await sql('select count(*) as n from tributary_event_log where trigger_name = ?', [`${p}stuck`]))[0]!['n'], 2, 'both events kept')
    })

    t.test('a trigger on a missing table fails the start with the path', { skip: dialect !== 'sqlite' && 'checked on SQLite (the same check on every engine)' }, async (t) => {
      await t.rejects(createGateway(resolveConfig(input([{ name: `${p}none`, source: 'db', table: 'no_such_table', deliver: hook('/ok'), timeoutMs: 1000 }])), { logger: pino({ level: 'silent' }) }), {
        code: 'TRB_ERR_CONFIG_INVALID',
        message: /events\[0\]\.table: the source db has no table no_such_table/,
      })
    })

    t.test('the outbox tables are not exposed in the schema', async (t) => {
      const res = await gql('{ __schema { queryType { fields { name } } } }')
      const names = JSON.stringify(res)
      t.notMatch(names, /[Ee]vent_?[Ll]og|[Dd]ead_?[Ll]etter/)
    })
  })
}

const natsUrl = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222'
t.test('broker delivery: NATS JetStream, acknowledged, the event id as message id', async (t) => {
  if (!(await portOpen(natsUrl, 4222))) return void t.pass(`skipped: NATS is not running at ${natsUrl}`)
  const u = unique()
  const stream = `TRB_EVT_${u}`
  const subject = `evt_${u}.changes`
  const nc: NatsConnection = await connect({ servers: natsUrl.replace(/^nats:\/\//, '') })
  const jsm = await nc.jetstreamManager()
  await jsm.streams.add({ name: stream, subjects: [subject] })
  t.teardown(async () => {
    await jsm.streams.delete(stream).catch(() => {})
    await nc.close()
  })
  const db = await freshDatabase('sqlite', 'evt-nats')
  t.teardown(db.cleanup)
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  await knex.raw('create table item (id integer primary key, name text)')
  const dir = mkdtempSync(join(tmpdir(), 'tributary-evt-nats-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [database({ namespace: 'db', url: db.url }), events({ namespace: 'bus', broker: 'nats', url: natsUrl, schema: 'type Query { ping: Boolean }' })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    events: [{ name: `nats_${u}`, source: 'db', table: 'item', deliver: { broker: 'bus', subject, stream } }],
    eventsDelivery: { pollIntervalMs: 50 },
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  t.teardown(() => gateway.close())
  await knex.raw(`insert into item (id, name) values (7, 'seven')`)
  t.ok(await eventually(async () => (await jsm.streams.info(stream)).state.messages === 1), 'the stream stored the event')
  const m = await (await nc.jetstream()).streams.get(stream).then((s) => s.getMessage({ seq: 1 }))
  const body = m.json<{ id: string; op: string; new: Record<string, unknown> }>()
  t.match(body, { op: 'insert', new: { id: 7, name: 'seven' } })
  t.equal(m.header.get('Nats-Msg-Id'), body.id, 'the JetStream message id is the event id')
  t.ok(await eventually(async () => (await knex('tributary_event_log').whereNotNull('delivered_at')).length === 1), 'marked delivered once acknowledged')
})
