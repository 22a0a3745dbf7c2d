#!/usr/bin/env node
/**
 * Instructions per request of the hot paths (issue 30), counted by `valgrind --tool=callgrind`: the
 * primary figure where the machine has no hardware counters (`perf stat -e instructions` unsupported)
 * and is shared, so that wall-clock throughput and even CPU time are noisy. An instruction count of a
 * fixed number of requests is deterministic to about 1 %.
 *
 *   node bench/instructions.mjs [--requests 2000] [--warmup 3000] [--concurrency 10]
 *                               [--modes development,production] [--targets baseline,rest,graphql,cache,cache-floor,cache-redis,linked,pg-nested]
 *                               [--record] [--json <file>] [--keep] [--cache-sim]
 *
 * Each server runs under `valgrind --tool=callgrind --instr-atstart=no` (instrumentation off while it
 * starts and warms up): the gateway as `npm start` starts it (bench/lib/processes.mjs: START_NODE_FLAGS,
 * the demo config, a temp copy of data/todo.sqlite), once per mode (`development`: no NODE_ENV, as
 * `npm start` runs it; `production`: `NODE_ENV=production`, where `/graphql` accepts the stored
 * operation's exact text as a persisted operation); the hand-written baseline (bench/baseline-server.mjs,
 * `GET /todo?id=1`) once. For each target: `--warmup` requests uninstrumented, then instrumentation on
 * (`callgrind_control -i on`), counters zeroed, `--requests` requests with `--concurrency` in flight
 * (HTTP/1.1 keep-alive, undici Pool, from this process), a dump; idle windows of 2 s before and after.
 * Instructions per request = (Ir of the load − idle Ir for as long) ÷ requests: every thread of the
 * server process (V8's compiler and GC helper threads too), not the role service or the client.
 * callgrind runs with `--separate-threads=yes`, so the **main thread**'s share (the JS thread: the
 * request's own work, scavenges and the main-thread steps of compilation) is printed beside it: the
 * helper threads' work (concurrent TurboFan compilation, concurrent marking of a major GC) comes in
 * bursts of 50–200 k instructions per request over a counted window, which is most of the run-to-run
 * spread of the total.
 *
 * Targets: `rest` GET /operations/TodoById?id=1, `graphql` POST /graphql with the stored TodoById
 * document and `{id: 1}`, `cache` GET /operations/TodoByIdCached, a `# @cache` copy of TodoById
 * (every request after the first a hit; the gateway then runs on bench/cache-scenario.mjs's config) — each beside `baseline` GET /todo?id=1.
 * `cache-floor` (with `cache`): bench/floor-server.mjs, a bare `node:http` server sending the hit's
 * exact status, headers and body (captured from the first mode's gateway), measured once: what Node's
 * HTTP server alone executes per request for those bytes, so that a hit's distance from it is read in
 * instructions rather than in a noisy VM's µs.
 * `linked` (issue 30): `GET /operations/CustomersWithCountry?take=50` on examples/federation (50 Chinook
 * customers, one SQL statement, one batched `GET /countries?names=…`) beside the baseline's `GET /linked`
 * (the same statement and REST call by hand), on a temp copy of the Chinook database; the countries
 * and reviews APIs run unwrapped (their instructions are not counted). The difference to the baseline is also shown in
 * µs at the calibration the machine's `rest` run gives (CPU µs per request ÷ instructions per request
 * of the baseline, when bench/run.mjs has recorded one in bench/recorded.json).
 *
 * `pg-nested` (issue 30): bench/pg-peer.mjs' nested read (`POST /graphql`, 20 artists → albums → tracks, a
 * 32,837-byte answer from one SQL statement) on examples/chinook with PostgreSQL (`BENCH_PG_CHINOOK_URL`,
 * default the tests' `chinook` schema in `TEST_POSTGRES_URL`), once per mode; no baseline.
 *
 * `--keep` leaves the work directory (its callgrind dumps: `callgrind_annotate` gives the instructions
 * per function of each counted window) and prints its path.
 *
 * `--record` writes the figures into bench/recorded.json (`instructions`), and every run compares
 * with the recorded ones: a figure more than 10 % above its recorded value is flagged (exit code 2).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, loadavg, cpus } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { Pool } from 'undici'
import { copySqlite, isolatedConfig as isolatedConfigIn, root, startBaseline, startGateway, startNode, freePort } from './lib/processes.mjs'
import { CACHED_OPERATION, captureHit, writeCacheConfig } from './cache-scenario.mjs'
import { PG_PEER_READS, pgChinookUrl } from './pg-peer.mjs'
import { compareWithRecorded, readRecorded, writeRecorded } from './lib/recorded.mjs'

const argv = process.argv.slice(2)
const opt = (flag, fallback) => {
  const i = argv.indexOf(`--${flag}`)
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback
}
const requests = Number(opt('requests', 2000))
const warmup = Number(opt('warmup', 3000))
const concurrency = Number(opt('concurrency', 10))
const modes = String(opt('modes', 'development,production')).split(',').filter(Boolean)
const targets = String(opt('targets', 'baseline,rest,graphql,cache')).split(',').filter(Boolean)
for (const [name, v, max] of [['requests', requests, 100_000], ['warmup', warmup, 100_000], ['concurrency', concurrency, 100]]) {
  if (!Number.isInteger(v) || v < 1 || v > max) throw new Error(`--${name}: an integer from 1 to ${max}`)
}
for (const m of modes) if (m !== 'development' && m !== 'production') throw new Error(`--modes: development, production`)
for (const t of targets) if (!['baseline', 'rest', 'graphql', 'cache', 'cache-floor', 'cache-redis', 'linked', 'pg-nested'].includes(t)) throw new Error(`--targets: baseline, rest, graphql, cache, cache-floor, cache-redis, linked, pg-nested`)
if (targets.includes('cache-floor') && !targets.includes('cache')) throw new Error('--targets: cache-floor needs cache (its response is the hit captured there)')

const work = mkdtempSync(join(tmpdir(), 'tributary-instructions-'))

/** {@link isolatedConfigIn} in this run's work directory. */
const isolatedConfig = (source, name) => isolatedConfigIn(work, source, name)
const say = (text) => process.stdout.write(`${text}\n`)
const todoSource = readFileSync(join(root, 'operations/TodoById.graphql'), 'utf8')

