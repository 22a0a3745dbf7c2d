/**
 * The events connector over a real RabbitMQ (AMQP 0-9-1; 127.0.0.1:5672, TEST_AMQP_URL): the shared
 * broker checks (test/helpers/events-broker-suite.ts) with routing keys on the `amq.topic` exchange,
 * messages published by the test's own amqplib channel, publish mutations confirmed by the broker.
 */
import t from 'tap'
import amqp from 'amqplib'
import { portOpen } from './helpers/events-gateway.js'
import { runBrokerSuite } from './helpers/events-broker-suite.js'

const url = process.env['TEST_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672'

if (!(await portOpen(url, 5672))) {
  t.comment(`RabbitMQ is not running at ${url} (.ci/run starts it); skipping`)
  t.pass('skipped: no RabbitMQ')
} else {
  const conn = await amqp.connect(url)
  const ch = await conn.createConfirmChannel()
  t.teardown(() => conn.close())
  await runBrokerSuite(t, {
    broker: 'amqp',
    url,
    sep: '.',
    publish: (key, body) => new Promise<void>((resolve, reject) => void ch.publish('amq.topic', key, Buffer.from(body), {}, (err) => (err ? reject(err) : resolve()))),
  })
}
