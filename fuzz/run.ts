/**
 * The gateway fuzzer: sends random GraphQL documents (fuzz/generate.ts), random mutations of them and
 * random stored-operation requests to real gateways over HTTP on 127.0.0.1, and checks that:
 *
 * - no response is a 5xx other than 502/503/504 carrying an upstream code (`TRB_ERR_UPSTREAM*`: an
 *   upstream failed, its circuit is open, or it timed out);
 * - no body carries `TRB_ERR_INTERNAL`, a stack trace, SQL text or an unmasked runtime message
 *   (`Maximum call stack size exceeded`, `Cannot read properties of undefined`, network addresses);
 * - RSS comes back near its baseline afterwards (after a forced GC). The baseline is taken after a
 *   warm-up of every target (`FUZZ_WARMUP` requests each, default 3000), so that compiled code and
 *   the bounded caches are counted in it; growth past it is what a leak would look like. Both RSS
 *   figures are taken after `FUZZ_SETTLE_MS` (default 20000) of idle time, as on an idle server.
 *
 * Targets: the demo (SQLite todo database, the role REST service, the demo schema) and the Chinook
 * example (a temporary copy of its SQLite database), each in development and production mode.
 *
 *   npm run fuzz                     # 10,000 requests over the four targets, with a summary
 *   npm run fuzz -- --count 2000 --seed 7
 *
 * `test/fuzz.test.ts` runs a few hundred per target in `npm test`.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { database, resolveConfig, type RunMode } from '../gateway/config/index.js'
import type { Gateway } from '../gateway/runtime.js'
import { serveGateway } from '../test/helpers/serve.js'
import { startDemo } from '../test/helpers/demo.js'
import { createDocumentFuzzer, createRandom, operationRequest, type GraphQLRequestBody, type Random } from './generate.js'

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
  invariant: 'status' | 'internal' | 'stack' | 'sql' | 'unmasked' | 'network'
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
  if (status >= 500 && !((status === 502 || status === 503 || status === 504) && /TRB_ERR_UPSTREAM/.test(errorsText))) add('status')
  if (body.includes('TRB_ERR_INTERNAL')) add('internal')
  if (STACK.test(errorsText)) add('stack')
  if (SQL.test(errorsText)) add('sql')
  if (UNMASKED.test(errorsText)) add('unmasked')
  return out
}

function codesOf(body: string): string[] {
  return [...body.matchAll(/"code":"([A-Z_]+)"/g)].map((m) => m[1])
}

/**
 * Sends `count` random requests to one target, `concurrency` at a time.
 * @returns the counts and every broken invariant.
 */
export async function fuzzTarget(target: FuzzTarget, count: number, random: Random, options: { concurrency?: number; onProgress?: (done: number) => void } = {}): Promise<FuzzStats> {
  const stats: FuzzStats = { requests: 0, statuses: {}, codes: {}, findings: [] }
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
      body = roll < 0.77 ? docs.document() : roll < 0.8 ? docs.attack() : docs.mutated()
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
  await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker))
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

/** Starts the Chinook example in `mode` on a temporary copy of its SQLite database. */
export async function startChinookTarget(t: Teardowns, mode: RunMode): Promise<FuzzTarget> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-fuzz-chinook-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const root = fileURLToPath(new URL('..', import.meta.url))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  const config = resolveConfig({
    mode,
    datasources: [database({ namespace: 'chinook', url: `sqlite:${join(dir, 'chinook.sqlite')}` })],
    operations: { dir: join(root, 'examples/chinook/operations') },
    generatedDir: join(dir, 'generated'),
  })
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

/** Each V8 heap space's committed and used bytes, by name. */
function heapSpaces(): Record<string, { committed: number; used: number }> {
  return Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { committed: s.physical_space_size, used: s.space_used_size }]))
}

const mb = (bytes: number) => (bytes / 1048576).toFixed(1)

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

