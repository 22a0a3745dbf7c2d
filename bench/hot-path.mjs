#!/usr/bin/env node
/**
 * Where the time of one `GET /operations/TodoById?id=1` goes, in process and without sockets: each
 * stage of the gateway's request path timed in a tight loop, next to the hand-written route's stages,
 * and the whole fastify apps through `inject()`. A diagnostic for issue 4's ratio (run.mjs measures
 * the ratio itself); numbers are µs per call on this machine.
 *
 *   node bench/hot-path.mjs [--iterations 20000]
 *
 * Uses a temp copy of data/todo.sqlite (or a fresh, seeded database when there is none); starts no
 * server and no side service.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import { pino } from 'pino'
import { root } from './lib/processes.mjs'

const i = process.argv.indexOf('--iterations')
const N = i > 0 ? Number(process.argv[i + 1]) : 20000

const work = mkdtempSync(join(tmpdir(), 'tributary-hotpath-'))
const dbFile = join(work, 'todo.sqlite')
if (existsSync(join(root, 'data/todo.sqlite'))) {
  const src = new Database(join(root, 'data/todo.sqlite'), { readonly: true })
  await src.backup(dbFile)
  src.close()
}
process.env.TODO_DATABASE_URL = `sqlite:${dbFile}`
process.chdir(root)

const { loadConfigFile } = await import(join(root, 'dist/gateway/config/load.js'))
const { createGateway } = await import(join(root, 'dist/gateway/runtime.js'))
const { buildApp } = await import(join(root, 'dist/gateway/http/app.js'))
const { weakEtag } = await import(join(root, 'dist/gateway/http/operations-routes.js'))

const logger = pino({ level: 'warn' })
const config = await loadConfigFile(join(root, 'config.ts'))
const gateway = await createGateway(config, { logger })
const op = gateway.operations.get('TodoById')

async function time(label, fn, n = N) {
  for (let k = 0; k < Math.min(2000, n); k++) await fn()
  const t0 = performance.now()
  for (let k = 0; k < n; k++) await fn()
  const us = ((performance.now() - t0) * 1000) / n
  process.stdout.write(`${label.padEnd(64)} ${us.toFixed(2).padStart(8)} µs\n`)
  return us
}
const timeSync = (label, fn, n = N) => time(label, fn, n)

process.stdout.write(`hot path of GET /operations/TodoById?id=1, ${N} iterations each\n\ngateway stages:\n`)
const ctx = { headers: {} }
let vars
await timeSync('op.variablesFromQuery({ id: "1" }) (ajv, coercion)', () => {
  vars = op.variablesFromQuery({ id: '1' })
})
let result
await time('op.execute(vars) (graphql-jit + resolver + SQL + JSON.parse)', async () => {
  result = await op.execute(vars, ctx)
})
let body
await timeSync('op.stringifyData(data) (fast-json-stringify)', () => {
  body = op.stringifyData(result.data)
})
await timeSync('weakEtag(body) (sha1 + base64url)', () => weakEtag(body))

process.stdout.write('\nSQL alone (better-sqlite3, same file):\n')
const db = new Database(dbFile)
const gatewaySql = `SELECT json_object('completed', t0."completed", 'createdAt', t0."createdAt", 'id', t0."id", 'title', t0."title") AS j FROM "Todo" AS t0 WHERE t0."id" = ?`
const g = db.prepare(gatewaySql).pluck(true)
await timeSync('gateway SQL (json_object), .pluck().all(1) + JSON.parse', () => JSON.parse(g.all(1)[0]))
const b = db.prepare('select completed, createdAt, id, title from Todo where id = ?')
await timeSync('baseline SQL, .get(1)', () => b.get(1))
await timeSync('baseline SQL .get(1) + shape + toISOString + JSON.stringify', () => {
  const r = b.get(1)
  return JSON.stringify({ todo_findUniqueTodo: { completed: r.completed === 1, createdAt: new Date(r.createdAt).toISOString(), id: r.id, title: r.title } })
})

process.stdout.write('\nsingle costs on the path (candidates for removal):\n')
{
  const { createKnex } = await import(join(root, 'dist/gateway/connectors/database/connection.js'))
  const { Db } = await import(join(root, 'dist/gateway/connectors/database/compiler/db.js'))
  const { toIsoDateTime } = await import(join(root, 'dist/gateway/scalars.js'))
  const { createHash, hash } = await import('node:crypto')
  const { knex } = createKnex(`sqlite:${dbFile}`)
  const d = new Db(knex, 'sqlite')
  await timeSync('Db.values(gateway SQL) (tarn acquire + prepared stmt + release)', () => d.values(gatewaySql, [1]))
  const conn = await d.acquire()
  await timeSync('Db.values(gateway SQL, conn) (connection already held)', () => d.values(gatewaySql, [1], conn))
  await d.release(conn)
  await timeSync('knex.client.acquireConnection() + releaseConnection() (tarn)', async () => {
    const c = await knex.client.acquireConnection()
    await knex.client.releaseConnection(c)
  })
  await knex.destroy()
  await timeSync('toIsoDateTime("2026-11-20T09:00:00.000Z") (regexes + Date, ×2 per value today)', () => toIsoDateTime('2026-11-20T09:00:00.000Z'))
  await timeSync('createHash("sha1").update(body).digest("base64url")', () => createHash('sha1').update(body).digest('base64url'))
  if (typeof hash === 'function') await timeSync('crypto.hash("sha1", body, "base64url") (one-shot, node ≥ 20.12)', () => hash('sha1', body, 'base64url'))
  const child = logger.child({ reqId: 'x' })
  await timeSync('pino logger.child({ reqId }) (fastify, per request)', () => logger.child({ reqId: 'a6f0c2de-0000-4000-8000-000000000000' }))
  void child
  await time('await Promise.resolve() ×5 (a chain of async hops)', async () => {
    for (let k = 0; k < 5; k++) await Promise.resolve()
  })
}

process.stdout.write('\nwhole apps through inject() (no socket):\n')
const app = await buildApp(gateway, { logger })
await app.ready()
const base = Fastify({ logger: false })
base.get('/todo', {
  schema: {
    querystring: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
    response: { 200: { type: 'object', properties: { todo_findUniqueTodo: { type: ['object', 'null'], properties: { completed: { type: 'boolean' }, createdAt: { type: 'string' }, id: { type: 'integer' }, title: { type: 'string' } } } } } },
  },
}, async (request) => {
  const r = b.get(request.query.id)
  return { todo_findUniqueTodo: { completed: r.completed === 1, createdAt: new Date(r.createdAt).toISOString(), id: r.id, title: r.title } }
})
await base.ready()
const n = Math.max(2000, Math.floor(N / 4))
const bi = await time('baseline  GET /todo?id=1', () => base.inject({ method: 'GET', url: '/todo?id=1' }), n)
const gi = await time('gateway   GET /operations/TodoById?id=1', () => app.inject({ method: 'GET', url: '/operations/TodoById?id=1' }), n)
const gq = await time('gateway   POST /graphql (TodoById)', () => app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: { query: op.stored.source, variables: { id: 1 }, operationName: 'TodoById' } }), n)
process.stdout.write(`\ninject ratios (baseline µs ÷ gateway µs): operations ${(bi / gi).toFixed(2)}, /graphql ${(bi / gq).toFixed(2)}\n`)

await app.close()
await base.close()
await gateway.close()
db.close()
rmSync(work, { recursive: true, force: true })
