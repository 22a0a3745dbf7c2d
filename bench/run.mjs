#!/usr/bin/env node
/**
 * Load benchmarks (issues 3 and 4, "Speed"): the gateway, started exactly as `npm start` starts it,
 * A/B against a hand-written fastify + better-sqlite3 baseline (bench/baseline-server.mjs) in the same
 * run; autocannon runs in its own process (bench/autocannon-worker.mjs), against 127.0.0.1 only.
 *
 *   npm run bench                                   # every scenario, defaults below
 *   npm run bench -- --scenarios rest,graphql       # some scenarios
 *   npm run bench -- --quick                        # smoke run: 3 s runs, 1 round, 5 s memory runs
 *   npm run bench -- --scenarios rest --cpu-prof    # also profile the gateway (ratios then not comparable)
 *
 * Scenarios:
 *   rest     GET /operations/TodoById?id=1 vs baseline GET /todo?id=1                  target ≥ 0.70
 *   graphql  POST /graphql (TodoById document, variables {id:1}) vs the same baseline  target ≥ 0.35
 *   rest-production, graphql-production  the same two on the gateway in production mode
 *            (`NODE_ENV=production`; generated files in the work directory)           targets as above
 *   memory   gateway RSS after each of 5 successive 20 s runs of `rest`               growth < 10 % (run 1 → run 5)
 *   roles    GET /operations/Roles (system_getAllRoles, REST source) vs baseline GET /roles (undici)  target ≥ 0.60
 *   auth     GET /operations/TodoByIdAuthenticated?id=1 (@requireAuthentication) with an RS256 token
 *            checked against a JWKS this process serves (keys cached) vs the same selection
 *            unauthenticated (GET /operations/TodoById?id=1), one gateway (bench/auth/config.ts)  target ≥ 0.85
 *   chinook  POST /graphql artists → albums → tracks (20 artists) on SQLite vs a route
 *            running the same single SQL statement the gateway sends                   target ≥ 0.50
 *   linked   GET /operations/CustomersWithCountry?take=50 of examples/federation (50 Chinook rows, each
 *            with a link to the countries REST API: one SQL statement + one REST call) vs a route
 *            making the same SQL read (written by hand) and the same REST call          target ≥ 0.50
 *            + peer: Hive Gateway (@graphql-hive/gateway, supergraph by @graphql-mesh/compose-cli
 *            and @omnigraph/openapi) vs Tributary on the same countries REST API and query (ratio reported)
 *   health   GET /health p99 while 4 clients run the heaviest Chinook read, on SQLite
 *            and PostgreSQL (the tests' `chinook` schema; BENCH_PG_CHINOOK_URL)          target < 100 ms
 *   workers  GET /operations/TodoById?id=1 on `start --workers 2` vs `start` (1 process): the
 *            "baseline" of this A/B is the single process; autocannon's CPU is reported  (no target)
 *   subscribers  --subscribers (5000) graphql-ws clients of messageCreated spread over two instances
 *            (examples/cluster/config.ts) sharing Redis (REDIS_URL, default redis://127.0.0.1:6379,
 *            a key prefix of its own): p99 of (receipt − production time) over --messages (10)
 *            messages, every subscriber receiving every message, and RSS per 1,000 subscribers  target p99 < 200 ms
 *            Two rounds: SHARE_SUBSCRIPTIONS=false (one execution per subscriber, the baseline),
 *            then shared executions (the default); per message, when each instance wrote its last
 *            socket (LOG_LEVEL=debug), first and last receipt; CPU of the load generator and instances
 *   events   NATS → --event-subscribers (1000) graphql-ws clients of one subscription (bench/events/config.ts,
 *            one gateway, NATS_URL): events per second delivered to every subscriber with at most 20
 *            events in flight, CPU µs of the gateway process per event (/proc), and p50/p99 delivery
 *            latency (publish → receipt, one clock) at a fixed rate: 100 events/s, or half the
 *            measured throughput when that is lower                                       (no target)
 *   pg-peer  Tributary on PostgreSQL (the tests' `chinook` schema) vs PostGraphile v4 on the same
 *            database: one artist by id, and 20 artists → albums → tracks (bench/pg-peer.mjs)  target ≥ 2.5 / ≥ 6
 *   metrics  GET /operations/TodoById?id=1 on the demo with metrics on (the default) vs the same
 *            gateway with `metrics: { enabled: false }`: the cost of the metrics        target ≥ 0.95
 *            (BENCH_METRICS_CONTROL=1: both without metrics, an A/A control of the pair)
 *   cache    GET /operations/TodoByIdCached?id=1 (TodoById with `# @cache`, every request a hit) vs
 *            baseline GET /todo?id=1, in memory and with Redis (REDIS_URL; bench/cache-scenario.mjs)  target ≥ 1.5
 *
 * Every A/B line and summary gives each server's CPU µs per request (/proc/<pid>/stat) beside the
 * ratio; they are compared with bench/recorded.json and a figure more than 10 % above its recorded
 * value is flagged. `--record` writes this run's figures there (bench/lib/recorded.mjs).
 *
 * Options (flag, or environment variable):
 *   --duration <s>          BENCH_DURATION          seconds per measured run (10)
 *   --connections <n>       BENCH_CONNECTIONS       autocannon connections (50)
 *   --rounds <n>            BENCH_ROUNDS            A/B rounds per scenario; the median ratio is reported (3)
 *   --warmup <s>            BENCH_WARMUP            unrecorded warm-up per server before a scenario (3)
 *   --memory-runs <n>       BENCH_MEMORY_RUNS       runs of the memory scenario (5)
 *   --memory-duration <s>   BENCH_MEMORY_DURATION   seconds per memory run (20)
 *   --pipelining <n>        BENCH_PIPELINING        autocannon pipelining (1)
 *   --paired-rate <n>       BENCH_PAIRED_RATE       req/s sent to each server in a paired slice (4000, at most 50000)
 *   --paired-slices <n>     BENCH_PAIRED_SLICES     paired slices per scenario after its rounds (8; 3 with --quick)
 *   --paired-duration <s>   BENCH_PAIRED_DURATION   seconds per paired slice (5; 3 with --quick)
 *   --no-paired                                     skip the paired slices
 *   --scenarios <list>      BENCH_SCENARIOS         comma-separated subset of rest,graphql,rest-production,graphql-production,calibration,memory,chinook,health,roles,linked,workers,subscribers,events,metrics,auth,pg-peer,cache
 *   --subscribers <n>       BENCH_SUBSCRIBERS       WebSocket subscribers of the subscribers scenario (5000, at most 20000)
 *   --messages <n>          BENCH_MESSAGES          messages measured in the subscribers scenario (10)
 *   --event-subscribers <n> BENCH_EVENT_SUBSCRIBERS WebSocket subscribers of the events scenario (1000, at most 20000)
 *   --calibration-spin-us <n> BENCH_CALIBRATION_SPIN_US  µs of busy work the calibration scenario adds (10, ≤ 1000)
 *   --no-peer                                       linked: skip the linked-peer comparison with Hive Gateway
 *   --client <name>         BENCH_CLIENT            the load generator of the rounds: autocannon (default) or wrk
 *                                                   (bench/lib/wrk.mjs; Debian's `wrk`): C, about half a core where
 *                                                   autocannon needs a whole one, so fast servers are not client-bound;
 *                                                   the A/B scenarios' warm-ups and rounds and `memory`; paired slices (a fixed
 *                                                   rate), runs of several bodies, health and pg-peer stay autocannon's
 *   --perf                                          profile the gateway with Linux perf during the first
 *                                                   measured gateway run of each A/B scenario (node
 *                                                   --perf-basic-prof; bench/results/perf/); ratios stay
 *                                                   comparable but perf costs the gateway a few %
 *   --record                                        write this run's CPU µs per request into bench/recorded.json
 *   --cpu-prof                                      run the gateways under `node --cpu-prof` and print
 *                                                   the top self-time functions (bench/results/profiles/);
 *                                                   biased towards syscalls on this VM: prefer --perf
 *
 * Each round alternates the order (baseline first in odd rounds, gateway first in even ones). The ratio
 * of a round is gateway req/s ÷ baseline req/s of that round.
 *
 * Paired slices (`rest`, `graphql`, their production twins, `calibration`; issue 30's "µs of CPU per
 * request above the hand-written route"): after the rounds, both servers are loaded **at the same
 * time**, each by its own autocannon at the same fixed rate (`--paired-rate`, 10 connections: well
 * below what either serves, so neither is starved by the other), for `--paired-slices` slices; each
 * slice gives both servers' CPU µs per request over the same seconds, and the figure is the median of
 * the slices' differences (gateway − baseline). Whatever the VM does in a slice (a slow phase,
 * another tenant, frequency) it does to both, so the difference holds where sequential rounds on the
 * same VM moved by tens of µs; `calibration`'s paired difference checks the method (it should read
 * its `--calibration-spin-us`, times the VM's amplification). A slice in which either server
 * answered less than 90 % of the rate asked is left out and reported (the machine could not keep up). Results: bench/results/<time>.json and
 * bench/results/latest.json.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { isDeepStrictEqual } from 'node:util'
import { join } from 'node:path'
import { copySqlite, cpuTimeOf, freePort, isolatedConfig, memoryOf, root, runLoad, startBaseline, startGateway, startNode } from './lib/processes.mjs'
import { formatSummary, summarise } from './profile-summary.mjs'
import { formatPerfSummary, perfRecord, perfScript, summarisePerfScript } from './perf-summary.mjs'
import { spawn } from 'node:child_process'
import { cacheScenario } from './cache-scenario.mjs'
import { compareWithRecorded, readRecorded, writeRecorded } from './lib/recorded.mjs'
import { requireWrk, runWrk } from './lib/wrk.mjs'

// ---------------------------------------------------------------- options
const argv = process.argv.slice(2)
function opt(flag, env, fallback) {
  const i = argv.indexOf(`--${flag}`)
  if (i >= 0 && argv[i + 1] !== undefined) return argv[i + 1]
  return process.env[env] ?? fallback
}
const quick = argv.includes('--quick')
const num = (flag, env, fallback, quickValue) => {
  const v = Number(opt(flag, env, quick ? quickValue : fallback))
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${flag} must be a positive number`)
  return v
}
const options = {
  duration: num('duration', 'BENCH_DURATION', 10, 3),
  connections: num('connections', 'BENCH_CONNECTIONS', 50, 50),
  rounds: num('rounds', 'BENCH_ROUNDS', 3, 1),
  warmup: num('warmup', 'BENCH_WARMUP', 3, 1),
  memoryRuns: num('memory-runs', 'BENCH_MEMORY_RUNS', 5, 5),
  memoryDuration: num('memory-duration', 'BENCH_MEMORY_DURATION', 20, 5),
  pipelining: num('pipelining', 'BENCH_PIPELINING', 1, 1),
  pairedRate: num('paired-rate', 'BENCH_PAIRED_RATE', 4000, 4000),
  pairedSlices: argv.includes('--no-paired') ? 0 : num('paired-slices', 'BENCH_PAIRED_SLICES', 8, 3),
  pairedDuration: num('paired-duration', 'BENCH_PAIRED_DURATION', 5, 3),
  subscribers: num('subscribers', 'BENCH_SUBSCRIBERS', 5000, 5000),
  messages: num('messages', 'BENCH_MESSAGES', 10, 5),
  eventSubscribers: num('event-subscribers', 'BENCH_EVENT_SUBSCRIBERS', 1000, 1000),
  calibrationSpinUs: num('calibration-spin-us', 'BENCH_CALIBRATION_SPIN_US', 10, 10),
  scenarios: String(opt('scenarios', 'BENCH_SCENARIOS', 'rest,graphql,rest-production,graphql-production,calibration,memory,chinook,health,roles,linked,workers,subscribers,events,metrics,auth,pg-peer,cache')).split(',').map((s) => s.trim()).filter(Boolean),
  cpuProf: argv.includes('--cpu-prof'),
  perf: argv.includes('--perf'),
  peer: !argv.includes('--no-peer'),
  client: String(opt('client', 'BENCH_CLIENT', 'autocannon')),
}
const known = ['rest', 'graphql', 'rest-production', 'graphql-production', 'calibration', 'memory', 'chinook', 'health', 'roles', 'linked', 'workers', 'subscribers', 'events', 'metrics', 'auth', 'pg-peer', 'cache']
for (const s of options.scenarios) if (!known.includes(s)) throw new Error(`unknown scenario "${s}"; use ${known.join(', ')}`)
if (options.client !== 'autocannon' && options.client !== 'wrk') throw new Error('--client: autocannon or wrk')
if (options.client === 'wrk') requireWrk()
if (options.calibrationSpinUs > 1000) throw new Error('--calibration-spin-us: at most 1000 µs')
if (options.subscribers > 20000 || options.eventSubscribers > 20000 || options.messages > 1000) throw new Error('at most 20000 subscribers and 1000 messages')
if (options.connections > 1000 || options.duration > 600 || options.memoryDuration > 600) throw new Error('at most 1000 connections and 600 s per run')
if (options.pairedRate > 50000 || options.pairedSlices > 100 || options.pairedDuration > 600) throw new Error('paired slices: at most 50000 req/s, 100 slices and 600 s per slice')

// restAboveUs / graphqlAboveUs (issue 30): the paired slices' median CPU µs per request above the hand-written route.
const TARGETS = { rest: 0.7, graphql: 0.35, restAboveUs: 5, graphqlAboveUs: 15, memoryGrowth: 0.1, chinook: 0.5, healthP99Ms: 100, roles: 0.6, linked: 0.7, subscribersP99Ms: 200, metrics: 0.95, auth: 0.85, cache: 1.5 }

// ---------------------------------------------------------------- output
const tty = process.stdout.isTTY
let lastProgress = 0
function progress(text) {
  if (tty) process.stdout.write(`\r\x1b[K  ${text}`)
  else if (Date.now() - lastProgress > 4500) {
    lastProgress = Date.now()
    process.stdout.write(`  ${text}\n`)
  }
}
function say(text) {
  if (tty) process.stdout.write('\r\x1b[K')
  process.stdout.write(`${text}\n`)
}
const fmt = (n) => Math.round(n).toLocaleString('en-US')
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

// ---------------------------------------------------------------- setup
const work = mkdtempSync(join(tmpdir(), 'tributary-bench-'))
const resultsDir = join(root, 'bench/results')
const profileDir = join(resultsDir, 'profiles')
mkdirSync(resultsDir, { recursive: true })
if (options.cpuProf) mkdirSync(profileDir, { recursive: true })
const started = new Date()
const results = {
  startedAt: started.toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, loadavgBefore: loadavg() },
  options,
  targets: TARGETS,
  scenarios: {},
}

const gatewayNodeArgs = (name) => [
  ...(process.env.BENCH_GATEWAY_NODE_ARGS ? process.env.BENCH_GATEWAY_NODE_ARGS.split(' ').filter(Boolean) : []),
  ...(options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`] : []),
  ...(options.perf ? ['--perf-basic-prof', '--interpreted-frames-native-stack'] : []),
]

/**
 * Records `seconds` of the process `pid` with `perf record -g` (cpu-clock, 999 Hz), then prints and
 * stores the summary (bench/perf-summary.mjs): every sample charged to its nearest JS frame.
 */