/**
 * valgrind's prefix: callgrind, instrumentation off until `callgrind_control -i on`. The vgdb FIFOs
 * live in the work directory; their names hold `$HOST` of the server (127.0.0.1 for the gateway),
 * which callgrind_control must be run with to find them.
 */
const vgdbPrefix = `--vgdb-prefix=${work}/vgdb`
// One dump file per thread (`callgrind.<pid>.<part>-<thread>`, thread 01 the main one): the JS thread's
// count is read apart from V8's compiler and GC helper threads, whose work comes in bursts.
// `--cache-sim`: callgrind's cache simulation (first-level instruction and data caches and the last
// level, modelled on this machine's as valgrind detects them): misses per request beside the instructions.
const cacheSim = argv.includes('--cache-sim')
const wrap = ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', ...(cacheSim ? ['--cache-sim=yes'] : []), vgdbPrefix, `--callgrind-out-file=${work}/callgrind.%p`]

const hosts = new Map()
function control(pid, ...args) {
  const env = { ...process.env }
  if (hosts.get(pid) === undefined) delete env.HOST
  else env.HOST = hosts.get(pid)
  const out = execFileSync('callgrind_control', [vgdbPrefix, ...args, String(pid)], { encoding: 'utf8', stdio: 'pipe', timeout: 120_000, env })
  if (!/OK\./.test(out)) throw new Error(`callgrind_control ${args.join(' ')} ${pid}: ${out}`)
}

/** Dumps taken so far, by pid (callgrind numbers them from 1). */
const parts = new Map()

