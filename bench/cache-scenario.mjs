/**
 * The `cache` scenario of bench/run.mjs (issue 30): a `# @cache maxAge=3600` stored query answered from
 * the gateway's response cache (every measured request a hit) against the hand-written route, in
 * memory and with Redis. Target: a hit answers at least 1.5× the hand-written route's throughput.
 *
 * The operation is `TodoByIdCached`: operations/TodoById.graphql with `# @cache maxAge=3600` and its own
 * name, in a copy of operations/ (its `.graphql` files) in the bench's work directory; the gateway runs
 * on a config module there, the demo's (dist/config.js) with `operations.dir` pointing at the copy and a `generatedDir`
 * of the work directory (the repository's generated/ is not rewritten).
 * Redis: `REDIS_URL` (default redis://127.0.0.1:6379), a key prefix of the run's own
 * (`REDIS_KEY_PREFIX`); skipped with a message when Redis does not answer a PING.
 * The floor (`cache-floor`, reported): bench/floor-server.mjs, a bare `node:http` server sending the
 * memory hit's exact status, headers and body, against the same route — what Node's HTTP server alone
 * reaches on the machine, so that a hit's ratio can be read against what is possible there.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { root, startNode } from './lib/processes.mjs'

/** The operation the scenario serves, and its file's text. */
export const CACHED_OPERATION = 'TodoByIdCached'

/**
 * Writes the operations copy and the config module into `work`; returns the config module's path.
 * Shared with bench/instructions.mjs.
 */
export function writeCacheConfig(work) {
  const dir = join(work, 'operations-cache')
  cpSync(join(root, 'operations'), dir, { recursive: true, filter: (src) => !/\.[cm]?ts$/.test(src) })
  const source = readFileSync(join(root, 'operations/TodoById.graphql'), 'utf8')
  writeFileSync(join(dir, `${CACHED_OPERATION}.graphql`), `# @cache maxAge=3600\n${source.replace('query TodoById', `query ${CACHED_OPERATION}`)}`)
  const file = join(work, 'cache.config.mjs')
  // Its own generated/ (the gateway writes the codegen's files at start): the repository's stays as it is.
  // BENCH_CACHE_LOCAL_BYTES=0 prices the in-process copy and the early answer of hits (pubsub.localCacheBytes).
  const local = process.env.BENCH_CACHE_LOCAL_BYTES
  const pubsub = local === undefined ? '' : `, pubsub: { ...demo.pubsub, localCacheBytes: ${Number(local)} }`
  writeFileSync(file, `import demo from ${JSON.stringify(join(root, 'dist/config.js'))}\nexport default { ...demo, generatedDir: ${JSON.stringify(join(work, 'generated-cache'))}, operations: { ...demo.operations, dir: ${JSON.stringify(dir)} }${pubsub} }\n`)
  return file
}

/** Whether a Redis server answers PING at `url` within 1 s. */
function redisAnswers(url) {
  const u = new URL(url)
  return new Promise((ok) => {
    const s = connect(Number(u.port || 6379), u.hostname)
    const done = (v) => {
      s.destroy()
      ok(v)
    }
    s.setTimeout(1000, () => done(false))
    s.once('error', () => done(false))
    s.once('connect', () => s.write('PING\r\n'))
    s.once('data', (d) => done(d.toString().startsWith('+PONG')))
  })
}

/**
 * Runs the scenario. `ctx` carries run.mjs's pieces: `{ work, say, ab, fetchJson, assertSame,
 * prepareTodoDb, startBaseline, startGateway, freePort, gatewayNodeArgs, stopGateway, target }`.
 * @returns `{ memory, redis, floor }`, each ab()'s result (memory and redis with the hit header seen), or `{ skipped }`
 */
