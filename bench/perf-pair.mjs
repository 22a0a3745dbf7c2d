#!/usr/bin/env node
/**
 * Where the gateway's µs above the hand-written route go (issue 30): both servers loaded at once at the
 * same fixed rate (as the paired slices of run.mjs), both sampled by `perf record -e cpu-clock` over
 * the same seconds, and every sample's leaf frame charged, per request, to what ran there — the
 * kernel, node's C++ and V8's runtime, V8's builtins, JIT-compiled JavaScript, libc, SQLite — side
 * by side with the difference. Then the leaf symbols whose time per request differs most.
 *
 *   node bench/perf-pair.mjs [--target rest|graphql] [--production] [--seconds 10] [--warmup 3] [--rate 4000]
 *                            [--connections 10] [--top 25] [--keep]
 *
 * `rest`: `GET /operations/TodoById?id=1`; `graphql`: `POST /graphql` with operations/TodoById.graphql
 * and `{id: 1}`; each against the baseline's `GET /todo?id=1` (bench/baseline-server.mjs) on the same
 * temp copy of data/todo.sqlite (created and seeded by the gateway where there is none yet). The
 * gateway starts as `npm start` starts it (lib/processes.mjs, `--production`: `NODE_ENV=production`),
 * both servers with `--perf-basic-prof` (JIT frames named; the maps are `/tmp/perf-<pid>.map`, removed
 * at the end). The answers are compared before loading.
 * Each server gets its own autocannon (`--rate` req/s, `--connections`) for `--warmup` (3) s,
 * `--seconds` sampled at 999 Hz by one `perf record -g -p <pid>` each, and 1 s more. Per request:
 * samples × (1 s ÷ 999) ÷ (req/s × `--seconds`), in µs; the CPU µs per request from `/proc/<pid>/stat`
 * over the same window is printed beside it (perf's total should come close). A sample of a thread
 * other than the main (JS) one (V8's compiler and GC helpers, libuv's pool) is counted under `other
 * threads`. Symbols: perf's names (a JIT frame `JS:*name file:line:col`), the gateway's and the
 * baseline's compared by name.
 *
 * Bounds: `--seconds` 1–120, `--warmup` 1–60, `--rate` 100–20,000, `--connections` 1–100, `--top` 1–200; the
 * servers listen on 127.0.0.1 only. Needs Linux `perf` (Debian's linux-perf) with the cpu-clock
 * software event, which works where hardware counters do not: exits with 1 and says so otherwise.
 * `--keep` leaves the work directory (both `perf.data` files, for `perf report` or
 * bench/perf-summary.mjs) and the two JIT maps, and prints their paths.
 */
import { execFileSync } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { copySqlite, cpuTimeOf, isolatedConfig, root, runLoad, startBaseline, startGateway } from './lib/processes.mjs'
import { leafKind, perfRecord, perfSamples, perfScript } from './perf-summary.mjs'

const FREQUENCY = 999

/**
 * The command line, bounded.
 * @returns `{ target, production, seconds, warmup, rate, connections, top, keep }`
 * @throws Error naming the flag when a value is out of its range or the option is unknown
 */
export function parseArgs(argv) {
  const o = { target: 'rest', production: false, seconds: 10, warmup: 3, rate: 4000, connections: 10, top: 25, keep: false }
  const bounded = (name, v, lo, hi) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`--${name} must be an integer from ${lo} to ${hi} (got ${v})`)
    return n
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--production') o.production = true
    else if (a === '--keep') o.keep = true
    else if (a === '--target') {
      o.target = argv[++i]
      if (o.target !== 'rest' && o.target !== 'graphql') throw new Error(`--target must be rest or graphql (got ${o.target})`)
    } else if (a === '--seconds') o.seconds = bounded('seconds', argv[++i], 1, 120)
    else if (a === '--warmup') o.warmup = bounded('warmup', argv[++i], 1, 60)
    else if (a === '--rate') o.rate = bounded('rate', argv[++i], 100, 20_000)
    else if (a === '--connections') o.connections = bounded('connections', argv[++i], 1, 100)
    else if (a === '--top') o.top = bounded('top', argv[++i], 1, 200)
    else throw new Error(`unknown option ${a}`)
  }
  return o
}

