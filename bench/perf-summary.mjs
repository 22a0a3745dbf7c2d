#!/usr/bin/env node
/**
 * Summarises a Linux `perf record -g` profile of a node process started with `--perf-basic-prof`
 * (so JIT frames have names). More faithful than `--cpu-prof` on this VM: V8's sampler there sees
 * mostly the syscall a thread returns from (signals land at syscall exits), so `--cpu-prof` charges
 * most of the time to `writev` and to better-sqlite3's calls.
 *
 *   perf record -e cpu-clock -F 999 -g -p <pid> -o perf.data -- sleep 10
 *   node bench/perf-summary.mjs perf.data [--top 40] [--tid <pid>]   # --tid: the JS thread only
 *
 * Each sample is charged to its nearest JavaScript frame (walking from the leaf towards the root): the
 * time of V8 builtins, the GC, native addons and the kernel is charged to the JS function that caused
 * it. Prints the share per JS function, per package / project folder, and the leaf kinds.
 * Also importable: `summarisePerfScript(text, { top })`.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

function groupOfFrame(sym) {
  const m = /\s(\/\S+|file:\/\/\S+|node:\S+):\d+:\d+$/.exec(sym)
  const url = m ? m[1].replace(/^file:\/\//, '') : ''
  if (!url) return '(unknown)'
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm) return nm[1]
  if (url.startsWith('node:')) return 'node:internal'
  const proj = /\/(dist|bench)\/(.*)\/[^/]+$/.exec(url)
  if (proj) return `${proj[1] === 'dist' ? '' : 'bench/'}${proj[2].split('/').slice(0, 3).join('/')}`
  return url
}

/**
 * What a leaf frame is: 'kernel', 'JIT-compiled JS', 'V8 builtins', 'SQLite (better-sqlite3)', 'libc',
 * 'V8 GC', 'node / V8 (C++)', or else its DSO's path. (Also used by perf-pair.mjs.)
 */
export function leafKind(sym, dso) {
  if (/\[kernel|\[k\]/.test(dso) || dso === '[kernel.kallsyms]') return 'kernel'
  if (sym.startsWith('JS:') || sym.startsWith('RegExp:') || sym.startsWith('LazyCompile:')) return 'JIT-compiled JS'
  if (sym.startsWith('Builtins_')) return 'V8 builtins'
  if (/better_sqlite3|sqlite3/.test(dso) || /^sqlite3/.test(sym)) return 'SQLite (better-sqlite3)'
  if (/libc|libstdc|ld-linux/.test(dso)) return 'libc'
  if (/Scavenge|MarkCompact|Heap::|GC|Sweeper|Marking/.test(sym)) return 'V8 GC'
  if (/node$|\/node\b/.test(dso)) return 'node / V8 (C++)'
  return dso || '(unknown)'
}

/**
 * The samples of `perf script -F comm,tid,ip,sym,dso` text (a header line `comm tid`, then one frame
 * per line, leaf first), in order. (Also used by perf-pair.mjs.)
 * @returns an iterable of `{ tid, frames }`: `tid` a number (undefined when the header does not parse),
 *   `frames` `[{ sym, dso }]` leaf first, `sym` without its `+0x…` offset
 */
export function* perfSamples(text) {
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((l) => l.trim())
    if (lines.length < 2) continue
    const header = /^\s*(.*?)\s+(\d+)\s*$/.exec(lines[0])
    const frames = lines.slice(1).map((l) => {
      const m = /^\s*[0-9a-f]+\s+(.*?)\s+\(([^)]*)\)\s*$/.exec(l)
      return m ? { sym: m[1].replace(/\+0x[0-9a-f]+$/, ''), dso: m[2] } : { sym: l.trim(), dso: '' }
    })
    yield { tid: header ? Number(header[2]) : undefined, frames }
  }
}

/**
 * Parses `perf script -F comm,tid,ip,sym,dso` text (a header line `comm tid`, then one frame per
 * line, leaf first); `mainTid` keeps only that thread's samples (the JS thread).
 * @returns { samples, otherThreads, functions, inclusive, groups, leaves }, each row { name, n, pct }
 *   (`inclusive`: samples with the function anywhere on the stack)
 */
