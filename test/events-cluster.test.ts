/**
 * Durable event fields in a cluster (README "Events (message brokers)", "Durable consumers"): two
 * gateway instances (two apps, each with its own broker and Redis connections) on one Redis prefix
 * read one durable consumer — a JetStream durable consumer (NATS) and a named durable queue (AMQP,
 * RabbitMQ). The broker gives each message to one instance, which fans it out through the cluster's
 * Redis pub/sub: a message published once reaches the subscribers of both instances exactly once each.
 * A restarted instance resumes where the consumer stopped: messages published while no gateway ran
 * are delivered. Needs Redis and the broker; each part skips with a message when one is absent.
 */
import t, { type Test } from 'tap'
import amqp from 'amqplib'
import { connect, JSONCodec } from 'nats'
import { redisReason, redisUrl, uniquePrefix } from './helpers/redis.js'
import { portOpen, startEventsGateway, unique, until, warmUp, type EventsGateway, type Received } from './helpers/events-gateway.js'

const natsUrl = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222'
const amqpUrl = process.env['TEST_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672'
const order = (id: string, customerId = 1) => ({ id, customerId, total: 9.5 })
const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
const F = 'shop_orderStored'
/** Longest wait for an event, in ms: generous, since the tests share a loaded machine; a passing run never waits it out. */
const WAIT = 30_000
const SUB = 'subscription { shop_orderStored { id customer { name } } }'
const ids = (r: Received) => r.events.map((e) => (e.data?.[F] as { id: string } | undefined)?.id ?? `error:${JSON.stringify(e)}`)

/** Whether `/health` of the gateway at `url` shows the events source `shop` up within {@link WAIT} ms. */
async function brokerUp(url: string): Promise<boolean> {
  const end = Date.now() + WAIT
  while (Date.now() < end) {
    const health = await (await fetch(`${url}/health`)).json() as { sources?: Record<string, { status: string }> }
    if (health.sources?.['shop']?.status === 'up') return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return false
}

/** The checks of one broker: fan-out exactly once to two instances, then a restart that resumes. */
async function clusterSuite(t: Test, broker: 'nats' | 'amqp', schema: string, publish: (id: string, customerId?: number) => Promise<void>) {
  const pubsub = { redisUrl, keyPrefix: uniquePrefix() }
  const options = { broker, url: broker === 'nats' ? natsUrl : amqpUrl, schema }
  const a: EventsGateway = await startEventsGateway(t, options, { pubsub })
  const b: EventsGateway = await startEventsGateway(t, options, { pubsub })

  await t.test(`${broker}: a message consumed by one instance reaches the subscribers of both, once each`, async (t) => {
    const onA = a.ws(SUB)
    const onB = b.ws(SUB)
    const onB2 = b.ws('subscription { shop_orderStored { id } }')
    let n = 0
    t.ok(await warmUp(onA, () => publish(`warm${n++}`), WAIT), 'instance A reads the consumer')
    t.ok(await warmUp(onB, () => publish(`warm${n++}`), WAIT), 'instance B too')
    t.ok(await warmUp(onB2, () => publish(`warm${n++}`), WAIT), 'with a second subscriber')
    // Warm-up messages in flight may still arrive: every event from here on is counted from a marker.
    await publish('start')
    t.ok(await until(() => [onA, onB, onB2].every((r) => ids(r).includes('start')), WAIT), 'the marker reaches every subscriber')
    for (const r of [onA, onB, onB2]) r.events.splice(0, ids(r).indexOf('start') + 1)
    const sent = Array.from({ length: 20 }, (_, i) => `m${i}`)
    for (const id of sent) await publish(id, 1 + (Number(id.slice(1)) % 2))
    await publish('end')
    t.ok(await until(() => [onA, onB, onB2].every((r) => ids(r).includes('end') && sent.every((id) => ids(r).includes(id))), WAIT), 'every message reaches every subscriber')
    for (const [name, r] of [['A', onA], ['B', onB], ['B, second', onB2]] as const) {
      t.same([...ids(r)].filter((id) => !id.startsWith('warm')).sort(), [...sent, 'end'].sort(), `subscriber ${name}: each message exactly once`)
    }
    t.same(onA.events.find((e) => (e.data?.[F] as { id: string }).id === 'm1'), { data: { [F]: { id: 'm1', customer: { name: 'Bo' } } } }, 'the link completes the customer on each instance')
    t.same(onB.events.find((e) => (e.data?.[F] as { id: string }).id === 'm2'), { data: { [F]: { id: 'm2', customer: { name: 'Ada' } } } })
    onA.close()
    onB.close()
    onB2.close()
  })

  await t.test(`${broker}: a restarted instance resumes where the consumer stopped`, async (t) => {
    await a.close()
    await b.close()
    // No gateway runs: the messages wait in the stream (NATS) or the durable queue (AMQP).
    await publish('missed1', 2)
    await publish('missed2', 1)
    const again = await startEventsGateway(t, options, { pubsub })
    // As a client would: subscribe once /health shows the broker connected (a subscription made before
    // fails after connectTimeoutMs, which a loaded machine can exceed while RabbitMQ opens the connection).
    t.ok(await brokerUp(again.url), 'the restarted instance reports its broker connected')
    const sub = again.ws(SUB)
    t.ok(await until(() => ids(sub).includes('missed2') || sub.done, WAIT) && !sub.done, 'the new subscriber gets the messages published while the gateway was down',
      { received: ids(sub), error: sub.error === undefined ? undefined : JSON.stringify(sub.error, Object.getOwnPropertyNames(sub.error ?? {})), warnings: again.warnings })
    t.same(sub.events.filter((e) => /^missed/.test((e.data?.[F] as { id: string }).id)), [
      { data: { [F]: { id: 'missed1', customer: { name: 'Bo' } } } },
      { data: { [F]: { id: 'missed2', customer: { name: 'Ada' } } } },
    ], 'in order, each once, completed by the link')
    sub.close()
  })
}

const redisDown = await redisReason()
if (redisDown) {
  t.comment(`${redisDown}; skipping`)
  t.pass('skipped: no Redis')
} else {
  await t.test('NATS JetStream', async (t) => {
    if (!(await portOpen(natsUrl, 4222))) return void t.pass(`skipped: NATS is not running at ${natsUrl}`)
    const u = unique()
    const stream = `TRBC_${u}`
    const nc = await connect({ servers: natsUrl.replace(/^nats:\/\//, '') })
    const jc = JSONCodec()
    const jsm = await nc.jetstreamManager()
    await jsm.streams.add({ name: stream, subjects: [`stored_${u}.orders`] })
    t.teardown(async () => {
      await jsm.streams.delete(stream).catch(() => {})
      await nc.close()
    })
    const schema = `
      type Order { id: ID! customerId: Int! total: Float! }
      type Query { ping: Boolean }
      type Subscription { orderStored: Order! @subscribe(subjects: ["stored_${u}.orders"], durable: true, stream: "${stream}") }`
    await clusterSuite(t, 'nats', schema, async (id, customerId) => void (await nc.jetstream().publish(`stored_${u}.orders`, jc.encode(order(id, customerId)))))
  })

  await t.test('AMQP durable queue', async (t) => {
    if (!(await portOpen(amqpUrl, 5672))) return void t.pass(`skipped: RabbitMQ is not running at ${amqpUrl}`)
    const u = unique()
    const queue = `trbc_${u}`
    const conn = await amqp.connect(amqpUrl)
    const ch = await conn.createConfirmChannel()
    t.teardown(async () => {
      await ch.deleteQueue(queue).catch(() => {})
      await conn.close()
    })
    const schema = `
      type Order { id: ID! customerId: Int! total: Float! }
      type Query { ping: Boolean }
      type Subscription { orderStored: Order! @subscribe(subjects: ["stored_${u}.orders"], durable: true, consumer: "${queue}") }`
    await clusterSuite(t, 'amqp', schema, (id, customerId) =>
      new Promise<void>((resolve, reject) => void ch.publish('amq.topic', `stored_${u}.orders`, Buffer.from(json(order(id, customerId))), { persistent: true }, (err) => (err ? reject(err) : resolve()))))
  })
}
