#!/usr/bin/env node
/**
 * In-process cost of the metrics probes one request runs on the hottest path (a stored database
 * query: GET /operations/TodoById): one response counted, one operation observed, one SQL statement
 * timed. Measured in a tight loop with process CPU time, so it holds on a busy machine where the
 * `metrics` A/B of run.mjs cannot resolve a few per cent. Needs `npm run build`.
 *
 *   node bench/metrics-probes.mjs [iterations=500000]
 */
import { cpuUsage } from 'node:process'
import { enableMetrics } from '../dist/gateway/observability/metrics.js'
import { observeOperation, observers, startStatement } from '../dist/gateway/observability/probes.js'

const n = Number(process.argv[2] ?? 500_000)
const work = () => Promise.resolve(1)

async function perRequest() {
  await observeOperation('TodoById', async () => {
    const end = startStatement('todo', 'sqlite', 'select 1')
    end?.()
    return work()
  })
  observers.metrics?.countRequest('/operations/*', 'GET', 200)
}

async function measure(label) {
  for (let i = 0; i < 50_000; i++) await perRequest()
  const t0 = cpuUsage()
  for (let i = 0; i < n; i++) await perRequest()
  const t = cpuUsage(t0)
  const us = (t.user + t.system) / n
  console.log(`${label.padEnd(12)} ${us.toFixed(3)} µs CPU per request (${n.toLocaleString('en-US')} iterations)`)
  return us
}

const off = await measure('metrics off')
enableMetrics()
const on = await measure('metrics on')
console.log(`probe cost: ${(on - off).toFixed(3)} µs per request`)
