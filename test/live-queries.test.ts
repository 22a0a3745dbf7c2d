/**
 * Live queries: `GET /operations/<Query>?live=true` with `Accept: text/event-stream`, read by real
 * EventSource clients. The query re-runs every `# @live interval=100` ms, an event is sent only when
 * the result changed, and clients of the same operation + variables share one poller.
 */
import t from 'tap'
import { EventSource } from 'eventsource'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))

interface Client {
  es: EventSource
  events: { data: { todo_findUniqueTodo: { id: number; title: string; completed: boolean } | null }; errors?: unknown[] }[]
}

function open(url: string, headers: Record<string, string> = {}): Client {
  const es = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
  })
  const client: Client = { es, events: [] }
  es.onmessage = (event) => client.events.push(JSON.parse(event.data))
  return client
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function waitFor(check: () => boolean, timeoutMs = 3000): Promise<boolean> {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (check()) return true
    await sleep(20)
  }
  return check()
}

t.test('live queries over SSE', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir } } })

  const a = open(`${url}/operations/LiveTodo?id=1&live=true`)
  const b = open(`${url}/operations/LiveTodo?live=true&id=1`)
  t.teardown(() => {
    a.es.close()
    b.es.close()
  })
  t.ok(await waitFor(() => a.events.length === 1 && b.events.length === 1), 'both clients get the current result at once')
  t.same(a.events[0], { data: { todo_findUniqueTodo: { id: 1, title: 'Read docs/architecture.md', completed: true } } })
  t.same(b.events[0], a.events[0])
  t.equal(app.livePollers.size, 1, 'two clients of the same operation and variables share ONE poller')

  const runsBefore = app.livePollers.runs
  const sleptFrom = Date.now()
  await sleep(450)
  const runs = app.livePollers.runs - runsBefore
  // A loaded machine delays timers (fewer ticks) but never adds any: at most one run per 100 ms tick
  // elapsed (two clients polling on their own would double it), and at least one.
  const ticks = Math.ceil((Date.now() - sleptFrom) / 100)
  t.ok(runs >= 1 && runs <= ticks + 1, `the query re-ran on the 100 ms interval, once per tick for both clients (${runs} runs in ${ticks} ticks)`)
  t.equal(a.events.length, 1, 'no event while the result is unchanged')
  t.equal(b.events.length, 1)

  const update = await app.inject({ method: 'POST', url: '/operations/UpdateTitle', payload: { id: 1, title: 'Read docs/architecture.md twice' } })
  t.equal(update.statusCode, 200)
  t.ok(await waitFor(() => a.events.length === 2 && b.events.length === 2), 'a change is pushed to every client')
  await sleep(350)
  t.equal(a.events.length, 2, 'exactly one new event for one change')
  t.equal(b.events.length, 2)
  t.equal(a.events[1].data.todo_findUniqueTodo?.title, 'Read docs/architecture.md twice')
  t.same(b.events[1], a.events[1])

  t.test('other variables get their own poller; a late client gets the last result at once', async (t) => {
    const c = open(`${url}/operations/LiveTodo?id=2&live=true`)
    const d = open(`${url}/operations/LiveTodo?id=1&live=true`)
    t.teardown(() => {
      c.es.close()
      d.es.close()
    })
    t.ok(await waitFor(() => c.events.length === 1 && d.events.length === 1))
    t.equal(c.events[0].data.todo_findUniqueTodo?.id, 2)
    t.equal(d.events[0].data.todo_findUniqueTodo?.title, 'Read docs/architecture.md twice')
    t.equal(app.livePollers.size, 2)
  })

  t.test('clients with different credentials never share a poller', async (t) => {
    const e = open(`${url}/operations/LiveTodo?id=1&live=true`, { authorization: 'Bearer someone' })
    t.teardown(() => e.es.close())
    t.ok(await waitFor(() => e.events.length === 1))
    t.equal(app.livePollers.size, 2, 'id=1 anonymous + id=1 with Authorization (the id=2 poller stopped)')
  })

  t.test('the poller stops when its last client leaves', async (t) => {
    a.es.close()
    b.es.close()
    t.ok(await waitFor(() => app.livePollers.size === 0), 'no poller left')
  })

  t.test('bad live requests', async (t) => {
    const noStream = await fetch(`${url}/operations/LiveTodo?id=1&live=true`)
    t.equal(noStream.status, 406)
    t.equal(((await noStream.json()) as any).errors[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
    const badVar = await fetch(`${url}/operations/LiveTodo?id=x&live=true`, { headers: { accept: 'text/event-stream' } })
    t.equal(badVar.status, 400)
    t.equal(((await badVar.json()) as any).errors[0].extensions.variable, 'id')
    const subscription = await fetch(`${url}/operations/MessageCreated?live=true`, { headers: { accept: 'text/event-stream' } })
    t.equal(subscription.status, 400)
    await subscription.body?.cancel()
    const plain = await fetch(`${url}/operations/LiveTodo?id=1&live=false`)
    t.equal(plain.status, 200, 'live=false is a plain GET')
    t.equal(((await plain.json()) as any).todo_findUniqueTodo.id, 1)
  })
})
