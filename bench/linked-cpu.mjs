#!/usr/bin/env node
/**
 * CPU time per request of each process of the `linked` scenario (issue 9), next to req/s: the
 * gateway's own process, its child processes (SQLite workers), the hand-written baseline and the
 * countries API. On a machine shared with other work, CPU per request is steadier than req/s.
 *
 *   node bench/linked-cpu.mjs            # R=2 rounds, D=8 s runs, -c 50
 *   ONLY_GW=1 GW_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p" node bench/linked-cpu.mjs
 *
 * Starts the countries and reviews APIs, the gateway (`--config examples/federation/config.ts`) and
 * the baseline (`--linked-db/--linked-sql/--countries-url`) on a temp copy of the Chinook database.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { root, startNode, startGateway, startBaseline, freePort, cpuTimeOf, runLoad } from './lib/processes.mjs'
const work = mkdtempSync(join(tmpdir(), 'ls-cpu-'))
const db = join(work, 'c.sqlite')
{ const s = new Database(join(root, 'examples/chinook/chinook.sqlite'), { readonly: true }); await s.backup(db); s.close() }
const svc = async (name, envPort) => { const port = await freePort(); const h = await startNode({ name, args: [join(root, `dist/examples/federation/services/${name}.js`)], env: { ...process.env, [envPort]: String(port) }, ready: /listening on (http:\/\/127\.0\.0\.1:\d+)/, timeoutMs: 30000 }); return { ...h, url: h.match[1] } }
const countries = await svc('countries', 'COUNTRIES_PORT')
const reviews = await svc('reviews', 'REVIEWS_PORT')
const sql = `SELECT json_object('customerId', t0."CustomerId", 'firstName', t0."FirstName", 'lastName', t0."LastName", 'country', t0."Country") AS j FROM "Customer" AS t0 ORDER BY t0."CustomerId" ASC LIMIT ?`
writeFileSync(join(work, 'sql.json'), JSON.stringify({ sql, bindings: [50] }))
const gw = await startGateway({ config: 'examples/federation/config.ts', nodeArgs: process.env.GW_NODE_ARGS ? process.env.GW_NODE_ARGS.split(' ') : [], env: { CHINOOK_DATABASE_URL: `sqlite:${db}`, COUNTRIES_API_URL: countries.url, REVIEWS_API_URL: reviews.url } })
const base = await startBaseline(['--linked-db', db, '--linked-sql', join(work, 'sql.json'), '--countries-url', countries.url])
const kids = (pid) => { try { return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) } catch { return [] } }
const tree = (pid) => [pid, ...kids(pid).flatMap(tree)]
const cpu = (pids) => pids.reduce((a, p) => { try { return a + cpuTimeOf(p) } catch { return a } }, 0)
const D = Number(process.env.D || 8)
async function measure(label, url, pid) {
  await runLoad({ label, url, duration: 2, connections: 50 })
  const pids = tree(pid)
  const c0 = cpuTimeOf(pid), w0 = cpu(pids.slice(1)), k0 = cpuTimeOf(countries.pid)
  const r = await runLoad({ label, url, duration: D, connections: 50 })
  const pids2 = tree(pid)
  const n = r.requests.total
  const main = cpuTimeOf(pid) - c0, work = cpu(pids2.slice(1)) - w0, ctry = cpuTimeOf(countries.pid) - k0
  console.log(`${label.padEnd(9)} ${Math.round(r.reqPerSec)} req/s  CPU µs/req: main ${(main * 1000 / n).toFixed(0)}  children ${(work * 1000 / n).toFixed(0)}  countries ${(ctry * 1000 / n).toFixed(0)}  errors ${r.errors + r.non2xx}`)
  return { rps: r.reqPerSec, per: (main + work) * 1000 / n }
}
const rounds = Number(process.env.R || 2)
for (let i = 0; i < rounds; i++) {
  const b = process.env.ONLY_GW ? { rps: 1, per: 1 } : await measure('baseline', `${base.url}/linked`, base.pid)
  const g = await measure('gateway', `${gw.url}/operations/CustomersWithCountry?take=50`, gw.pid)
  console.log(`  ratio req/s ${(g.rps / b.rps).toFixed(3)}  CPU/req ratio (base ÷ gw, servers only) ${(b.per / g.per).toFixed(3)}`)
}
await gw.stop(); await base.stop(); await countries.stop(); await reviews.stop()
rmSync(work, { recursive: true, force: true })