/**
 * Asks `pid` for a dump and returns its Ir once callgrind has written it: `all` (every thread: the
 * sum of the per-thread files' `totals:` lines) and `main` (thread 01, the JS thread).
 */
async function dumpIr(pid) {
  const part = (parts.get(pid) ?? 0) + 1
  parts.set(pid, part)
  const prefix = `callgrind.${pid}.${part}-`
  control(pid, '-d')
  let seen = -1
  for (let waited = 0; waited < 120_000; waited += 200) {
    await new Promise((ok) => setTimeout(ok, 200))
    const files = readdirSync(work).filter((f) => f.startsWith(prefix))
    const texts = files.map((f) => readFileSync(join(work, f), 'utf8'))
    const totals = texts.map((text) => /^totals:\s+([\d ]+)/m.exec(text))
    if (files.length === 0 || totals.some((m) => !m)) continue
    // Every thread's file written: the same count twice in a row.
    if (files.length !== seen) {
      seen = files.length
      continue
    }
    let all = 0
    let main = 0
    /** Every event of the dump (with `--cache-sim`, the misses too), summed over the threads and the main thread's. */
    const events = {}
    files.forEach((f, i) => {
      const counts = totals[i][1].trim().split(/\s+/).map(Number)
      const names = (/^events:\s+(.+)$/m.exec(texts[i])?.[1] ?? 'Ir').trim().split(/\s+/)
      all += counts[0]
      if (f === `${prefix}01`) main = counts[0]
      names.forEach((name, j) => {
        const e = (events[name] ??= { all: 0, main: 0 })
        e.all += counts[j] ?? 0
        if (f === `${prefix}01`) e.main += counts[j] ?? 0
      })
    })
    return { all, main, events }
  }
  throw new Error(`callgrind wrote no dump for pid ${pid} within 120 s`)
}

