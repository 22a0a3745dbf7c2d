/**
 * The deployment of the `events` bench scenario (bench/run.mjs): one events source over NATS
 * (`NATS_URL`, default nats://127.0.0.1:4222) whose subscription `bench_tick` reads the subject
 * `BENCH_EVENTS_SUBJECT` (one per bench run). The payload carries the publisher's clock (`sentAt`,
 * milliseconds) so that the bench measures delivery latency. Generated files go to a temporary directory.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineConfig, events } from '../../gateway/config/index.js'

const subject = process.env.BENCH_EVENTS_SUBJECT || 'bench.tick'
const sockets = Number(process.env.MAX_WEBSOCKETS) || 1000

export default defineConfig({
  datasources: [
    events({
      namespace: 'bench',
      broker: 'nats',
      url: process.env.NATS_URL || 'nats://127.0.0.1:4222',
      schema: `
        type Tick { seq: Int! sentAt: Float! }
        type Query { ping: Boolean }
        type Subscription { tick: Tick! @subscribe(subjects: ["${subject}"]) }`,
    }),
  ],
  server: { maxWebSockets: sockets, maxConnections: sockets + 100 },
  operations: { dir: 'bench/events/operations' },
  generatedDir: join(tmpdir(), `tributary-bench-events-${process.pid}`),
})
