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
 * Uses a temp copy of examples/chinook/chinook.sqlite; starts the countries and reviews APIs as their own processes.
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
// Not called by this operation, but the gateway introspects it at startup.
const reviews = await startNode({
  name: 'reviews',
  args: [join(root, 'dist/examples/federation/services/reviews.js')],
  env: { ...process.env, REVIEWS_PORT: String(await freePort()) },
  ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  timeoutMs: 30_000,
})
process.env.CHINOOK_DATABASE_URL = `sqlite:${dbFile}`
process.env.COUNTRIES_API_URL = countriesUrl
process.env.REVIEWS_API_URL = reviews.match[1]
process.chdir(root)

const { loadConfigFile } = await import(join(root, 'dist/gateway/config/load.js'))
const { createGateway } = await import(join(root, 'dist/gateway/runtime.js'))

const logger = pino({ level: 'warn' })
const config = await loadConfigFile(join(root, 'examples/federation/config.ts'))

const gateway = await createGateway(config, { logger })
const op = gateway.operations.get('CustomersWithCountry')

// PROFILE_SECONDS=<s>: only the linked query through graphql-jit, 50 in flight, for a CPU profile of that work.
if (process.env.PROFILE_SECONDS) {
  const { parse } = await import('graphql')
  const { compileQuery } = await import('graphql-jit')
  const source = process.env.QUERY ?? '{ chinook_findManyCustomer(take: 50, orderBy: [{ customerId: asc }]) { customerId firstName lastName countryInfo { capital currency } } }'
  const compiled = compileQuery(gateway.schema, parse(source))
  if (!('query' in compiled)) throw new Error(JSON.stringify(compiled))
  let calls = 0
  const c0 = process.cpuUsage()
  const end = Date.now() + Number(process.env.PROFILE_SECONDS) * 1000
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (Date.now() < end) {
      const r = await compiled.query(undefined, { headers: {} }, {})
      if (r.errors) throw new Error(JSON.stringify(r.errors))
      calls++
    }
  }))
  const c = process.cpuUsage(c0)
  process.stdout.write(`${calls} calls in ${process.env.PROFILE_SECONDS} s: ${((c.user + c.system) / calls).toFixed(1)} µs CPU per call\n`)
  await gateway.close()
  await countries.stop()
  await reviews.stop()
  rmSync(work, { recursive: true, force: true })
  process.exit(0)
}

const only = process.env.ONLY
async function time(label, fn, n = N) {
  if (only && !label.includes(only)) return 0
  for (let k = 0; k < Math.min(300, n); k++) await fn()
  const t0 = performance.now()
  for (let k = 0; k < n; k++) await fn()
  const us = ((performance.now() - t0) * 1000) / n
  process.stdout.write(`${label.padEnd(70)} ${us.toFixed(1).padStart(8)} µs\n`)
  return us
}

/** CPU µs per call (user + system of this process) with `concurrency` calls in flight, best of `runs`. */
async function cpuPer(label, fn, { concurrency = 50, n = N, runs = 3 } = {}) {
  if (only && !label.includes(only)) return 0
  let best = Infinity
  for (let r = 0; r < runs + 1; r++) {
    let left = n
    const c0 = process.cpuUsage()
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await fn()
    }))
    const c = process.cpuUsage(c0)
    if (r > 0) best = Math.min(best, (c.user + c.system) / n)
  }
  process.stdout.write(`${label.padEnd(70)} ${best.toFixed(1).padStart(8)} µs CPU\n`)
  return best
}