async function recordPerf(name, pid, seconds) {
  const dir = join(resultsDir, 'perf')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${name}.perf.data`)
  try {
    await perfRecord(pid, file, seconds)
  } catch (e) {
    say(`  (${e.message}; is perf installed and perf_event_paranoid ≤ 2?)`)
    return undefined
  }
  // Summarised by the caller once the load run has ended (perf script is CPU-heavy).
  return () => {
    const summary = summarisePerfScript(perfScript(file), { top: 70, mainTid: pid })
    writeFileSync(join(dir, `${name}.summary.json`), JSON.stringify(summary, null, 2))
    ;(results.perf ??= {})[name] = { file, seconds, ...summary }
    say(`\n${formatPerfSummary(summary, `[${name}] perf record of gateway pid ${pid}, ${seconds} s: ${file}\n`)}\n`)
  }
}

/** Stops a gateway; with --cpu-prof, summarises its profile. */
async function stopGateway(gw, name) {
  await gw.stop()
  if (options.perf) rmSync(`/tmp/perf-${gw.pid}.map`, { force: true })
  if (!options.cpuProf) return
  // Only the samples since the measured runs started (no startup, no warm-up).
  const lastMs = gw.measuredFrom ? Date.now() - gw.measuredFrom : undefined
  const dir = join(profileDir, name)
  const file = existsSync(dir) ? readdirSync(dir).filter((f) => f.includes(`.${gw.pid}.`) && f.endsWith('.cpuprofile')).sort().pop() : undefined
  if (!file) {
    say(`  (no .cpuprofile for pid ${gw.pid} in ${dir})`)
    return
  }
  const summary = { lastMs, ...summarise(JSON.parse(readFileSync(join(dir, file), 'utf8')), { top: 40, lastMs }) }
  writeFileSync(join(dir, `${file}.summary.json`), JSON.stringify(summary, null, 2))
  say(`\n${formatSummary(summary, `[${name}] ${join(dir, file)}${lastMs ? ` (last ${fmt(lastMs)} ms: the measured runs)` : ''}\n`)}\n`)
  ;(results.profiles ??= {})[name] = { file: join(dir, file), ...summary }
}

async function fetchJson(url, init) {
  const res = await fetch(url, init)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${init?.method ?? 'GET'} ${url} answered ${res.status}: ${text.slice(0, 500)}`)
  return JSON.parse(text)
}

/** Fails unless both bodies (after `pick`) are deeply equal: the A/B must compare the same answer. */
function assertSame(label, a, b) {
  if (!isDeepStrictEqual(a, b)) {
    throw new Error(`${label}: the gateway and the baseline answer differently:\n gateway:  ${JSON.stringify(a).slice(0, 400)}\n baseline: ${JSON.stringify(b).slice(0, 400)}`)
  }
}

function summariseRun(r) {
  return {
    reqPerSec: Math.round(r.reqPerSec),
    serverCpuPct: r.serverCpuPct,
    serverCpuMs: r.serverCpuMs,
    serverCpuUsPerRequest: r.serverCpuMs === undefined ? undefined : +((r.serverCpuMs * 1000) / r.requests.total).toFixed(1),
    clientCpuPct: r.clientCpuPct,
    client: r.client,
    total: r.requests.total,
    durationS: r.duration,
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, average: r.latency.average },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    loadavg1: +loadavg()[0].toFixed(2),
  }
}

/** Median CPU µs per request of each side of an A/B's runs (`/proc/<pid>/stat`), `{ baseline, gateway }`. */
function cpuPerRequest(runs) {
  const of = (which) => {
    const xs = runs.filter((x) => x.which === which && x.serverCpuUsPerRequest !== undefined).map((x) => x.serverCpuUsPerRequest)
    return xs.length ? +median(xs).toFixed(1) : undefined
  }
  return { baseline: of('baseline'), gateway: of('gateway') }
}

/** Direct children of a process (/proc/<pid>/task/<pid>/children), e.g. a primary's workers. */
function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** One run against `target` ({ url, method?, headers?, body?, pid, withChildren? }); also measures the server's CPU use (% of one core). */
async function load(label, target, duration, { connections = options.connections, rate } = {}) {
  const { pid, withChildren: _children, ...request } = target
  // `withChildren`: the process and its direct children (the workers of `start --workers N`).
  const cpuOf = (p) => cpuTimeOf(p) + (target.withChildren ? childPids(p).reduce((sum, c) => sum + cpuTimeOf(c), 0) : 0)
  const cpu0 = pid ? cpuOf(pid) : 0
  // --client wrk: the runs wrk can make (no fixed rate, one body, no pipelining); autocannon the others.
  const byWrk = options.client === 'wrk' && !rate && !request.bodies && options.pipelining === 1
  const r = byWrk ? await runWrk({ label, ...request, duration, connections, progress }) : await runLoad({ label, ...request, duration, connections, pipelining: rate ? 1 : options.pipelining, rate, progress })
  r.client ??= 'autocannon'
  if (pid) {
    r.serverCpuMs = cpuOf(pid) - cpu0
    r.serverCpuPct = Math.round((100 * r.serverCpuMs) / (r.duration * 1000))
  }
  if (r.non2xx || r.errors || r.timeouts) throw new Error(`${label}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is invalid`)
  return r
}

/** Connections of each side's autocannon in a paired slice. */
const PAIRED_CONNECTIONS = 10

/**
 * The paired slices of an A/B (see the header): `--paired-slices` slices in which the baseline and the
 * gateway are loaded at the same time at `--paired-rate` each; one unrecorded slice first.
 * @param aboveUs the target for the median difference (µs of CPU per request, gateway − baseline), or null (reported)
 * @returns { rate, slices: [{ baseline, gateway, diff, baselineReqPerSec, gatewayReqPerSec }], skipped,
 *   cpuUsPerRequest: { baseline, gateway } (medians), aboveUs (median of the differences), spreadUs
 *   ([min, max] of the differences), target, pass } — or undefined with `--no-paired`
 */
