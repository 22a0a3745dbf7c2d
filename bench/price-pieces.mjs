#!/usr/bin/env node
/**
 * Issue 30: the price of single pieces of the per-request path, in instructions per call, counted by
 * `valgrind --tool=callgrind` (deterministic where CPU time on this shared machine is not). Each piece
 * runs in its own node process under callgrind twice, with the same warm-up (20,000 calls) and then
 * `--small` and `--large` counted calls; (Ir of the large run − Ir of the small one) ÷ (large − small)
 * is the price of one warmed-up call: start-up, warm-up and tier-up cancel out. Most pieces come in
 * pairs (the way before issue 30's change, or without the piece, and the way after) and read the built gateway (dist/: build first).
 *
 *   node bench/price-pieces.mjs [--pieces etag,route-options,...] [--small 20000] [--large 120000]
 *
 * Pieces:
 * - `etag`: the weak ETag of TodoById's body (gateway/http/operations-routes.ts `weakEtag`: cyrb53
 *   printed as two small integers in base 36; printed as one 53-bit double before issue 30's change,
 *   it cost 7,009 instructions per call where it now costs 4,316: bench/README.md).
 * - `route-options` / `route-config`: the matched route's URL as the metrics' `onResponse` hook read it:
 *   `request.routeOptions.url` (a getter building a 12-field object) / `routePattern(request)`
 *   (gateway/observability/route-info.ts), on a real fastify request.
 * - `router-wildcard` / `router-static`: find-my-way's lookup of `GET /operations/TodoById` (the
 *   gateway's router options) on the wildcard route `/operations/*` / on a route of its own.
 * - `observe-none` / `observe-metrics`: an awaited resolved promise / the same through
 *   `observeOperation` with metrics on (the histogram of tributary_operation_duration_seconds).
 * - `logger-none` / `logger-lazy`: nothing / the request logger fastify makes per request
 *   (`lazyChildLogger`, gateway/observability/logs.ts) and the request id (`req-<n>` in base 36).
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const opt = (flag, fallback) => {
  const i = argv.indexOf(`--${flag}`)
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback
}
const WARMUP = 20_000
const BODY = '{"todo_findUniqueTodo":{"completed":false,"createdAt":"2024-01-01T00:00:00.000Z","id":1,"title":"Buy milk"}}'

/** Runs `call` `WARMUP + n` times (awaited when it returns a promise); returns a checksum so nothing is optimised away. */
async function loop(call, n, isAsync = false) {
  let sink = 0
  for (let i = 0; i < WARMUP + n; i++) {
    const r = isAsync ? await call(i) : call(i)
    sink += typeof r === 'string' ? r.length : 1
  }
  return sink
}

/** A fastify request of a matched route, for pieces that read one. */
async function withRequest(fn) {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } })
  let result
  app.get('/operations/TodoById', async (request) => {
    result = await fn(request)
    return 'ok'
  })
  await app.inject({ url: '/operations/TodoById?id=1' })
  await app.close()
  return result
}

const pieces = {
  etag: async (n) => {
    const { weakEtag } = await import(join(root, 'dist/gateway/http/operations-routes.js'))
    return loop(() => weakEtag(BODY), n)
  },
  'route-options': (n) => withRequest((request) => loop(() => request.routeOptions.url, n)),
  'route-config': async (n) => {
    const { routePattern } = await import(join(root, 'dist/gateway/observability/route-info.js'))
    return withRequest((request) => loop(() => routePattern(request), n))
  },
  'router-wildcard': async (n) => routerPiece(n, false),
  'router-static': async (n) => routerPiece(n, true),
  'observe-none': (n) => loop(() => Promise.resolve(1), n, true),
  'observe-metrics': async (n) => {
    const { enableMetrics } = await import(join(root, 'dist/gateway/observability/metrics.js'))
    const { observeOperation } = await import(join(root, 'dist/gateway/observability/probes.js'))
    enableMetrics()
    return loop(() => observeOperation('TodoById', () => Promise.resolve(1)), n, true)
  },
  'logger-none': (n) => loop(() => 1, n),
  'logger-lazy': async (n) => {
    const { lazyChildLogger } = await import(join(root, 'dist/gateway/observability/logs.js'))
    const { pino } = await import('pino')
    const parent = pino({ level: 'warn' })
    let next = 0
    return loop(() => lazyChildLogger(parent, { reqId: 'req-' + (next++).toString(36) }, {}), n)
  },
}

/** find-my-way with the gateway's router options and a few of its routes; `own`: TodoById has a route of its own. */
async function routerPiece(n, own) {
  const { default: FindMyWay } = await import('find-my-way')
  const router = FindMyWay({ ignoreTrailingSlash: true })
  const noop = () => {}
  for (const path of ['/graphql', '/health', '/health/live', '/health/ready', '/metrics', '/openapi.json', '/api/v1/todo/:id', '/operations/*']) router.on(['GET', 'POST'], path, noop)
  if (own) for (const name of ['CreateTodo', 'DeleteTodo', 'Roles', 'TodoById', 'Todos']) router.on(['GET', 'POST'], `/operations/${name}`, noop)
  return loop(() => router.find('GET', '/operations/TodoById'), n)
}

if (argv[0] === '--child') {
  const [, name, n] = argv
  await pieces[name](Number(n))
  process.exit(0)
}

const small = Number(opt('small', 20_000))
const large = Number(opt('large', 120_000))
if (!(Number.isInteger(small) && Number.isInteger(large) && small >= 1 && large > small && large <= 10_000_000)) throw new Error('--small and --large: integers, 1 ≤ small < large ≤ 10,000,000')
const names = String(opt('pieces', Object.keys(pieces).join(','))).split(',').filter(Boolean)
for (const name of names) if (!pieces[name]) throw new Error(`--pieces: ${Object.keys(pieces).join(', ')}`)
process.stdout.write(`instructions per call (callgrind, ${large} − ${small} calls after ${WARMUP} warm-up)\n`)
for (const name of names) {
  const count = (n) => {
    const res = spawnCollect(name, n)
    const m = /Collected : (\d+)/.exec(res)
    if (!m) throw new Error(`${name}: no "Collected" line from callgrind:\n${res.slice(-2000)}`)
    return Number(m[1])
  }
  const a = count(small)
  const b = count(large)
  process.stdout.write(`  ${name.padEnd(18)} ${Math.round((b - a) / (large - small)).toLocaleString('en-US').padStart(7)} instructions/call\n`)
}

/** callgrind's stderr of one child run (its `Collected : <Ir>` line: every thread of the process). */
function spawnCollect(name, n) {
  const res = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, fileURLToPath(import.meta.url), '--child', name, String(n)], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 << 20, timeout: 600_000 })
  if (res.status !== 0) throw new Error(`${name}: the child failed (${res.status ?? res.signal}):\n${String(res.stderr).slice(-2000)}`)
  return res.stderr
}
