/**
 * The events connector over a real NATS server with JetStream (README "Events (message brokers)";
 * 127.0.0.1:4222, TEST_NATS_URL): subscriptions over graphql-ws and Server-Sent Events with the
 * subject's argument and a filter, publish mutations (core and JetStream, whose ack carries the
 * stream's sequence), payload validation (a malformed message is counted, never sent), links to a
 * real SQLite database batched per event, request–reply and its coded timeout, a durable consumer
 * that resumes after a gateway restart, a slow subscriber closed with a code, and the attacks (a
 * wildcard in an argument, an oversized publish). Subjects and streams are unique per run.
 */
import t from 'tap'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { parse, subscribe } from 'graphql'
import { connect, JSONCodec, type NatsConnection } from 'nats'
import { pino } from 'pino'
import { resolveConfig } from '../gateway/config/index.js'
import { createEventsSource } from '../gateway/connectors/events/index.js'
import { portOpen, real, startEventsGateway, unique, until, warmUp } from './helpers/events-gateway.js'

const natsUrl = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222'

if (!(await portOpen(natsUrl, 4222))) {
  t.comment(`NATS is not running at ${natsUrl} (.ci/run starts it); skipping`)
  t.pass('skipped: no NATS')
  t.end()
} else {
  const u = unique()
  const stream = `TRB_${u}`
  const schema = `
    type Order { id: ID! customerId: Int! total: Float! status: String }
    input OrderInput { id: ID! customerId: Int! total: Float! status: String }
    type Quote { sku: String! price: Float! }
    type Query {
      quote(sku: String!): Quote @request(subject: "quote_${u}.{args.sku}", timeoutMs: 300)
    }
    type Subscription {
      orderCreated(region: String!, status: String): Order! @subscribe(subjects: ["orders_${u}.{args.region}"])
      orderStored: Order! @subscribe(subjects: ["stored_${u}.orders"], durable: true, stream: "${stream}")
      bigFeed: Order! @subscribe(subjects: ["big_${u}"])
    }
    type Mutation {
      createOrder(region: String!, order: OrderInput!): PublishAck! @publish(subject: "orders_${u}.{args.region}", payload: "order")
      storeOrder(order: OrderInput!): PublishAck! @publish(subject: "stored_${u}.orders", stream: "${stream}", payload: "order")
    }`
  const nc: NatsConnection = await connect({ servers: natsUrl.replace(/^nats:\/\//, '') })
  const jc = JSONCodec()
  t.teardown(async () => {
    const jsm = await nc.jetstreamManager()
    await jsm.streams.delete(stream).catch(() => {})
    await nc.close()
  })
  const dir = mkdtempSync(join(tmpdir(), 'tributary-events-nats-'))
  const sourceOptions = { broker: 'nats' as const, url: natsUrl, schema, maxBufferedEvents: 50, maxPayloadBytes: 65536 }
  const operations = { Orders: 'subscription Orders($region: String!) { shop_orderCreated(region: $region) { id total customer { name } } }' }
  const gw = await startEventsGateway(t, sourceOptions, { operations, dir })
  const order = (id: string, customerId = 1, status = 'new') => ({ id, customerId, total: 9.5, status })

  t.test('subscribe over WebSocket with the argument in the subject and a filter; links complete the customer', async (t) => {
    const all = gw.ws('subscription { shop_orderCreated(region: "eu") { id status customer { name } } }')
    const shipped = gw.ws('subscription { shop_orderCreated(region: "eu", status: "shipped") { id } }')
    t.ok(await warmUp(all, async () => nc.publish(`orders_${u}.eu`, jc.encode(order('warm')))), 'the subscription runs')
    t.ok(await warmUp(shipped, async () => nc.publish(`orders_${u}.eu`, jc.encode(order('warm', 1, 'shipped')))), 'the filtered one too')
    all.events.length = 0
    nc.publish(`orders_${u}.us`, jc.encode(order('other-region')))
    nc.publish(`orders_${u}.eu`, jc.encode(order('o1', 1)))
    nc.publish(`orders_${u}.eu`, jc.encode(order('o2', 2, 'shipped')))
    t.ok(await until(() => real(all, 'shop_orderCreated').length >= 2 && real(shipped, 'shop_orderCreated').length >= 1))
    t.same(real(all, 'shop_orderCreated'), [
      { data: { shop_orderCreated: { id: 'o1', status: 'new', customer: { name: 'Ada' } } } },
      { data: { shop_orderCreated: { id: 'o2', status: 'shipped', customer: { name: 'Bo' } } } },
    ], 'events of region eu only, each with its customer from SQLite')
    t.same(real(shipped, 'shop_orderCreated'), [{ data: { shop_orderCreated: { id: 'o2' } } }], 'the status filter')
    all.close()
    shipped.close()
  })

  t.test('subscribe over Server-Sent Events (stored operation) and publish through a mutation', async (t) => {
    const sse = gw.sse('/operations/Orders?region=asia')
    const publish = (id: string) => gw.query('mutation($o: shop_OrderInput!) { shop_createOrder(region: "asia", order: $o) { success broker stream } }', { o: order(id, 2) })
    t.ok(await warmUp(sse, () => publish('warm')), 'the stream runs')
    const ack = await publish('a1')
    t.same(ack.body, { data: { shop_createOrder: { success: true, broker: 'nats', stream: null } } }, 'a core NATS publish is acknowledged after the flush')
    t.ok(await until(() => real(sse, 'shop_orderCreated').length >= 1))
    t.same(real(sse, 'shop_orderCreated')[0], { data: { shop_orderCreated: { id: 'a1', total: 9.5, customer: { name: 'Bo' } } } })
    sse.close()
  })

  t.test('a malformed message is logged and counted, never sent', async (t) => {
    const sub = gw.ws('subscription { shop_orderCreated(region: "bad") { id } }')
    t.ok(await warmUp(sub, async () => nc.publish(`orders_${u}.bad`, jc.encode(order('warm')))))
    const before = await gw.rejected('shop_orderCreated')
    nc.publish(`orders_${u}.bad`, new TextEncoder().encode('{not json'))
    nc.publish(`orders_${u}.bad`, jc.encode({ id: 'x', customerId: 'one', total: 1 }))
    nc.publish(`orders_${u}.bad`, jc.encode({ id: 'y', total: 1 }))
    nc.publish(`orders_${u}.bad`, new Uint8Array(70000).fill(32))
    nc.publish(`orders_${u}.bad`, jc.encode(order('good')))
    t.ok(await until(() => real(sub, 'shop_orderCreated').length >= 1))
    t.same(real(sub, 'shop_orderCreated'), [{ data: { shop_orderCreated: { id: 'good' } } }], 'only the well-formed message reaches the subscriber')
    t.equal(await gw.rejected('shop_orderCreated') - before, 4, 'four refused messages counted in tributary_events_rejected_total')
    t.ok(gw.warnings.some((w) => w.includes('not JSON')) && gw.warnings.some((w) => w.includes('customerId is not an Int')) && gw.warnings.some((w) => w.includes('maxPayloadBytes')), 'each is logged with why')
    sub.close()
  })

  t.test('request–reply, and its timeout as a coded error', async (t) => {
    const service = nc.subscribe(`quote_${u}.*`, {
      callback: (_err, msg) => {
        const { sku } = jc.decode(msg.data) as { sku: string }
        if (sku === 'slow') return
        msg.respond(jc.encode(sku === 'broken' ? { sku, price: 'free' } : { sku, price: 12.5 }))
      },
    })
    await nc.flush()
    t.teardown(() => service.unsubscribe())
    const ok = await gw.query('{ shop_quote(sku: "abc") { sku price } }')
    t.same(ok.body, { data: { shop_quote: { sku: 'abc', price: 12.5 } } })
    const slow = await gw.query('{ shop_quote(sku: "slow") { sku } }')
    t.equal(slow.body.errors[0].extensions.code, 'TRB_ERR_UPSTREAM_TIMEOUT', 'no reply within timeoutMs')
    t.match(slow.body.errors[0].message, /300 ms/)
    const broken = await gw.query('{ shop_quote(sku: "broken") { sku } }')
    t.equal(broken.body.errors[0].extensions.code, 'TRB_ERR_UPSTREAM', 'a reply not of the field type is an upstream error')
    service.unsubscribe()
    await nc.flush()
    const none = await gw.query('{ shop_quote(sku: "abc") { sku } }')
    t.equal(none.body.errors[0].extensions.code, 'TRB_ERR_UPSTREAM_UNAVAILABLE', 'no responders')
  })

  t.test('attacks: a wildcard in a subject argument, an oversized publish', async (t) => {
    for (const region of ['*', '>', 'eu.x', 'a b', '', 'x'.repeat(129)]) {
      const sub = gw.ws('subscription($r: String!) { shop_orderCreated(region: $r) { id } }', { r: region })
      t.ok(await until(() => sub.events.length > 0 || sub.done))
      const errors = sub.events[0]?.errors ?? (sub.error as { message: string; extensions?: { code?: string } }[])
      t.equal(errors?.[0]?.extensions?.code, 'TRB_ERR_GRAPHQL_FIELD', `region ${JSON.stringify(region).slice(0, 20)} refused`)
    }
    const big = await gw.query('mutation($o: shop_OrderInput!) { shop_createOrder(region: "eu", order: $o) { success } }', { o: { ...order('big'), status: 'x'.repeat(70000) } })
    t.equal(big.body.errors[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT', 'a message over maxPayloadBytes is not published')
  })

  t.test('a slow subscriber: more than maxBufferedEvents waiting ends its subscription with TRB_ERR_EVENTS_SLOW_SUBSCRIBER', async (t) => {
    // The subscription of the served schema, not read while 60 events arrive (maxBufferedEvents is 50).
    const it = (await subscribe({ schema: gw.gateway.schema, document: parse('subscription { shop_bigFeed { id } }') })) as AsyncGenerator<{ data?: unknown; errors?: { extensions?: { code?: string } }[] }>
    t.ok(Symbol.asyncIterator in it, 'subscribed')
    const first = it.next()
    let warm = 0
    while (!(await Promise.race([first.then(() => true), new Promise((r) => setTimeout(() => r(false), 25))]))) nc.publish(`big_${u}`, jc.encode({ ...order('warm'), n: warm++ }))
    await new Promise((r) => setTimeout(r, 30))
    for (let i = 0; i < 60; i++) nc.publish(`big_${u}`, jc.encode(order(`b${i}`)))
    await nc.flush()
    await until(() => false, 200)
    const seen: unknown[] = []
    for await (const r of it) seen.push(r)
    const last = seen.pop() as { errors?: { originalError?: { code?: string }; message: string }[] }
    t.equal(last.errors?.[0]?.originalError?.code, 'TRB_ERR_EVENTS_SLOW_SUBSCRIBER', 'the last result carries the code, then the subscription completes')
    t.ok(seen.length < 10, `the buffered events were dropped (${seen.length} warm-ups left before the error)`)
  })

  t.test('a WebSocket that stops reading is closed by the gateway, not buffered without bound', async (t) => {
    const socket = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws')
    const messages: { type: string; payload?: any }[] = []
    socket.on('message', (raw: Buffer) => void messages.push(JSON.parse(raw.toString())))
    let closed = 0
    socket.on('close', (code) => void (closed = code))
    await new Promise((r) => socket.once('open', r))
    socket.send(JSON.stringify({ type: 'connection_init' }))
    await until(() => messages.some((m) => m.type === 'connection_ack'))
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { shop_bigFeed { id status } }' } }))
    const end = Date.now() + 5000
    while (!messages.some((m) => m.type === 'next') && Date.now() < end) {
      nc.publish(`big_${u}`, jc.encode({ ...order('warm'), status: 'w' }))
      await until(() => messages.some((m) => m.type === 'next'), 25)
    }
    ;(socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause()
    const filler = 'x'.repeat(60000)
    for (let i = 0; i < 700; i++) nc.publish(`big_${u}`, jc.encode({ ...order(`b${i}`), status: filler }))
    await nc.flush()
    await new Promise((r) => setTimeout(r, 300))
    ;(socket as unknown as { _socket: { resume(): void } })._socket.resume()
    t.ok(await until(() => closed !== 0, 10000), `the socket is closed (${closed})`)
    t.ok(messages.filter((m) => m.type === 'next').length < 700, 'before every event was sent')
  })


  t.test('JetStream: a publish waits for the stream ack; a durable subscription resumes after a restart', async (t) => {
    const first = gw.ws('subscription { shop_orderStored { id customer { name } } }')
    const store = (g: typeof gw, id: string) => g.query('mutation($o: shop_OrderInput!) { shop_storeOrder(order: $o) { success stream sequence } }', { o: order(id) })
    t.ok(await warmUp(first, () => store(gw, 'warm')), 'the durable consumer runs')
    const ack = await store(gw, 'd1')
    t.equal(ack.body.data.shop_storeOrder.stream, stream, 'acknowledged by the stream')
    t.ok(ack.body.data.shop_storeOrder.sequence > 0, 'with its sequence')
    t.ok(await until(() => first.events.some((e) => e.data?.['shop_orderStored']?.id === 'd1')))
    t.same(first.events.find((e) => e.data?.['shop_orderStored']?.id === 'd1'), { data: { shop_orderStored: { id: 'd1', customer: { name: 'Ada' } } } })
    await gw.close()

    // The gateway is down: a message is stored in the stream, not lost.
    await nc.jetstream().publish(`stored_${u}.orders`, jc.encode(order('missed', 2)))
    const again = await startEventsGateway(t, sourceOptions, { operations, dir })
    const second = again.ws('subscription { shop_orderStored { id customer { name } } }')
    t.ok(await until(() => second.events.length >= 1), 'the new subscriber gets the missed message')
    t.same(second.events[0], { data: { shop_orderStored: { id: 'missed', customer: { name: 'Bo' } } } })
    const health = await (await fetch(`${again.url}/health`)).json() as Record<string, unknown>
    t.match(JSON.stringify(health), /"shop"/, '/health lists the broker source')
    t.notMatch(JSON.stringify(health), /"shop":\{"status":"down"/, 'and shows it up')
  })

  t.test('config and schema errors are coded', async (t) => {
    const base = { kind: 'events', url: natsUrl, schema: 'type Query { a: Int }' }
    t.throws(() => resolveConfig({ datasources: [{ ...base, broker: 'kafka' } as never] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'an unknown broker')
    t.throws(() => resolveConfig({ datasources: [{ ...base, broker: 'nats', maxBufferedEvents: 0 } as never] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'maxBufferedEvents below 1')
    t.throws(() => resolveConfig({ datasources: [{ ...base, broker: 'nats', url: 'http://x' } as never] }), { code: 'TRB_ERR_CONFIG_INVALID' }, 'a URL of no broker')
    const ctx = { namespace: 'x', sourceName: 'x', logger: pino({ level: 'silent' }), mode: 'development' as const, cacheDir: dir, cwd: dir }
    const load = (broker: 'nats' | 'amqp', schema: string) => createEventsSource({ broker, url: 'amqp://127.0.0.1:1', schema }, ctx)
    await t.rejects(load('amqp', 'type Query { q(s: String!): Int @request(subject: "x.{args.s}") }'), { code: 'TRB_ERR_SOURCE_LOAD' }, '@request needs NATS')
    await t.rejects(load('amqp', 'type Query { a: Int } type Subscription { s: Int @subscribe(subjects: ["x"], durable: true, stream: "S") }'), { code: 'TRB_ERR_SOURCE_LOAD' }, 'stream needs NATS')
    await t.rejects(load('nats', 'type Query { a: Int } type Subscription { s: Int @subscribe(subjects: ["x.{args.nope}"]) }'), { code: 'TRB_ERR_SOURCE_LOAD' }, 'a subject naming no argument')
    await t.rejects(load('nats', 'type Query { a: Int @subscribe(subjects: ["x"]) }'), { code: 'TRB_ERR_SOURCE_LOAD' }, '@subscribe on a Query field')
    await t.rejects(load('nats', 'type Query { q: Int @request(subject: "x", timeoutMs: 600000) }'), { code: 'TRB_ERR_SOURCE_LOAD' }, 'timeoutMs above 60000')
  })


  t.test('a broker that is down: /health shows it, an operation fails with a code after connectTimeoutMs', async (t) => {
    const down = await startEventsGateway(t, { broker: 'nats', url: 'nats://127.0.0.1:1', schema: 'type Order { id: ID! customerId: Int! } type Query { a: Int } type Subscription { o: Order! @subscribe(subjects: ["x"]) } type Mutation { p(id: ID!): PublishAck! @publish(subject: "x") }', connectTimeoutMs: 200, maxReconnectDelayMs: 200 })
    const health = await (await fetch(`${down.url}/health`)).json() as { status: string; sources: Record<string, { status: string; message?: string }> }
    t.equal(health.sources['shop']?.status, 'down')
    t.equal(health.status, 'degraded')
    const res = await down.query('mutation { shop_p(id: "1") { success } }')
    t.equal(res.body.errors[0].extensions.code, 'TRB_ERR_UPSTREAM_UNAVAILABLE')
    const sub = down.ws('subscription { shop_o { id } }')
    t.ok(await until(() => sub.events.length > 0 || sub.done))
    const errors = sub.events[0]?.errors ?? (sub.error as { extensions?: { code?: string } }[])
    t.equal(errors?.[0]?.extensions?.code, 'TRB_ERR_UPSTREAM_UNAVAILABLE', 'a subscription too')
    await down.close()
  })

}
