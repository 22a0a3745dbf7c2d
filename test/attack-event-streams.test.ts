/**
 * Event streams (Server-Sent Events on `/operations/*`: subscriptions and `?live=true` queries) are
 * bounded by `server.maxEventStreams`: one more is refused with 503 `TRB_ERR_CAPACITY` and
 * `Retry-After`, before any stream starts; a stream the client closes frees its place. Real HTTP
 * against the demo.
 */
import t from 'tap'
import { startDemo } from './helpers/demo.js'
import { eventually } from './helpers/eventually.js'

interface Opened {
  status: number
  body: string
  abort(): void
}

/** Opens `path` as an event stream; for a 200, reads its first chunk (the `: stream opened` comment) and keeps it open. */
async function openStream(url: string, path: string): Promise<Opened> {
  const controller = new AbortController()
  const res = await fetch(url + path, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
  if (res.status !== 200) return { status: res.status, body: await res.text(), abort: () => controller.abort() }
  const first = await res.body!.getReader().read()
  return { status: res.status, body: new TextDecoder().decode(first.value), abort: () => controller.abort() }
}

t.test('past server.maxEventStreams: 503 TRB_ERR_CAPACITY with Retry-After; a closed stream frees its place', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { server: { maxEventStreams: 2 } } })
  const held: Opened[] = []
  t.teardown(() => held.forEach((s) => s.abort()))

  const subscription = await openStream(url, '/operations/MessageCreated')
  held.push(subscription)
  t.equal(subscription.status, 200)
  t.match(subscription.body, /stream opened/)
  const live = await openStream(url, '/operations/TodoById?id=1&live=true')
  held.push(live)
  t.equal(live.status, 200, 'a live query is a stream too')

  for (const path of ['/operations/MessageCreated', '/operations/TodoById?id=1&live=true']) {
    const res = await fetch(url + path, { headers: { accept: 'text/event-stream' } })
    t.equal(res.status, 503, `${path}: refused`)
    t.equal(res.headers.get('retry-after'), '5')
    t.match(res.headers.get('content-type'), /application\/json/, 'a JSON error body, not a stream')
    const body = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] }
    t.equal(body.errors[0]!.extensions.code, 'TRB_ERR_CAPACITY')
    t.match(body.errors[0]!.message, /2 event streams are open \(server\.maxEventStreams\)/)
  }
  const normal = await fetch(`${url}/operations/TodoById?id=1`)
  t.equal(normal.status, 200, 'other requests are served')
  await normal.text()

  // The client leaves: its place is free again (the server sees the socket close).
  subscription.abort()
  let again: Opened | undefined
  t.ok(
    await eventually(async () => {
      const s = await openStream(url, '/operations/MessageCreated')
      if (s.status === 200) {
        again = s
        return true
      }
      return false
    }, 5000, 50),
    'a new stream is accepted once one closed',
  )
  if (again) held.push(again)
  const full = await fetch(`${url}/operations/MessageCreated`, { headers: { accept: 'text/event-stream' } })
  t.equal(full.status, 503, 'and the bound holds again')
  await full.text()
})

t.test('server.maxEventStreams is validated: a negative or fractional value fails at startup', async (t) => {
  for (const value of [-1, 1.5]) {
    await t.rejects(startDemo(t, { override: { server: { maxEventStreams: value } } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /maxEventStreams/ }, String(value))
  }
})
