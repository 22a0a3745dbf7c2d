/**
 * Attack: a client opens a subscription over Server-Sent Events (`GET /operations/Flood`) and never
 * reads while the server publishes as fast as it can. The gateway does not buffer without end: once
 * `MAX_WAITING_SSE_EVENTS` (1000) events wait for the client, the stream ends with a last `data:`
 * event carrying `TRB_ERR_CAPACITY`, the subscription's source is released and the close is counted
 * (`tributary_event_streams_slow_closed_total`). Real HTTP on 127.0.0.1, a raw socket as the client.
 */
import t from 'tap'
import { connect } from 'node:net'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { MAX_WAITING_SSE_EVENTS } from '../gateway/http/operations-routes.js'
import { activity } from '../gateway/observability/probes.js'
import { eventually } from './helpers/eventually.js'
import { serveGateway } from './helpers/serve.js'

t.test('a Server-Sent Events client that never reads: the stream is closed with TRB_ERR_CAPACITY', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-sse-slow-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Flood.graphql'), 'subscription Flood { flood { n pad } }\n')
  const state = { produced: 0, finished: false }
  const pad = 'x'.repeat(2048)
  const config = resolveConfig({
    datasources: [
      schema({
        typeDefs: 'type Event { n: Int!, pad: String! }\ntype Query { now: String }\ntype Subscription { flood: Event }',
        resolvers: {
          Subscription: {
            flood: {
              // As fast as the event loop goes: one event per macrotask.
              subscribe: async function* () {
                try {
                  for (let n = 0; ; n++) {
                    state.produced++
                    yield { flood: { n, pad } }
                    await new Promise((r) => setImmediate(r))
                  }
                } finally {
                  state.finished = true
                }
              },
            },
          },
        },
      }),
    ],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
  })
  const { url } = await serveGateway(t, config)
  const port = Number(new URL(url).port)

  const closedBefore = activity.slowEventStreamsClosed
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.pause()
  socket.write('GET /operations/Flood HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n')

  t.ok(await eventually(() => activity.slowEventStreamsClosed > closedBefore, 30_000), 'the stream is closed')
  t.ok(await eventually(() => state.finished, 5000), "the subscription's source is released")
  const produced = state.produced
  t.ok(produced > MAX_WAITING_SSE_EVENTS, `more than ${MAX_WAITING_SSE_EVENTS} events were published (${produced})`)

  // The client reads at last: the events written before the bound, then the coded error, then the end.
  const chunks: Buffer[] = []
  socket.on('data', (c: Buffer) => chunks.push(c))
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.resume()
  await closed
  const text = Buffer.concat(chunks).toString('utf8')
  // (Chunked transfer encoding: each event is one chunk, so each `data:` line is whole.)
  const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1]!)
  const last = JSON.parse(events.at(-1) ?? '{}') as { errors?: { message: string; extensions: { code: string } }[] }
  t.equal(last.errors?.[0]?.extensions.code, 'TRB_ERR_CAPACITY', 'the last event is the coded error')
  t.match(last.errors?.[0]?.message, /1000 events unread/)
  t.ok(events.length - 1 < produced, `the events before it (${events.length - 1}) are fewer than those published`)
  t.equal(state.produced, produced, 'nothing more was produced after the close')
})
