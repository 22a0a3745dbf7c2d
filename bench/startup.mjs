#!/usr/bin/env node
/**
 * Demo start-up time (issue 30, "Startup: the demo ready in under 1.5 s after build"): each run starts
 * the gateway as `npm start` does after a build (`node <npm start's flags> dist/gateway/cli.js start`,
 * the demo config, bench/lib/processes.mjs `startGateway`) and measures
 *
 * - `readyMs`: wall time from the spawn to the printed GraphQL URL (the start-up summary);
 * - `cpuMs`: the gateway process' user + system CPU at that moment (/proc/<pid>/stat, 10 ms ticks;
 *   the role service, a process of its own that the demo starts, is not counted). On a shared
 *   machine CPU moves less than wall time;
 * - `load`: the 1-minute load average when the run started.
 *
 *   node scripts/build.mjs --if-needed && node bench/startup.mjs --runs 3
 *
 * The role service gets a free port of its own (`ROLE_SERVICE_PORT`), so runs do not collide with a
 * demo already running. Prints one JSON line per run and one summary line (medians). Target: readyMs < 1500.
 */
import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { cpuTimeOf, freePort, root, startGateway } from './lib/processes.mjs'

const TARGET_READY_MS = 1500
const args = process.argv.slice(2)
const at = args.indexOf('--runs')
const runs = at >= 0 && Number(args[at + 1]) > 0 ? Math.min(Number(args[at + 1]), 20) : 3
if (!existsSync(join(root, 'dist/gateway/cli.js'))) throw new Error('dist/ is missing: run `node scripts/build.mjs` first')

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const results = []
for (let i = 0; i < runs; i++) {
  const load = Math.round(loadavg()[0] * 10) / 10
  const started = performance.now()
  const gateway = await startGateway({ env: { ROLE_SERVICE_PORT: String(await freePort()) } })
  const readyMs = Math.round(performance.now() - started)
  const cpuMs = cpuTimeOf(gateway.pid)
  await gateway.stop()
  const result = { run: i + 1, readyMs, cpuMs, load }
  results.push(result)
  process.stdout.write(`${JSON.stringify(result)}\n`)
}
const readyMs = median(results.map((r) => r.readyMs))
process.stdout.write(`${JSON.stringify({ runs, medianReadyMs: readyMs, medianCpuMs: median(results.map((r) => r.cpuMs)), pass: readyMs < TARGET_READY_MS })}\n`)
