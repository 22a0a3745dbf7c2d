/**
 * Every stored operation known at start-up has a route of its own (`/operations/<Name>`, issue 30:
 * the router matches it without the wildcard's fallback); the wildcard `/operations/*` still serves
 * the operations a development reload adds. Both are reported as `/operations/*` (metric label, the
 * console's operation name), and a reload is followed at request time: an operation removed answers
 * 404 on its own route, one added is served. The demo on a fresh SQLite file, through `inject`.
 */
import t from 'tap'
import { startDemo } from './helpers/demo.js'
import { observers } from '../gateway/observability/probes.js'
import type { Gateway } from '../gateway/runtime.js'

/** The value of `tributary_http_requests_total` with exactly these labels (0 when absent). */
function requests(text: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`tributary_http_requests_total{${labels}} `))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
}

t.test('own routes per operation, the wildcard for the rest, one label, reloads followed', async (t) => {
  const { app, gateway } = await startDemo(t, { override: { console: { enabled: true } } })
  t.ok(app.hasRoute({ method: 'GET', url: '/operations/TodoById' }), 'TodoById has its own route')
  t.ok(app.hasRoute({ method: 'POST', url: '/operations/CreateTodo' }), 'CreateTodo has its own route')
  t.ok(app.hasRoute({ method: 'GET', url: '/operations/*' }), 'the wildcard route stays')

  const label = 'route="/operations/*",method="GET",status="200"'
  const notModified = 'route="/operations/*",method="GET",status="304"'
  const scrape = await app.inject({ url: '/metrics' })
  const before = requests(scrape.body, label)
  const before304 = requests(scrape.body, notModified)
  const own = await app.inject({ url: '/operations/TodoById?id=1' })
  t.equal(own.statusCode, 200)
  t.match(JSON.parse(own.body), { todo_findUniqueTodo: { id: 1 } })
  t.match(own.headers.etag, /^W\/"[0-9a-z]+-[0-9a-z]+-[0-9a-z]+"$/, 'weak ETag')
  t.equal((await app.inject({ url: '/operations/TodoById/?id=1' })).body, own.body, 'a trailing slash is the same route')
  t.equal((await app.inject({ url: '/operations/TodoById?id=1', headers: { 'if-none-match': String(own.headers.etag) } })).statusCode, 304)
  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(requests(text, label) - before, 2, 'counted under the route label /operations/*, as on the wildcard')
  t.equal(requests(text, notModified) - before304, 1, 'the 304 too')
  const traffic = observers.traffic?.snapshot(Date.now()).operations.find((o) => o.name === 'TodoById')
  t.ok(traffic && traffic.count >= 3, 'the console counts them under the operation name')

  // A development reload: TodoById removed, TodoAgain (the same compiled operation) added.
  const operations = new Map(gateway.operations)
  const todoById = operations.get('TodoById')!
  operations.delete('TodoById')
  operations.set('TodoAgain', todoById)
  const next = { ...gateway, operations } as Gateway
  app.tributary.swap(next)
  t.teardown(() => void app.tributary.swap(gateway))
  const removed = await app.inject({ url: '/operations/TodoById?id=1' })
  t.equal(removed.statusCode, 404)
  t.equal(JSON.parse(removed.body).errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND', 'a removed operation is gone from its own route')
  const added = await app.inject({ url: '/operations/TodoAgain?id=1' })
  t.equal(added.statusCode, 200, 'an operation added by a reload is served by the wildcard route')
  t.equal(added.body, own.body)
  t.notOk(app.hasRoute({ method: 'GET', url: '/operations/TodoAgain' }), 'through the wildcard (no route is added after start)')
  const missing = await app.inject({ url: '/operations/NoSuchOperation' })
  t.equal(missing.statusCode, 404)
  t.equal(JSON.parse(missing.body).errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND')
})