async function paired(name, { baseline, gateway, aboveUs }) {
  if (!options.pairedSlices) return undefined
  const rate = options.pairedRate
  const slice = async (label, duration) => {
    const [b, g] = await Promise.all([
      load(`${label} baseline`, baseline, duration, { connections: PAIRED_CONNECTIONS, rate }),
      load(`${label} gateway`, gateway, duration, { connections: PAIRED_CONNECTIONS, rate }),
    ])
    const us = (r) => +((r.serverCpuMs * 1000) / r.requests.total).toFixed(1)
    return { baseline: us(b), gateway: us(g), diff: +(us(g) - us(b)).toFixed(1), baselineReqPerSec: Math.round(b.reqPerSec), gatewayReqPerSec: Math.round(g.reqPerSec) }
  }
  say(`[${name}] paired: both servers at once, ${fmt(rate)} req/s each (-c ${PAIRED_CONNECTIONS}), ${options.pairedSlices} slices of ${options.pairedDuration} s after one unrecorded`)
  await slice(`${name} paired warm-up`, Math.min(3, options.pairedDuration))
  const slices = []
  const skipped = []
  for (let i = 1; i <= options.pairedSlices; i++) {
    const r = await slice(`${name} paired ${i}/${options.pairedSlices}`, options.pairedDuration)
    const short = Math.min(r.baselineReqPerSec, r.gatewayReqPerSec) < 0.9 * rate
    say(`  paired ${i}  baseline ${String(r.baseline).padStart(6)} µs  gateway ${String(r.gateway).padStart(6)} µs  difference ${r.diff >= 0 ? '+' : ''}${r.diff} µs  (${fmt(r.baselineReqPerSec)} / ${fmt(r.gatewayReqPerSec)} req/s)${short ? '  ✗ rate not reached: left out' : ''}  load ${loadavg()[0].toFixed(1)}`)
    ;(short ? skipped : slices).push({ slice: i, ...r })
  }
  if (!slices.length) {
    say(`[${name}] paired: no slice reached ${fmt(rate)} req/s on both servers; lower --paired-rate`)
    return { rate, slices, skipped, target: aboveUs }
  }
  const diffs = slices.map((x) => x.diff)
  const result = {
    rate,
    slices,
    skipped,
    cpuUsPerRequest: { baseline: +median(slices.map((x) => x.baseline)).toFixed(1), gateway: +median(slices.map((x) => x.gateway)).toFixed(1) },
    aboveUs: +median(diffs).toFixed(1),
    spreadUs: [Math.min(...diffs), Math.max(...diffs)],
    target: aboveUs,
    pass: aboveUs === null ? null : median(diffs) <= aboveUs,
  }
  say(`[${name}] paired: gateway ${result.aboveUs >= 0 ? '+' : ''}${result.aboveUs} µs CPU per request above the baseline (median of ${slices.length}; slices ${result.spreadUs[0]} … ${result.spreadUs[1]})${aboveUs === null ? ' (reported)' : ` (target ≤ +${aboveUs}) ${result.pass ? 'PASS' : 'MISS'}`}`)
  return result
}

/** autocannon's CPU (% of one core) from which a run is reported as client-bound (see {@link ab}). */
const CLIENT_BOUND_PCT = 95

/**
 * A/B scenario: warm both, then `rounds` rounds of (baseline, gateway) or (gateway, baseline); with
 * `aboveUs` (a number, or null for a reported figure), then the {@link paired} slices.
 * @returns { runs, ratios, medianRatio, target, pass, cpuUsPerRequest, cpuRatio, clientBound, paired? }: `cpuRatio`
 *   baseline ÷ gateway median CPU µs per request; `clientBound` the runs where autocannon used at least
 *   {@link CLIENT_BOUND_PCT} % of a core (their req/s bounded by the load generator)
 */
async function ab(name, { baseline, gateway, target, gw, aboveUs }) {
  say(`\n[${name}] warm-up ${options.warmup} s each`)
  await load(`${name} warm-up baseline`, baseline, options.warmup)
  await load(`${name} warm-up gateway`, gateway, options.warmup)
  if (gw && !gw.measuredFrom) gw.measuredFrom = Date.now()
  const runs = []
  const ratios = []
  let pendingPerf
  for (let round = 1; round <= options.rounds; round++) {
    const order = round % 2 ? ['baseline', 'gateway'] : ['gateway', 'baseline']
    const got = {}
    for (const which of order) {
      const profiling = options.perf && round === 1 && which === 'gateway' && gw
      const perfDone = profiling ? recordPerf(name, gw.pid, Math.max(1, options.duration - 2)) : null
      const r = await load(`${name} round ${round}/${options.rounds} ${which}`, which === 'baseline' ? baseline : gateway, options.duration)
      const summarisePerf = await perfDone
      if (summarisePerf) pendingPerf = summarisePerf
      got[which] = summariseRun(r)
      runs.push({ round, which, ...got[which] })
      say(`  round ${round} ${which.padEnd(8)} ${fmt(r.reqPerSec).padStart(7)} req/s   p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  CPU server ${r.serverCpuPct} % (${got[which].serverCpuUsPerRequest} µs/request) ${r.client} ${r.clientCpuPct} %  load ${loadavg()[0].toFixed(1)}`)
    }
    const ratio = got.gateway.reqPerSec / got.baseline.reqPerSec
    if (options.perf && round === 1) say('  (round 1: the gateway ran under perf record)')
    pendingPerf?.()
    pendingPerf = undefined
    ratios.push(+ratio.toFixed(3))
    say(`  round ${round} ratio    ${ratio.toFixed(3)}`)
  }
  const medianRatio = +median(ratios).toFixed(3)
  // target null: a figure that is reported, not judged.
  const pass = target === null ? null : medianRatio >= target
  const cpuUsPerRequest = cpuPerRequest(runs)
  say(`[${name}] median ratio ${medianRatio}${target === null ? ' (reported)' : ` (target ≥ ${target}) ${pass ? 'PASS' : 'MISS'}`}${options.cpuProf ? ' (profiled: not comparable)' : ''}; CPU per request (median) baseline ${cpuUsPerRequest.baseline} µs, gateway ${cpuUsPerRequest.gateway} µs (${cpuUsPerRequest.gateway >= cpuUsPerRequest.baseline ? '+' : '−'}${Math.abs(+(cpuUsPerRequest.gateway - cpuUsPerRequest.baseline).toFixed(1))})`)
  // The ratio the two servers' CPU per request alone gives (baseline ÷ gateway): what req/s would show
  // if each server, not the load generator nor the machine, were the bottleneck.
  const cpuRatio = cpuUsPerRequest.baseline && cpuUsPerRequest.gateway ? +(cpuUsPerRequest.baseline / cpuUsPerRequest.gateway).toFixed(3) : undefined
  // The load generator shares the machine: at ≥ CLIENT_BOUND_PCT of a core it, not the server, sets the pace of the run.
  const clientBound = runs.filter((r) => r.clientCpuPct >= CLIENT_BOUND_PCT).map((r) => `round ${r.round} ${r.which} (${r.client} ${r.clientCpuPct} %, server ${r.serverCpuPct} %)`)
  if (clientBound.length) say(`[${name}] ⚠ client-bound: the load generator used ≥ ${CLIENT_BOUND_PCT} % of a core in ${clientBound.join(', ')}: those req/s are the load generator's ceiling on this machine, not the server's; the CPU ratio (baseline ÷ gateway CPU per request) is ${cpuRatio ?? 'not measured'}`)
  const pairedResult = aboveUs === undefined ? undefined : await paired(name, { baseline, gateway, aboveUs })
  return { runs, ratios, medianRatio, target, pass, profiled: options.cpuProf, cpuUsPerRequest, cpuRatio, clientBound, ...(pairedResult ? { paired: pairedResult } : {}) }
}

// ---------------------------------------------------------------- todo (issue 4)
async function prepareTodoDb() {
  const dest = join(work, 'todo.sqlite')
  const src = join(root, 'data/todo.sqlite')
  if (existsSync(src)) {
    await copySqlite(src, dest)
    say(`[setup] todo database: copy of data/todo.sqlite at ${dest}`)
  } else {
    say(`[setup] todo database: none at data/todo.sqlite; the gateway creates and seeds ${dest}`)
  }
  return dest
}

/**
 * The demo gateway as `npm start` starts it; with `production`, as `NODE_ENV=production npm start`
 * does, on the demo config with its generated files in the work directory (a production start renders
 * them for production: the checkout's stay as they are).
 */
async function startDemoGateway(todoDb, profileName, production = false) {
  const rolePort = await freePort()
  say(`[setup] starting the gateway: ${production ? 'NODE_ENV=production ' : ''}node dist/gateway/cli.js start (TODO_DATABASE_URL=sqlite:${todoDb}, ROLE_SERVICE_PORT=${rolePort}, LOG_LEVEL=warn)`)
  const gw = await startGateway({
    env: { TODO_DATABASE_URL: `sqlite:${todoDb}`, ROLE_SERVICE_PORT: String(rolePort), ...(production ? { NODE_ENV: 'production' } : {}) },
    ...(production ? { config: isolatedConfig(work, 'dist/config.js', 'demo-production') } : {}),
    nodeArgs: gatewayNodeArgs(profileName),
  })
  say(`[setup] gateway ${gw.url} (pid ${gw.pid})`)
  return gw
}

const todoByIdSource = readFileSync(join(root, 'operations/TodoById.graphql'), 'utf8')

/**
 * The `rest` and `graphql` scenarios (`which`) on one demo gateway; with `production`, the
 * `rest-production` and `graphql-production` ones (the gateway in production mode, where `/graphql`
 * takes the stored operation's exact text as a persisted operation).
 */
async function todoScenarios(which, production = false) {
  const db = await prepareTodoDb()
  const suffix = production ? '-production' : ''
  const gw = await startDemoGateway(db, which.join('+') + suffix, production)
  let base
  try {
    base = await startBaseline(['--todo-db', db])
    say(`[setup] baseline ${base.url} (pid ${base.pid})`)
    const baseline = { url: `${base.url}/todo?id=1`, pid: base.pid }
    const expected = await fetchJson(baseline.url)
    if (which.includes('rest')) {
      const gateway = { url: `${gw.url}/operations/TodoById?id=1`, pid: gw.pid }
      assertSame('rest', await fetchJson(gateway.url), expected)
      say(`[rest${suffix}] GET /operations/TodoById?id=1 vs baseline GET /todo?id=1: both answer ${JSON.stringify(expected)}`)
      results.scenarios[`rest${suffix}`] = { gatewayUrl: '/operations/TodoById?id=1', ...(await ab(`rest${suffix}`, { baseline, gateway, target: TARGETS.rest, gw, aboveUs: TARGETS.restAboveUs })) }
    }
    if (which.includes('graphql')) {
      const body = JSON.stringify({ query: todoByIdSource, variables: { id: 1 }, operationName: 'TodoById' })
      const gateway = { url: `${gw.url}/graphql`, method: 'POST', headers: { 'content-type': 'application/json' }, body, pid: gw.pid }
      const got = await fetchJson(gateway.url, { method: 'POST', headers: gateway.headers, body })
      assertSame('graphql', got.data, expected)
      say(`[graphql${suffix}] POST /graphql (TodoById, {id:1}) vs baseline GET /todo?id=1`)
      results.scenarios[`graphql${suffix}`] = { gatewayUrl: 'POST /graphql', ...(await ab(`graphql${suffix}`, { baseline, gateway, target: TARGETS.graphql, gw, aboveUs: TARGETS.graphqlAboveUs })) }
    }
  } finally {
    await base?.stop()
    await stopGateway(gw, which.join('+') + suffix)
  }
}