/** Throws unless `perf record -e cpu-clock` works here. */
function requirePerf(work) {
  try {
    execFileSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', join(work, 'probe.data'), '--', 'true'], { stdio: 'pipe' })
  } catch (err) {
    throw new Error(`perf-pair needs Linux perf with the cpu-clock event (Debian: apt-get install linux-perf): ${String(err.message).split('\n')[0]}`)
  }
}

/**
 * Counts the leaf frames of `perf script` text by kind and by symbol.
 * @param text `perf script -F comm,tid,ip,sym,dso` output (perf-summary.mjs' perfScript)
 * @param mainTid the process id: samples of other threads go to `other threads`
 * @returns {{ samples: number, kinds: Map<string, number>, symbols: Map<string, number> }}
 */
export function countLeaves(text, mainTid) {
  const kinds = new Map()
  const symbols = new Map()
  let samples = 0
  const add = (m, k) => m.set(k, (m.get(k) ?? 0) + 1)
  for (const { tid, frames } of perfSamples(text)) {
    const { sym, dso } = frames[0]
    samples++
    if (tid !== undefined && tid !== mainTid) {
      add(kinds, 'other threads')
      continue
    }
    add(kinds, leafKind(sym, dso))
    add(symbols, sym.replace(/file:\/\/|\/[^\s]*\/(?=dist\/|node_modules\/)/g, ''))
  }
  return { samples, kinds, symbols }
}

const fmt = (n) => n.toFixed(2).padStart(8)

