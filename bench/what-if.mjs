#!/usr/bin/env node
/**
 * What-if for issue 4's `rest` target: how fast could `GET /operations/TodoById?id=1` be if a stored
 * operation whose root fields are all database reads skipped GraphQL execution and the connection
 * pool, and spliced the SQL's JSON into the body? A prototype server, set up like the gateway's
 * fastify app (pino logger instance at warn, a request id per request, @fastify/websocket's hooks,
 * requestTimeout, a `/operations/*` wildcard route, ajv-coerced variables, weak ETag and
 * Cache-Control), A/B against the hand-written baseline with the same harness as run.mjs.
 *
 *   node bench/what-if.mjs [--duration 10] [--rounds 3] [--connections 50]
 *
 * Variants (GET /operations/TodoById?id=1 on the prototype server):
 *   splice  the statement yields the final JSON (Boolean and DateTime done in SQL); the body is
 *           `{"todo_findUniqueTodo":` + row + `}`: no JSON.parse, no execution, no stringify
 *   parse   the gateway's current statement, JSON.parse + post-processing + fast-json-stringify,
 *           but no GraphQL execution and no pool
 * `WHATIF_WITHOUT=logger,reqid,ws,timeout,etag` (any subset) drops those pieces of the gateway's setup
 * from the prototype, to price each one.
 * Not part of `npm run bench`; its figures go in bench/README.md as evidence for a proposed change.
 */
import { randomUUID, createHash } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { root, runLoad, startBaseline, startNode, freePort, cpuTimeOf } from './lib/processes.mjs'