async function memoryScenario() {
  const db = await prepareTodoDb()
  const gw = await startDemoGateway(db, 'memory')
  try {
    const gateway = { url: `${gw.url}/operations/TodoById?id=1`, pid: gw.pid }
    await fetchJson(gateway.url)
    gw.measuredFrom = Date.now()
    const atStart = memoryOf(gw.pid)
    say(`\n[memory] gateway pid ${gw.pid}: RSS at start ${fmt(atStart.rssKb / 1024)} MB; ${options.memoryRuns} runs of ${options.memoryDuration} s of GET /operations/TodoById?id=1`)
    const runs = []
    for (let i = 1; i <= options.memoryRuns; i++) {
      const r = await load(`memory run ${i}/${options.memoryRuns}`, gateway, options.memoryDuration)
      await new Promise((ok) => setTimeout(ok, 1000))
      const m = memoryOf(gw.pid)
      runs.push({ run: i, ...summariseRun(r), rssKb: m.rssKb, hwmKb: m.hwmKb })
      say(`  run ${i}  ${fmt(r.reqPerSec).padStart(7)} req/s   server CPU ${r.serverCpuPct} %   RSS ${(m.rssKb / 1024).toFixed(1)} MB (peak ${(m.hwmKb / 1024).toFixed(1)} MB)`)
    }
    const first = runs[0].rssKb
    const last = runs[runs.length - 1].rssKb
    const growth = (last - first) / first
    const pass = growth < TARGETS.memoryGrowth
    say(`[memory] RSS after run 1 → run ${runs.length}: ${(first / 1024).toFixed(1)} → ${(last / 1024).toFixed(1)} MB, growth ${(growth * 100).toFixed(1)} % (target < ${TARGETS.memoryGrowth * 100} %) ${pass ? 'PASS' : 'MISS'}`)
    results.scenarios.memory = { rssAtStartKb: atStart.rssKb, runs, rssKb: runs.map((r) => r.rssKb), growthPct: +(growth * 100).toFixed(2), targetPct: TARGETS.memoryGrowth * 100, pass }
  } finally {
    await stopGateway(gw, 'memory')
  }
}

// ---------------------------------------------------------------- several instances (issue 13)
async function workersScenario() {
  const db = await prepareTodoDb()
  const one = await startDemoGateway(db, 'workers-1')
  const rolePort = await freePort()
  say(`[setup] starting the gateway with --workers 2 (same database, ROLE_SERVICE_PORT=${rolePort})`)
  const two = await startGateway({ env: { TODO_DATABASE_URL: `sqlite:${db}`, ROLE_SERVICE_PORT: String(rolePort) }, args: ['--workers', '2'] })
  try {
    // serverCpuPct of `--workers 2` adds the primary's children (the workers; the role service too, idle here).
    const baseline = { url: `${one.url}/operations/TodoById?id=1`, pid: one.pid }
    const gateway = { url: `${two.url}/operations/TodoById?id=1`, pid: two.pid, withChildren: true }
    assertSame('workers', await fetchJson(gateway.url), await fetchJson(baseline.url))
    say(`[workers] GET /operations/TodoById?id=1: start --workers 2 (${two.url}) vs start (${one.url}); "baseline" = 1 process`)
    results.scenarios.workers = { gatewayUrl: '/operations/TodoById?id=1', note: 'ratio = 2 workers ÷ 1 process; both share the 2 cores with autocannon (clientCpuPct)', ...(await ab('workers', { baseline, gateway, target: 0 })) }
  } finally {
    await two.stop()
    await one.stop()
  }
}

/**
 * The subscribers scenario, twice on the same machine: first with `SHARE_SUBSCRIPTIONS=false` (the
 * baseline: one stream and one execution per subscriber), then with shared executions (the default).
 */
async function subscribersScenario() {
  const baseline = await subscribersRound(false)
  const shared = await subscribersRound(true)
  say(`[subscribers] shared ÷ unshared in this run: p99 ${(shared.delayMs.p99 / baseline.delayMs.p99).toFixed(2)}, RSS per 1,000 ${(shared.rssPerThousandKb / baseline.rssPerThousandKb).toFixed(2)}`)
  results.scenarios.subscribers = { ...shared, unshared: baseline }
}

/** One round of the subscribers scenario; `shared`: instances with `graphql.shareSubscriptions` on. */
async function subscribersRound(shared) {
  const { default: WebSocket } = await import('ws')
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
  const prefix = `trb-bench:${process.pid}:${Date.now().toString(36)}:`
  const db = await prepareTodoDb()
  const env = { TODO_DATABASE_URL: `sqlite:${db}`, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix, DEMO_MESSAGE_INTERVAL_MS: '1000', MAX_WEBSOCKETS: String(options.subscribers), MAX_CONNECTIONS: String(options.subscribers + 100), CLUSTER_GENERATED_DIR: join(work, 'generated-cluster'), SHARE_SUBSCRIPTIONS: String(shared) }
  const tag = `[subscribers ${shared ? 'shared' : 'unshared'}]`
  say(`\n${tag} two instances of examples/cluster/config.ts on Redis ${redisUrl} (prefix ${prefix}), graphql.shareSubscriptions ${shared}`)
  // LOG_LEVEL=debug: each instance logs `subscription event written` (pino `time` = when its last
  // socket was written to) per shared event; nothing else logs per event.
  const written = [[], []]
  const onWritten = (which) => (line) => {
    if (!line.includes('subscription event written')) return
    try {
      const o = JSON.parse(line)
      written[which].push({ time: o.time, sockets: o.sockets, ms: o.ms })
    } catch {
      // not a log line
    }
  }
  const a = await startGateway({ config: 'examples/cluster/config.ts', env: { ...env, LOG_LEVEL: 'debug' }, onLine: onWritten(0) })
  const b = await startGateway({ config: 'examples/cluster/config.ts', env: { ...env, LOG_LEVEL: 'debug' }, onLine: onWritten(1) })
  const sockets = []
  try {
    const before = [memoryOf(a.pid).rssKb, memoryOf(b.pid).rssKb]
    const delays = []
    const received = new Map()
    // Per message id: production time, first and last receipt (ms since the epoch).
    const spread = new Map()
    let measuring = false
    const open = (base, i) =>
      new Promise((ok, fail) => {
        // The load generator shares the machine: no UTF-8 validation of frames nor compression offer (its own CPU).
        const ws = new WebSocket(base.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', { skipUTF8Validation: true, perMessageDeflate: false })
        sockets.push(ws)
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })))
        ws.on('error', fail)
        ws.on('message', (raw) => {
          const now = Date.now()
          const msg = JSON.parse(raw.toString())
          if (msg.type === 'connection_ack') {
            ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { messageCreated { id content } }' } }))
            ok()
          } else if (msg.type === 'next' && measuring) {
            const m = msg.payload.data.messageCreated
            const produced = Date.parse(m.content)
            delays.push(now - produced)
            received.set(m.id, (received.get(m.id) ?? 0) + 1)
            const s = spread.get(m.id)
            if (s) s.last = now
            else spread.set(m.id, { produced, first: now, last: now })
          }
        })
        void i
      })
    for (let i = 0; i < options.subscribers; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, options.subscribers - i) }, (_, j) => open((i + j) % 2 ? b.url : a.url, i + j)))
      progress(`subscribers: ${Math.min(i + 100, options.subscribers)}/${options.subscribers} connected`)
    }
    await new Promise((ok) => setTimeout(ok, 2000))
    const after = [memoryOf(a.pid).rssKb, memoryOf(b.pid).rssKb]
    for (const w of written) w.length = 0
    const cpuBefore = { client: process.cpuUsage(), a: cpuTimeOf(a.pid), b: cpuTimeOf(b.pid), at: Date.now() }
    measuring = true
    await new Promise((ok) => setTimeout(ok, (options.messages + 0.5) * 1000))
    measuring = false
    const wallMs = Date.now() - cpuBefore.at
    const clientCpu = process.cpuUsage(cpuBefore.client)
    const cpuPct = {
      client: +(((clientCpu.user + clientCpu.system) / 1000 / wallMs) * 100).toFixed(1),
      a: +(((cpuTimeOf(a.pid) - cpuBefore.a) / wallMs) * 100).toFixed(1),
      b: +(((cpuTimeOf(b.pid) - cpuBefore.b) / wallMs) * 100).toFixed(1),
    }
    // Only messages every subscriber could have received completely (the first and last may be cut).
    const complete = [...received.entries()].filter(([, n]) => n === options.subscribers)
    const sorted = [...delays].sort((x, y) => x - y)
    const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
    const perThousandKb = ((after[0] - before[0]) + (after[1] - before[1])) / (options.subscribers / 1000)
    const p99 = pct(99)
    const pass = p99 < TARGETS.subscribersP99Ms && complete.length >= options.messages - 2
    say(`${tag} ${options.subscribers} subscribers over 2 instances, ${received.size} messages seen, ${complete.length} received by every subscriber; delivery delay p50 ${pct(50)} ms p99 ${p99} ms max ${sorted.at(-1)} ms (target p99 < ${TARGETS.subscribersP99Ms} ms) ${pass ? 'PASS' : 'MISS'}`)
    // Where the time goes, per complete message: production → each instance's last socket write
    // (pino time of `subscription event written`) → first and last receipt in this process.
    const stages = { lastWriteMs: [], firstReceiptMs: [], lastReceiptMs: [] }
    for (const [id] of complete) {
      const s = spread.get(id)
      stages.firstReceiptMs.push(s.first - s.produced)
      stages.lastReceiptMs.push(s.last - s.produced)
      for (const w of written) {
        const hit = w.find((x) => x.time >= s.produced && x.time < s.produced + 1000)
        if (hit) stages.lastWriteMs.push(hit.time - s.produced)
      }
    }
    const worst = (xs) => (xs.length ? Math.max(...xs) : null)
    const median = (xs) => (xs.length ? [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] : null)
    const writeMs = written.flat().map((x) => x.ms)
    say(`${tag} per message (median / worst): last socket written on an instance ${median(stages.lastWriteMs)} / ${worst(stages.lastWriteMs)} ms after production (the writing loop itself ${median(writeMs)} / ${worst(writeMs)} ms), first receipt ${median(stages.firstReceiptMs)} / ${worst(stages.firstReceiptMs)} ms, last receipt ${median(stages.lastReceiptMs)} / ${worst(stages.lastReceiptMs)} ms`)
    say(`${tag} CPU while measuring: load generator (this process, ${options.subscribers} sockets) ${cpuPct.client} %, instance A ${cpuPct.a} %, instance B ${cpuPct.b} % (of one core)`)
    say(`${tag} RSS before/after subscribing: A ${(before[0] / 1024).toFixed(1)} → ${(after[0] / 1024).toFixed(1)} MB, B ${(before[1] / 1024).toFixed(1)} → ${(after[1] / 1024).toFixed(1)} MB: ${(perThousandKb / 1024).toFixed(1)} MB per 1,000 subscribers`)
    return {
      subscribers: options.subscribers, instances: 2, messagesSeen: received.size, messagesComplete: complete.length, deliveries: delays.length,
      delayMs: { p50: pct(50), p90: pct(90), p99, max: sorted.at(-1) },
      stagesMs: { lastWrite: { median: median(stages.lastWriteMs), max: worst(stages.lastWriteMs) }, writeLoop: { median: median(writeMs), max: worst(writeMs) }, firstReceipt: { median: median(stages.firstReceiptMs), max: worst(stages.firstReceiptMs) }, lastReceipt: { median: median(stages.lastReceiptMs), max: worst(stages.lastReceiptMs) } },
      cpuPct, rssKb: { before, after }, rssPerThousandKb: Math.round(perThousandKb), target: TARGETS.subscribersP99Ms, pass,
    }
  } finally {
    for (const ws of sockets) ws.terminate()
    await a.stop()
    await b.stop()
  }
}