async function main() {
  const o = parseArgs(process.argv.slice(2))
  const work = mkdtempSync(join(tmpdir(), 'tributary-perf-pair-'))
  const started = []
  try {
    requirePerf(work)
    // A copy of the demo's database; on a fresh clone (no data/todo.sqlite yet) the gateway, started
    // first, creates and seeds the file, as bench/run.mjs' prepareTodoDb relies on.
    const db = join(work, 'todo.sqlite')
    if (existsSync(join(root, 'data/todo.sqlite'))) await copySqlite(join(root, 'data/todo.sqlite'), db)
    console.log(`[perf-pair] ${o.target}${o.production ? ' (production)' : ''}: starting the gateway as npm start does and the baseline, both with --perf-basic-prof`)
    const gw = await startGateway({
      env: { TODO_DATABASE_URL: `sqlite:${db}`, ...(o.production ? { NODE_ENV: 'production' } : {}) },
      ...(o.production ? { config: isolatedConfig(work, 'dist/config.js', 'perf-pair-production') } : {}),
      nodeArgs: ['--perf-basic-prof'],
    })
    started.push(gw)
    const base = await startBaseline(['--todo-db', db], { nodeArgs: ['--perf-basic-prof'] })
    started.push(base)
    const baseline = { url: `${base.url}/todo?id=1` }
    const query = readFileSync(join(root, 'operations/TodoById.graphql'), 'utf8')
    const gateway =
      o.target === 'rest'
        ? { url: `${gw.url}/operations/TodoById?id=1` }
        : { url: `${gw.url}/graphql`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: { id: 1 }, operationName: 'TodoById' }) }
    const want = await (await fetch(baseline.url)).json()
    const got = await (await fetch(gateway.url, { method: gateway.method ?? 'GET', headers: gateway.headers, body: gateway.body })).json()
    if (JSON.stringify(o.target === 'rest' ? got : got.data) !== JSON.stringify(want)) throw new Error(`the two answers differ: ${JSON.stringify(got)} against ${JSON.stringify(want)}`)
    console.log(`[perf-pair] gateway ${gateway.method ?? 'GET'} ${new URL(gateway.url).pathname} (pid ${gw.pid}) and baseline GET /todo?id=1 (pid ${base.pid}) answer the same; ${o.rate} req/s each, ${o.connections} connections, ${o.warmup} s warm-up, ${o.seconds} s sampled at ${FREQUENCY} Hz`)
    const duration = o.warmup + o.seconds + 1
    const loads = Promise.all([
      runLoad({ label: 'gateway', ...gateway, duration, connections: o.connections, rate: o.rate }),
      runLoad({ label: 'baseline', ...baseline, duration, connections: o.connections, rate: o.rate }),
    ])
    await new Promise((r) => setTimeout(r, o.warmup * 1000))
    const cpu0 = [cpuTimeOf(gw.pid), cpuTimeOf(base.pid)]
    await Promise.all([perfRecord(gw.pid, join(work, 'gateway.data'), o.seconds, FREQUENCY), perfRecord(base.pid, join(work, 'baseline.data'), o.seconds, FREQUENCY)])
    const cpu1 = [cpuTimeOf(gw.pid), cpuTimeOf(base.pid)]
    const [gLoad, bLoad] = await loads
    console.log(`[perf-pair] load: gateway ${Math.round(gLoad.reqPerSec)} req/s, baseline ${Math.round(bLoad.reqPerSec)} req/s; reading the samples`)
    const sides = [
      { name: 'baseline', pid: base.pid, requests: bLoad.reqPerSec * o.seconds, cpuMs: cpu1[1] - cpu0[1], file: join(work, 'baseline.data') },
      { name: 'gateway', pid: gw.pid, requests: gLoad.reqPerSec * o.seconds, cpuMs: cpu1[0] - cpu0[0], file: join(work, 'gateway.data') },
    ]
    for (const s of sides) {
      Object.assign(s, countLeaves(perfScript(s.file), s.pid))
      s.usPerSample = 1e6 / FREQUENCY / s.requests
    }
    const [b, g] = sides
    const kinds = [...new Set([...b.kinds.keys(), ...g.kinds.keys()])]
    const per = (s, m, k) => (m.get(k) ?? 0) * s.usPerSample
    kinds.sort((x, y) => per(g, g.kinds, y) + per(b, b.kinds, y) - per(g, g.kinds, x) - per(b, b.kinds, x))
    const out = [``, `µs per request       baseline  gateway  difference`]
    for (const k of kinds) out.push(`  ${k.padEnd(24)}${fmt(per(b, b.kinds, k))} ${fmt(per(g, g.kinds, k))} ${fmt(per(g, g.kinds, k) - per(b, b.kinds, k))}`)
    out.push(`  ${'all samples'.padEnd(24)}${fmt(b.samples * b.usPerSample)} ${fmt(g.samples * g.usPerSample)} ${fmt(g.samples * g.usPerSample - b.samples * b.usPerSample)}`)
    out.push(`  ${'CPU time (/proc)'.padEnd(24)}${fmt((b.cpuMs * 1000) / b.requests)} ${fmt((g.cpuMs * 1000) / g.requests)} ${fmt((g.cpuMs * 1000) / g.requests - (b.cpuMs * 1000) / b.requests)}`)
    const symbols = [...new Set([...b.symbols.keys(), ...g.symbols.keys()])].map((sym) => ({ sym, b: per(b, b.symbols, sym), g: per(g, g.symbols, sym) }))
    symbols.sort((x, y) => Math.abs(y.g - y.b) - Math.abs(x.g - x.b))
    out.push('', `main thread's leaf symbols by |difference| (µs per request: baseline, gateway, difference)`)
    for (const s of symbols.slice(0, o.top)) out.push(`  ${fmt(s.b)} ${fmt(s.g)} ${fmt(s.g - s.b)}  ${s.sym.slice(0, 110)}`)
    console.log(out.join('\n'))
    if (o.keep) console.log(`\n[perf-pair] kept ${work} (gateway.data, baseline.data) and the JIT maps /tmp/perf-${gw.pid}.map, /tmp/perf-${base.pid}.map (perf script reads them by pid)`)
  } finally {
    for (const p of started.reverse()) {
      await p.stop()
      if (!o.keep) rmSync(`/tmp/perf-${p.pid}.map`, { force: true })
    }
    if (!o.keep) rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err) => {
    console.error(`[perf-pair] ${err.message}`)
    process.exit(1)
  })
}
