#!/usr/bin/env node
/**
 * Where the time of one `GET /operations/CustomersWithCountry?take=50` (examples/federation, the
 * `linked` scenario) goes, in process: the whole operation, the root field alone, the SQL statement
 * in the gateway process and through a SQLite worker process, the single REST call alone, next to the
 * hand-written route's stages. A diagnostic for issue 9's ratio (run.mjs measures the ratio itself):
 * "µs" lines are wall time per call, one call at a time; "µs CPU" lines are this process' CPU time
 * per call (user + system, every thread) with 50 calls in flight, best of 3 runs.
 *
 *   node bench/linked-path.mjs [--iterations 2000]
 *   ONLY="CPU: " node bench/linked-path.mjs          # only the lines whose label contains the text
 *   VARIANTS=1 node bench/linked-path.mjs            # also the link with stubbed resolvers/targets
 *   CONC=1,5,50 ONLY=CONC node bench/linked-path.mjs # CPU per call at several concurrencies
 *   PROFILE_SECONDS=10 node --cpu-prof bench/linked-path.mjs  # only the linked query (QUERY=… for another), 50 in flight
 *
 * Uses a temp copy of examples/chinook/chinook.sqlite; starts the countries API as its own process.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { pino } from 'pino'
import { Pool } from 'undici'
import { root, startNode, freePort } from './lib/processes.mjs'

const i = process.argv.indexOf('--iterations')
const N = i > 0 ? Number(process.argv[i + 1]) : 2000

const work = mkdtempSync(join(tmpdir(), 'tributary-linkedpath-'))
const dbFile = join(work, 'chinook.sqlite')
{
  const src = new Database(join(root, 'examples/chinook/chinook.sqlite'), { readonly: true })
  await src.backup(dbFile)
  src.close()
}
const port = await freePort()
const countries = await startNode({
  name: 'countries',
  args: [join(root, 'dist/examples/federation/services/countries.js')],
  env: { ...process.env, COUNTRIES_PORT: String(port) },
  ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  timeoutMs: 30_000,
})
const countriesUrl = countries.match[1]
process.env.CHINOOK_DATABASE_URL = `sqlite:${dbFile}`
process.env.COUNTRIES_API_URL = countriesUrl
process.env.REVIEWS_API_URL = 'http://127.0.0.1:9' // not used by this operation
process.chdir(root)

const { loadConfigFile } = await import(join(root, 'dist/gateway/config/load.js'))
const { createGateway } = await import(join(root, 'dist/gateway/runtime.js'))

const logger = pino({ level: 'warn' })
const config = await loadConfigFile(join(root, 'examples/federation/config.ts'))

const gateway = await createGateway(config, { logger })
const op = gateway.operations.get('CustomersWithCountry')

// PROFILE_SECONDS=<s>: only the linked query through graphql-jit, 50 in flight, for a CPU profile of that work.
  const { parse } = await import('graphql')
const opVars = op.variablesFromQuery({ take: '50' })
async function cpuPer(label, fn, n = 1500) {
  let best = Infinity
  for (let r = 0; r < 3; r++) {
    let i = 0; const c0 = process.cpuUsage()
    await Promise.all(Array.from({ length: 50 }, async () => { while (i++ < n) await fn() }))
    const c = process.cpuUsage(c0); best = Math.min(best, (c.user + c.system) / n)
  }
  console.log(label.padEnd(50), best.toFixed(1), 'µs CPU')
}
const sample = (await op.execute(opVars, { headers: {} })).data
const text = op.stringifyData(sample)
console.log('body bytes', text.length)
await cpuPer('op.execute', () => op.execute(opVars, { headers: {} }))
await cpuPer('op.stringifyData', async () => op.stringifyData(sample))
await cpuPer('JSON.stringify', async () => JSON.stringify(sample))
await cpuPer('op.execute', () => op.execute(opVars, { headers: {} }))
await cpuPer('op.stringifyData', async () => op.stringifyData(sample))
await gateway.close(); await countries.stop(); rmSync(work, { recursive: true, force: true })
process.exit(0)
