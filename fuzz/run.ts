/**
 * The gateway fuzzer: sends random GraphQL documents (fuzz/generate.ts), random mutations of them and
 * random stored-operation requests to real gateways over HTTP on 127.0.0.1, and checks that:
 *
 * - no response is a 5xx other than 502/503/504 carrying an upstream code (`TRB_ERR_UPSTREAM*`: an
 *   upstream failed, its circuit is open, or it timed out) or 503 `TRB_ERR_CAPACITY` (a full SQLite
 *   worker queue: a coded refusal with `Retry-After`);
 * - no body carries `TRB_ERR_INTERNAL`, a stack trace, SQL text or an unmasked runtime message
 *   (`Maximum call stack size exceeded`, `Cannot read properties of undefined`, network addresses);
 * - each gateway's RSS, less V8's young generation (bounded by `--max-semi-space-size`, kept at
 *   its grown size by an idle process that runs no GC), comes back within `FUZZ_RSS_BOUND` (default
 *   0.1: 10 %) of its baseline once it idles. The baseline is the lowest RSS over `FUZZ_SETTLE_MS` (default 60000) of idle time after a
 *   warm-up of every target (`FUZZ_WARMUP` requests each, default 3000), so that compiled code and
 *   the bounded caches are counted in it; after the run the fuzzer waits up to `FUZZ_SETTLE_MAX_MS`
 *   (default 3 × FUZZ_SETTLE_MS) for it. Growth past it is what a leak would look like.
 *
 * Targets (`npm run fuzz`): the demo (a copy of data/todo.sqlite, its own role service) and the
 * Chinook example (a temporary copy of its SQLite database), each in development and production mode,
 * each its own process started as `npm start` starts it (npm start's node flags), so that the RSS
 * figures are the gateway's alone. The fuzzer reads the composed schema and the stored operations
 * from in-process gateways of the same deployments, which serve nothing. `test/fuzz.test.ts` runs
 * in-process targets (startDemoTarget, startChinookTarget). `FUZZ_TARGETS=demo/production,…` runs only
 * those targets. The summary also gives each gateway's V8 heap spaces (from its `/metrics`) that moved.
 *
 *   npm run fuzz                     # 10,000 requests over the four targets, with a summary
 *   npm run fuzz -- --count 2000 --seed 7
 *
 * `test/fuzz.test.ts` runs a few hundred per target in `npm test`.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { pino } from 'pino'
import { database, resolveConfig, type RunMode } from '../gateway/config/index.js'
import { createGateway, type Gateway } from '../gateway/runtime.js'
import { serveGateway } from '../test/helpers/serve.js'
import { startDemo } from '../test/helpers/demo.js'
import { createDocumentFuzzer, createRandom, operationRequest, type GraphQLRequestBody, type Random } from './generate.js'

/** The repository root. */
const root = fileURLToPath(new URL('..', import.meta.url))

/**
 * bench/lib/processes.mjs (child processes as `npm start` starts them), loaded by `npm run fuzz` only:
 * it installs exit and signal handlers that stop its children, which test processes must not get.
 */
const processes = () => import('../bench/lib/processes.mjs')

/** A gateway listening on 127.0.0.1 for the fuzzer. */
export interface FuzzTarget {
  name: string
  mode: RunMode
  url: string
  gateway: Gateway
}

/** One broken invariant: what was sent and what came back. */
export interface FuzzFinding {
  target: string
  invariant: 'status' | 'internal' | 'stack' | 'sql' | 'unmasked' | 'network' | 'stall'
  request: string
  status: number
  body: string
}

/** Counts of one fuzzing run. */
export interface FuzzStats {
  requests: number
  /** Responses by HTTP status. */
  statuses: Record<number, number>
  /** Error codes seen, with counts. */
  codes: Record<string, number>
  findings: FuzzFinding[]
  /**
   * The gateway's longest event-loop delay during the run, in ms (its `/metrics`
   * `nodejs_eventloop_lag_max_seconds`: prom-client's monitorEventLoopDelay, reset at each scrape,
   * read every 250 ms); undefined when its metrics cannot be read.
   */
  maxEventLoopDelayMs?: number
  /** Scrapes whose delay passed `stallMs` (see {@link fuzzTarget}). */
  stalls: number
}

