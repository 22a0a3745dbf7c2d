/**
 * Attack (issue 22, item 8): a database that goes away answers 503 `TRB_ERR_DB_UNAVAILABLE` with
 * `Retry-After`, never 500 `TRB_ERR_INTERNAL`, and `/health/ready` names the source that is down.
 *
 * PostgreSQL and MariaDB are reached through a TCP proxy on 127.0.0.1 that the test closes (its
 * listener and every socket through it), as a database host going away does, and opens again to see
 * the gateway recover. The SQLite file is removed under the running gateway (its open connections
 * would keep reading and writing the unlinked file: the gateway checks the file itself), and a
 * worker process started on a missing file reports SQLITE_CANTOPEN.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Knex } from 'knex'
import { database, resolveConfig } from '../gateway/config/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { SqliteWorkers } from '../gateway/connectors/database/sqlite-workers.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { unavailableReason } from '../gateway/connectors/database/db-errors.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'
import { eventually } from './helpers/eventually.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] }

const UNAVAILABLE = 'TRB_ERR_DB_UNAVAILABLE'
const ACQUIRE_TIMEOUT_MS = 2000

const migrations = {
  '001-unavailable': {
    async up(knex: Knex) {
      await knex.schema.createTable('unav_item', (tb) => {
        tb.integer('id').primary()
        tb.string('name', 50).notNullable()
      })
      await knex('unav_item').insert([{ id: 1, name: 'one' }])
    },
  },
}

/**
 * A TCP proxy on 127.0.0.1 to `port`: `close()` stops listening and cuts every connection; `open()`
 * listens again on the same port, forwarding, or with `'blackhole'` accepting connections and never
 * answering (a server host gone from the network).
 */
async function tcpProxy(t: Test, port: number) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let listenPort = 0
  const open = (mode: 'forward' | 'blackhole' = 'forward') =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        if (mode === 'blackhole') {
          sockets.add(client)
          client.on('close', () => sockets.delete(client))
          client.on('error', () => client.destroy())
          return
        }
        const upstream = connect(port, '127.0.0.1')
        for (const s of [client, upstream]) {
          sockets.add(s)
          s.on('close', () => sockets.delete(s))
          s.on('error', () => s.destroy())
        }
        client.pipe(upstream).pipe(client)
      })
      server.once('error', reject)
      server.listen(listenPort, '127.0.0.1', () => {
        const a = server!.address()
        listenPort = typeof a === 'object' && a ? a.port : 0
        resolve()
      })
    })
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      if (!server) return resolve()
      server.close(() => resolve())
      server = undefined
    })
  await open()
  t.teardown(close)
  /** The local ports of the connections to the server: the server's view of the gateway's sessions. */
  const upstreamPorts = () => [...sockets].filter((s) => s.remotePort === port).map((s) => s.localPort)
  return { port: () => listenPort, open, close, upstreamPorts }
}

