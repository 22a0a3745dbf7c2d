/**
 * Hits of `# @cache` stored queries answered early (gateway/http/operations-routes.ts `answerEarly`)
 * from the response cache's in-process copy (gateway/cluster/response-cache.ts): the same status,
 * headers and body as the route, 304 on If-None-Match, counted in the metrics; credentials, escapes and
 * bad variables go to the route; a mutation invalidates at once; the copy is bounded in bytes (attack);
 * with Redis, a mutation on one instance invalidates the copy of another through the invalidation
 * channel (the recheck interval set far beyond the test, so only the message can do it), and a lost
 * subscriber connection stops the copy until its channels are subscribed again.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { redisReason, redisUrl, uniquePrefix } from './helpers/redis.js'
import { createCluster } from '../gateway/cluster/index.js'
import { ResponseCache } from '../gateway/cluster/response-cache.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const SENT = ['etag', 'cache-control', 'content-type', 'content-length', 'x-tributary-cache']

t.test('in memory: early hits answer as the route does, and only what the route would serve', async (t) => {
  const { app, url } = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir } } })
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers })
  const early = () => app.responseCache.earlyAnswers

  const miss = await get('/operations/Cached?id=2')
  t.equal(miss.headers.get('x-tributary-cache'), 'miss')
  const body = await miss.text()
  const routeHit = await app.inject({ url: '/operations/Cached?id=2' }) // through fastify: fills the copy
  t.equal(routeHit.headers['x-tributary-cache'], 'hit')
  const before = early()
  const hit = await get('/operations/Cached?id=2')
  t.equal(early(), before + 1, 'answered early')
  t.equal(hit.status, 200)
  t.equal(await hit.text(), body, 'the same body')
  for (const h of SENT) t.equal(hit.headers.get(h), String(routeHit.headers[h]), `the route's ${h}`)
  t.match(hit.headers.get('age'), /^\d+$/)

  // 304 with the route's headers.
  const etag = hit.headers.get('etag')!
  const notModified = await get('/operations/Cached?id=2', { 'if-none-match': etag })
  const routeNotModified = await app.inject({ url: '/operations/Cached?id=2', headers: { 'if-none-match': etag } })
  t.equal(notModified.status, 304)
  t.equal(routeNotModified.statusCode, 304)
  t.equal(await notModified.text(), '')
  for (const h of ['etag', 'cache-control', 'x-tributary-cache']) t.equal(notModified.headers.get(h), String(routeNotModified.headers[h]), `304: the route's ${h}`)
  t.equal(early(), before + 2)
  t.equal((await get('/operations/Cached?id=2', { 'if-none-match': '"other"' })).status, 200, 'another ETag: 200')

  // Never another caller's answer: credentials go to the route, under their own key.
  for (const headers of [{ authorization: 'Bearer someone' }, { cookie: 'session=1' }] as Record<string, string>[]) {
    const n = early()
    const res = await get('/operations/Cached?id=2', headers)
    t.equal(res.headers.get('x-tributary-cache'), 'miss', `${Object.keys(headers)[0]}: its own entry`)
    t.match(res.headers.get('cache-control'), /^private/)
    t.equal(early(), n, 'not answered early')
  }

  // The route decides what is not plain: escapes, bad variables, trailing slashes, HEAD, live.
  const n = early()
  t.equal((await get('/operations/Cached?id=%32')).headers.get('x-tributary-cache'), 'hit', 'an escape: the route, same entry')
  t.equal((await get('/operations/Cached?id=abc')).status, 400)
  t.equal((await get('/operations/Cached/?id=2')).headers.get('x-tributary-cache'), 'hit')
  t.equal((await fetch(`${url}/operations/Cached?id=2`, { method: 'HEAD' })).status, 200)
  t.equal(early(), n, 'none of them answered early')

  // Metrics count early answers as the route's hook does.
  const count = async () => {
    const text = await (await get('/metrics')).text()
    const line = text.split('\n').find((l) => l.startsWith('tributary_http_requests_total{') && l.includes('route="/operations/*"') && l.includes('method="GET"') && l.includes('status="200"'))
    return Number(line?.split(' ').pop() ?? 0)
  }
  const counted = await count()
  for (let i = 0; i < 5; i++) await get('/operations/Cached?id=2')
  t.equal(await count(), counted + 5, 'five more GET 200 on /operations/*')

  // A mutation invalidates before it answers: the next GET is a miss with the new title.
  const update = await fetch(`${url}/operations/UpdateTitle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 2, title: 'changed early' }) })
  t.equal(update.status, 200)
  const after = await get('/operations/Cached?id=2')
  t.equal(after.headers.get('x-tributary-cache'), 'miss')
  t.match(await after.text(), /changed early/)
})

t.test('attack: distinct variables keep the in-process copy within pubsub.localCacheBytes', async (t) => {
  const maxBytes = 4096
  const { app, url } = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir }, pubsub: { localCacheBytes: maxBytes } } })
  for (let id = 1; id <= 40; id++) {
    await fetch(`${url}/operations/Cached?id=${id}`).then((r) => r.arrayBuffer())
    t.ok(app.responseCache.localSize.bytes <= maxBytes, `after ${id} distinct ids: ${app.responseCache.localSize.bytes} bytes`)
  }
  t.ok(app.responseCache.localSize.entries > 1, 'it still keeps the most recent')
  t.ok(app.responseCache.localSize.entries < 40, 'and dropped the oldest')
  const off = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir }, pubsub: { localCacheBytes: 0 } } })
  for (let i = 0; i < 3; i++) await fetch(`${off.url}/operations/Cached?id=1`).then((r) => r.arrayBuffer())
  t.same(off.app.responseCache.localSize, { bytes: 0, entries: 0 }, 'localCacheBytes: 0 keeps nothing')
  t.equal(off.app.responseCache.earlyAnswers, 0, 'and answers nothing early')
})

t.test('Redis: a mutation on one instance invalidates the in-process copy of another', async (t) => {
  const down = await redisReason()
  if (down) {
    t.comment(`skipped: ${down}`)
    return
  }
  // The recheck far beyond the test: only the invalidation message can end B's copy.
  const pubsub = { redisUrl, keyPrefix: uniquePrefix(), localCacheRecheckMs: 600_000 }
  const a = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir }, pubsub } })
  const b = await startDemo(t, { listen: true, rawSql: true, override: { operations: { dir }, pubsub } })
  const title = async (url: string) => {
    const res = await fetch(`${url}/operations/Cached?id=3`)
    return { state: res.headers.get('x-tributary-cache'), title: ((await res.json()) as { todo_findUniqueTodo: { title: string } }).todo_findUniqueTodo.title }
  }
  // The subscriptions are confirmed asynchronously: until then nothing is kept locally.
  const until = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 100; i++) if (await check()) return true
    return false
  }
  const first = await title(a.url)
  t.ok(await until(async () => (await title(a.url), a.app.responseCache.earlyAnswers > 0)), 'A answers early')
  t.ok(await until(async () => (await title(b.url), b.app.responseCache.earlyAnswers > 0)), 'B answers early')
  t.equal((await title(b.url)).title, first.title, 'B serves the entry A stored')
  // Both share one database file here (TODO_DATABASE_URL), so B's next miss sees the write.
  const update = await fetch(`${a.url}/operations/UpdateTitle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 3, title: `changed on A ${Date.now()}` }) })
  t.equal(update.status, 200)
  const wanted = ((await update.json()) as { todo_updateOneTodo: { title: string } }).todo_updateOneTodo.title
  t.equal((await title(a.url)).title, wanted, 'A at once')
  let seen = ''
  for (let i = 0; i < 100 && seen !== wanted; i++) {
    seen = (await title(b.url)).title
    if (seen !== wanted) await sleep(50)
  }
  t.equal(seen, wanted, 'B through the invalidation message')
})

t.test('Redis: a lost subscriber connection stops the in-process copy until the channels are subscribed again', async (t) => {
  const down = await redisReason()
  if (down) {
    t.comment(`skipped: ${down}`)
    return
  }
  const cluster = createCluster({ redisUrl, keyPrefix: uniquePrefix(), commandTimeoutMs: 1000 })
  t.teardown(() => cluster.close())
  const cache = new ResponseCache(cluster, () => undefined, { maxBytes: 1 << 20, recheckMs: 600_000 })
  t.teardown(() => cache.close())
  const policy = { maxAge: 600 }
  const text = 'query Q { a }'
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await sleep(25)
    return check()
  }
  const fill = async () => {
    const lookup = (await cache.lookup(text, {}, {}, ['type:A'], policy))!
    if (!lookup.entry) await cache.store(lookup, '{"a":1}', 'W/"x"', policy)
    else await cache.lookup(text, {}, {}, ['type:A'], policy)
  }
  const key = cache.keyFor(text, {})
  t.ok(await until(() => cluster.deliveryEpoch() >= 0), 'subscribed')
  await cache.lookup(text, {}, {}, ['type:A'], policy) // the channel's SUBSCRIBE is confirmed after the first commands
  t.ok(await until(() => (void fill(), cache.local(key, Date.now()) !== undefined)), 'kept locally')
  const epoch = cluster.deliveryEpoch()
  // The subscriber connection drops (as a network failure would); ioredis reconnects by itself.
  ;(cluster as unknown as { subscriber: { disconnect(reconnect: boolean): void } }).subscriber.disconnect(true)
  t.ok(await until(() => cluster.deliveryEpoch() !== epoch), 'the epoch moved')
  t.equal(cache.local(key, Date.now()), undefined, 'the copy kept before the loss is not served')
  t.ok(await until(() => cluster.deliveryEpoch() > epoch), 'subscribed again')
  await fill()
  t.ok(cache.local(key, Date.now()), 'kept again once the channels are back')
  // An invalidation from elsewhere (another instance's message) ends it.
  await cluster.publish('cache-invalidated', JSON.stringify(['type:A']))
  t.ok(await until(() => cache.local(key, Date.now()) === undefined), 'dropped by the message')
})