if (process.argv[2] === '--serve') {
  // ---- the prototype server (child process)
  const [, , , port, dbFile] = process.argv
  const { default: Fastify } = await import('fastify')
  const { default: websocket } = await import('@fastify/websocket')
  const { pino } = await import('pino')
  const { Ajv } = await import('ajv')
  const { default: fastJson } = await import('fast-json-stringify')
  // WHATIF_WITHOUT=logger,reqid,ws,timeout,etag drops pieces of the gateway's setup, to price each.
  const without = new Set((process.env.WHATIF_WITHOUT ?? '').split(',').filter(Boolean))
  const app = Fastify({
    ...(without.has('logger') ? { logger: false } : { loggerInstance: pino({ level: 'warn' }) }),
    ...(without.has('reqid') ? {} : { genReqId: () => randomUUID() }),
    ...(without.has('timeout') ? {} : { requestTimeout: 30000 }),
    routerOptions: { ignoreTrailingSlash: true },
  })
  if (!without.has('ws')) await app.register(websocket)
  const db = new Database(dbFile)
  db.pragma('journal_mode = WAL')
  const validate = new Ajv({ coerceTypes: 'array', allErrors: true }).compile({ type: 'object', properties: { id: { type: 'integer' } }, additionalProperties: false })
  const splice = db.prepare(`SELECT json_object('completed', json(CASE WHEN t0."completed" THEN 'true' ELSE 'false' END), 'createdAt', strftime('%Y-%m-%dT%H:%M:%fZ', t0."createdAt"), 'id', t0."id", 'title', t0."title") FROM "Todo" AS t0 WHERE t0."id" = ?`).pluck(true)
  const current = db.prepare(`SELECT json_object('completed', t0."completed", 'createdAt', t0."createdAt", 'id', t0."id", 'title', t0."title") AS j FROM "Todo" AS t0 WHERE t0."id" = ?`).pluck(true)
  const stringify = fastJson({ type: 'object', properties: { todo_findUniqueTodo: { type: ['object', 'null'], properties: { completed: { type: 'boolean' }, createdAt: { type: 'string' }, id: { type: 'integer' }, title: { type: 'string' } } } } })
  const ops = new Map([
    ['splice', (vars) => {
      const rows = splice.all(vars.id)
      return `{"todo_findUniqueTodo":${rows.length ? rows[0] : 'null'}}`
    }],
    ['parse', (vars) => {
      const rows = current.all(vars.id)
      const row = rows.length ? JSON.parse(rows[0]) : null
      if (row) {
        row.completed = row.completed === 1
        row.createdAt = new Date(row.createdAt).toISOString()
      }
      return stringify({ todo_findUniqueTodo: row })
    }],
  ])
  app.route({
    method: ['GET', 'POST'],
    url: '/operations/*',
    handler: (request, reply) => {
      const op = ops.get(request.params['*'])
      if (!op) return reply.code(404).send({ errors: [{ message: 'Unknown operation' }] })
      const vars = { ...request.query }
      if (!validate(vars)) return reply.code(400).send({ errors: validate.errors })
      const body = op(vars)
      if (!without.has('etag')) {
        const etag = `W/"${createHash('sha1').update(body).digest('base64url')}"`
        reply.header('etag', etag).header('cache-control', 'public, max-age=0, must-revalidate')
        if (request.headers['if-none-match'] === etag) return reply.code(304).send()
      }
      return reply.code(200).type('application/json; charset=utf-8').send(body)
    },
  })
  await app.listen({ host: '127.0.0.1', port: Number(port) })
  process.stdout.write(`what-if listening http://127.0.0.1:${port}\n`)
} else {
  // ---- the A/B harness
  const arg = (n, d) => (process.argv.includes(`--${n}`) ? Number(process.argv[process.argv.indexOf(`--${n}`) + 1]) : d)
  const duration = arg('duration', 10)
  const rounds = arg('rounds', 3)
  const connections = arg('connections', 50)
  const work = mkdtempSync(join(tmpdir(), 'tributary-whatif-'))
  const dbFile = join(work, 'todo.sqlite')
  if (!existsSync(join(root, 'data/todo.sqlite'))) throw new Error('needs data/todo.sqlite (run `npm start` once)')
  const src = new Database(join(root, 'data/todo.sqlite'), { readonly: true })
  await src.backup(dbFile)
  src.close()
  const port = await freePort()
  const proto = await startNode({ name: 'what-if', args: [join(root, 'bench/what-if.mjs'), '--serve', String(port), dbFile], env: { ...process.env }, ready: /what-if listening/ })
  const base = await startBaseline(['--todo-db', dbFile])
  const say = (t) => process.stdout.write(`${t}\n`)
  const targets = {
    baseline: { url: `${base.url}/todo?id=1`, pid: base.pid },
    splice: { url: `http://127.0.0.1:${port}/operations/splice?id=1`, pid: proto.pid },
    parse: { url: `http://127.0.0.1:${port}/operations/parse?id=1`, pid: proto.pid },
  }
  for (const [name, t] of Object.entries(targets)) {
    const res = await fetch(t.url)
    say(`${name.padEnd(8)} ${await res.text()}`)
  }
  const run = async (name, d) => {
    const t = targets[name]
    const c0 = cpuTimeOf(t.pid)
    const r = await runLoad({ label: name, url: t.url, duration: d, connections })
    if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
    return { reqPerSec: Math.round(r.reqPerSec), cpu: Math.round((100 * (cpuTimeOf(t.pid) - c0)) / (r.duration * 1000)) }
  }
  try {
    for (const name of Object.keys(targets)) await run(name, 3)
    const ratios = { splice: [], parse: [] }
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? ['baseline', 'splice', 'parse'] : ['parse', 'splice', 'baseline']
      const got = {}
      for (const name of order) {
        got[name] = await run(name, duration)
        say(`round ${round} ${name.padEnd(8)} ${got[name].reqPerSec.toLocaleString('en-US').padStart(7)} req/s  server CPU ${got[name].cpu} %`)
      }
      for (const v of ['splice', 'parse']) ratios[v].push(+(got[v].reqPerSec / got.baseline.reqPerSec).toFixed(3))
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
    say(`ratios to the baseline: splice ${ratios.splice.join(', ')} (median ${median(ratios.splice)}); parse ${ratios.parse.join(', ')} (median ${median(ratios.parse)})`)
  } finally {
    await proto.stop()
    await base.stop()
    rmSync(work, { recursive: true, force: true })
  }
}