async function start(t: Test, url: string) {
  const dir = mkdtempSync(join(tmpdir(), 'trb-unav-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Items.graphql'), 'query Items { u_findManyUnavItem(orderBy: [{ id: asc }]) { id name } }\n')
  writeFileSync(join(dir, 'operations', 'AddItem.graphql'), 'mutation AddItem($id: Int!) { u_createOneUnavItem(data: { id: $id, name: "added" }) { id } }\n')
  const config = resolveConfig({
    // rawSql: a statement that sleeps, to cut its connection while it runs.
    // pool.acquireTimeoutMs: the server that never answers (below) is reported after 2 s, not the default 10 s.
    datasources: [database({ namespace: 'u', url, migrations, rawSql: true, pool: { acquireTimeoutMs: ACQUIRE_TIMEOUT_MS } })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
  })
  const { url: base } = await serveGateway(t, config, { cwd: dir })
  const call = async (path: string, init?: RequestInit) => {
    const res = await fetch(`${base}${path}`, init)
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Body & Record<string, unknown> }
  }
  const gql = (query: string) => call('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
  return { call, gql }
}

const codes = (b: Body) => (b.errors ?? []).map((e) => e.extensions?.code)
const READ = '{ u_findManyUnavItem(orderBy: [{ id: asc }]) { id name } }'

/** Every way in answers the coded 503 with Retry-After (on /graphql too, when nothing was answered); /health/ready names the source. */
async function assertUnavailable(t: Test, { call, gql }: Awaited<ReturnType<typeof start>>) {
  const read = await gql(READ)
  t.same(codes(read.body), [UNAVAILABLE], `/graphql query: ${JSON.stringify(read.body)}`)
  t.equal(read.status, 503, '/graphql: nothing answered, so 503 like a full worker queue')
  t.equal(read.retryAfter, '5', '/graphql: Retry-After')
  t.match(read.body.errors?.[0]?.message ?? '', /^The database of source u is unavailable: /)
  t.notMatch(JSON.stringify(read.body), /127\.0\.0\.1|5432|3306|ECONN|sqlite:/, 'no host, port, driver code or path')
  const write = await gql('mutation { u_createOneUnavItem(data: { id: 2, name: "two" }) { id } }')
  t.same(codes(write.body), [UNAVAILABLE], '/graphql mutation')
  t.equal(write.status, 503, '/graphql mutation: 503')
  t.equal(write.retryAfter, '5')
  const op = await call('/operations/Items')
  t.equal(op.status, 503, 'GET /operations/Items: 503')
  t.same(codes(op.body), [UNAVAILABLE])
  t.equal(op.retryAfter, '5', '/operations: Retry-After')
  const opWrite = await call('/operations/AddItem', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 3 }) })
  t.equal(opWrite.status, 503, 'POST /operations/AddItem: 503')
  t.same(codes(opWrite.body), [UNAVAILABLE])
  t.equal(opWrite.retryAfter, '5')
  const ready = await call('/health/ready')
  t.equal(ready.status, 503, '/health/ready: 503')
  t.equal((ready.body['sources'] as Record<string, { status: string }>)['u']?.status, 'down', `/health/ready names the source: ${JSON.stringify(ready.body)}`)
}

