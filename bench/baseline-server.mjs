#!/usr/bin/env node
/**
 * The hand-written baseline of the load benchmarks: a plain fastify + better-sqlite3 server, in its
 * own process, doing what a developer would write by hand for the same reads.
 *
 *   node bench/baseline-server.mjs --port <n> [--todo-db <file> [--spin-us <µs>]] [--chinook-db <file> --chinook-sql <json file>] [--roles-url <url>]
 *
 * Routes:
 * - `GET /todo?id=1` (issue 4): `select completed, createdAt, id, title from Todo where id = ?` with a
 *   prepared statement, answered as `{"todo_findUniqueTodo":{completed,createdAt,id,title}}` (Boolean as
 *   boolean, DateTime as an ISO 8601 UTC string), the same body as `GET /operations/TodoById?id=1`. The
 *   route has a querystring schema (id: integer, coerced) and a response schema (fast-json-stringify),
 *   as an idiomatic fastify route does. With `--spin-us <n>` (the `calibration` scenario), each request
 *   also busy-waits n µs of CPU after its statement: a hand-written route that does n µs more work.
 * - `GET /chinook` (issue 3): runs the single SQL statement the gateway sends for the nested
 *   artists → albums → tracks query (captured from the gateway's debug log; `--chinook-sql` is a JSON
 *   file `{ sql, bindings, rootField }`), and returns its JSON rows as they come from SQLite, joined
 *   into `{"data":{"<rootField>":[...]}}` without parsing them.
 *
 * - `GET /roles` (issue 11, with `--roles-url <role service URL>`): GET `/api/v1/role/all` on the role
 *   service through an undici Pool, answered as `{"system_getAllRoles":[...]}`, the same body as
 *   `GET /operations/Roles` of the gateway (bench/roles/).
 *
 * - `GET /linked` (issue 9, with `--linked-db <file> --linked-sql <json file> --countries-url <url>`): runs
 *   the SQL read of `GET /operations/CustomersWithCountry?take=50` of examples/federation as a
 *   developer writes it (`{ sql, bindings }`: run.mjs gives the four columns as `json_object`), then the single REST call
 *   it makes, `GET /countries?names=<distinct countries, in row order>` on the countries API through an
 *   undici Pool, and joins them by country into the same body as the stored operation.
 *
 * Prints `baseline listening http://127.0.0.1:<port>` once it serves. No request logging.
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import Database from 'better-sqlite3'
import { Pool } from 'undici'

function arg(name) {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}

const port = Number(arg('port') ?? 0)
const todoDb = arg('todo-db')
const chinookDb = arg('chinook-db')
const chinookSql = arg('chinook-sql')
const rolesUrl = arg('roles-url')
const linkedDb = arg('linked-db')
const linkedSql = arg('linked-sql')
const countriesUrl = arg('countries-url')
const spinNs = BigInt(Math.round(Number(arg('spin-us') ?? 0) * 1000))

const app = Fastify({ logger: false })

/** SQLite stores DateTime as ISO text (or CURRENT_TIMESTAMP's `YYYY-MM-DD HH:MM:SS`, UTC) or epoch ms. */
function toIso(v) {
  if (v === null || v === undefined) return null
  if (typeof v === 'number') return new Date(v).toISOString()
  const s = String(v)
  return new Date(/[zZ]$|[+-]\d\d:?\d\d$/.test(s) ? s : `${s.replace(' ', 'T')}Z`).toISOString()
}

if (todoDb) {
  const db = new Database(todoDb, { fileMustExist: true })
  db.pragma('journal_mode = WAL')
  const byId = db.prepare('select completed, createdAt, id, title from Todo where id = ?')
  app.get(
    '/todo',
    {
      schema: {
        querystring: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
        response: {
          200: {
            type: 'object',
            properties: {
              todo_findUniqueTodo: {
                type: ['object', 'null'],
                properties: {
                  completed: { type: 'boolean' },
                  createdAt: { type: 'string' },
                  id: { type: 'integer' },
                  title: { type: 'string' },
                },
              },
            },
          },
        },
      },
    },
    async (request) => {
      const row = byId.get(request.query.id)
      if (spinNs > 0n) for (const until = process.hrtime.bigint() + spinNs; process.hrtime.bigint() < until; );
      return {
        todo_findUniqueTodo: row ? { completed: row.completed === 1 || row.completed === true, createdAt: toIso(row.createdAt), id: row.id, title: row.title } : null,
      }
    },
  )
}

if (chinookDb && chinookSql) {
  const { sql, bindings, rootField } = JSON.parse(readFileSync(chinookSql, 'utf8'))
  const db = new Database(chinookDb, { fileMustExist: true })
  db.pragma('journal_mode = WAL')
  const stmt = db.prepare(sql).pluck(true)
  const head = `{"data":{${JSON.stringify(rootField)}:[`
  app.get('/chinook', async (_request, reply) => {
    const rows = stmt.all(...bindings)
    return reply.type('application/json; charset=utf-8').send(`${head}${rows.join(',')}]}}`)
  })
}

if (rolesUrl) {
  // What a developer would write by hand with undici: one keep-alive pool to the role service.
  const roles = new Pool(rolesUrl)
  app.get('/roles', async () => {
    const res = await roles.request({ method: 'GET', path: '/api/v1/role/all', headers: { accept: 'application/json' } })
    if (res.statusCode !== 200) throw new Error(`role service answered ${res.statusCode}`)
    return { system_getAllRoles: await res.body.json() }
  })
}

if (linkedDb && linkedSql && countriesUrl) {
  const { sql, bindings } = JSON.parse(readFileSync(linkedSql, 'utf8'))
  const db = new Database(linkedDb, { fileMustExist: true })
  db.pragma('journal_mode = WAL')
  const stmt = db.prepare(sql).pluck(true)
  const countries = new Pool(countriesUrl)
  app.get('/linked', async () => {
    const rows = stmt.all(...bindings).map((r) => JSON.parse(r))
    const names = [...new Set(rows.map((r) => r.country).filter((c) => c != null))]
    const res = await countries.request({ method: 'GET', path: `/countries?names=${encodeURIComponent(names.join(','))}`, headers: { accept: 'application/json' } })
    if (res.statusCode !== 200) throw new Error(`countries API answered ${res.statusCode}`)
    const byName = new Map((await res.body.json()).map((c) => [c.name, c]))
    return {
      chinook_findManyCustomer: rows.map((r) => {
        const c = byName.get(r.country)
        return { customerId: r.customerId, firstName: r.firstName, lastName: r.lastName, countryInfo: c ? { capital: c.capital, currency: c.currency } : null }
      }),
    }
  })
}

await app.listen({ host: '127.0.0.1', port })
process.stdout.write(`baseline listening http://127.0.0.1:${app.server.address().port}\n`)
const close = () => app.close().then(() => process.exit(0))
process.on('SIGTERM', close)
process.on('SIGINT', close)