const STACK = /\n\s+at \S|\bat [\w.<>]+ \(\/|node:internal|\.(?:ts|js|mjs):\d+:\d+/
// SQL text or engine messages that must never reach a client (checked on error bodies only: data may
// legitimately contain such words).
const SQL = /\b(select\s+[\w"`*]|insert\s+into|delete\s+from|update\s+[\w"`]+\s+set)\b|SQLITE_|sqlite3?_|syntax error at or near|\bER_[A-Z_]{3,}|too many SQL variables|\bpg_|\bknex\b/i

// JavaScript runtime errors and network details that a coded error should have replaced.
const UNMASKED = /Maximum call stack|Cannot read propert|is not a function|is not iterable|of undefined|of null\b|ECONNREFUSED|ECONNRESET|ETIMEDOUT|\b(?:10|172|192)\.\d+\.\d+\.\d+/

/** Checks one response against the invariants; returns the broken ones. */
export function checkResponse(target: string, request: string, status: number, body: string): FuzzFinding[] {
  const out: FuzzFinding[] = []
  const add = (invariant: FuzzFinding['invariant']) => out.push({ target, invariant, request: request.slice(0, 2000), status, body: body.slice(0, 2000) })
  let errorsText = ''
  try {
    const parsed = JSON.parse(body) as { errors?: unknown }
    errorsText = parsed && typeof parsed === 'object' && parsed.errors ? JSON.stringify(parsed.errors) : ''
  } catch {
    errorsText = status >= 400 ? body : ''
  }
  if (status >= 500 && !((status === 502 || status === 503 || status === 504) && /TRB_ERR_UPSTREAM|TRB_ERR_CAPACITY/.test(errorsText))) add('status')
  if (body.includes('TRB_ERR_INTERNAL')) add('internal')
  if (STACK.test(errorsText)) add('stack')
  if (SQL.test(errorsText)) add('sql')
  if (UNMASKED.test(errorsText)) add('unmasked')
  return out
}

function codesOf(body: string): string[] {
  return [...body.matchAll(/"code":"([A-Z_]+)"/g)].map((m) => m[1])
}

/** The gateway's event-loop delay since its last `/metrics` scrape, in ms; undefined when unreadable. */
async function eventLoopDelayMs(url: string): Promise<number | undefined> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined)
  if (!res?.ok) return undefined
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(await res.text())
  return m ? Number(m[1]) * 1000 : undefined
}

/**
 * Sends `count` random requests to one target, `concurrency` at a time, and meanwhile reads the
 * gateway's event-loop delay from its `/metrics` every 250 ms. With `stallMs`, a delay past it is a
 * finding (`stall`); meant for gateways in their own process (`npm run fuzz`): in-process targets
 * share their event loop with the fuzzer and the test runner.
 * @returns the counts and every broken invariant.
 */
export async function fuzzTarget(target: FuzzTarget, count: number, random: Random, options: { concurrency?: number; onProgress?: (done: number) => void; stallMs?: number } = {}): Promise<FuzzStats> {
  const stats: FuzzStats = { requests: 0, statuses: {}, codes: {}, findings: [], stalls: 0 }
  const { gateway, url, mode } = target
  const docs = createDocumentFuzzer(gateway.schema, random)
  const ops = [...gateway.operations.values()].filter((op) => !op.stored.internal && op.kind !== 'subscription')
  const persisted = ops.map((op) => op.stored.source)

  function nextRequest(): { path: string; init: RequestInit; label: string } {
    const roll = random.next()
    if (roll < 0.35 && ops.length) {
      const op = random.pick(ops)
      const methods = op.kind === 'query' ? (['GET', 'POST'] as const) : (['POST'] as const)
      const r = operationRequest(op.variablesSchema, methods, random)
      const path = `/operations/${op.name}${r.search}`
      return {
        path,
        init: r.method === 'POST' ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: r.body } : { method: 'GET' },
        label: `${r.method} ${path} ${r.body ?? ''}`,
      }
    }
    let body: GraphQLRequestBody
    if (mode === 'production' && roll < 0.5 && persisted.length) {
      // Production runs stored documents only: send them with random variables.
      const base = docs.document()
      body = { query: random.pick(persisted), variables: base.variables }
    } else {
      body = roll < 0.62 ? docs.document() : roll < 0.72 ? docs.fragmented() : roll < 0.77 ? docs.fragmentAttack() : roll < 0.8 ? docs.attack() : docs.mutated()
    }
    const text = JSON.stringify(body)
    if (random.chance(0.1) && !/^\s*mutation/.test(body.query)) {
      const params = new URLSearchParams({ query: body.query, ...(body.variables ? { variables: JSON.stringify(body.variables) } : {}) })
      const path = `/graphql?${params}`
      return { path, init: { method: 'GET', headers: { accept: 'application/graphql-response+json' } }, label: `GET ${path}` }
    }
    return {
      path: '/graphql',
      init: { method: 'POST', headers: { 'content-type': 'application/json', accept: random.pick(['application/json', 'application/graphql-response+json']) }, body: text },
      label: `POST /graphql ${text}`,
    }
  }

  let issued = 0
  async function worker() {
    while (issued < count) {
      issued++
      const { path, init, label } = nextRequest()
      let status = 0
      let body = ''
      try {
        const res = await fetch(url + path, { ...init, signal: AbortSignal.timeout(30_000) })
        status = res.status
        body = await res.text()
      } catch (err) {
        stats.findings.push({ target: target.name, invariant: 'network', request: label.slice(0, 2000), status: 0, body: String(err) })
        continue
      }
      stats.requests++
      stats.statuses[status] = (stats.statuses[status] ?? 0) + 1
      for (const code of codesOf(body)) stats.codes[code] = (stats.codes[code] ?? 0) + 1
      stats.findings.push(...checkResponse(target.name, label, status, body))
      options.onProgress?.(stats.requests)
    }
  }
  let running = true
  async function watchEventLoop() {
    await eventLoopDelayMs(target.url) // resets the histogram: the delays before the run are not counted
    while (running) {
      await new Promise((r) => setTimeout(r, 250))
      const ms = await eventLoopDelayMs(target.url)
      if (ms === undefined) continue
      stats.maxEventLoopDelayMs = Math.max(stats.maxEventLoopDelayMs ?? 0, ms)
      if (options.stallMs !== undefined && ms > options.stallMs) {
        stats.stalls++
        stats.findings.push({ target: target.name, invariant: 'stall', request: `the event loop was blocked ${ms.toFixed(0)} ms (more than ${options.stallMs}) within the 250 ms before this scrape`, status: 0, body: '' })
      }
    }
  }
  const watcher = watchEventLoop()
  await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker))
  running = false
  await watcher
  return stats
}

interface Teardowns {
  teardown(fn: () => unknown): void
}

/** Starts the demo in `mode` on 127.0.0.1 (a fresh SQLite file and a real role service). */
export async function startDemoTarget(t: Teardowns, mode: RunMode): Promise<FuzzTarget> {
  const demo = await startDemo(t, { listen: true, override: { mode } })
  return { name: `demo/${mode}`, mode, url: demo.url, gateway: demo.gateway }
}

/**
 * Starts the Chinook example in `mode` on a temporary copy of its SQLite database, in this process.
 * `listen: false` builds the gateway without serving it (`url` is then empty).
 */
export async function startChinookTarget(t: Teardowns, mode: RunMode, options: { listen?: boolean } = {}): Promise<FuzzTarget> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-fuzz-chinook-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  const config = resolveConfig({
    mode,
    datasources: [database({ namespace: 'chinook', url: `sqlite:${join(dir, 'chinook.sqlite')}` })],
    operations: { dir: join(root, 'examples/chinook/operations') },
    generatedDir: join(dir, 'generated'),
  })
  if (options.listen === false) {
    const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
    t.teardown(() => gateway.close())
    return { name: `chinook/${mode}`, mode, url: '', gateway }
  }
  const { url, gateway } = await serveGateway(t, config)
  return { name: `chinook/${mode}`, mode, url, gateway }
}

/** Forces a full garbage collection (exposing `gc` on demand), then returns RSS in bytes. */
export function rssAfterGc(): number {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  gc()
  gc()
  return process.memoryUsage().rss
}

function parseArgs(argv: string[]): { count: number; seed: number } {
  const get = (name: string) => {
    const i = argv.indexOf(name)
    return i >= 0 ? argv[i + 1] : undefined
  }
  const count = Number(get('--count') ?? 10_000)
  const seed = Number(get('--seed') ?? Date.now() % 100_000)
  if (!Number.isInteger(count) || count < 1 || count > 1_000_000) throw new Error('--count must be an integer from 1 to 1000000')
  if (!Number.isInteger(seed)) throw new Error('--seed must be an integer')
  return { count, seed }
}

/** A target of `npm run fuzz`: a gateway in its own process, started as `npm start` starts it. */
interface ProcessTarget extends FuzzTarget {
  pid: number
}

/**
 * Starts the demo (`config.ts`) or the Chinook example (`examples/chinook/config.ts`) in `mode` as
 * `npm start` does: `node <npm start's flags> dist/gateway/cli.js start`, its own process (the demo
 * with its own role service), on a temporary copy of its SQLite database, on 127.0.0.1.
 * @param schema an in-process gateway of the same deployment: the fuzzer reads the composed schema
 *   and the stored operations from it (it serves nothing)
 * @throws when the gateway does not start within 90 s
 */
async function spawnTarget(t: Teardowns, kind: 'demo' | 'chinook', mode: RunMode, schema: Gateway): Promise<ProcessTarget> {
  const { copySqlite, freePort, startGateway } = await processes()
  const dir = mkdtempSync(join(tmpdir(), `tributary-fuzz-${kind}-`))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env: Record<string, string> = { NODE_ENV: mode }
  let config: string | undefined
  if (kind === 'demo') {
    const db = join(dir, 'todo.sqlite')
    // Without data/todo.sqlite (a clone before its first start) the gateway creates and seeds the file.
    if (existsSync(join(root, 'data/todo.sqlite'))) await copySqlite(join(root, 'data/todo.sqlite'), db)
    env.TODO_DATABASE_URL = `sqlite:${db}`
    env.ROLE_SERVICE_PORT = String(await freePort())
  } else {
    await copySqlite(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
    env.CHINOOK_DATABASE_URL = `sqlite:${join(dir, 'chinook.sqlite')}`
    config = 'examples/chinook/config.ts'
  }
  const gw = await startGateway({ config, env })
  t.teardown(() => gw.stop())
  return { name: `${kind}/${mode}`, mode, url: gw.url, gateway: schema, pid: gw.pid }
}


/**
 * A gateway's V8 heap spaces, committed and used MiB by space name, read from its `/metrics`
 * (`nodejs_heap_space_size_total_bytes` and `_used_bytes`; metrics are on by default and open to
 * 127.0.0.1); empty when metrics are off.
 */
async function heapSpacesOf(url: string): Promise<HeapSpaces> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined)
  if (!res?.ok) return {}
  const out: HeapSpaces = {}
  for (const m of (await res.text()).matchAll(/^nodejs_heap_space_size_(total|used)_bytes\{space="(\w+)"\} (\d+)/gm)) {
    const space = (out[m[2]!] ??= { committed: 0, used: 0 })
    space[m[1] === 'total' ? 'committed' : 'used'] = Number(m[3]) / 1048576
  }
  return out
}

/** A gateway's V8 heap spaces, committed and used MiB by space name. */
type HeapSpaces = Record<string, { committed: number; used: number }>

/** One memory reading of a gateway process, in MiB. */
export interface MemoryReading {
  /** Resident set size (/proc/<pid>/status VmRSS). */
  rss: number
  /** V8's young generation, committed (`nodejs_heap_space_size_total_bytes{space="new"}`; 0 without metrics). */
  young: number
  /** `rss − young`: what the check compares. */
  rest: number
  /** Every V8 heap space at that moment. */
  spaces: HeapSpaces
}

/** Reads the memory of a gateway process listening at `url` (its `/metrics` must be open to 127.0.0.1, as by default). */
export async function readMemory(target: Pick<ProcessTarget, 'url' | 'pid'>): Promise<MemoryReading> {
  const spaces = await heapSpacesOf(target.url)
  const young = spaces.new?.committed ?? 0
  const rss = (await processes()).memoryOf(target.pid).rssKb / 1024
  return { rss, young, rest: rss - young, spaces }
}

/**
 * Waits while the targets are idle, reading their memory every 2 s, for at most `maxMs`, or until
 * `done(lowest)` says so. V8 gives old-space pages back only after some idle time (its memory
 * reducer starts 8 s after a full GC and may take a minute), as on an idle server.
 * @returns the reading of each target with the lowest `rest` seen meanwhile
 */
async function settle(targets: ProcessTarget[], maxMs: number, label: string, done?: (lowest: MemoryReading[]) => boolean): Promise<MemoryReading[]> {
  const lowest = await Promise.all(targets.map(readMemory))
  const started = Date.now()
  for (;;) {
    const now = await Promise.all(targets.map(readMemory))
    now.forEach((v, i) => {
      if (v.rest < lowest[i]!.rest) lowest[i] = v
    })
    const elapsed = Date.now() - started
    process.stdout.write(`\r[fuzz] ${label}: ${Math.round(elapsed / 1000)}/${Math.round(maxMs / 1000)} s, RSS MB ${targets.map((x, i) => `${x.name} ${now[i]!.rss.toFixed(0)}`).join(', ')}   `)
    if (elapsed >= maxMs || done?.(lowest)) break
    await new Promise((r) => setTimeout(r, Math.min(2000, maxMs - elapsed)))
  }
  process.stdout.write('\n')
  return lowest
}

async function main(): Promise<void> {
  const { count, seed } = parseArgs(process.argv.slice(2))
  const { memoryOf, START_NODE_FLAGS } = await processes()
  const fns: (() => unknown)[] = []
  const t: Teardowns = { teardown: (fn) => void fns.push(fn) }
  console.log(`[fuzz] seed ${seed}, ${count} requests over the demo and Chinook gateways, in development and production mode, each in its own process as npm start runs it (node ${START_NODE_FLAGS.join(' ')})`)
  let exitCode = 0
  try {
    // In-process gateways of both deployments, for their schemas and stored operations only.
    const demoSchema = (await startDemo(t, { listen: false })).gateway
    const chinookSchema = (await startChinookTarget(t, 'development', { listen: false })).gateway
    const targets: ProcessTarget[] = []
    // FUZZ_TARGETS=demo/production,chinook/development runs only those (to replay one).
    const only = process.env.FUZZ_TARGETS?.split(',').map((x) => x.trim())
    for (const [kind, schema] of [['demo', demoSchema], ['chinook', chinookSchema]] as const) {
      for (const mode of ['development', 'production'] as const) {
        if (only && !only.includes(`${kind}/${mode}`)) continue
        const target = await spawnTarget(t, kind, mode, schema)
        console.log(`[fuzz] ${target.name}: ${target.url} (pid ${target.pid})`)
        targets.push(target)
      }
    }
    // Warm up every target (code paths compiled, bounded caches filled, the heap grown to its working
    // size), let it idle, then take the baseline: growth past it is what a leak would look like.
    const warmup = Number(process.env.FUZZ_WARMUP ?? 3000)
    for (const target of targets) await fuzzTarget(target, warmup, createRandom(seed + 1000))
    const settleMs = Number(process.env.FUZZ_SETTLE_MS ?? 60_000)
    const before = await settle(targets, settleMs, 'idle after the warm-up')
    const random = createRandom(seed)
    const all: FuzzStats = { requests: 0, statuses: {}, codes: {}, findings: [], stalls: 0 }
    const per = Math.ceil(count / targets.length)
    // An event-loop delay past FUZZ_STALL_MS (default 200) in a gateway is a finding.
    const stallMs = Number(process.env.FUZZ_STALL_MS ?? 200)
    const delays: string[] = []
    const started = Date.now()
    for (const target of targets) {
      let last = 0
      const stats = await fuzzTarget(target, per, random, {
        stallMs,
        onProgress: (done) => {
          if (done - last >= 250 || done === per) {
            last = done
            process.stdout.write(`\r[fuzz] ${target.name.padEnd(20)} ${done}/${per}`)
          }
        },
      })
      const m = memoryOf(target.pid)
      process.stdout.write(`  (gateway RSS ${(m.rssKb / 1024).toFixed(0)} MB, peak ${(m.hwmKb / 1024).toFixed(0)} MB, longest event-loop delay ${stats.maxEventLoopDelayMs?.toFixed(0) ?? '?'} ms)\n`)
      delays.push(`${target.name} ${stats.maxEventLoopDelayMs?.toFixed(0) ?? '?'} ms (${stats.stalls} over ${stallMs} ms)`)
      all.requests += stats.requests
      for (const [k, v] of Object.entries(stats.statuses)) all.statuses[Number(k)] = (all.statuses[Number(k)] ?? 0) + v
      for (const [k, v] of Object.entries(stats.codes)) all.codes[k] = (all.codes[k] ?? 0) + v
      all.findings.push(...stats.findings)
    }
    const seconds = (Date.now() - started) / 1000
    // RSS must come back within FUZZ_RSS_BOUND (default 10 %) of the baseline once the gateway idles,
    // less V8's young generation: an idle process runs no GC, so the young generation keeps the size
    // the load grew it to (at most 2 × --max-semi-space-size, 256 MiB with npm start's flags) until the
    // next request. It is bounded by that flag, not by the requests served, so it cannot hide a leak.
    const bound = Number(process.env.FUZZ_RSS_BOUND ?? 0.1)
    const within = (now: MemoryReading[]) => now.every((v, i) => v.rest <= before[i]!.rest * (1 + bound))
    const settleMaxMs = Number(process.env.FUZZ_SETTLE_MAX_MS ?? 3 * settleMs)
    const after = await settle(targets, settleMaxMs, 'idle after the run', within)
    console.log(`[fuzz] ${all.requests} requests in ${seconds.toFixed(1)} s (${(all.requests / seconds).toFixed(0)}/s)`)
    console.log(`[fuzz] statuses: ${Object.entries(all.statuses).map(([k, v]) => `${k}×${v}`).join(' ')}`)
    console.log(`[fuzz] longest event-loop delay: ${delays.join(', ')}`)
    console.log(`[fuzz] codes: ${Object.entries(all.codes).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}×${v}`).join(' ')}`)
    for (const [i, target] of targets.entries()) {
      const [b, a] = [before[i]!, after[i]!]
      const growth = a.rest - b.rest
      const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`
      console.log(`[fuzz] ${target.name.padEnd(20)} idle RSS ${b.rss.toFixed(1)} → ${a.rss.toFixed(1)} MB (peak ${(memoryOf(target.pid).hwmKb / 1024).toFixed(1)} MB), young generation ${b.young.toFixed(1)} → ${a.young.toFixed(1)} MB; RSS less the young generation ${b.rest.toFixed(1)} → ${a.rest.toFixed(1)} MB (${signed(growth)} MB, ${signed((100 * growth) / b.rest)} %)`)
      // Which V8 spaces moved between the two readings: a growing `used` is live data; `committed` alone is memory V8 keeps.
      const was = b.spaces
      const now = a.spaces
      const moved = Object.keys(now).filter((k) => Math.abs(now[k]!.committed - (was[k]?.committed ?? 0)) >= 1 || Math.abs(now[k]!.used - (was[k]?.used ?? 0)) >= 1)
      if (moved.length) console.log(`[fuzz]   V8 spaces, committed (used) MB before → after: ${moved.map((k) => `${k} ${was[k]?.committed.toFixed(1) ?? '?'} (${was[k]?.used.toFixed(1) ?? '?'}) → ${now[k]!.committed.toFixed(1)} (${now[k]!.used.toFixed(1)})`).join(', ')}`)
    }
    const byInvariant: Record<string, number> = {}
    for (const f of all.findings) byInvariant[f.invariant] = (byInvariant[f.invariant] ?? 0) + 1
    if (all.findings.length) {
      exitCode = 1
      console.log(`[fuzz] FAILED: ${all.findings.length} findings (${Object.entries(byInvariant).map(([k, v]) => `${k}×${v}`).join(' ')}); the first ones:`)
      for (const f of all.findings.slice(0, 10)) console.log(JSON.stringify({ ...f, request: f.request.slice(0, 300), body: f.body.slice(0, 300) }))
      console.log(`[fuzz] replay with: npm run fuzz -- --count ${count} --seed ${seed}`)
    } else {
      console.log(`[fuzz] OK: no 5xx but upstream 502/504, no TRB_ERR_INTERNAL, no stack trace, no SQL text, no event-loop delay over ${stallMs} ms`)
    }
    if (!within(after)) {
      exitCode = 1
      console.log(`[fuzz] FAILED: RSS (less the young generation) did not come back within ${bound * 100} % of its baseline after ${Math.round(settleMaxMs / 1000)} s idle`)
    } else {
      console.log(`[fuzz] OK: every gateway's RSS (less the young generation) came back within ${bound * 100} % of its baseline`)
    }
  } finally {
    for (const fn of fns.reverse()) await fn()
  }
  process.exitCode = exitCode
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