for (const dialect of ['postgres', 'mysql'] as Dialect[]) {
  t.test(`${dialect}: the server goes away, then comes back`, async (t) => {
    const db = await freshDatabase(dialect, 'db_unavailable')
    if (db.skipReason) {
      t.comment(db.skipReason)
      t.pass('skipped: ' + db.skipReason)
      return
    }
    t.teardown(() => db.cleanup())
    const real = new URL(db.url)
    const proxy = await tcpProxy(t, Number(real.port || (dialect === 'postgres' ? 5432 : 3306)))
    const viaProxy = new URL(db.url)
    viaProxy.hostname = '127.0.0.1'
    viaProxy.port = String(proxy.port())
    const gw = await start(t, viaProxy.toString())
    t.same((await gw.gql(READ)).body, { data: { u_findManyUnavItem: [{ id: 1, name: 'one' }] } }, 'up through the proxy')

    // A statement running when the connection goes (pg: "Connection terminated unexpectedly";
    // mysql2: PROTOCOL_CONNECTION_LOST), seen running on the server first.
    const sleep = dialect === 'postgres' ? 'SELECT pg_sleep(30) AS unav_sleep' : 'SELECT SLEEP(30) AS unav_sleep'
    const running = gw.gql(`{ u_queryRaw(query: "${sleep}") }`)
    const { knex } = createKnex(db.url, { cwd: process.cwd() })
    t.teardown(async () => {
      // The server's side of the cut statement sleeps on: ended here.
      if (dialect === 'postgres') await knex.raw("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%AS unav_sleep'")
      else for (const r of ((await knex.raw("SELECT id FROM information_schema.processlist WHERE info LIKE '%AS unav_sleep'")) as { id: number }[][])[0]) await knex.raw(`KILL ${Number(r.id)}`).catch(() => undefined)
      await knex.destroy()
    })
    const activity = dialect === 'postgres' ? "SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE '%AS unav_sleep' AND state = 'active'" : "SELECT count(*) AS n FROM information_schema.processlist WHERE info LIKE '%AS unav_sleep'"
    const rowsOf = (r: unknown) => (dialect === 'postgres' ? (r as { rows: { n: string }[] }).rows : (r as { n: number }[][])[0])
    t.ok(await eventually(async () => Number(rowsOf(await knex.raw(activity))[0]?.n) > 0), 'the statement runs')
    await proxy.close()
    const cut = await running
    t.same(codes(cut.body), [UNAVAILABLE], `a statement whose connection is cut: ${JSON.stringify(cut.body)}`)
    t.match(cut.body.errors?.[0]?.message ?? '', /connection (lost|reset)/)
    t.equal(cut.retryAfter, '5')

    await assertUnavailable(t, gw)

    await proxy.open()
    t.ok(await eventually(async () => (await gw.gql(READ)).body.data !== null), 'answers again once the server is back')
    t.equal((await gw.call('/health/ready')).status, 200)

    // The server ends the gateway's sessions (pg_terminate_backend / KILL, as a failover or an admin
    // does): never an internal error; the pool replaces them.
    const ports = proxy.upstreamPorts()
    t.ok(ports.length > 0)
    if (dialect === 'postgres') await knex.raw(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_port IN (${ports.map(Number).join(', ')})`)
    else {
      const ids = ((await knex.raw(`SELECT id FROM information_schema.processlist WHERE SUBSTRING_INDEX(host, ':', -1) IN (${ports.map((p) => `'${Number(p)}'`).join(', ')})`)) as { id: number }[][])[0]
      t.ok(ids.length > 0, 'the sessions are found')
      for (const r of ids) await knex.raw(`KILL ${Number(r.id)}`)
    }
    const afterKill = await gw.gql(READ)
    t.ok(afterKill.body.data !== null || codes(afterKill.body)[0] === UNAVAILABLE, `a session ended by the server: ${JSON.stringify(afterKill.body)}`)
    t.ok(await eventually(async () => (await gw.gql(READ)).body.data !== null), 'then answers again')

    // A server that accepts and never answers: the pool's acquire timeout (pool.acquireTimeoutMs,
    // here 2 s) ends the wait (not the OS's TCP timeout), on MySQL too (before its 5 s connect timeout).
    await proxy.close()
    await proxy.open('blackhole')
    // (A pooled connection cut by close() may answer "connection lost" first.)
    const waitedFrom = Date.now()
    let silent = await gw.gql(READ)
    if (/connection lost/.test(silent.body.errors?.[0]?.message ?? '')) silent = await gw.gql(READ)
    const waited = Date.now() - waitedFrom
    t.same(codes(silent.body), [UNAVAILABLE], `a server that never answers: ${JSON.stringify(silent.body)}`)
    t.ok(waited < ACQUIRE_TIMEOUT_MS + 3000, `answered within the acquire timeout: ${waited} ms`)
    t.match(silent.body.errors?.[0]?.message ?? '', /connection timed out|acquire timeout/)
  })
}

t.test('sqlite: the database file is removed under the running gateway', async (t) => {
  const db = await freshDatabase('sqlite', 'db_unavailable')
  t.teardown(() => db.cleanup())
  const gw = await start(t, db.url)
  t.same((await gw.gql(READ)).body, { data: { u_findManyUnavItem: [{ id: 1, name: 'one' }] } })
  const file = db.url.slice('sqlite:'.length)
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true })
  // Statements check the file at most once a second.
  t.ok(await eventually(async () => codes((await gw.gql(READ)).body)[0] === UNAVAILABLE), 'reads stop')
  await assertUnavailable(t, gw)
})

t.test('sqlite: a worker process on a file it cannot open reports SQLITE_CANTOPEN', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trb-unav-missing-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const workers = new SqliteWorkers(join(dir, 'missing.sqlite'), 1, 10_000)
  t.teardown(() => workers.close())
  const err = await workers.run({ mode: 'values', sql: 'SELECT 1', bindings: [] }).then(() => null, (e: unknown) => e as { code?: string })
  t.equal(err?.code, 'SQLITE_CANTOPEN', 'the driver code, not "the worker process exited"')
  t.equal(unavailableReason(err, 'sqlite'), 'the database file cannot be opened')
})