const ctx = { headers: {} }
process.stdout.write(`GET /operations/CustomersWithCountry?take=50, ${N} iterations each, one at a time\n\ngateway:\n`)
const vars = op.variablesFromQuery({ take: '50' })
let result
await time('op.execute({ take: 50 }) (whole operation)', async () => {
  result = await op.execute(vars, ctx)
})
if (result?.errors) throw new Error(JSON.stringify(result.errors))
{
  const opVars = op.variablesFromQuery({ take: '50' })
  await cpuPer('CPU: op.execute + stringifyData, 50 in flight', async () => {
    const r = await op.execute(opVars, { headers: {} })
    op.stringifyData(r.data)
  })
  const bdb = new Database(dbFile)
  const bstmt = bdb.prepare(`SELECT json_object('customerId', t0."CustomerId", 'firstName', t0."FirstName", 'lastName', t0."LastName", 'country', t0."Country") AS j FROM "Customer" AS t0 ORDER BY t0."CustomerId" ASC LIMIT ?`).pluck(true)
  const bpool = new Pool(countriesUrl)
  await cpuPer('CPU: the baseline route body (SQL + Pool + join + stringify)', async () => {
    const rows = bstmt.all(50).map((r) => JSON.parse(r))
    const names = [...new Set(rows.map((r) => r.country).filter((c) => c != null))]
    const res = await bpool.request({ method: 'GET', path: `/countries?names=${encodeURIComponent(names.join(','))}`, headers: { accept: 'application/json' } })
    const byName = new Map((await res.body.json()).map((c) => [c.name, c]))
    JSON.stringify({ chinook_findManyCustomer: rows.map((r) => { const c = byName.get(r.country); return { customerId: r.customerId, firstName: r.firstName, lastName: r.lastName, countryInfo: c ? { capital: c.capital, currency: c.currency } : null } }) })
  })
  await bpool.close()
  bdb.close()
}
if (result) await time("op.stringifyData(data)", () => op.stringifyData(result.data))
{
  const { parse } = await import('graphql')
  const { compileQuery } = await import('graphql-jit')
  const jit = (source) => {
    const c = compileQuery(gateway.schema, parse(source))
    if (!('query' in c)) throw new Error(JSON.stringify(c))
    return async () => {
      const r = await c.query(undefined, { headers: {} }, {})
      if (r.errors) throw new Error(JSON.stringify(r.errors))
      return r
    }
  }
  await cpuPer('CPU: graphql-jit { chinook_findManyCustomer(take: 50) { 4 columns } }', jit('{ chinook_findManyCustomer(take: 50, orderBy: [{ customerId: asc }]) { customerId firstName lastName country } }'))
  const names24 = 'Argentina,Australia,Austria,Belgium,Brazil,Canada,Chile,Czech Republic,Denmark,Finland,France,Germany,Hungary,India,Ireland,Italy,Netherlands,Norway,Poland,Portugal,Spain,Sweden,USA,United Kingdom'
  await cpuPer('CPU: graphql-jit { geo_listCountries(names: <24>) { name capital currency } }', jit(`{ geo_listCountries(names: "${names24}") { name capital currency } }`))
  const linkedQuery = '{ chinook_findManyCustomer(take: 50, orderBy: [{ customerId: asc }]) { customerId firstName lastName countryInfo { capital currency } } }'
  await cpuPer('CPU: graphql-jit the linked query, inline take: 50', jit(linkedQuery))
  if (process.env.CONC) for (const c of (process.env.CONC === '1' ? [1, 5, 20, 50] : process.env.CONC.split(',').map(Number))) {
    await cpuPer(`CPU: CONC ${c} linked query`, jit(linkedQuery), { concurrency: c })
    await cpuPer(`CPU: CONC ${c} geo_listCountries`, jit(`{ geo_listCountries(names: "${names24}") { name capital currency } }`), { concurrency: c })
  }
  await cpuPer('CPU: graphql-jit both root fields side by side, no link', jit(`{ chinook_findManyCustomer(take: 50, orderBy: [{ customerId: asc }]) { customerId firstName lastName country } geo_listCountries(names: "${names24}") { name capital currency } }`))
  if (process.env.VARIANTS) {
    const field = gateway.schema.getType('chinook_Customer').getFields().countryInfo
    const original = field.resolve
    field.resolve = () => Promise.resolve(null)
    await cpuPer('CPU: VARIANT countryInfo resolves Promise.resolve(null)', jit(linkedQuery))
    field.resolve = () => null
    await cpuPer('CPU: VARIANT countryInfo resolves null synchronously', jit(linkedQuery))
    field.resolve = () => Promise.resolve({ name: 'x', capital: 'c', currency: 'EUR', callingCode: '+1' })
    await cpuPer('CPU: VARIANT countryInfo resolves Promise.resolve(<country>)', jit(linkedQuery))
    field.resolve = original
    {
      const target = gateway.schema.getQueryType().getFields().geo_listCountries
      const targetResolve = target.resolve
      const all = await targetResolve(undefined, {}, { headers: {} }, {})
      target.resolve = () => Promise.resolve(all.map((c) => ({ ...c })))
      await cpuPer('CPU: VARIANT the link with a stub target (a list of every country, no REST call)', jit(linkedQuery))
      target.resolve = (src, _args, ctx, info) => targetResolve(src, { names: names24 }, ctx, info)
      await cpuPer('CPU: VARIANT the link, its target called with the 24 names of the root-field query', jit(linkedQuery))
      target.resolve = targetResolve
    }
    field.resolve = original
    const target = gateway.schema.getQueryType().getFields().geo_listCountries
    const targetResolve = target.resolve
    let calls = 0, linkSync = 0, targetSync = 0, parents = 0, targetAsync = 0
    target.resolve = (...a) => {
      calls++
      const t0 = performance.now()
      const r = targetResolve(...a)
      targetSync += performance.now() - t0
      const t1 = performance.now()
      return Promise.resolve(r).then((v) => { targetAsync += performance.now() - t1; return v })
    }
    field.resolve = (...a) => {
      parents++
      const t0 = performance.now()
      const r = original(...a)
      linkSync += performance.now() - t0
      return r
    }
    {
      const g = jit(`{ geo_listCountries(names: "${names24}") { name capital currency } }`)
      for (let k = 0; k < 200; k++) await g()
      calls = 0; targetAsync = 0
      for (let k = 0; k < 500; k++) await g()
      process.stdout.write(`root field geo_listCountries, one at a time: target call wall ${(targetAsync * 1000 / 500).toFixed(1)} µs\n`)
      calls = 0; targetAsync = 0; targetSync = 0
    }
    const q = jit(linkedQuery)
    const n = 500
    for (let k = 0; k < n; k++) await q()
    process.stdout.write(`per operation: ${calls / n} target calls, ${parents / n} link resolves; sync µs: link resolves ${(linkSync * 1000 / n).toFixed(1)}, target resolver ${(targetSync * 1000 / n).toFixed(1)}; target call wall ${(targetAsync * 1000 / n).toFixed(1)} µs\n`)
    field.resolve = original
    target.resolve = targetResolve
  }
}

