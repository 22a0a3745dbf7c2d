/**
 * The checks every broker of the events connector passes (README "Events (message brokers)"), run
 * by test/events-amqp.test.ts, test/events-mqtt.test.ts and test/events-redis.test.ts against the
 * real broker: a subscription over graphql-ws with the argument in the subject, a filter and the
 * customer linked from SQLite; a stored subscription over Server-Sent Events fed by a publish
 * mutation; a malformed message counted and never sent; a wildcard argument refused.
 */
import type { Test } from 'tap'
import { real, startEventsGateway, unique, until, warmUp } from './events-gateway.js'
import type { BrokerKind } from '../../gateway/connectors/events/index.js'

/** What a broker test file supplies. */
export interface BrokerSuite {
  broker: BrokerKind
  url: string
  /** The subject separator: `.` (AMQP routing keys, Redis channels) or `/` (MQTT topics). */
  sep: string
  /** Publishes raw bytes with the test's own client. */
  publish(subject: string, body: Uint8Array): Promise<void>
}

/** Runs the shared checks as subtests of `t`. */
export async function runBrokerSuite(t: Test, s: BrokerSuite): Promise<void> {
  const u = unique()
  const subj = (...parts: string[]) => [`orders_${u}`, ...parts].join(s.sep)
  const schema = `
    type Order { id: ID! customerId: Int! total: Float! status: String }
    input OrderInput { id: ID! customerId: Int! total: Float! status: String }
    type Query { ping: Boolean }
    type Subscription {
      orderCreated(region: String!, status: String): Order! @subscribe(subjects: ["${subj('{args.region}')}"])
    }
    type Mutation {
      createOrder(region: String!, order: OrderInput!): PublishAck! @publish(subject: "${subj('{args.region}')}", payload: "order")
    }`
  const gw = await startEventsGateway(t, { broker: s.broker, url: s.url, schema, maxPayloadBytes: 65536 }, {
    operations: { Orders: 'subscription Orders($region: String!) { shop_orderCreated(region: $region) { id total customer { name } } }' },
  })
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
  const order = (id: string, customerId = 1, status = 'new') => ({ id, customerId, total: 9.5, status })
  const F = 'shop_orderCreated'

  await t.test(`${s.broker}: subscribe over WebSocket with the argument in the subject and a filter; links complete the customer`, async (t) => {
    const all = gw.ws('subscription { shop_orderCreated(region: "eu") { id status customer { name } } }')
    const shipped = gw.ws('subscription { shop_orderCreated(region: "eu", status: "shipped") { id } }')
    t.ok(await warmUp(all, () => s.publish(subj('eu'), json(order('warm')))), 'the subscription runs')
    t.ok(await warmUp(shipped, () => s.publish(subj('eu'), json(order('warm', 1, 'shipped')))), 'the filtered one too')
    await s.publish(subj('us'), json(order('other-region')))
    await s.publish(subj('eu'), json(order('o1', 1)))
    await s.publish(subj('eu'), json(order('o2', 2, 'shipped')))
    t.ok(await until(() => real(all, F).length >= 2 && real(shipped, F).length >= 1))
    t.same(real(all, F), [
      { data: { [F]: { id: 'o1', status: 'new', customer: { name: 'Ada' } } } },
      { data: { [F]: { id: 'o2', status: 'shipped', customer: { name: 'Bo' } } } },
    ], 'events of region eu only, each with its customer from SQLite')
    t.same(real(shipped, F), [{ data: { [F]: { id: 'o2' } } }], 'the status filter')
    all.close()
    shipped.close()
  })

  await t.test(`${s.broker}: Server-Sent Events and a publish mutation`, async (t) => {
    const sse = gw.sse('/operations/Orders?region=asia')
    const publish = (id: string) => gw.query('mutation($o: shop_OrderInput!) { shop_createOrder(region: "asia", order: $o) { success broker } }', { o: order(id, 2) })
    t.ok(await warmUp(sse, () => publish('warm')), 'the stream runs')
    const ack = await publish('a1')
    t.same(ack.body, { data: { shop_createOrder: { success: true, broker: s.broker } } }, 'acknowledged')
    t.ok(await until(() => real(sse, F).length >= 1))
    t.same(real(sse, F)[0], { data: { [F]: { id: 'a1', total: 9.5, customer: { name: 'Bo' } } } })
    sse.close()
  })

  await t.test(`${s.broker}: a malformed message is logged and counted, never sent`, async (t) => {
    const sub = gw.ws('subscription { shop_orderCreated(region: "bad") { id } }')
    t.ok(await warmUp(sub, () => s.publish(subj('bad'), json(order('warm')))))
    const before = await gw.rejected(F)
    await s.publish(subj('bad'), new TextEncoder().encode('{not json'))
    await s.publish(subj('bad'), json({ id: 'x', customerId: 'one', total: 1 }))
    await s.publish(subj('bad'), new Uint8Array(70000).fill(32))
    await s.publish(subj('bad'), json(order('good')))
    t.ok(await until(() => real(sub, F).length >= 1))
    t.same(real(sub, F), [{ data: { [F]: { id: 'good' } } }], 'only the well-formed message reaches the subscriber')
    t.ok(await until(() => false, 50) || true)
    t.equal(await gw.rejected(F) - before, 3, 'three refused messages counted')
    sub.close()
  })

  await t.test(`${s.broker}: attack: a wildcard or separator in a subject argument is refused`, async (t) => {
    for (const region of ['*', '#', '+', 'eu.x', 'eu/x', '>']) {
      const sub = gw.ws('subscription($r: String!) { shop_orderCreated(region: $r) { id } }', { r: region })
      t.ok(await until(() => sub.events.length > 0 || sub.done))
      const errors = sub.events[0]?.errors ?? (sub.error as { extensions?: { code?: string } }[])
      t.equal(errors?.[0]?.extensions?.code, 'TRB_ERR_GRAPHQL_FIELD', `region ${region} refused`)
    }
  })

  await t.test(`${s.broker}: /health shows the broker up`, async (t) => {
    const health = await (await fetch(`${gw.url}/health`)).json() as { sources: Record<string, { status: string }> }
    t.equal(health.sources['shop']?.status, 'up')
  })
}
