/**
 * Subscriptions as Server-Sent Events on `GET /operations/<Name>`, read by a real EventSource client
 * (the `eventsource` package): JSON `data:` events with increasing ids, the upstream released
 * when the client leaves, and equal subscriptions sharing one execution (`graphql.shareSubscriptions`).
 */
import t, { type Test } from 'tap'
import { EventSource } from 'eventsource'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { startDemo } from './helpers/demo.js'

interface Received {
  events: unknown[]
  opened: boolean
  errors: number
}

/** Opens an EventSource and resolves once `count` events arrived. */
function collect(url: string, count: number, timeoutMs = 5000): Promise<{ es: EventSource; received: Received }> {
  const es = new EventSource(url)
  const received: Received = { events: [], opened: false, errors: 0 }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      es.close()
      reject(new Error(`timed out with ${received.events.length} of ${count} events`))
    }, timeoutMs)
    es.onopen = () => (received.opened = true)
    es.onerror = () => received.errors++
    es.onmessage = (event) => {
      received.events.push(JSON.parse(event.data))
      if (received.events.length === count) {
        clearTimeout(timer)
        resolve({ es, received })
      }
    }
  })
}

async function waitFor(check: () => boolean, timeoutMs = 3000): Promise<boolean> {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return check()
}

t.test('the demo subscription MessageCreated over SSE', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const { es, received } = await collect(`${url}/operations/MessageCreated`, 3)
  es.close()
  t.ok(received.opened)
  const messages = received.events as { data: { messageCreated: { id: string; content: string } } }[]
  for (const m of messages) {
    t.same(Object.keys(m), ['data'], 'each event is {data} (no errors)')
    t.match(m.data.messageCreated.content, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  }
  const ids = messages.map((m) => Number(m.data.messageCreated.id))
  t.ok(ids.every(Number.isInteger), `ids are numeric: ${ids}`)
  t.ok(ids[1] > ids[0] && ids[2] > ids[1], `ids increase: ${ids}`)

  t.test('without Accept: text/event-stream a subscription is a 406 JSON error', async (t) => {
    const res = await fetch(`${url}/operations/MessageCreated`)
    t.equal(res.status, 406)
    t.equal(((await res.json()) as any).errors[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
  })

  t.test('a subscription over POST is a 405 with Allow: GET', async (t) => {
    const res = await fetch(`${url}/operations/MessageCreated`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    t.equal(res.status, 405)
    t.equal(res.headers.get('allow'), 'GET')
  })
})

/** A gateway over a local schema with `Subscription.tick(from)` (every 30 ms), counting its streams. */
async function tickGateway(t: Test, override: Record<string, unknown> = {}) {
  const state = { started: 0, finished: 0, aborted: 0 }
  const typeDefs = /* GraphQL */ `
    type Tick { n: Int!, at: String! }
    type Query { now: String! }
    type Subscription { tick(from: Int = 0): Tick, whoami: String }
  `
  const resolvers = {
    Query: { now: () => new Date().toISOString() },
    Subscription: {
      // Who the context says the caller is: what a shared stream must never hand to another caller.
      whoami: {
        subscribe: async function* (_: unknown, _args: unknown, context: { headers?: Record<string, string | undefined> }) {
          state.started++
          for (;;) {
            yield { whoami: context.headers?.['x-user'] ?? null }
            await new Promise((r) => setTimeout(r, 30))
          }
        },
      },
      tick: {
        subscribe: async function* (_: unknown, args: { from: number }, context: { signal?: AbortSignal }) {
          state.started++
          context.signal?.addEventListener('abort', () => state.aborted++)
          try {
            for (let n = args.from; ; n++) {
              yield { tick: { n, at: new Date().toISOString() } }
              await new Promise((r) => setTimeout(r, 30))
            }
          } finally {
            state.finished++
          }
        },
      },
    },
  }
  const config = resolveConfig({
    datasources: [schema({ typeDefs, resolvers })],
    operations: { dir: fileURLToPath(new URL('./fixtures/operations-sse', import.meta.url)) },
    generatedDir: mkdtempSync(join(tmpdir(), 'tributary-sse-')),
    ...override,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
    rmSync(config.generatedDir, { recursive: true, force: true })
  })
  const address = app.server.address()
  return { app, state, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` }
}

t.test('closing the EventSource releases the upstream subscription', async (t) => {
  const { app, state, url } = await tickGateway(t)
  const { es, received } = await collect(`${url}/operations/Ticks?from=5`, 3)
  t.same(
    (received.events as { data: { tick: { n: number } } }[]).map((e) => e.data.tick.n),
    [5, 6, 7],
    'variables come from the query string (coerced), one event per result',
  )
  t.equal(state.started, 1)
  t.equal(state.finished, 0, 'still running while the client listens')
  es.close()
  t.ok(await waitFor(() => state.finished === 1), 'the generator finished (its finally ran) after the client left')
  t.equal(state.aborted, 1, 'context.signal was aborted')

  t.test('an unknown variable on a subscription is a 400 before the stream starts', async (t) => {
    const res = await fetch(`${url}/operations/Ticks?nope=1`, { headers: { accept: 'text/event-stream' } })
    t.equal(res.status, 400)
    t.equal(((await res.json()) as any).errors[0].extensions.variable, 'nope')
  })

  t.test('closing the app ends open streams', async (t) => {
    const { es } = await collect(`${url}/operations/Ticks`, 1)
    t.teardown(() => es.close())
    const before = state.finished
    t.equal(state.started, before + 1)
    const started = Date.now()
    await app.close()
    t.ok(Date.now() - started < 2000, 'app.close() does not wait for the stream')
    t.ok(await waitFor(() => state.finished === before + 1), 'the generator finished')
  })
})

t.test('equal subscriptions share one execution; each client leaves on its own', async (t) => {
  const { state, url } = await tickGateway(t)
  const a = await collect(`${url}/operations/Ticks?from=5`, 2)
  const b = await collect(`${url}/operations/Ticks?from=5`, 2)
  const c = await collect(`${url}/operations/Ticks?from=5`, 2)
  t.equal(state.started, 1, 'three clients of the same operation and variables: one source stream')
  const last = (r: Received) => (r.events.at(-1) as { data: { tick: { n: number } } }).data.tick.n
  t.ok(last(b.received) >= 6 && last(c.received) >= 6, 'a client that joins later gets the events from then on')
  const other = await collect(`${url}/operations/Ticks?from=100`, 1)
  t.equal(state.started, 2, 'other variables: a stream of their own')
  t.equal((other.received.events[0] as { data: { tick: { n: number } } }).data.tick.n, 100)
  other.es.close()
  t.ok(await waitFor(() => state.finished === 1), 'its stream ended with its only client')

  a.es.close()
  b.es.close()
  const seen = c.received.events.length
  t.ok(await waitFor(() => c.received.events.length >= seen + 3), 'the remaining client still gets events')
  t.equal(state.finished, 1, 'the shared stream runs while a client listens')
  c.es.close()
  t.ok(await waitFor(() => state.finished === 2), 'the shared stream ended with its last client')
  t.equal(state.aborted, 2, 'context.signal was aborted once per stream')
})

t.test('graphql.shareSubscriptions: false gives every event stream its own execution', async (t) => {
  const { state, url } = await tickGateway(t, { graphql: { shareSubscriptions: false } })
  const a = await collect(`${url}/operations/Ticks?from=5`, 2)
  const b = await collect(`${url}/operations/Ticks?from=5`, 2)
  t.equal(state.started, 2)
  t.same((b.received.events[0] as { data: { tick: { n: number } } }).data.tick.n, 5, 'each starts from its own first event')
  a.es.close()
  b.es.close()
  t.ok(await waitFor(() => state.finished === 2))
})

t.test('clients with other headers (Authorization and cookies among them) never share a stream', async (t) => {
  const { state, url } = await tickGateway(t)
  /** The first `data:` event of an event stream opened with `headers`; the stream stays open until `abort()`. */
  const firstEvent = async (headers: Record<string, string>) => {
    const controller = new AbortController()
    t.teardown(() => controller.abort())
    const res = await fetch(`${url}/operations/Whoami`, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal })
    const reader = res.body!.getReader()
    let text = ''
    for (;;) {
      const m = /^data: (.*)$/m.exec(text)
      if (m) return JSON.parse(m[1]!) as { data: { whoami: string | null } }
      const { value, done } = await reader.read()
      if (done) throw new Error(`the stream ended without an event: ${text}`)
      text += new TextDecoder().decode(value)
    }
  }
  const alice = await firstEvent({ 'x-user': 'alice' })
  const bob = await firstEvent({ 'x-user': 'bob' })
  t.equal(alice.data.whoami, 'alice')
  t.equal(bob.data.whoami, 'bob', 'bob sees his own context, not the stream alice started')
  t.equal(state.started, 2, 'two streams')
  const alice2 = await firstEvent({ 'x-user': 'alice' })
  t.equal(alice2.data.whoami, 'alice')
  t.equal(state.started, 2, 'the same headers share')
})
