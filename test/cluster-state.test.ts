/**
 * What instances share (gateway/cluster), in one process: the health endpoints, the response cache of
 * `# @cache` queries (fresh, stale-while-revalidate, invalidated by a mutation on /graphql and on
 * /operations, bounded in memory), the config keys, and (with Redis, REDIS_URL) one live-query
 * poller for two apps and its takeover when the app running it closes.
 */
import t from 'tap'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EventSource } from 'eventsource'
import { redisReason, redisUrl, uniquePrefix } from './helpers/redis.js'
import { startDemo } from './helpers/demo.js'
import { resolveConfig } from '../gateway/config/index.js'
import { startDraining } from '../gateway/http/health.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))


/** A folder of stored operations: a cached query (maxAge 1 s, then 30 s stale) and a mutation. */
function operationsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cluster-ops-'))
  writeFileSync(join(dir, 'Todos.graphql'), '# @cache maxAge=1 staleWhileRevalidate=30\nquery Todos($take: Int = 50) { todo_findManyTodo(take: $take, orderBy: [{ id: asc }]) { id title } }\n')
  writeFileSync(join(dir, 'CreateTodo.graphql'), 'mutation CreateTodo($title: String!) { todo_createOneTodo(data: { title: $title }) { id title } }\n')
  writeFileSync(join(dir, 'LiveTodo.graphql'), '# @live interval=100\nquery LiveTodo($id: Int!) { todo_findUniqueTodo(where: { id: $id }) { id title } }\n')
  return dir
}

t.test('config: pubsub and the health keys are validated', async (t) => {
  const base = { datasources: [{ kind: 'schema', typeDefs: 'type Query { a: Int }' }] }
  t.equal(resolveConfig(base, {}).pubsub.redisUrl, null, 'in memory without REDIS_URL')
  t.equal(resolveConfig(base, { REDIS_URL: 'redis://127.0.0.1:6379' }).pubsub.redisUrl, 'redis://127.0.0.1:6379')
  t.equal(resolveConfig(base, { REDIS_KEY_PREFIX: 'app:' }).pubsub.keyPrefix, 'app:')
  t.same(resolveConfig(base, {}).server.healthTimeoutMs, 80)
  t.throws(() => resolveConfig({ ...base, pubsub: { redisUrl: 'http://x' } }, {}), /pubsub\.redisUrl: must match/)
  t.throws(() => resolveConfig(base, { REDIS_URL: 'localhost:6379' }), /pubsub\.redisUrl: must match/, 'REDIS_URL is checked too')
  t.throws(() => resolveConfig({ ...base, pubsub: { lockTtlMs: 10 } }, {}), /pubsub\.lockTtlMs: must be >= 100/)
  t.throws(() => resolveConfig({ ...base, pubsub: { other: 1 } }, {}), /pubsub\.other: is not a known option/)
  t.throws(() => resolveConfig({ ...base, server: { healthTimeoutMs: 0 } }, {}), /server\.healthTimeoutMs: must be >= 1/)
  t.throws(() => resolveConfig({ ...base, server: { shutdownDelayMs: -1 } }, {}), /server\.shutdownDelayMs: must be >= 0/)
})

t.test('health: live, ready (sources and Redis) and draining', async (t) => {
  const { app } = await startDemo(t)
  const live = await app.inject({ url: '/health/live' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
  const ready = await app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.match(ready.json(), { status: 'ready', redis: 'memory', sources: { todo: { status: 'up' }, demo: { status: 'up' } } })
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, '/health still answers')
  app.readiness.draining = true
  const draining = await app.inject({ url: '/health/ready' })
  t.equal(draining.statusCode, 503)
  t.same(draining.json(), { status: 'draining' })
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'still alive while draining')
  app.readiness.draining = false
})

t.test('shutdown: readiness turns false first, requests are still served during the delay', async (t) => {
  const { app, url } = await startDemo(t, { listen: true })
  const draining = startDraining(app, 500)
  const ready = await fetch(`${url}/health/ready`)
  t.equal(ready.status, 503, 'unready at once')
  const during = await fetch(`${url}/operations/TodoById?id=1`)
  t.equal(during.status, 200, 'still serving while the load balancer notices')
  await draining
  await app.close()
  t.equal(await fetch(`${url}/health/live`).then((r) => r.status, () => 'closed'), 'closed', 'closed after the delay')
})

t.test('health: Redis down makes the instance unready, within the health timeout', async (t) => {
  const { app } = await startDemo(t, { override: { pubsub: { redisUrl: 'redis://127.0.0.1:1', keyPrefix: 'unused:' }, server: { healthTimeoutMs: 50 } } })
  const ready = await app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { status: 'unready', redis: 'down' })
  // Requests do not hang on the dead Redis: a cached query is a miss and still answers.
  const res = await app.inject({ url: '/operations/Todos' })
  t.equal(res.statusCode, 200)
})

