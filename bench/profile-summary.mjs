#!/usr/bin/env node
/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): the top functions by self time, and self
 * time grouped by package / project folder.
 *
 *   node bench/profile-summary.mjs <file.cpuprofile> [--top 30] [--last-ms <ms>]
 *
 * `--last-ms` keeps only the samples of the last <ms> before the profile ended (run.mjs passes the
 * time since the measured runs started, so that startup and warm-up are left out).
 * Also importable: `summarise(profile, { top, lastMs })` returns `{ totalMs, idleMs, functions, groups }`.
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

/** The bucket of a script URL: `node_modules/<pkg>`, a project folder (`gateway/http`), `node:internal`, or `(native)`. */
export function groupOf(url) {
  if (!url) return '(native / V8)'
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm) return nm[1]
  if (url.startsWith('node:')) return 'node:internal'
  const proj = /\/(dist|bench)\/(.*)\/[^/]+$/.exec(url)
  if (proj) return `${proj[1] === 'dist' ? '' : 'bench/'}${proj[2].split('/').slice(0, 3).join('/')}`
  return url.replace(/^file:\/\//, '')
}

/**
 * @param profile a parsed .cpuprofile: { nodes: [{ id, callFrame, children }], samples, timeDeltas, startTime, endTime }
 * @returns self time per function (ms, share of non-idle time) and per group
 */
export function summarise(profile, { top = 30, lastMs } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map()
  // Sample i is taken at startTime + sum(timeDeltas[0..i]) (µs); with `lastMs`, only the samples of
  // the last `lastMs` ms before endTime count (e.g. the load runs, not the startup).
  const from = lastMs ? profile.endTime - lastMs * 1000 : -Infinity
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    if (t < from) continue
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt)
  }
  const fns = new Map()
  const groups = new Map()
  let totalMs = 0
  let idleMs = 0
  for (const [id, ms] of self) {
    const { callFrame: cf } = byId.get(id)
    totalMs += ms
    if (cf.functionName === '(idle)') {
      idleMs += ms
      continue
    }
    const file = cf.url ? cf.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|dist|bench)\//, '$1/') : ''
    const key = `${cf.functionName || '(anonymous)'}  ${file}${cf.url ? `:${cf.lineNumber + 1}` : ''}`
    fns.set(key, (fns.get(key) ?? 0) + ms)
    const g = cf.functionName === '(garbage collector)' ? '(garbage collector)' : cf.functionName === '(program)' ? '(program)' : groupOf(cf.url)
    groups.set(g, (groups.get(g) ?? 0) + ms)
  }
  const busy = totalMs - idleMs
  // Inclusive time: each sample counts once for every distinct function on its stack.
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const keyOf = new Map()
  for (const n of profile.nodes) {
    const cf = n.callFrame
    const file = cf.url ? cf.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|dist|bench)\//, '$1/') : ''
    keyOf.set(n.id, `${cf.functionName || '(anonymous)'}  ${file}${cf.url ? `:${cf.lineNumber + 1}` : ''}`)
  }
  const incl = new Map()
  for (const [id, ms] of self) {
    if (byId.get(id).callFrame.functionName === '(idle)') continue
    const seen = new Set()
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const k = keyOf.get(cur)
      if (seen.has(k)) continue
      seen.add(k)
      incl.set(k, (incl.get(k) ?? 0) + ms)
    }
  }
  const rows = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, ms]) => ({ name, ms: Math.round(ms), pct: +(100 * ms / busy).toFixed(1) }))
  const inclusive = rows(new Map([...incl].filter(([k]) => !/^\((root|program|anonymous)\)  $/.test(k) && !k.startsWith('(root)'))))
  return { totalMs: Math.round(totalMs), idleMs: Math.round(idleMs), busyMs: Math.round(busy), functions: rows(fns), groups: rows(groups), inclusive }
}

/** Renders a summary as text. */
export function formatSummary(s, title = '') {
  const out = [`${title}profile: ${s.totalMs} ms sampled, ${s.idleMs} ms idle, ${s.busyMs} ms busy (percentages are of busy time)`, '', 'Self time by group:']
  for (const g of s.groups) out.push(`  ${String(g.pct).padStart(5)}%  ${String(g.ms).padStart(6)} ms  ${g.name}`)
  out.push('', 'Top functions by self time:')
  for (const f of s.functions) out.push(`  ${String(f.pct).padStart(5)}%  ${String(f.ms).padStart(6)} ms  ${f.name}`)
  if (s.inclusive) {
    out.push('', 'Top functions by inclusive time (self + callees):')
    for (const f of s.inclusive) out.push(`  ${String(f.pct).padStart(5)}%  ${String(f.ms).padStart(6)} ms  ${f.name}`)
  }
  return out.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2]
  if (!file) {
    process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 30]\n')
    process.exit(1)
  }
  const i = process.argv.indexOf('--top')
  const top = i > 0 ? Number(process.argv[i + 1]) : 30
  const j = process.argv.indexOf('--last-ms')
  const lastMs = j > 0 ? Number(process.argv[j + 1]) : undefined
  process.stdout.write(`${formatSummary(summarise(JSON.parse(readFileSync(file, 'utf8')), { top, lastMs }))}\n`)
}