export async function cacheScenario(ctx) {
  const { say, ab, fetchJson, assertSame, prepareTodoDb, startBaseline, startGateway, freePort, gatewayNodeArgs, stopGateway, target } = ctx
  const config = writeCacheConfig(ctx.work)
  const db = await prepareTodoDb()
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
  const out = {}
  /** The hit's status, headers and body (the memory gateway's), for the floor. */
  let hit
  const base = await startBaseline(['--todo-db', db])
  try {
    const baseline = { url: `${base.url}/todo?id=1`, pid: base.pid }
    const expected = await fetchJson(baseline.url)
    for (const store of ['memory', 'redis']) {
      if (store === 'redis' && !(await redisAnswers(redisUrl))) {
        say(`\n[cache redis] skipped: no Redis answers at ${redisUrl}`)
        out.redis = { skipped: `no Redis at ${redisUrl}` }
        continue
      }
      const env = { TODO_DATABASE_URL: `sqlite:${db}`, ROLE_SERVICE_PORT: String(await freePort()) }
      if (store === 'redis') Object.assign(env, { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `trb-bench-cache:${process.pid}:${Date.now().toString(36)}:` })
      else env.TRIBUTARY_PUBSUB = 'memory'
      const gw = await startGateway({ config, env, nodeArgs: gatewayNodeArgs(`cache-${store}`) })
      try {
        const url = `${gw.url}/operations/${CACHED_OPERATION}?id=1`
        await fetchJson(url) // the miss that fills the cache
        const res = await fetch(url)
        const state = res.headers.get('x-tributary-cache')
        assertSame(`cache ${store}`, await res.json(), expected)
        if (state !== 'hit') throw new Error(`cache ${store}: the second GET answered X-Tributary-Cache: ${state}, not hit`)
        if (store === 'memory') hit = await captureHit(url)
        say(`\n[cache ${store}] GET /operations/${CACHED_OPERATION}?id=1 (# @cache maxAge=3600, X-Tributary-Cache: hit) vs baseline GET /todo?id=1${store === 'redis' ? ` (Redis ${redisUrl})` : ' (in memory)'}`)
        out[store] = { gatewayUrl: `/operations/${CACHED_OPERATION}?id=1`, store, ...(await ab(`cache-${store}`, { baseline, gateway: { url, pid: gw.pid }, target, gw })) }
      } finally {
        await stopGateway(gw, `cache-${store}`)
      }
    }
    if (hit) out.floor = await floorRun(ctx, baseline, hit)
  } finally {
    await base.stop()
  }
  return out
}

/** The headers a hit sends that Node does not add itself, as the flat list `writeHead` takes. */
const HIT_HEADERS = ['x-tributary-cache', 'age', 'etag', 'cache-control', 'content-type', 'content-length']

/** GETs a hit once more: `{ status, headers, body }` for bench/floor-server.mjs (shared with bench/instructions.mjs). */
export async function captureHit(url) {
  const res = await fetch(url)
  if (res.headers.get('x-tributary-cache') !== 'hit') throw new Error(`cache floor: the capture GET answered X-Tributary-Cache: ${res.headers.get('x-tributary-cache')}, not hit`)
  const headers = HIT_HEADERS.flatMap((name) => (res.headers.has(name) ? [name, res.headers.get(name)] : []))
  return { status: res.status, headers, body: await res.text() }
}

/**
 * The floor (`cache-floor`, reported, not judged): bench/floor-server.mjs answering the hit's exact
 * bytes, measured against the same hand-written route as the hits. Its ratio is the most a hit
 * answered by a Node HTTP server can reach on this machine; its CPU µs per request is Node's and the
 * kernel's share of a hit's.
 */
async function floorRun(ctx, baseline, hit) {
  const { say, ab, freePort } = ctx
  const file = join(ctx.work, 'floor-response.json')
  writeFileSync(file, JSON.stringify(hit))
  const port = await freePort()
  const floor = await startNode({
    name: 'floor',
    args: [join(root, 'bench/floor-server.mjs'), '--port', String(port), '--response', file],
    env: { ...process.env },
    ready: /floor listening (http:\/\/127\.0\.0\.1:\d+)/,
    timeoutMs: 30_000,
  })
  try {
    const url = `${floor.match[1]}/operations/${CACHED_OPERATION}?id=1`
    say(`\n[cache floor] a bare node:http server sending the hit's bytes (bench/floor-server.mjs) vs baseline GET /todo?id=1: the most a hit can reach here`)
    return { gatewayUrl: '(floor-server)', ...(await ab('cache-floor', { baseline, gateway: { url, pid: floor.pid }, target: null })) }
  } finally {
    await floor.stop()
  }
}