const sql = `SELECT json_object('customerId', t0."CustomerId", 'firstName', t0."FirstName", 'lastName', t0."LastName", 'country', t0."Country") AS j FROM "Customer" AS t0 ORDER BY t0."CustomerId" ASC LIMIT ?`
process.stdout.write('\nstatement alone:\n')
const db = new Database(dbFile)
const stmt = db.prepare(sql).pluck(true)
await time('better-sqlite3 in process .all(50) + JSON.parse', () => JSON.parse(`[${stmt.all(50).join(',')}]`))
{
  const { SqliteWorkers } = await import(join(root, 'dist/gateway/connectors/database/sqlite-workers.js'))
  const w = new SqliteWorkers(dbFile, 1, 10_000)
  await time('SqliteWorkers.run(values) round trip (1 worker)', () => w.run({ mode: 'values', sql, bindings: [50] }))
  await time('SqliteWorkers.run(values, tiny statement "select 1")', () => w.run({ mode: 'values', sql: 'select 1', bindings: [] }))
  w.close()
}

process.stdout.write('\nREST call alone:\n')
const names = [...new Set(JSON.parse(`[${stmt.all(50).join(',')}]`).map((r) => r.country))]
const pool = new Pool(countriesUrl)
await time('undici Pool GET /countries?names=… + body.json()', async () => {
  const res = await pool.request({ method: 'GET', path: `/countries?names=${encodeURIComponent(names.join(','))}`, headers: { accept: 'application/json' } })
  await res.body.json()
})
await pool.close()

await gateway.close()
db.close()
await countries.stop()
await reviews.stop()
rmSync(work, { recursive: true, force: true })