// ---------------------------------------------------------------- events (issue 26 item 6)
/** Events in flight (published, not yet received by every subscriber) in the throughput phase. */
const EVENTS_WINDOW = 20
/** Events per second of the latency phase. */
const EVENTS_LATENCY_RATE = 100

/**
 * The events scenario: one gateway (bench/events/config.ts) with `--event-subscribers` graphql-ws
 * subscribers of `bench_tick` (one shared execution per event), fed by this process' NATS client.
 * 1. Throughput: for `--duration` seconds, publish whenever fewer than EVENTS_WINDOW events are in
 *    flight; events/s counts events received by every subscriber; CPU µs per event is the gateway
 *    process' user + system time (/proc/<pid>/stat) over those events.
 * 2. Latency: for `--duration` seconds, EVENTS_LATENCY_RATE events a second (or half the throughput of
 *    phase 1 when that is lower); each delivery's delay is
 *    receipt − `sentAt` (both read from this process' clock, performance.timeOrigin + now()).
 */
async function eventsScenario() {
  const { default: WebSocket } = await import('ws')
  const { connect } = await import('nats')
  const natsUrl = process.env.NATS_URL || 'nats://127.0.0.1:4222'
  const subject = `bench_events_${process.pid}_${Date.now().toString(36)}`
  const n = options.eventSubscribers
  const nc = await connect({ servers: natsUrl.replace(/^nats:\/\//, '') })
  const gw = await startGateway({ config: 'bench/events/config.ts', env: { NATS_URL: natsUrl, BENCH_EVENTS_SUBJECT: subject, MAX_WEBSOCKETS: String(n + 10), TRIBUTARY_PUBSUB: 'memory' }, nodeArgs: gatewayNodeArgs('events') })
  say(`\n[events] one gateway (bench/events/config.ts, pid ${gw.pid}) on NATS ${natsUrl}, subject ${subject}, ${n} graphql-ws subscribers of bench_tick`)
  const sockets = []
  const now = () => performance.timeOrigin + performance.now()
  // seq → receipts so far; waiters are called when an event reaches every subscriber.
  const receipts = new Map()
  let complete = 0
  let waiter
  let delays = []
  const encoder = new TextEncoder()
  const publish = (seq) => nc.publish(subject, encoder.encode(`{"seq":${seq},"sentAt":${now()}}`))
  const TICK = /"seq":(-?\d+),"sentAt":([\d.e+]+)/
  try {
    const open = () =>
      new Promise((ok, fail) => {
        const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', { skipUTF8Validation: true, perMessageDeflate: false })
        sockets.push(ws)
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })))
        ws.on('error', fail)
        ws.on('message', (raw) => {
          const text = raw.toString()
          // The load generator shares the machine: a regular expression instead of JSON.parse per frame.
          const m = TICK.exec(text)
          if (!m) {
            if (text.includes('connection_ack')) {
              ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { bench_tick { seq sentAt } }' } }))
              ok()
            }
            return
          }
          delays.push(now() - Number(m[2]))
          const seq = Number(m[1])
          const got = (receipts.get(seq) ?? 0) + 1
          if (got === n) {
            receipts.delete(seq)
            complete++
            const w = waiter
            waiter = undefined
            w?.()
          } else receipts.set(seq, got)
        })
      })
    for (let i = 0; i < n; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => open()))
      progress(`events: ${Math.min(i + 100, n)}/${n} subscribers connected`)
    }
    const nextComplete = (ms) => new Promise((ok) => {
      const timer = setTimeout(ok, ms)
      waiter = () => (clearTimeout(timer), ok())
    })
    // Warm-up: until one event reaches every subscriber (their subscriptions are all running), then a few seconds.
    // Warm-up events have negative numbers; `warm` counts them.
    let warm = 0
    const warmEnd = Date.now() + 30_000
    while (complete === 0 && Date.now() < warmEnd) {
      publish(-1 - warm++)
      await nextComplete(100)
    }
    if (complete === 0) throw new Error('events: no event reached every subscriber within 30 s')
    const warmUntil = Date.now() + options.warmup * 1000
    while (Date.now() < warmUntil) {
      if (warm - complete < EVENTS_WINDOW) publish(-1 - warm++)
      else await nextComplete(1000)
    }
    const settled = Date.now() + 10_000
    while (complete < warm && Date.now() < settled) await nextComplete(100)
    let seq = 0

    // 1. Throughput with EVENTS_WINDOW events in flight.
    receipts.clear()
    complete = 0
    delays = []
    const cpu0 = cpuTimeOf(gw.pid)
    const client0 = process.cpuUsage()
    const t0 = now()
    const end = Date.now() + options.duration * 1000
    while (Date.now() < end) {
      if (seq - complete < EVENTS_WINDOW) publish(seq++)
      else await nextComplete(1000)
      if (seq % 200 === 0) progress(`events: ${fmt(complete)} events delivered to every subscriber`)
    }
    const drainEnd = Date.now() + 10_000
    while (complete < seq && Date.now() < drainEnd) await nextComplete(100)
    const elapsedS = (now() - t0) / 1000
    const cpuMs = cpuTimeOf(gw.pid) - cpu0
    const clientCpu = process.cpuUsage(client0)
    const sortedT = [...delays].sort((x, y) => x - y)
    const pctT = (p) => +sortedT[Math.min(sortedT.length - 1, Math.floor((p / 100) * sortedT.length))].toFixed(1)
    const throughput = {
      published: seq, completed: complete, seconds: +elapsedS.toFixed(2), window: EVENTS_WINDOW,
      eventsPerSec: Math.round(complete / elapsedS), deliveriesPerSec: Math.round(delays.length / elapsedS),
      cpuMs, cpuPct: Math.round((100 * cpuMs) / (elapsedS * 1000)), cpuUsPerEvent: Math.round((cpuMs * 1000) / complete),
      cpuUsPerDelivery: +((cpuMs * 1000) / delays.length).toFixed(2),
      clientCpuPct: Math.round((clientCpu.user + clientCpu.system) / 10 / (elapsedS * 1000)),
      delayMs: { p50: pctT(50), p99: pctT(99), max: +sortedT.at(-1).toFixed(1) },
    }
    say(`[events] throughput (≤ ${EVENTS_WINDOW} in flight, ${throughput.seconds} s): ${fmt(throughput.eventsPerSec)} events/s to all ${n} subscribers (${fmt(throughput.deliveriesPerSec)} deliveries/s; ${complete}/${seq} complete), gateway CPU ${throughput.cpuPct} % of one core = ${throughput.cpuUsPerEvent} µs per event (${throughput.cpuUsPerDelivery} µs per delivery); delivery delay under this load p50 ${throughput.delayMs.p50} ms p99 ${throughput.delayMs.p99} ms; load generator CPU ${throughput.clientCpuPct} %`)

    // 2. Latency at a fixed rate: EVENTS_LATENCY_RATE, or half the measured throughput when that is lower
    // (a rate above it measures a growing queue, not delivery).
    const rate = Math.max(1, Math.min(EVENTS_LATENCY_RATE, Math.floor(throughput.eventsPerSec / 2)))
    receipts.clear()
    complete = 0
    delays = []
    const first = seq
    const cpu1 = cpuTimeOf(gw.pid)
    const t1 = now()
    const total = Math.round(rate * options.duration)
    for (let i = 0; i < total; i++) {
      const due = t1 + (i * 1000) / rate
      const wait = due - now()
      if (wait > 0) await new Promise((ok) => setTimeout(ok, wait))
      publish(seq++)
    }
    const latencyEnd = Date.now() + 10_000
    while (complete < seq - first && Date.now() < latencyEnd) await nextComplete(100)
    const cpuMs1 = cpuTimeOf(gw.pid) - cpu1
    const sorted = [...delays].sort((x, y) => x - y)
    const pct = (p) => +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(1)
    const latency = {
      rate, published: total, completed: complete, deliveries: delays.length,
      delayMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: +sorted.at(-1).toFixed(1) },
      cpuPct: Math.round((100 * cpuMs1) / (now() - t1)), cpuUsPerEvent: Math.round((cpuMs1 * 1000) / Math.max(1, complete)),
    }
    say(`[events] latency at ${rate} events/s (${total} events, ${complete} to every subscriber): delivery delay p50 ${latency.delayMs.p50} ms p90 ${latency.delayMs.p90} ms p99 ${latency.delayMs.p99} ms max ${latency.delayMs.max} ms; gateway CPU ${latency.cpuPct} % = ${latency.cpuUsPerEvent} µs per event`)
    results.scenarios.events = { subscribers: n, subject, throughput, latency, loadavg1: +loadavg()[0].toFixed(2) }
  } finally {
    for (const ws of sockets) ws.terminate()
    await nc.close()
    await stopGateway(gw, 'events')
  }
}

// ---------------------------------------------------------------- chinook (issue 3)
const CHINOOK_QUERY = `{ chinook_findManyArtist(take: 20, orderBy: [{ artistId: asc }]) { artistId name albums { albumId title tracks { trackId name milliseconds unitPrice } } } }`

