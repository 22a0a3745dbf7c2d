/**
 * examples/events (issue 26 item 6), run as its README says: the tables of schema.sql loaded into
 * PostgreSQL (a schema of this run), the gateway started by the built CLI with the example's config
 * (`start --config examples/events/config.ts`, real NATS), `curl -N` on the stored subscription
 * OrderCreated (Server-Sent Events, read here raw over HTTP as curl prints it) and `curl -X POST` of
 * order.json to CreateOrder. Both outputs must equal the files the README shows (expected/), and the
 * event's two links run one SQL statement each (`LOG_LEVEL=debug` lines), not one per order line.
 * The event trigger `orderInserted`: the webhook service (`node examples/events/webhook.mjs`) runs
 * beside the same gateway, `psql -f order.sql` inserts the order, and the line the service prints
 * equals expected/webhook.txt once the event id and time are normalised (Idempotency-Key = body id).
 * Needs PostgreSQL (TEST_POSTGRES_URL) and NATS (TEST_NATS_URL); skips with a message otherwise.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { connect, JSONCodec } from 'nats'
import { portOpen, unique, until } from './helpers/events-gateway.js'
import { freePort } from './helpers/cli.js'
import { repoRoot } from './helpers/chinook.js'
import { spawnCli } from './helpers/spawn-cli.js'

const natsUrl = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222'
const pgUrl = process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test'
const example = join(repoRoot, 'examples/events')
const read = (name: string) => readFileSync(join(example, name), 'utf8')

if (!(await portOpen(natsUrl, 4222)) || !(await portOpen(pgUrl, 5432))) {
  t.comment(`NATS (${natsUrl}) or PostgreSQL (${pgUrl}) is not running; skipping`)
  t.pass('skipped: no NATS or PostgreSQL')
} else {
  const u = unique()
  const schema = `events_example_${u}`
  const db = new pg.Client(pgUrl)
  await db.connect()
  // `psql -f examples/events/schema.sql`, in a schema of this run.
  await db.query(read('schema.sql').replaceAll('events_example', schema))
  t.teardown(async () => {
    await db.query(`drop schema if exists "${schema}" cascade`).catch(() => {})
    await db.end()
  })
  // `node examples/events/webhook.mjs` (README "Event trigger to a local webhook service"), on a free port.
  const webhookPort = await freePort()
  const webhook = spawn(process.execPath, [join(example, 'webhook.mjs')], { cwd: repoRoot, env: { ...process.env, WEBHOOK_PORT: String(webhookPort) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void webhook.kill('SIGKILL'))
  let webhookOut = ''
  let webhookErr = ''
  webhook.stdout.on('data', (c: Buffer) => (webhookOut += c.toString()))
  webhook.stderr.on('data', (c: Buffer) => (webhookErr += c.toString()))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const generated = mkdtempSync(join(tmpdir(), 'tributary-example-events-'))
  t.teardown(() => rmSync(generated, { recursive: true, force: true }))
  const cli = spawnCli(t, ['start', '--config', 'examples/events/config.ts'], {
    env: {
      PORT: String(port), LOG_LEVEL: 'debug', TRIBUTARY_PUBSUB: 'memory', NATS_URL: natsUrl,
      EVENTS_DATABASE_URL: pgUrl, EVENTS_DB_SCHEMA: schema, EVENTS_SUBJECT_PREFIX: `shop_${u}`,
      EVENTS_WEBHOOK_URL: `http://127.0.0.1:${webhookPort}/orders`,
      EVENTS_GENERATED_DIR: generated,
    },
  })
  const ready = await until(() => cli.output().includes('Tributary is up') || cli.child.exitCode !== null, 90_000)
  t.ok(ready && cli.child.exitCode === null, 'the gateway starts')

  t.test('curl -N on OrderCreated prints the order completed from PostgreSQL; the POST answers as the README says', async (t) => {
    // `curl -N -H 'accept: text/event-stream' …/operations/OrderCreated?region=eu`: the raw bytes.
    let sse = ''
    const req = request(`${base}/operations/OrderCreated?region=eu`, { headers: { accept: 'text/event-stream' } }, (res) => {
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (sse += chunk))
    })
    req.end()
    t.teardown(() => req.destroy())
    t.ok(await until(() => sse.includes(': stream opened')), 'the stream opens')
    // The NATS subscription is in place once a message on the subject arrives: a warm-up of the test's own.
    const nc = await connect({ servers: natsUrl.replace(/^nats:\/\//, '') })
    t.teardown(() => nc.close())
    const warm = JSONCodec().encode({ id: 'warm', customerId: 2, region: 'eu', lines: [] })
    const warmed = await (async () => {
      for (let i = 0; i < 200 && !sse.includes('"warm"'); i++) {
        nc.publish(`shop_${u}.eu.created`, warm)
        await until(() => sse.includes('"warm"'), 25)
      }
      return sse.includes('"warm"')
    })()
    t.ok(warmed, 'the subscription reads NATS')
    // Warm-ups published before the first arrived may still come (late on a loaded machine): wait
    // until the stream has been quiet for 300 ms (at most 5 s) before starting afresh.
    for (let seen = -1, end = Date.now() + 5000; seen !== sse.length && Date.now() < end; ) {
      seen = sse.length
      await new Promise((r) => setTimeout(r, 300))
    }
    sse = ': stream opened\n\n'
    const before = cli.output().length

    // `curl -X POST …/operations/CreateOrder -H 'content-type: application/json' -d @examples/events/order.json`
    const res = await fetch(`${base}/operations/CreateOrder`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: read('order.json') })
    t.equal(res.status, 200)
    t.equal(await res.text() + '\n', read('expected/CreateOrder.json'), 'the mutation answers expected/CreateOrder.json')
    t.ok(await until(() => sse.includes('A-1001') && sse.endsWith('\n\n')), 'the event arrives')
    t.equal(sse, read('expected/OrderCreated.txt'), 'curl prints expected/OrderCreated.txt')

    // The gateway's log lines come through its stdout pipe, the event through a socket: the lines
    // may land after the event (a fresh-clone CI run read the product's statement and not yet the
    // customer's). Complete lines only, read until both are in, then once more after a pause so that
    // an extra statement would be counted too.
    const sqlSince = () => {
      const lines = cli.output().slice(before).split('\n').slice(0, -1)
      return lines.filter((l) => l.includes('"msg":"sql"')).map((l) => JSON.parse(l) as { sql: string; bindings: unknown[] })
    }
    await until(() => {
      const s = sqlSince()
      return s.some((x) => x.sql.includes('."customer"')) && s.some((x) => x.sql.includes('."product"'))
    }, 5000)
    await new Promise((r) => setTimeout(r, 200))
    const statements = sqlSince()
    const customers = statements.filter((s) => s.sql.includes('."customer"'))
    const products = statements.filter((s) => s.sql.includes('."product"'))
    t.equal(customers.length, 1, 'one statement reads the customer')
    t.equal(products.length, 1, 'one statement reads the products of both lines (batched per event)')
    t.same(products[0]?.bindings.slice(0, 2), [10, 12], 'with both product ids')
  })

  t.test('the trigger orderInserted delivers a psql INSERT and a gateway write to the webhook service as expected/webhook.txt', async (t) => {
    t.ok(await until(() => webhookErr.includes(`webhook listening on http://127.0.0.1:${webhookPort}/orders`)), 'the webhook service listens')
    t.match(cli.output(), /event triggers installed; delivering/, 'the gateway installed the trigger on the orders table')
    // `psql … -f examples/events/order.sql`, in the schema of this run.
    await db.query(read('order.sql').replaceAll('events_example', schema))
    t.ok(await until(() => webhookOut.split('\n').length === 2), 'the webhook service prints the first delivery')
    // `curl …/graphql -H 'content-type: application/json' -d @examples/events/order-graphql.json`
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: read('order-graphql.json') })
    t.equal(await res.text() + '\n', read('expected/CreateOneOrders.json'), 'the gateway write answers expected/CreateOneOrders.json')
    t.ok(await until(() => webhookOut.split('\n').length === 3), 'the webhook service prints the second delivery')

    const lines = webhookOut.trimEnd().split('\n')
    const printed = lines.map((l) => JSON.parse(l) as { idempotencyKey: string; body: { id: string; createdAt: string } })
    const normalised = lines.map((line, i) => {
      const { idempotencyKey, body } = printed[i]!
      t.match(body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the event id is a UUID')
      t.equal(idempotencyKey, body.id, 'Idempotency-Key is the event id')
      t.ok(Math.abs(Date.parse(body.createdAt) - Date.now()) < 60_000 && body.createdAt.endsWith('Z'), 'createdAt is the insert time, ISO 8601 UTC')
      return line.replaceAll(body.id, '<event id>').replace(body.createdAt, '<createdAt>') + '\n'
    })
    t.equal(normalised.join(''), read('expected/webhook.txt'), 'the service prints expected/webhook.txt')
    t.not(printed[0]?.body.id, printed[1]?.body.id, 'each event has its own id')

    // The gateway records each 200: the outbox rows are marked delivered after one attempt.
    const ids = printed.map((p) => p.body.id)
    const outbox = async () => (await db.query<{ attempts: number; delivered: boolean }>(`select attempts, delivered_at is not null as delivered from "${schema}".tributary_event_log where event_id = any($1) order by seq`, [ids])).rows
    let rows = await outbox()
    for (let i = 0; i < 100 && !rows.every((r) => r.delivered); i++) rows = (await new Promise((r) => setTimeout(r, 20)), await outbox())
    t.same(rows, [{ attempts: 1, delivered: true }, { attempts: 1, delivered: true }], 'both outbox rows are marked delivered, first attempt')
  })
}