async function main(): Promise<void> {
  const { count, seed } = parseArgs(process.argv.slice(2))
  const fns: (() => unknown)[] = []
  const t: Teardowns = { teardown: (fn) => void fns.push(fn) }
  console.log(`[fuzz] seed ${seed}, ${count} requests over 4 targets (demo and Chinook, development and production)`)
  let exitCode = 0
  try {
    const targets = [
      await startDemoTarget(t, 'development'),
      await startDemoTarget(t, 'production'),
      await startChinookTarget(t, 'development'),
      await startChinookTarget(t, 'production'),
    ]
    // Warm up every target (code paths compiled, bounded caches filled, the heap grown to its working
    // size), then take the baseline: growth past it is what a leak would look like.
    const warmup = Number(process.env.FUZZ_WARMUP ?? 3000)
    for (const target of targets) await fuzzTarget(target, warmup, createRandom(seed + 1000))
    // Both measurements follow the same idle time, in which V8's memory reducer returns the pages
    // that a burst of requests committed (the young generation grown to its maximum, and so on).
    const settle = () => new Promise((r) => setTimeout(r, Number(process.env.FUZZ_SETTLE_MS ?? 20_000)))
    await settle()
    const before = rssAfterGc()
    const spacesBefore = heapSpaces()
    const heapBefore = process.memoryUsage().heapUsed
    const committedBefore = process.memoryUsage().heapTotal
    const random = createRandom(seed)
    const all: FuzzStats = { requests: 0, statuses: {}, codes: {}, findings: [] }
    const per = Math.ceil(count / targets.length)
    const started = Date.now()
    for (const target of targets) {
      let last = 0
      const stats = await fuzzTarget(target, per, random, {
        onProgress: (done) => {
          if (done - last >= 250 || done === per) {
            last = done
            process.stdout.write(`\r[fuzz] ${target.name.padEnd(20)} ${done}/${per}`)
          }
        },
      })
      const m = process.memoryUsage()
      process.stdout.write(`  (rss ${(m.rss / 1048576).toFixed(0)} MB, heap ${(m.heapUsed / 1048576).toFixed(0)} MB, external ${(m.external / 1048576).toFixed(0)} MB, arrayBuffers ${(m.arrayBuffers / 1048576).toFixed(0)} MB)\n`)
      all.requests += stats.requests
      for (const [k, v] of Object.entries(stats.statuses)) all.statuses[Number(k)] = (all.statuses[Number(k)] ?? 0) + v
      for (const [k, v] of Object.entries(stats.codes)) all.codes[k] = (all.codes[k] ?? 0) + v
      all.findings.push(...stats.findings)
    }
    await settle()
    const after = rssAfterGc()
    const spacesAfter = heapSpaces()
    const heap = process.memoryUsage().heapUsed
    const committed = process.memoryUsage().heapTotal
    const seconds = (Date.now() - started) / 1000
    console.log(`\n[fuzz] ${all.requests} requests in ${seconds.toFixed(1)} s (${(all.requests / seconds).toFixed(0)}/s)`)
    console.log(`[fuzz] statuses: ${Object.entries(all.statuses).map(([k, v]) => `${k}×${v}`).join(' ')}`)
    console.log(`[fuzz] codes: ${Object.entries(all.codes).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}×${v}`).join(' ')}`)
    const growth = (after - before) / 1024 / 1024
    console.log(`[fuzz] RSS after GC: ${(before / 1048576).toFixed(1)} MB before, ${(after / 1048576).toFixed(1)} MB after (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB); heap used ${(heapBefore / 1048576).toFixed(1)} → ${(heap / 1048576).toFixed(1)} MB, committed ${(committedBefore / 1048576).toFixed(1)} → ${(committed / 1048576).toFixed(1)} MB`)
    const changed = Object.keys(spacesAfter).filter((k) => Math.abs(spacesAfter[k]!.committed - (spacesBefore[k]?.committed ?? 0)) >= 1048576)
    if (changed.length) console.log(`[fuzz] V8 spaces, committed (used) MB before → after: ${changed.map((k) => `${k} ${mb(spacesBefore[k]?.committed ?? 0)} (${mb(spacesBefore[k]?.used ?? 0)}) → ${mb(spacesAfter[k]!.committed)} (${mb(spacesAfter[k]!.used)})`).join(', ')}`)
    const byInvariant: Record<string, number> = {}
    for (const f of all.findings) byInvariant[f.invariant] = (byInvariant[f.invariant] ?? 0) + 1
    if (all.findings.length) {
      exitCode = 1
      console.log(`[fuzz] FAILED: ${all.findings.length} findings (${Object.entries(byInvariant).map(([k, v]) => `${k}×${v}`).join(' ')}); the first ones:`)
      for (const f of all.findings.slice(0, 10)) console.log(JSON.stringify({ ...f, request: f.request.slice(0, 300), body: f.body.slice(0, 300) }))
      console.log(`[fuzz] replay with: npm run fuzz -- --count ${count} --seed ${seed}`)
    } else {
      console.log('[fuzz] OK: no 5xx but upstream 502/504, no TRB_ERR_INTERNAL, no stack trace, no SQL text')
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