async function chinookScenario() {
  const db = join(work, 'chinook.sqlite')
  await copySqlite(join(root, 'examples/chinook/chinook.sqlite'), db)
  const config = 'examples/chinook/config.ts'
  const env = { CHINOOK_DATABASE_URL: `sqlite:${db}` }
  const body = JSON.stringify({ query: CHINOOK_QUERY })
  const headers = { 'content-type': 'application/json' }

  // 1. Capture the statement(s) the gateway sends for the query (LOG_LEVEL=debug logs each as msg "sql").
  say(`\n[chinook] capturing the SQL: gateway --config ${config} with LOG_LEVEL=debug`)
  const logged = []
  let capturing = false
  const dbg = await startGateway({
    config,
    env: { ...env, LOG_LEVEL: 'debug' },
    onLine: (line) => {
      if (!capturing || !line.startsWith('{')) return
      try {
        const o = JSON.parse(line)
        if (o.msg === 'sql') logged.push({ sql: o.sql, bindings: o.bindings })
      } catch {
        // not a log line
      }
    },
  })
  let gatewayAnswer
  try {
    capturing = true
    gatewayAnswer = await fetchJson(`${dbg.url}/graphql`, { method: 'POST', headers, body })
    await new Promise((ok) => setTimeout(ok, 500))
    capturing = false
  } finally {
    await dbg.stop()
  }
  if (logged.length !== 1) throw new Error(`chinook: expected one SQL statement for the query, the gateway sent ${logged.length}: ${JSON.stringify(logged).slice(0, 1000)}`)
  const captured = { ...logged[0], rootField: 'chinook_findManyArtist' }
  writeFileSync(join(work, 'chinook-sql.json'), JSON.stringify(captured))
  say(`[chinook] one statement (${captured.sql.length} chars, bindings ${JSON.stringify(captured.bindings)})`)

  // 2. A/B.
  const gw = await startGateway({ config, env, nodeArgs: gatewayNodeArgs('chinook') })
  say(`[setup] gateway ${gw.url} (pid ${gw.pid}, LOG_LEVEL=warn)`)
  let base
  try {
    base = await startBaseline(['--chinook-db', db, '--chinook-sql', join(work, 'chinook-sql.json')])
    say(`[setup] baseline ${base.url} (pid ${base.pid})`)
    const baseline = { url: `${base.url}/chinook`, pid: base.pid }
    const gateway = { url: `${gw.url}/graphql`, method: 'POST', headers, body, pid: gw.pid }
    const expected = await fetchJson(baseline.url)
    assertSame('chinook', gatewayAnswer, expected)
    assertSame('chinook', await fetchJson(gateway.url, { method: 'POST', headers, body }), expected)
    const bytes = Buffer.byteLength(JSON.stringify(expected))
    const counts = { artists: expected.data.chinook_findManyArtist.length, albums: 0, tracks: 0 }
    for (const a of expected.data.chinook_findManyArtist) {
      counts.albums += a.albums.length
      for (const al of a.albums) counts.tracks += al.tracks.length
    }
    say(`[chinook] same answer from both: ${counts.artists} artists, ${counts.albums} albums, ${counts.tracks} tracks, ${fmt(bytes)} bytes`)
    results.scenarios.chinook = { query: CHINOOK_QUERY, sql: captured.sql, bindings: captured.bindings, statements: logged.length, responseBytes: bytes, counts, ...(await ab('chinook', { baseline, gateway, target: TARGETS.chinook, gw })) }
  } finally {
    await base?.stop()
    await stopGateway(gw, 'chinook')
  }
}
// ---------------------------------------------------------------- health under load (issue 7)
/**
 * The heaviest Chinook read: every artist, album, track, invoice line, invoice and customer (≈ 2,240
 * invoice lines). `invoiceLines(take: 5)` (no Chinook track has more than 2) keeps the operation's
 * cost under `graphql.maxCost` (20,000: 18,110 with it, 33,110 with the default list size of 10)
 * without changing the answer.
 */
const HEAVY_QUERY = `{ chinook_findManyArtist { artistId name albums { albumId title tracks { trackId name composer milliseconds bytes unitPrice genre { name } mediaType { name } invoiceLines(take: 5) { invoiceLineId unitPrice quantity invoice { invoiceId invoiceDate total customer { customerId firstName lastName email country } } } } } } }`

/**
 * `/health` latency while 4 clients run {@link HEAVY_QUERY} without pause on the Chinook example:
 * on SQLite (a copy of examples/chinook/chinook.sqlite) and on PostgreSQL (`BENCH_PG_CHINOOK_URL`,
 * default the `chinook` schema that the tests load into `TEST_POSTGRES_URL`; skipped when absent).
 * autocannon runs both loads at once, each in its own process: `-c 4` on the query, `-c 1` on
 * `/health`; the figure is /health's p99 (target < 100 ms).
 */
async function healthScenario() {
  const db = join(work, 'chinook-health.sqlite')
  await copySqlite(join(root, 'examples/chinook/chinook.sqlite'), db)
  const pgBase = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const engines = [
    ['sqlite', `sqlite:${db}`],
    ['postgres', process.env.BENCH_PG_CHINOOK_URL ?? `${pgBase}${pgBase.includes('?') ? '&' : '?'}schema=chinook`],
  ]
  const body = JSON.stringify({ query: HEAVY_QUERY })
  const headers = { 'content-type': 'application/json' }
  results.scenarios.health = { query: HEAVY_QUERY, target: TARGETS.healthP99Ms, engines: {} }
  for (const [engine, url] of engines) {
    let gw
    try {
      gw = await startGateway({ config: 'examples/chinook/config.ts', env: { CHINOOK_DATABASE_URL: url }, nodeArgs: gatewayNodeArgs(`health-${engine}`) })
    } catch (err) {
      say(`[health] ${engine}: gateway did not start (${String(err.message).split('\n')[0]}): skipped`)
      results.scenarios.health.engines[engine] = { skipped: String(err.message).slice(0, 300) }
      continue
    }
    try {
      const answer = await fetchJson(`${gw.url}/graphql`, { method: 'POST', headers, body })
      const bytes = Buffer.byteLength(JSON.stringify(answer))
      say(`[health] ${engine}: heavy query answers ${fmt(bytes)} bytes; -c 4 on it and -c 1 on /health for ${options.duration} s`)
      const heavyRun = runLoad({ label: `health/${engine}/heavy`, url: `${gw.url}/graphql`, method: 'POST', headers, body, duration: options.duration, connections: 4, pipelining: 1, progress })
      const healthRun = runLoad({ label: `health/${engine}/health`, url: `${gw.url}/health`, duration: options.duration, connections: 1, pipelining: 1, progress })
      const [heavy, health] = await Promise.all([heavyRun, healthRun])
      const entry = {
        responseBytes: bytes,
        heavy: summariseRun(heavy),
        health: summariseRun(health),
        healthP99Ms: health.latency.p99,
        pass: health.latency.p99 < TARGETS.healthP99Ms && !health.non2xx && !health.errors && !health.timeouts,
      }
      results.scenarios.health.engines[engine] = entry
      say(`[health] ${engine}: heavy ${Math.round(heavy.reqPerSec)} req/s (p99 ${heavy.latency.p99} ms, ${heavy.non2xx} non-2xx); /health ${Math.round(health.reqPerSec)} req/s, p50 ${health.latency.p50} ms, p99 ${health.latency.p99} ms  ${entry.pass ? 'PASS' : 'MISS'}`)
    } finally {
      await stopGateway(gw, `health-${engine}`)
    }
  }
}

// ---------------------------------------------------------------- auth (issue 12)
async function authScenario() {
  const { SignJWT, exportJWK, generateKeyPair } = await import('jose')
  const { createServer } = await import('node:http')
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }
  let jwksFetches = 0
  const jwks = createServer((_req, res) => {
    jwksFetches++
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
  })
  await new Promise((resolve) => jwks.listen(0, '127.0.0.1', resolve))
  const jwksUrl = `http://127.0.0.1:${jwks.address().port}/.well-known/jwks.json`
  const token = await new SignJWT({ sub: 'bench-user', roles: ['user'] })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench' }).setIssuer('tributary-bench').setAudience('tributary').setIssuedAt().setExpirationTime('2h')
    .sign(privateKey)
  const db = await prepareTodoDb()
  const config = 'bench/auth/config.ts'
  say(`\n[auth] gateway --config ${config} (JWKS ${jwksUrl}, RS256)`)
  const gw = await startGateway({ config, env: { TODO_DATABASE_URL: `sqlite:${db}`, BENCH_AUTH_JWKS_URL: jwksUrl }, nodeArgs: gatewayNodeArgs('auth') })
  say(`[setup] gateway ${gw.url} (pid ${gw.pid})`)
  try {
    const baseline = { url: `${gw.url}/operations/TodoById?id=1`, pid: gw.pid }
    const gateway = { url: `${gw.url}/operations/TodoByIdAuthenticated?id=1`, headers: { authorization: `Bearer ${token}` }, pid: gw.pid }
    const expected = await fetchJson(baseline.url)
    assertSame('auth', await fetchJson(gateway.url, { headers: gateway.headers }), expected)
    const refused = await fetch(gateway.url)
    if (refused.status !== 401) throw new Error(`auth: without a token the operation answered ${refused.status}, not 401`)
    say(`[auth] GET /operations/TodoByIdAuthenticated?id=1 with a Bearer token vs GET /operations/TodoById?id=1 without: both answer ${JSON.stringify(expected)}`)
    results.scenarios.auth = { gatewayUrl: '/operations/TodoByIdAuthenticated?id=1 (RS256 Bearer)', baselineUrl: '/operations/TodoById?id=1 (same gateway, no token)', ...(await ab('auth', { baseline, gateway, target: TARGETS.auth, gw })), jwksFetches }
    say(`[auth] the JWKS was fetched ${jwksFetches} time(s)`)
  } finally {
    await stopGateway(gw, 'auth')
    await new Promise((resolve) => jwks.close(resolve))
  }
}

// ---------------------------------------------------------------- roles (issue 11)
async function rolesScenario() {
  const config = 'bench/roles/config.ts'
  const rolePort = await freePort()
  say(`\n[roles] gateway --config ${config} (the system REST source, ROLE_SERVICE_PORT=${rolePort})`)
  const gw = await startGateway({ config, env: { ROLE_SERVICE_PORT: String(rolePort) }, nodeArgs: gatewayNodeArgs('roles') })
  say(`[setup] gateway ${gw.url} (pid ${gw.pid})`)
  let base
  try {
    base = await startBaseline(['--roles-url', `http://127.0.0.1:${rolePort}`])
    say(`[setup] baseline ${base.url} (pid ${base.pid}), the same role service`)
    const baseline = { url: `${base.url}/roles`, pid: base.pid }
    const gateway = { url: `${gw.url}/operations/Roles`, pid: gw.pid }
    const expected = await fetchJson(baseline.url)
    assertSame('roles', await fetchJson(gateway.url), expected)
    say(`[roles] GET /operations/Roles vs baseline GET /roles: both answer ${JSON.stringify(expected)}`)
    results.scenarios.roles = { gatewayUrl: '/operations/Roles', ...(await ab('roles', { baseline, gateway, target: TARGETS.roles, gw })) }
  } finally {
    await base?.stop()
    await stopGateway(gw, 'roles')
  }
}

// ---------------------------------------------------------------- linked (issue 9)
const LINKED_URL = '/operations/CustomersWithCountry?take=50'
/** The baseline's SQL read for `linked`: what the operation needs from the database, written by hand. */
const LINKED_BASELINE_SQL = `SELECT json_object('customerId', t0."CustomerId", 'firstName', t0."FirstName", 'lastName', t0."LastName", 'country', t0."Country") AS j FROM "Customer" AS t0 ORDER BY t0."CustomerId" ASC LIMIT ?`

