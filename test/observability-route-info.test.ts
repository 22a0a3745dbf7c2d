/**
 * Issue 30: the observability hooks read the matched route's pattern from fastify's route context
 * (gateway/observability/route-info.ts) instead of `request.routeOptions`, a getter that builds an
 * object per call. The pattern must be what `routeOptions.url` says on every kind of route, undefined
 * on a 404; and on the demo the request counter, the console's operation names and the weak ETag
 * (now printed as two base-36 numbers) keep their shape.
 */
import t from 'tap'
import Fastify from 'fastify'
import { routePattern } from '../gateway/observability/route-info.js'
import { observers } from '../gateway/observability/probes.js'
import { weakEtag } from '../gateway/http/operations-routes.js'
import { startDemo } from './helpers/demo.js'

t.test('routePattern is routeOptions.url on static, parametric, wildcard and 404 routes', async (t) => {
  const app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } })
  const seen: [string | undefined, string | undefined][] = []
  app.addHook('onResponse', (request, _reply, done) => {
    seen.push([routePattern(request), request.routeOptions.url])
    done()
  })
  app.get('/static', async () => 'ok')
  app.get('/items/:id', async () => 'ok')
  app.route({ method: ['GET', 'POST'], url: '/operations/*', handler: async () => 'ok' })
  for (const url of ['/static', '/static/', '/items/7', '/operations/a/B', '/nowhere']) await app.inject({ url })
  await app.inject({ method: 'POST', url: '/operations/X', payload: {} })
  await app.close()
  t.same(seen, [
    ['/static', '/static'],
    ['/static', '/static'],
    ['/items/:id', '/items/:id'],
    ['/operations/*', '/operations/*'],
    [undefined, undefined],
    ['/operations/*', '/operations/*'],
  ])
})

t.test('the demo: requests counted by route pattern, console names, ETag shape', async (t) => {
  const { app } = await startDemo(t, { override: { console: { enabled: true } } })
  const count = (text: string, labels: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`tributary_http_requests_total{${labels}} `))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  const ok = 'route="/operations/*",method="GET",status="200"'
  const notModified = 'route="/operations/*",method="GET",status="304"'
  const unmatched = 'route="(unmatched)",method="GET",status="404"'
  const before = (await app.inject({ url: '/metrics' })).body
  const first = await app.inject({ url: '/operations/TodoById?id=1' })
  t.equal(first.statusCode, 200)
  t.match(first.headers.etag, /^W\/"[0-9a-z]+-[0-9a-z]+-[0-9a-z]+"$/, 'weak ETag: length, then the hash as two base-36 numbers')
  t.equal(first.headers.etag, weakEtag(first.body))
  t.equal((await app.inject({ url: '/operations/TodoById/?id=1' })).headers.etag, first.headers.etag, 'a trailing slash: the same route and body')
  t.equal((await app.inject({ url: '/operations/TodoById?id=1', headers: { 'if-none-match': String(first.headers.etag) } })).statusCode, 304)
  t.equal((await app.inject({ url: '/no/such/route' })).statusCode, 404)
  const after = (await app.inject({ url: '/metrics' })).body
  t.equal(count(after, ok) - count(before, ok), 2, 'every 200 counted under /operations/*')
  t.equal(count(after, notModified) - count(before, notModified), 1, 'the 304 too')
  t.equal(count(after, unmatched) - count(before, unmatched), 1, 'a 404 under (unmatched)')
  const todo = observers.traffic?.snapshot(Date.now()).operations.find((o) => o.name === 'TodoById')
  t.ok(todo && todo.count >= 3, 'the console counts them under the operation name')
})

t.test('weakEtag: 53 bits of hash in two parts; different bodies, different tags', async (t) => {
  const tags = new Set<string>()
  for (let id = 0; id < 2000; id++) tags.add(weakEtag(`{"todo_findUniqueTodo":{"completed":false,"id":${id},"title":"t"}}`))
  t.equal(tags.size, 2000, 'no collision among 2,000 bodies that differ in one number')
})
