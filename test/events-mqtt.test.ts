/**
 * The events connector over a real Mosquitto (MQTT; 127.0.0.1:1883, TEST_MQTT_URL): the shared broker
 * checks (test/helpers/events-broker-suite.ts) with `/`-separated topics, messages published by the
 * test's own mqtt client at QoS 1, publish mutations acknowledged by the broker's PUBACK.
 */
import t from 'tap'
import mqtt from 'mqtt'
import { portOpen } from './helpers/events-gateway.js'
import { runBrokerSuite } from './helpers/events-broker-suite.js'

const url = process.env['TEST_MQTT_URL'] ?? 'mqtt://127.0.0.1:1883'

if (!(await portOpen(url, 1883))) {
  t.comment(`Mosquitto is not running at ${url} (.ci/run starts it); skipping`)
  t.pass('skipped: no MQTT broker')
} else {
  const client = await mqtt.connectAsync(url)
  t.teardown(() => client.endAsync())
  await runBrokerSuite(t, {
    broker: 'mqtt',
    url,
    sep: '/',
    publish: async (topic, body) => void (await client.publishAsync(topic, Buffer.from(body), { qos: 1 })),
  })
}