export function summarisePerfScript(text, { top = 40, mainTid } = {}) {
  let otherThreads = 0
  const fns = new Map()
  const inclusive = new Map()
  const groups = new Map()
  const leaves = new Map()
  let samples = 0
  const add = (m, k) => m.set(k, (m.get(k) ?? 0) + 1)
  for (const { tid, frames } of perfSamples(text)) {
    if (mainTid !== undefined && tid !== undefined && tid !== mainTid) {
      otherThreads++
      continue
    }
    samples++
    add(leaves, leafKind(frames[0].sym, frames[0].dso))
    const js = frames.find((f) => f.sym.startsWith('JS:') || f.sym.startsWith('LazyCompile:'))
    const name = js ? js.sym.replace(/^(JS|LazyCompile):[*~^]?/, '').replace(/file:\/\/|\/work\/main\//g, '') : '(no JS frame: event loop, GC, native)'
    add(fns, name)
    const onStack = new Set()
    for (const f of frames) if (f.sym.startsWith('JS:') || f.sym.startsWith('LazyCompile:')) onStack.add(f.sym.replace(/^(JS|LazyCompile):[*~^]?/, '').replace(/file:\/\/|\/work\/main\//g, ''))
    for (const n of onStack) add(inclusive, n)
    add(groups, js ? groupOfFrame(js.sym) : '(no JS frame: event loop, GC, native)')
  }
  const rows = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, n]) => ({ name, n, pct: +((100 * n) / samples).toFixed(1) }))
  return { samples, otherThreads, functions: rows(fns), inclusive: rows(inclusive), groups: rows(groups), leaves: rows(leaves) }
}

/** Renders a summary as text. */
export function formatPerfSummary(s, title = '') {
  const out = [`${title}perf: ${s.samples} samples of the JS thread${s.otherThreads ? ` (+${s.otherThreads} of other threads: GC helpers, libuv pool)` : ''}; each is charged to its nearest JS frame`, '', 'By package / folder:']
  for (const g of s.groups) out.push(`  ${String(g.pct).padStart(5)}%  ${g.name}`)
  out.push('', 'By JS function (self + the builtins, GC, native and kernel work it caused):')
  for (const f of s.functions) out.push(`  ${String(f.pct).padStart(5)}%  ${f.name}`)
  if (s.inclusive) {
    out.push('', 'By JS function, inclusive (samples with the function anywhere on the stack):')
    for (const f of s.inclusive) out.push(`  ${String(f.pct).padStart(5)}%  ${f.name}`)
  }
  out.push('', 'Leaf frames by kind:')
  for (const f of s.leaves) out.push(`  ${String(f.pct).padStart(5)}%  ${f.name}`)
  return out.join('\n')
}

/**
 * Records `seconds` of the process `pid` with `perf record -g` (software event cpu-clock at `frequency`
 * Hz, call graphs) into `file`. Resolves once perf has written the file; rejects with an Error that
 * carries perf's exit code and stderr when perf is missing, not allowed (perf_event_paranoid > 2) or
 * fails, or when no file was written.
 */
export function perfRecord(pid, file, seconds, frequency = 999) {
  return new Promise((ok, fail) => {
    const args = ['record', '-q', '-e', 'cpu-clock', '-F', String(frequency), '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)]
    const p = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    p.stderr.on('data', (c) => (err += c))
    p.once('error', (e) => fail(new Error(`perf record -p ${pid} could not start: ${e.message}`)))
    p.once('exit', (code) => (code === 0 && existsSync(file) ? ok() : fail(new Error(`perf record -p ${pid} failed (exit ${code}): ${err.trim()}`))))
  })
}

/** Runs `perf script` on a perf.data file, in the format summarisePerfScript reads. */
export function perfScript(file) {
  return execFileSync('perf', ['script', '-i', file, '-F', 'comm,tid,ip,sym,dso'], { maxBuffer: 1 << 30, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2]
  if (!file) {
    process.stderr.write('usage: node bench/perf-summary.mjs <perf.data> [--top 40]\n')
    process.exit(1)
  }
  const i = process.argv.indexOf('--top')
  const top = i > 0 ? Number(process.argv[i + 1]) : 40
  const j = process.argv.indexOf('--tid')
  const mainTid = j > 0 ? Number(process.argv[j + 1]) : undefined
  process.stdout.write(`${formatPerfSummary(summarisePerfScript(perfScript(file), { top, mainTid }))}\n`)
}