/** Starts one of examples/federation's side services from dist/ on a free port. */
async function startService(name, envPort) {
  const port = await freePort()
  const handle = await startNode({
    name,
    args: [join(root, `dist/examples/federation/services/${name}.js`)],
    env: { ...process.env, [envPort]: String(port) },
    ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/,
    timeoutMs: 30_000,
  })
  return { ...handle, url: handle.match[1] }
}

/**
 * Hive Gateway on the countries API: `mesh-compose` (bench/linked/mesh.config.ts, @omnigraph/openapi)
 * writes a supergraph, `hive-gateway supergraph` serves it. Resolves with `{ url, pid, stop }`, or
 * throws with the reason when a piece is missing or fails.
 */
async function startHiveGateway(countriesUrl) {
  const bin = (name) => join(root, 'node_modules/.bin', name)
  for (const b of ['mesh-compose', 'hive-gateway']) if (!existsSync(bin(b))) throw new Error(`${b} is not installed (npm install -D @graphql-hive/gateway @graphql-mesh/compose-cli @omnigraph/openapi)`)
  const supergraph = join(work, 'supergraph.graphql')
  const composed = await new Promise((ok) => {
    const p = spawn(bin('mesh-compose'), ['-c', 'bench/linked/mesh.config.ts', '-o', supergraph], { cwd: root, env: { ...process.env, COUNTRIES_API_URL: countriesUrl }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (c) => (out += c))
    p.stderr.on('data', (c) => (out += c))
    p.once('exit', (code) => ok({ code, out }))
  })
  if (composed.code !== 0 || !existsSync(supergraph)) throw new Error(`mesh-compose failed (${composed.code}): ${composed.out.slice(-800)}`)
  const port = await freePort()
  const handle = await startNode({
    name: 'hive-gateway',
    args: [join(root, 'node_modules/@graphql-hive/gateway/dist/bin.js'), 'supergraph', supergraph, '--port', String(port), '--host', '127.0.0.1'],
    env: { ...process.env, NODE_ENV: 'production', DEBUG: '' },
    ready: /Listening on/,
    timeoutMs: 60_000,
  })
  return { ...handle, url: `http://127.0.0.1:${port}` }
}

async function linkedScenario() {
  const db = join(work, 'chinook-linked.sqlite')
  await copySqlite(join(root, 'examples/chinook/chinook.sqlite'), db)
  const config = 'examples/federation/config.ts'
  const countries = await startService('countries', 'COUNTRIES_PORT')
  const reviews = await startService('reviews', 'REVIEWS_PORT')
  const env = { CHINOOK_DATABASE_URL: `sqlite:${db}`, COUNTRIES_API_URL: countries.url, REVIEWS_API_URL: reviews.url }
  try {
    // 1. What the gateway sends for the operation (LOG_LEVEL=debug: msg "sql" and msg "upstream").
    say(`\n[linked] capturing the upstream calls: gateway --config ${config} with LOG_LEVEL=debug`)
    const logged = []
    let capturing = false
    const dbg = await startGateway({
      config,
      env: { ...env, LOG_LEVEL: 'debug' },
      onLine: (line) => {
        if (!capturing || !line.startsWith('{')) return
        try {
          const o = JSON.parse(line)
          if (o.msg === 'sql' || o.msg === 'upstream') logged.push(o)
        } catch {
          // not a log line
        }
      },
    })
    let gatewayAnswer
    try {
      capturing = true
      gatewayAnswer = await fetchJson(`${dbg.url}${LINKED_URL}`)
      await new Promise((ok) => setTimeout(ok, 500))
      capturing = false
    } finally {
      await dbg.stop()
    }
    const sql = logged.filter((l) => l.msg === 'sql')
    const upstream = logged.filter((l) => l.msg === 'upstream')
    if (sql.length !== 1 || upstream.length !== 1) throw new Error(`linked: expected one SQL statement and one REST call, the gateway made ${JSON.stringify(logged).slice(0, 1000)}`)
    // The baseline runs the read a developer writes by hand (the four columns as JSON, no checks),
    // not the gateway's statement: that one is the direct plan's, with the link key as a marker and
    // GraphQL's exactness checks (README "Links", "Inside a database's one statement").
    writeFileSync(join(work, 'linked-sql.json'), JSON.stringify({ sql: LINKED_BASELINE_SQL, bindings: [50] }))
    say(`[linked] one statement and one upstream call (${upstream[0].method} ${upstream[0].url}) for ${gatewayAnswer.chinook_findManyCustomer.length} customers`)

    // 2. A/B against the hand-written route.
    const gw = await startGateway({ config, env, nodeArgs: gatewayNodeArgs('linked') })
    say(`[setup] gateway ${gw.url} (pid ${gw.pid}, LOG_LEVEL=warn)`)
    let base
    try {
      base = await startBaseline(['--linked-db', db, '--linked-sql', join(work, 'linked-sql.json'), '--countries-url', countries.url])
      say(`[setup] baseline ${base.url} (pid ${base.pid}), the same countries API`)
      const baseline = { url: `${base.url}/linked`, pid: base.pid }
      const gateway = { url: `${gw.url}${LINKED_URL}`, pid: gw.pid }
      const expected = await fetchJson(baseline.url)
      assertSame('linked', gatewayAnswer, expected)
      assertSame('linked', await fetchJson(gateway.url), expected)
      results.scenarios.linked = { gatewayUrl: LINKED_URL, sql: sql[0].sql, upstream: { method: upstream[0].method, url: upstream[0].url }, ...(await ab('linked', { baseline, gateway, target: TARGETS.linked, gw })) }

      // 3. Peer: Hive Gateway and Tributary on the same countries REST API and the same query.
      let hive
      try {
        if (!options.peer) throw new Error('--no-peer')
        hive = await startHiveGateway(countries.url)
      } catch (err) {
        say(`[linked-peer] Hive Gateway did not start: ${String(err.message).split('\n').slice(0, 3).join(' ')}`)
        results.scenarios['linked-peer'] = { skipped: String(err.message).slice(0, 1000) }
      }
      if (hive) {
        try {
          const wanted = (await fetchJson(`${countries.url}/countries`)).map((c) => c.name).join(',')
          const headers = { 'content-type': 'application/json' }
          // Every country of the API (24, the distinct countries of the Chinook customers).
          const peerQuery = (field) => JSON.stringify({ query: `{ ${field}(names: ${JSON.stringify(wanted)}) { name capital currency } }` })
          const tributary = { url: `${gw.url}/graphql`, method: 'POST', headers, body: peerQuery('geo_listCountries'), pid: gw.pid }
          const peer = { url: `${hive.url}/graphql`, method: 'POST', headers, body: peerQuery('listCountries'), pid: hive.pid }
          const a = await fetchJson(tributary.url, tributary)
          const b = await fetchJson(peer.url, peer)
          assertSame('linked-peer', a.data.geo_listCountries, b.data.listCountries)
          say(`[linked-peer] Tributary vs Hive Gateway: POST /graphql { listCountries(names: <24 names>) { name capital currency } } on the same countries API`)
          // `ab` reports gateway ÷ baseline: here Tributary ÷ Hive Gateway.
          results.scenarios['linked-peer'] = { query: JSON.parse(peer.body).query, ...(await ab('linked-peer', { baseline: peer, gateway: tributary, target: 0, gw })) }
        } finally {
          await hive.stop()
        }
      }
    } finally {
      await base?.stop()
      await stopGateway(gw, 'linked')
    }
  } finally {
    await countries.stop()
    await reviews.stop()
  }
}

// ---------------------------------------------------------------- metrics (issue 13)
/**
 * The cost of the Prometheus metrics (README "Observability"): the demo gateway as `npm start` runs
 * it (metrics on) against the same deployment with `metrics: { enabled: false }` (a config module in
 * the work directory that re-exports dist/config.js), each on its own copy of the todo database; the
 * "baseline" of the A/B is the gateway without metrics.
 */
async function metricsScenario() {
  const offConfig = join(work, 'metrics-off.config.mjs')
  writeFileSync(offConfig, `import demo from ${JSON.stringify(join(root, 'dist/config.js'))}\nexport default { ...demo, metrics: { enabled: false } }\n`)
  const onDb = await prepareTodoDb()
  // BENCH_METRICS_CONTROL=1: an A/A control, both gateways without metrics (shows the noise of the pair).
  const control = process.env.BENCH_METRICS_CONTROL === '1'
  const on = control
    ? await startGateway({ config: offConfig, env: { TODO_DATABASE_URL: `sqlite:${onDb}`, ROLE_SERVICE_PORT: String(await freePort()) }, nodeArgs: gatewayNodeArgs('metrics-control') })
    : await startDemoGateway(onDb, 'metrics-on')
  let off
  try {
    const offDb = join(work, 'todo-metrics-off.sqlite')
    await copySqlite(onDb, offDb)
    const rolePort = await freePort()
    off = await startGateway({ config: offConfig, env: { TODO_DATABASE_URL: `sqlite:${offDb}`, ROLE_SERVICE_PORT: String(rolePort) }, nodeArgs: gatewayNodeArgs('metrics-off') })
    say(`[setup] gateway without metrics ${off.url} (pid ${off.pid})`)
    const gateway = { url: `${on.url}/operations/TodoById?id=1`, pid: on.pid }
    const baseline = { url: `${off.url}/operations/TodoById?id=1`, pid: off.pid }
    assertSame('metrics', await fetchJson(gateway.url), await fetchJson(baseline.url))
    if ((await fetch(`${off.url}/metrics`)).status !== 404) throw new Error('metrics: the gateway configured without metrics serves /metrics')
    const scrape = await fetch(`${on.url}/metrics`)
    if (scrape.status !== (control ? 404 : 200)) throw new Error(`metrics: GET /metrics answered ${scrape.status}`)
    say(`[metrics] GET /operations/TodoById?id=1, metrics on (gateway) vs off ("baseline")`)
    results.scenarios.metrics = { control, gatewayUrl: '/operations/TodoById?id=1', ...(await ab('metrics', { baseline, gateway, target: TARGETS.metrics, gw: on })) }
    // CPU time per request is steadier than req/s when other processes take the cores: report it too.
    const m = results.scenarios.metrics
    const cpuPerRequest = (which, round) => {
      const r = m.runs.find((x) => x.which === which && x.round === round)
      return (r.serverCpuMs * 1000) / r.total
    }
    m.cpuUsPerRequest = m.runs.map((r) => ({ round: r.round, which: r.which, us: +((r.serverCpuMs * 1000) / r.total).toFixed(1) }))
    m.cpuRatios = m.ratios.map((_, i) => +(cpuPerRequest('baseline', i + 1) / cpuPerRequest('gateway', i + 1)).toFixed(3))
    m.medianCpuRatio = +median(m.cpuRatios).toFixed(3)
    say(`[metrics] server CPU per request, off ÷ on, per round: ${m.cpuRatios.join(', ')}; median ${m.medianCpuRatio} (1 = no cost)`)
    const text = await (await fetch(`${on.url}/metrics`)).text()
    results.scenarios.metrics.requestsCounted = Number(/^tributary_http_requests_total\{route="\/operations\/\*",method="GET",status="200"\} (\d+)/m.exec(text)?.[1] ?? NaN)
    say(`[metrics] the gateway counted ${fmt(results.scenarios.metrics.requestsCounted)} GET /operations/* 200 responses`)
  } finally {
    await off?.stop()
    await stopGateway(on, 'metrics-on')
  }
}

// ---------------------------------------------------------------- calibration
/**
 * What this machine does to a ratio: the hand-written baseline A/B against itself with `--spin-us N`
 * (N µs of busy work per request, BENCH_CALIBRATION_SPIN_US, default 10). On an idle machine where
 * throughput is CPU per request alone, the ratio is plain ÷ (plain + N) in CPU µs; here, each µs a
 * server spends also costs the load generator's wake-ups, and the ratio falls further. Reported with
 * both servers' CPU µs per request and the amplification (extra CPU per request ÷ N).
 */
async function calibrationScenario() {
  const spinUs = options.calibrationSpinUs
  const db = await prepareTodoDb()
  let plain
  let spun
  try {
    plain = await startBaseline(['--todo-db', db])
    spun = await startBaseline(['--todo-db', db, '--spin-us', String(spinUs)])
    say(`\n[calibration] baseline GET /todo?id=1 (pid ${plain.pid}) vs the same with --spin-us ${spinUs} (pid ${spun.pid}); no gateway involved`)
    const r = await ab('calibration', { baseline: { url: `${plain.url}/todo?id=1`, pid: plain.pid }, gateway: { url: `${spun.url}/todo?id=1`, pid: spun.pid }, target: null, aboveUs: null })
    const cpuUs = (which) => median(r.runs.filter((x) => x.which === which).map((x) => (x.serverCpuMs * 1000) / x.total))
    const plainUs = +cpuUs('baseline').toFixed(1)
    const spunUs = +cpuUs('gateway').toFixed(1)
    const calibration = { spinUs, ...r, cpuUsPerRequest: { plain: plainUs, spun: spunUs }, linearRatio: +(plainUs / (plainUs + spinUs)).toFixed(3), amplification: +((spunUs - plainUs) / spinUs).toFixed(2) }
    results.scenarios.calibration = calibration
    say(`[calibration] CPU per request: plain ${plainUs} µs, +${spinUs} µs of work ${spunUs} µs (amplification ${calibration.amplification}×); CPU alone predicts a ratio of ${calibration.linearRatio}, measured ${r.medianRatio}${r.paired?.aboveUs !== undefined ? `; paired slices measure the +${spinUs} µs as +${r.paired.aboveUs} µs` : ''}`)
  } finally {
    await plain?.stop()
    await spun?.stop()
  }
}

// ---------------------------------------------------------------- main
say(`Tributary load benchmarks: ${options.scenarios.join(', ')}; ${options.rounds} round(s) × ${options.duration} s, -c ${options.connections}, warm-up ${options.warmup} s; ${cpus().length} CPUs, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
if (!existsSync(join(root, 'dist/gateway/cli.js'))) throw new Error('dist/gateway/cli.js is missing: run `npm run build` (npm run bench does it)')
let failed
try {
  const todo = options.scenarios.filter((s) => s === 'rest' || s === 'graphql')
  if (todo.length) await todoScenarios(todo)
  const todoProduction = options.scenarios.filter((s) => s === 'rest-production' || s === 'graphql-production').map((s) => s.replace('-production', ''))
  if (todoProduction.length) await todoScenarios(todoProduction, true)
  if (options.scenarios.includes('calibration')) await calibrationScenario()
  if (options.scenarios.includes('memory')) await memoryScenario()
  if (options.scenarios.includes('chinook')) await chinookScenario()
  if (options.scenarios.includes('health')) await healthScenario()
  if (options.scenarios.includes('roles')) await rolesScenario()
  if (options.scenarios.includes('linked')) await linkedScenario()
  if (options.scenarios.includes('workers')) await workersScenario()
  if (options.scenarios.includes('subscribers')) await subscribersScenario()
  if (options.scenarios.includes('events')) await eventsScenario()
  if (options.scenarios.includes('metrics')) await metricsScenario()
  if (options.scenarios.includes('auth')) await authScenario()
  if (options.scenarios.includes('pg-peer')) {
    // Issue 30: Tributary on PostgreSQL vs PostGraphile v4 (bench/pg-peer.mjs).
    const { pgPeerScenario } = await import('./pg-peer.mjs')
    results.scenarios['pg-peer'] = await pgPeerScenario({ ...options, gatewayNodeArgs: gatewayNodeArgs('pg-peer'), say, progress })
  }
  if (options.scenarios.includes('cache')) {
    const r = await cacheScenario({ work, say, ab, fetchJson, assertSame, prepareTodoDb, startBaseline, startGateway, freePort, gatewayNodeArgs, stopGateway, target: TARGETS.cache })
    for (const [store, v] of Object.entries(r)) results.scenarios[`cache-${store}`] = v
  }
} catch (err) {
  failed = err
  results.error = String(err?.stack ?? err)
}
results.finishedAt = new Date().toISOString()
results.machine.loadavgAfter = loadavg()
const stamp = started.toISOString().replace(/[:.]/g, '-')
const out = join(resultsDir, `${stamp}.json`)
writeFileSync(out, JSON.stringify(results, null, 2))
writeFileSync(join(resultsDir, 'latest.json'), JSON.stringify(results, null, 2))
rmSync(work, { recursive: true, force: true })

say('\nSummary')
for (const [name, s] of Object.entries(results.scenarios)) {
  if (name === 'health') {
    for (const [engine, e] of Object.entries(s.engines)) say(`  health   ${engine.padEnd(8)} ${e.skipped ? 'skipped' : `/health p99 ${e.healthP99Ms} ms under 4 heavy clients (< ${s.target} ms)  ${e.pass ? 'PASS' : 'MISS'}`}`)
  } else if (name === 'calibration') {
    say(`  calibration baseline ÷ baseline + ${s.spinUs} µs/request: ratios ${s.ratios.join(', ')}  median ${s.medianRatio} (CPU alone predicts ${s.linearRatio}; amplification ${s.amplification}×)`)
  } else if (name === 'linked-peer') {
    say(`  ${name.padEnd(8)} ${s.skipped ? `skipped: ${s.skipped}` : `Tributary ÷ Hive Gateway ratios ${s.ratios.join(', ')}  median ${s.medianRatio}`}`)
  } else if (name === 'subscribers') say(`  subscribers ${s.subscribers} over ${s.instances} instances: delivery p99 ${s.delayMs.p99} ms (< ${s.target} ms; unshared ${s.unshared.delayMs.p99} ms), ${(s.rssPerThousandKb / 1024).toFixed(1)} MB RSS per 1,000 (unshared ${(s.unshared.rssPerThousandKb / 1024).toFixed(1)}), load generator CPU ${s.cpuPct.client} %  ${s.pass ? 'PASS' : 'MISS'}`)
  else if (name === 'events') say(`  events   NATS → ${s.subscribers} WebSocket subscribers: ${fmt(s.throughput.eventsPerSec)} events/s (${fmt(s.throughput.deliveriesPerSec)} deliveries/s), ${s.throughput.cpuUsPerEvent} µs gateway CPU per event; at ${s.latency.rate}/s delivery p50 ${s.latency.delayMs.p50} ms p99 ${s.latency.delayMs.p99} ms`)
  else if (name === 'pg-peer' && s.skipped) say(`  pg-peer  skipped: ${s.skipped}`)
  else if (name === 'pg-peer') for (const [read, r] of Object.entries(s.reads)) say(`  pg-${read.padEnd(6)} Tributary ÷ PostGraphile v4 ratios ${r.ratios.join(', ')}  median ${r.medianRatio} (≥ ${r.target})  ${r.pass ? 'PASS' : 'MISS'}`)
  else if (name === 'memory') say(`  memory   RSS MB ${s.rssKb.map((k) => (k / 1024).toFixed(1)).join(' → ')}  growth ${s.growthPct} % (< ${s.targetPct} %)  ${s.pass ? 'PASS' : 'MISS'}`)
  else if (s.skipped) say(`  ${name.padEnd(8)} skipped: ${s.skipped}`)
  else say(`  ${name.padEnd(8)} ratios ${s.ratios.join(', ')}  median ${s.medianRatio} ${s.target === null ? '(reported)' : `(≥ ${s.target})  ${s.pass ? 'PASS' : 'MISS'}`}${s.profiled ? ' (profiled)' : ''}${s.cpuUsPerRequest ? `  CPU/request baseline ${s.cpuUsPerRequest.baseline} µs, gateway ${s.cpuUsPerRequest.gateway} µs` : ''}${s.cpuRatio ? ` (CPU ratio ${s.cpuRatio})` : ''}${s.clientBound?.length ? '  ⚠ client-bound' : ''}`)
  if (s?.paired?.aboveUs !== undefined) say(`  ${''.padEnd(8)} paired at ${fmt(s.paired.rate)} req/s: ${s.paired.aboveUs >= 0 ? '+' : ''}${s.paired.aboveUs} µs CPU/request above the baseline (${s.paired.cpuUsPerRequest.baseline} → ${s.paired.cpuUsPerRequest.gateway} µs; slices ${s.paired.spreadUs.join(' … ')})${s.paired.target === null ? ' (reported)' : ` (≤ +${s.paired.target})  ${s.paired.pass ? 'PASS' : 'MISS'}`}`)
}
say(`Results: ${out}`)
// Regressions (issue 30): CPU µs per request of each server against bench/recorded.json; --record rewrites it.
const cpuFigures = {}
for (const [name, s] of Object.entries(results.scenarios)) {
  for (const side of ['baseline', 'gateway']) if (typeof s?.cpuUsPerRequest?.[side] === 'number') cpuFigures[`${name}.${side}`] = s.cpuUsPerRequest[side]
  // The paired slices' medians: a pair measured over the same seconds, flagged by the same rule.
  for (const side of ['baseline', 'gateway']) if (typeof s?.paired?.cpuUsPerRequest?.[side] === 'number') cpuFigures[`${name}-paired.${side}`] = s.paired.cpuUsPerRequest[side]
}
const recorded = readRecorded()
const regressions = compareWithRecorded(recorded.cpuUsPerRequest ?? {}, cpuFigures, 'CPU µs/request', say)
if (regressions.length) say(`⚠ ${regressions.length} figure(s) more than 10 % above bench/recorded.json: ${regressions.join(', ')}`)
if (argv.includes('--record') && !failed) {
  writeRecorded({ ...recorded, cpuUsPerRequest: { ...(recorded.cpuUsPerRequest ?? {}), ...cpuFigures }, cpuAt: results.startedAt, machine: { ...results.machine, loadavgAfter: loadavg() }, calibration: results.scenarios.calibration?.cpuUsPerRequest ?? recorded.calibration }, 'cpu')
  say('recorded in bench/recorded.json')
}
if (failed) {
  say(`\n✖ ${failed.message}`)
  process.exit(1)
}
process.exit(0)
