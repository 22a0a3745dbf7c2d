/**
 * The events connector over a real Redis (pub/sub; 127.0.0.1:6379, REDIS_URL): the shared broker
 * checks (test/helpers/events-broker-suite.ts) with channels, messages published by the test's own
 * ioredis client, publish mutations answered with the number of receivers.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { portOpen } from './helpers/events-gateway.js'
import { runBrokerSuite } from './helpers/events-broker-suite.js'

const url = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'

if (!(await portOpen(url, 6379))) {
  t.comment(`Redis is not running at ${url} (.ci/run starts it); skipping`)
  t.pass('skipped: no Redis')
} else {
  const client = new Redis(url)
  t.teardown(() => client.disconnect())
  await runBrokerSuite(t, {
    broker: 'redis',
    url,
    sep: '.',
    publish: async (channel, body) => void (await client.publish(channel, Buffer.from(body))),
  })
}