/** Sends `n` requests, `concurrency` in flight; fails on any status but 200. */
async function drive(url, init, n) {
  const u = new URL(url)
  const pool = new Pool(u.origin, { connections: concurrency, pipelining: 1 })
  let sent = 0
  const worker = async () => {
    while (sent < n) {
      sent++
      const res = await pool.request({ path: u.pathname + u.search, method: init.method ?? 'GET', headers: init.headers, body: init.body })
      await res.body.text()
      if (res.statusCode !== 200) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.statusCode}`)
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    await pool.close()
  }
}

/** Ir of `pid` over `ms` of idle time (counters zeroed first): `{ all, main }` as {@link dumpIr}. */
async function idleIr(pid, ms) {
  control(pid, '-z')
  await new Promise((ok) => setTimeout(ok, ms))
  return dumpIr(pid)
}

/**
 * Instructions per request of `url` on the server `pid` (see the module comment). The idle rate
 * (timers, the metrics' collectors) is measured over 2 s before and 2 s after the load, and the lower
 * of the two is charged to the load's wall time: right after a load V8's memory reducer may run a
 * full collection, which an idle window must not count twice. Returns `{ all, main }`: every thread,
 * and the main (JS) thread alone.
 */
async function measure(label, pid, url, init = {}) {
  await drive(url, init, warmup)
  control(pid, '-i', 'on')
  await drive(url, init, Math.min(200, warmup)) // re-translation after the flush of `-i on`, uncounted
  const idleBefore = await idleIr(pid, 2000)
  control(pid, '-z')
  const t0 = Date.now()
  await drive(url, init, requests)
  const wallMs = Date.now() - t0
  const load = await dumpIr(pid)
  const idleAfter = await idleIr(pid, 2000)
  control(pid, '-i', 'off')
  const perRequest = (which) => {
    const idle = Math.round((Math.min(idleBefore[which], idleAfter[which]) * wallMs) / 2000)
    return { value: Math.round((load[which] - idle) / requests), idle }
  }
  const all = perRequest('all')
  const main = perRequest('main')
  const fmt = (n) => n.toLocaleString('en-US')
  say(`  ${label.padEnd(44)} ${fmt(all.value).padStart(9)} instructions/request, main thread ${fmt(main.value).padStart(9)}  (load ${fmt(load.all)} over ${wallMs} ms, idle ${fmt(all.idle)}: 2 s windows ${fmt(idleBefore.all)} / ${fmt(idleAfter.all)})`)
  if (cacheSim) {
    // Misses per request, load minus the idle rate as for the instructions: I1 and D1 (first level), LL (last level).
    const rate = (name, which) => {
      const idle = (Math.min(idleBefore.events[name]?.[which] ?? 0, idleAfter.events[name]?.[which] ?? 0) * wallMs) / 2000
      return ((load.events[name]?.[which] ?? 0) - idle) / requests
    }
    const sum = (names, which) => names.reduce((n, name) => n + rate(name, which), 0)
    for (const which of ['all', 'main']) {
      say(`    ${which === 'all' ? 'every thread' : 'main thread '}: I1 misses ${sum(['I1mr'], which).toFixed(0)}, D1 misses ${sum(['D1mr', 'D1mw'], which).toFixed(0)} (of ${fmt(Math.round(sum(['Dr', 'Dw'], which)))} data accesses), LL misses ${sum(['ILmr', 'DLmr', 'DLmw'], which).toFixed(0)} per request`)
    }
  }
  return { all: all.value, main: main.value }
}

const cacheOperation = CACHED_OPERATION

const db = join(work, 'todo.sqlite')
await copySqlite(join(root, 'data/todo.sqlite'), db)
const figures = {}
/** The hit's `{ status, headers, body }` for `cache-floor`, captured from the first mode's gateway. */
let floorResponse
/** The main (JS) thread's instructions per request, by the same keys as `figures`. */
const mainThread = {}
say(`instructions per request (callgrind), ${requests} requests after ${warmup} warm-up, ${concurrency} in flight; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, ${cpus().length} × ${cpus()[0]?.model}`)
try {
  if (targets.includes('baseline')) {
    const base = await startBaseline(['--todo-db', db], { wrap, timeoutMs: 300_000 })
    hosts.set(base.pid, process.env.HOST)
    try {
      ;({ all: figures.baseline, main: mainThread.baseline } = await measure('baseline GET /todo?id=1', base.pid, `${base.url}/todo?id=1`))
    } finally {
      await base.stop()
    }
  }
  if (targets.includes('linked')) {
    const chinook = join(work, 'chinook.sqlite')
    await copySqlite(join(root, 'examples/chinook/chinook.sqlite'), chinook)
    const service = async (name, portVar) => {
      const h = await startNode({ name, args: [join(root, `dist/examples/federation/services/${name}.js`)], env: { ...process.env, [portVar]: String(await freePort()), LOG_LEVEL: 'warn' }, ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/, timeoutMs: 30_000 })
      return { ...h, url: h.match[1] }
    }
    const countries = await service('countries', 'COUNTRIES_PORT')
    const reviews = await service('reviews', 'REVIEWS_PORT')
    try {
      // The statement the gateway sends for the operation (bench/linked-cpu.mjs), run by hand by the baseline.
      const sql = `SELECT json_object('customerId', t0."CustomerId", 'firstName', t0."FirstName", 'lastName', t0."LastName", 'country', t0."Country") AS j FROM "Customer" AS t0 ORDER BY t0."CustomerId" ASC LIMIT ?`
      writeFileSync(join(work, 'linked-sql.json'), JSON.stringify({ sql, bindings: [50] }))
      const base = await startBaseline(['--linked-db', chinook, '--linked-sql', join(work, 'linked-sql.json'), '--countries-url', countries.url], { wrap, timeoutMs: 300_000 })
      hosts.set(base.pid, process.env.HOST)
      try {
        ;({ all: figures['linked-baseline'], main: mainThread['linked-baseline'] } = await measure('baseline GET /linked', base.pid, `${base.url}/linked`))
      } finally {
        await base.stop()
      }
      for (const mode of modes) {
        const env = { CHINOOK_DATABASE_URL: `sqlite:${chinook}`, COUNTRIES_API_URL: countries.url, REVIEWS_API_URL: reviews.url, ...(mode === 'production' ? { NODE_ENV: 'production' } : {}) }
        const gw = await startGateway({ config: isolatedConfig('dist/examples/federation/config.js', `federation-${mode}`), env, wrap, timeoutMs: 600_000 })
        hosts.set(gw.pid, '127.0.0.1')
        try {
          ;({ all: figures[`linked.${mode}`], main: mainThread[`linked.${mode}`] } = await measure(`${mode} GET /operations/CustomersWithCountry?take=50`, gw.pid, `${gw.url}/operations/CustomersWithCountry?take=50`))
        } finally {
          await gw.stop()
        }
      }
    } finally {
      await countries.stop()
      await reviews.stop()
    }
  }
  if (targets.includes('pg-nested')) {
    // bench/pg-peer.mjs' nested read on PostgreSQL (BENCH_PG_CHINOOK_URL, default the tests' `chinook` schema): one statement, a 32,837-byte answer.
    const body = JSON.stringify({ query: PG_PEER_READS.nested.tributary.query })
    // Development only: in production /graphql takes persisted operations only, which this read is not.
    for (const mode of modes.filter((m) => m === 'development')) {
      const lines = []
      const gw = await startGateway({ config: isolatedConfig('dist/examples/chinook/config.js', `chinook-${mode}`), env: { CHINOOK_DATABASE_URL: pgChinookUrl() }, wrap, timeoutMs: 600_000, onLine: (line) => lines.push(line) > 200 && lines.shift() })
      hosts.set(gw.pid, '127.0.0.1')
      try {
        ;({ all: figures[`pg-nested.${mode}`], main: mainThread[`pg-nested.${mode}`] } = await measure(`${mode} POST /graphql (pg-nested)`, gw.pid, `${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }))
      } catch (err) {
        say(`gateway's last output:\n${lines.filter((l) => !/^==\d+==\s+(at|by) 0x/.test(l)).slice(-40).join('\n')}`)
        throw err
      } finally {
        await gw.stop()
      }
    }
  }
  for (const mode of modes) {
    const gwTargets = targets.filter((t) => t !== 'baseline' && t !== 'cache-floor' && t !== 'cache-redis' && t !== 'linked' && t !== 'pg-nested')
    // `cache-redis`: the same hit on a gateway whose response cache is in Redis (REDIS_URL, default
    // 127.0.0.1:6379, a key prefix of its own); `cache` runs in memory (TRIBUTARY_PUBSUB=memory).
    if (targets.includes('cache-redis')) {
      const env = { TODO_DATABASE_URL: `sqlite:${db}`, ROLE_SERVICE_PORT: String(await freePort()), REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: `trb-bench-instr:${process.pid}:${Date.now().toString(36)}:`, ...(mode === 'production' ? { NODE_ENV: 'production' } : {}) }
      const gw = await startGateway({ config: writeCacheConfig(work), env, wrap, timeoutMs: 600_000 })
      hosts.set(gw.pid, '127.0.0.1')
      try {
        figures[`cache-redis.${mode}`] = await measure(`${mode} GET /operations/${cacheOperation} (hit, Redis)`, gw.pid, `${gw.url}/operations/${cacheOperation}?id=1`)
      } finally {
        await gw.stop()
      }
    }
    if (!gwTargets.length) continue
    const env = { TODO_DATABASE_URL: `sqlite:${db}`, ROLE_SERVICE_PORT: String(await freePort()), TRIBUTARY_PUBSUB: 'memory', ...(mode === 'production' ? { NODE_ENV: 'production' } : {}) }
    const config = gwTargets.includes('cache') ? writeCacheConfig(work) : isolatedConfig('dist/config.js', `demo-${mode}`)
    const gw = await startGateway({ config, env, wrap, timeoutMs: 600_000 })
    hosts.set(gw.pid, '127.0.0.1') // startGateway's HOST
    try {
      for (const t of gwTargets) {
        const key = `${t}.${mode}`
        let m
        if (t === 'rest') m = await measure(`${mode} GET /operations/TodoById`, gw.pid, `${gw.url}/operations/TodoById?id=1`)
        if (t === 'graphql') {
          const body = JSON.stringify({ query: todoSource, variables: { id: 1 }, operationName: 'TodoById' })
          m = await measure(`${mode} POST /graphql (TodoById)`, gw.pid, `${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        }
        if (t === 'cache') {
          m = await measure(`${mode} GET /operations/${cacheOperation} (hit)`, gw.pid, `${gw.url}/operations/${cacheOperation}?id=1`)
          if (targets.includes('cache-floor')) floorResponse ??= await captureHit(`${gw.url}/operations/${cacheOperation}?id=1`)
        }
        if (m) ({ all: figures[key], main: mainThread[key] } = m)
      }
    } finally {
      await gw.stop()
    }
  }
  if (floorResponse) {
    const file = join(work, 'floor-response.json')
    writeFileSync(file, JSON.stringify(floorResponse))
    const port = await freePort()
    const floor = await startNode({ name: 'floor', args: [join(root, 'bench/floor-server.mjs'), '--port', String(port), '--response', file], env: { ...process.env }, wrap, ready: /floor listening (http:\/\/127\.0\.0\.1:\d+)/, timeoutMs: 300_000 })
    hosts.set(floor.pid, process.env.HOST)
    try {
      ;({ all: figures['cache-floor'], main: mainThread['cache-floor'] } = await measure('floor: node:http sending the hit\'s bytes', floor.pid, `${floor.match[1]}/operations/${cacheOperation}?id=1`))
    } finally {
      await floor.stop()
    }
  }
} finally {
  if (argv.includes('--keep')) say(`callgrind dumps kept in ${work} (callgrind_annotate --inclusive=yes <dump>)`)
  else rmSync(work, { recursive: true, force: true })
}

if (figures['linked-baseline']) {
  say('\nlinked, beside the baseline GET /linked (all threads; main thread):')
  for (const mode of modes) {
    const k = `linked.${mode}`
    if (figures[k]) say(`  ${k.padEnd(24)} ${(figures[k] / figures['linked-baseline']).toFixed(2)}× the baseline's; ${(mainThread[k] / mainThread['linked-baseline']).toFixed(2)}×`)
  }
}
if (figures.baseline) {
  say('\nabove the baseline:')
  for (const [k, v] of Object.entries(figures)) if (k !== 'baseline' && !k.startsWith('linked')) say(`  ${k.padEnd(24)} ${v >= figures.baseline ? "+" : ""}${(v - figures.baseline).toLocaleString('en-US')} instructions/request (${(v / figures.baseline).toFixed(2)}× the baseline's)`)
  say('above the baseline, main (JS) thread only (V8\'s compiler and GC helper threads left out):')
  for (const [k, v] of Object.entries(mainThread)) if (k !== 'baseline' && !k.startsWith('linked')) say(`  ${k.padEnd(24)} ${v >= mainThread.baseline ? "+" : ""}${(v - mainThread.baseline).toLocaleString('en-US')} instructions/request (${(v / mainThread.baseline).toFixed(2)}× the baseline's)`)
}
const recorded = readRecorded()
const flagged = compareWithRecorded(recorded.instructions ?? {}, figures, 'instructions/request', say)
const jsonOut = opt('json')
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ at: new Date().toISOString(), loadavg: loadavg(), requests, warmup, concurrency, figures, mainThread }, null, 2))
if (argv.includes('--record')) {
  writeRecorded({ ...recorded, instructions: { ...(recorded.instructions ?? {}), ...figures }, instructionsAt: new Date().toISOString(), instructionsRun: { requests, warmup, concurrency, loadavg: loadavg().map((l) => Number(l.toFixed(2))), machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version } } }, 'instructions')
  say('recorded in bench/recorded.json')
}
process.exit(flagged.length && !argv.includes('--record') ? 2 : 0)
