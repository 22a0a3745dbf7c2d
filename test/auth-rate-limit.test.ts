/**
 * `server.rateLimit` (@fastify/rate-limit): 429 `TRB_ERR_RATE_LIMITED` with `Retry-After`, per IP or
 * per token subject, and counters shared by two gateway instances through the local Redis
 * (`REDIS_URL` through test/helpers/redis.ts, a unique key prefix; the other tests stay in memory:
 * the test runner sets `TRIBUTARY_PUBSUB=memory`, so an exported `REDIS_URL` is not their default).
 * The two-instance case skips with a reason when Redis is down.
 */
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { mint, startAuthGateway } from './helpers/auth.js'
import { redisScratch, redisUrl } from './helpers/redis.js'

const secret = 'rate-limit-test-secret-0123456789abcdef'
const key = new TextEncoder().encode(secret)
const OPS = { Open: 'query Open { echo(id: "x") }' }

async function status(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/operations/Open`, { headers })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() as { errors?: { extensions: { code: string } }[] } }
}

t.test('per IP: the request past max gets 429 with Retry-After', async (t) => {
  const { url } = await startAuthGateway(t, undefined, OPS, { server: { rateLimit: { max: 3, timeWindowMs: 60_000, keyPrefix: `tributary-test-${randomUUID()}:` } } })
  for (let i = 0; i < 3; i++) t.equal((await status(url)).status, 200)
  const refused = await status(url)
  t.equal(refused.status, 429)
  t.equal(refused.body.errors?.[0]?.extensions.code, 'TRB_ERR_RATE_LIMITED')
  t.ok(Number(refused.retryAfter) >= 1 && Number(refused.retryAfter) <= 60, `Retry-After ${refused.retryAfter}`)
  for (const path of ['/health', '/health/live', '/health/ready', '/health/ready?x=1', '/metrics']) {
    const health = await fetch(`${url}${path}`)
    t.equal(health.status, 200, `${path} is not counted`)
  }
  t.equal((await fetch(`${url}/operations/Open?next=/health`)).status, 429, 'a route mentioning /health in its query is still counted')
})

t.test("key 'sub': each token subject has its own budget", async (t) => {
  const { url } = await startAuthGateway(t, { jwt: { secret } }, OPS, { server: { rateLimit: { max: 2, timeWindowMs: 60_000, key: 'sub', keyPrefix: `tributary-test-${randomUUID()}:` } } })
  const a = { authorization: `Bearer ${await mint(key, { sub: 'a' }, { expiresIn: '1h' })}` }
  const b = { authorization: `Bearer ${await mint(key, { sub: 'b' }, { expiresIn: '1h' })}` }
  t.equal((await status(url, a)).status, 200)
  t.equal((await status(url, a)).status, 200)
  t.equal((await status(url, a)).status, 429, 'a is over its budget')
  t.equal((await status(url, b)).status, 200, 'b is not')
  t.equal((await status(url)).status, 200, 'anonymous callers count by IP')
})

t.test('Redis: two instances share the counters', async (t) => {
  const scratch = await redisScratch(t)
  if (!scratch) return
  const { keyPrefix, redis: probe } = scratch
  const rateLimit = { max: 4, timeWindowMs: 60_000, redisUrl, keyPrefix }
  const one = await startAuthGateway(t, undefined, OPS, { server: { rateLimit } })
  const two = await startAuthGateway(t, undefined, OPS, { server: { rateLimit } })
  t.equal((await status(one.url)).status, 200)
  t.equal((await status(two.url)).status, 200)
  t.equal((await status(one.url)).status, 200)
  t.equal((await status(two.url)).status, 200)
  const refused = await status(one.url)
  t.equal(refused.status, 429, 'the fifth request, across both instances, is refused')
  t.equal((await status(two.url)).status, 429)
  t.ok(Number(refused.retryAfter) >= 1)
  t.ok((await probe.keys(`${keyPrefix}*`)).length >= 1, 'the counter lives in Redis under the prefix')
})

t.test('config validation', async (t) => {
  const { resolveConfig, schema } = await import('../gateway/config/index.js')
  const ds = [schema({ typeDefs: 'type Query { a: Int }' })]
  t.throws(() => resolveConfig({ datasources: ds, server: { rateLimit: { max: 0, timeWindowMs: 1000 } } }), /server\.rateLimit\.max/)
  t.throws(() => resolveConfig({ datasources: ds, server: { rateLimit: { max: 1 } as never } }), /timeWindowMs: is required/)
  t.throws(() => resolveConfig({ datasources: ds, server: { rateLimit: { max: 1, timeWindowMs: 1000, key: 'sub' } } }), /needs auth\.jwt/)

  const store = (input: object, env: NodeJS.ProcessEnv) => resolveConfig({ datasources: ds, server: { rateLimit: { max: 1, timeWindowMs: 1000 } }, ...input }, env).server.rateLimit?.redisUrl
  t.equal(store({}, { REDIS_URL: 'redis://127.0.0.1:6390' }), 'redis://127.0.0.1:6390', 'REDIS_URL is the default store')
  t.equal(store({}, { REDIS_URL: 'redis://127.0.0.1:6390', TRIBUTARY_PUBSUB: 'memory' }), null, 'TRIBUTARY_PUBSUB=memory (the test runner) keeps the counters in memory')
  t.equal(store({ pubsub: { redisUrl: 'redis://127.0.0.1:6391' } }, {}), 'redis://127.0.0.1:6391', 'pubsub.redisUrl is the default store')
  t.equal(store({ server: { rateLimit: { max: 1, timeWindowMs: 1000, redisUrl: 'redis://127.0.0.1:6392' } } }, { TRIBUTARY_PUBSUB: 'memory' }), 'redis://127.0.0.1:6392', 'an explicit redisUrl wins')
})