t.test('response cache: fresh, stale-while-revalidate, invalidated by mutations, bounded', async (t) => {
  const dir = operationsDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { app } = await startDemo(t, { override: { operations: { dir }, pubsub: { maxCacheEntries: 3 } } })
  const first = await app.inject({ url: '/operations/Todos' })
  t.equal(first.headers['x-tributary-cache'], 'miss')
  const second = await app.inject({ url: '/operations/Todos' })
  t.equal(second.headers['x-tributary-cache'], 'hit')
  t.equal(second.headers.etag, first.headers.etag, 'same ETag')
  t.equal(second.body, first.body)
  t.equal((await app.inject({ url: '/operations/Todos', headers: { 'if-none-match': String(first.headers.etag) } })).statusCode, 304)

  // A mutation on /operations invalidates the query that reads todo_Todo.
  const created = await app.inject({ method: 'POST', url: '/operations/CreateTodo', payload: { title: 'via operations' } })
  t.equal(created.statusCode, 200)
  const afterOp = await app.inject({ url: '/operations/Todos' })
  t.equal(afterOp.headers['x-tributary-cache'], 'miss', 'invalidated by CreateTodo')
  t.match(afterOp.body, /via operations/)

  // ... and so does one on /graphql, through a database mutation whose result is a count.
  const raw = await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'mutation { todo_deleteManyTodo(where: { title: { equals: "via operations" } }) { count } }' } })
  t.equal(raw.statusCode, 200, raw.body)
  const afterGraphql = await app.inject({ url: '/operations/Todos' })
  t.equal(afterGraphql.headers['x-tributary-cache'], 'miss', 'invalidated by todo_deleteManyTodo on /graphql')
  t.notMatch(afterGraphql.body, /via operations/)

  // After maxAge, the entry is served stale once and revalidated in the background.
  await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'mutation { todo_createOneTodo(data: { title: "x" }) { id } }' } })
  await app.inject({ url: '/operations/Todos' })
  await sleep(1100)
  const stale = await app.inject({ url: '/operations/Todos' })
  t.equal(stale.headers['x-tributary-cache'], 'stale')
  t.ok(Number(stale.headers.age) >= 1, 'Age says how old it is')
  await sleep(300)
  t.equal((await app.inject({ url: '/operations/Todos' })).headers['x-tributary-cache'], 'hit', 'revalidated')

  // Attack: many distinct variables keep at most maxCacheEntries entries in memory.
  for (let i = 1; i <= 10; i++) await app.inject({ url: `/operations/Todos?take=${i}` })
  t.equal((await app.inject({ url: '/operations/Todos?take=10' })).headers['x-tributary-cache'], 'hit', 'a recent entry is kept')
  t.equal((await app.inject({ url: '/operations/Todos?take=1' })).headers['x-tributary-cache'], 'miss', 'the oldest were evicted')
})

t.test('live queries: one poller for two apps on one Redis; the other takes over when its app closes', async (t) => {
  const down = await redisReason()
  if (down) {
    t.comment(`skipped: ${down}`)
    return
  }
  const dir = operationsDir()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // A lock of 2 s: with 300 ms, a loaded machine delayed the holder's renewal past the lock's expiry
  // and the other app took the poller over while both were up.
  const pubsub = { redisUrl, keyPrefix: uniquePrefix(), lockTtlMs: 2000 }
  const one = await startDemo(t, { listen: true, override: { operations: { dir }, pubsub } })
  const two = await startDemo(t, { listen: true, override: { operations: { dir }, pubsub } })
  const events: { one: string[]; two: string[] } = { one: [], two: [] }
  const esOne = new EventSource(`${one.url}/operations/LiveTodo?id=1&live=true`)
  esOne.onmessage = (e) => events.one.push(e.data)
  await sleep(300)
  const esTwo = new EventSource(`${two.url}/operations/LiveTodo?id=1&live=true`)
  esTwo.onmessage = (e) => events.two.push(e.data)
  t.teardown(() => {
    esOne.close()
    esTwo.close()
  })
  const until = async (check: () => boolean) => {
    for (const end = Date.now() + 15_000; Date.now() < end && !check(); ) await sleep(50)
    return check()
  }
  t.ok(await until(() => events.one.length === 1 && events.two.length === 1), 'both get the current result')
  t.equal(events.two[0], events.one[0])
  await sleep(400)
  t.equal(one.app.livePollers.size + two.app.livePollers.size, 2, 'each app tracks the key')
  t.equal(one.app.livePollers.polling + two.app.livePollers.polling, 1, 'ONE of them runs the query')
  const runsTwo = two.app.livePollers.runs
  const update = (title: string) => ({ method: 'POST' as const, url: '/graphql', payload: { query: `mutation { todo_updateOneTodo(where: { id: 1 }, data: { title: { set: "${title}" } }) { id } }` } })
  t.equal((await one.app.inject(update('changed'))).statusCode, 200)
  t.ok(await until(() => events.one.length === 2 && events.two.length === 2), 'a change reaches both')
  t.equal(events.two[1], events.one[1])
  t.equal(two.app.livePollers.runs, runsTwo, 'the app that does not hold the lock runs nothing')

  // The app running the poller closes (its clients go with it): the other takes over.
  esOne.close()
  await one.app.close()
  t.ok(await until(() => two.app.livePollers.polling === 1), 'the other app took the poller over')
  t.equal((await two.app.inject(update('changed again'))).statusCode, 200)
  t.ok(await until(() => events.two.length === 3), 'changes still arrive')
  t.match(events.two[2], /changed again/)
})
