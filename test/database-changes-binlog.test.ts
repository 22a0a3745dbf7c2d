/**
 * Database change streams read from the MariaDB binary log (README "Database change streams",
 * `changes: { method }`), on a private MariaDB started with `--log-bin --binlog-format=ROW`
 * (test/helpers/private-mariadb.ts; the machine's shared server is never reconfigured):
 * inserts, updates and deletes by a plain mysql2 connection reach `<Model>Changed` subscribers over
 * graphql-ws, `where` and a row filter apply (a delete on its old values), `/health` names the
 * method and its state, a KILLed binlog connection is re-opened from its position (a change made
 * while it was down arrives). On the shared server (log_bin OFF), `auto` takes the triggers, or
 * fails with TRB_ERR_DB_CHANGES_UNAVAILABLE naming log_bin; a failing changelog poll shows in health.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import WebSocket from 'ws'
import { createClient, type Client } from 'graphql-ws'
import mysql from 'mysql2/promise'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import type { SourceHealth } from '../gateway/connectors/types.js'
import { startPrivateMariadb } from './helpers/private-mariadb.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'
import { testContext } from './helpers/database-source.js'
import { mint } from './helpers/auth.js'
import { until } from './helpers/events-gateway.js'

const secret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(secret)
const sign = (sub: string) => mint(key, { sub }, { expiresIn: '1h' })

interface Got {
  events: { data?: Record<string, any> | null; errors?: { message: string; extensions?: { code?: string } }[] }[]
  done: boolean
  error: unknown
}

t.test('binlog on a private MariaDB', async (t) => {
  const server = await startPrivateMariadb()
  if (typeof server === 'string') {
    t.comment(server)
    t.pass('skipped: ' + server)
    return
  }
  t.teardown(() => server.stop())
  const admin = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root' })
  t.teardown(() => admin.end())
  await admin.query('CREATE DATABASE binlog_t CHARACTER SET utf8mb4 COLLATE utf8mb4_bin')
  await admin.query('CREATE TABLE binlog_t.bl_note (id INT PRIMARY KEY, owner_id VARCHAR(40) NOT NULL, title VARCHAR(200) NOT NULL, at DATETIME(3) NULL, body BLOB NULL)')
  await admin.query('CREATE TABLE binlog_t.bl_other (id INT PRIMARY KEY)')

  const dir = mkdtempSync(join(tmpdir(), 'trb-binlog-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [database({ namespace: 'bl', url: `${server.url}/binlog_t`, changes: { method: 'auto', tables: ['bl_note'], maxReconnectDelayMs: 300, maxBufferedEvents: 5000 } })],
    generatedDir: join(dir, 'generated'),
    auth: { jwt: { secret }, graphql: 'public' },
    permissions: { bl_BlNote: { filter: { ownerId: { equals: { claim: 'sub' } } } } },
  })
  const { url } = await serveGateway(t, config, { cwd: dir })
  const health = async () => ((await (await fetch(`${url}/health`)).json()) as { status: string; sources: Record<string, SourceHealth> })
  const h = await health()
  t.same(h.sources['bl']?.changes, { method: 'binlog', status: 'up' }, '/health: auto picked the binlog, up')
  const [triggers] = (await admin.query("SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'binlog_t' AND TABLE_NAME = 'tributary_changes'")) as [{ n: number }[], unknown]
  t.equal(Number(triggers[0]!.n), 0, 'no changelog table was created')

  const clients: Client[] = []
  t.teardown(async () => {
    for (const c of clients) await c.dispose()
  })
  const subscribe = async (user: string, query: string): Promise<Got> => {
    const client = createClient({ url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, connectionParams: { authorization: `Bearer ${await sign(user)}` } })
    clients.push(client)
    const r: Got = { events: [], done: false, error: undefined }
    client.subscribe({ query }, {
      next: (m) => void r.events.push(m as Got['events'][number]),
      error: (e) => ((r.error = e), (r.done = true)),
      complete: () => void (r.done = true),
    })
    return r
  }
  const writer = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root', database: 'binlog_t' })
  t.teardown(() => writer.end())
  const note = (id: number, owner: string, title: string) => writer.query('INSERT INTO bl_note (id, owner_id, title, at, body) VALUES (?, ?, ?, NOW(3), ?)', [id, owner, title, Buffer.from('blob')])
  // Rows 1 and 2 are the warm-up's: its last updates may arrive after it ended, so they are left out.
  const rowsOf = (r: Got) => r.events.map((e) => e.data?.['bl_BlNoteChanged']).filter((e) => e && e.key.id > 2).map((e) => [e.operation, e.key.id, e.new?.title ?? null, e.old?.id ?? null])

  const selection = '{ operation key { id } old { id } new { id title ownerId } }'
  const ada = await subscribe('ada', `subscription { bl_BlNoteChanged ${selection} }`)
  const adaX = await subscribe('ada', `subscription { bl_BlNoteChanged(where: { title: { startsWith: "x" } }) ${selection} }`)
  const bob = await subscribe('bob', `subscription { bl_BlNoteChanged ${selection} }`)
  // Warm-up: rows 1 (ada) and 2 (bob) updated until every subscription saw one event.
  await note(1, 'ada', 'x0')
  await note(2, 'bob', 'x0')
  let n = 0
  while (!(ada.events.length && adaX.events.length && bob.events.length) && n++ < 100) {
    await writer.query('UPDATE bl_note SET title = ? WHERE id IN (1, 2)', [`x${n}`])
    await until(() => !!(ada.events.length && adaX.events.length && bob.events.length), 150)
  }
  t.ok(ada.events.length && adaX.events.length && bob.events.length, 'every subscription runs')
  await new Promise((r) => setTimeout(r, 60))
  for (const s of [ada, adaX, bob]) s.events.length = 0

  const seen = (r: Got, op: string, id: number) => until(() => rowsOf(r).some((e) => e[0] === op && e[1] === id), 15000)
  await note(10, 'ada', 'hello')
  t.ok(await seen(ada, 'INSERT', 10), 'insert seen')
  await writer.query("UPDATE bl_note SET title = 'xray' WHERE id = 10")
  t.ok(await seen(ada, 'UPDATE', 10), 'update seen')
  await note(11, 'bob', 'bob one')
  t.ok(await seen(bob, 'INSERT', 11), "bob's insert seen")
  await writer.query('DELETE FROM bl_note WHERE id = 10')
  t.ok(await seen(ada, 'DELETE', 10), 'delete seen')
  await writer.query("UPDATE bl_note SET title = 'xfence' WHERE id = 11")
  await writer.query('INSERT INTO bl_other (id) VALUES (1)')
  t.ok((await seen(bob, 'UPDATE', 11)) && (await seen(adaX, 'DELETE', 10)), 'the last events arrived')
  await new Promise((r) => setTimeout(r, 50))
  t.same(rowsOf(ada), [['INSERT', 10, 'hello', null], ['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'ada sees her rows: insert, update, delete')
  t.same(rowsOf(bob), [['INSERT', 11, 'bob one', null], ['UPDATE', 11, 'xfence', 11]], "the row filter hides ada's row from bob, even its delete")
  // `new` is the row as it is when the change is read (README): adaX's re-read of the INSERT is its own
  // statement, which can run after the UPDATE below committed (the test waits for ada's only); then it
  // matches `where` and comes as 'xray'. It never comes as 'hello', which does not match.
  const adaXRows = rowsOf(adaX)
  t.notOk(adaXRows.some((e) => e[0] === 'INSERT' && e[2] !== 'xray'), 'where: the insert of a row not matching it is not sent as it was', { adaXRows })
  t.same(adaXRows.filter((e) => e[0] !== 'INSERT'), [['UPDATE', 10, 'xray', 10], ['DELETE', 10, null, 10]], 'where: only changes of rows matching it (a delete on its old values)')

  // A multi-row statement: one event per row.
  await writer.query("INSERT INTO bl_note (id, owner_id, title) VALUES (20, 'ada', 'm'), (21, 'ada', 'm'), (22, 'bob', 'm')")
  // At least once: a binlog connection re-opened mid-transaction replays it, so ids are compared as a set.
  const mIds = () => [...new Set(rowsOf(ada).filter((e) => e[2] === 'm').map((e) => e[1]))].sort()
  const gotM = await until(() => mIds().length >= 2, 15000)
  t.ok(gotM, gotM ? 'a statement of three rows: two events for ada' : `a statement of three rows: two events for ada; got ${JSON.stringify(rowsOf(ada))}, health ${JSON.stringify((await health()).sources['bl']?.changes)}`)
  if (gotM) await new Promise((r) => setTimeout(r, 50))
  t.same(mIds(), [20, 21], "ada's two rows of the statement, not bob's")

  // The server writes a transaction to the binlog before InnoDB makes it visible: the reader waits
  // for the changed rows' locks before handing the changes on (a re-read would otherwise see the old
  // row, as in 'ada sees her rows' above). Another session locking the row right after the commit
  // holds the event back at most until it lets go (whether its lock comes before the reader's check
  // is a race, so only the outcome is asserted): the update arrives, with its new values.
  ada.events.length = 0
  const holder = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root', database: 'binlog_t' })
  t.teardown(() => holder.end())
  await writer.query("UPDATE bl_note SET title = 'locked' WHERE id = 20")
  await holder.query('BEGIN')
  await holder.query('SELECT id FROM bl_note WHERE id = 20 FOR UPDATE')
  await new Promise((r) => setTimeout(r, 300))
  await holder.query('COMMIT')
  t.ok(await seen(ada, 'UPDATE', 20), 'the update arrives')
  t.same(rowsOf(ada).find((e) => e[0] === 'UPDATE' && e[1] === 20), ['UPDATE', 20, 'locked', 20], 'with its new values')

  // Deterministically: a prepared XA transaction is in the binlog while its row locks are held, so
  // the reader has the update before it is visible; the event must still carry the committed values.
  ada.events.length = 0
  await writer.query("XA START 'trbxa'")
  await writer.query("UPDATE bl_note SET title = 'prepared' WHERE id = 21")
  await writer.query("XA END 'trbxa'")
  await writer.query("XA PREPARE 'trbxa'")
  await new Promise((r) => setTimeout(r, 1000))
  const early = rowsOf(ada).find((e) => e[0] === 'UPDATE' && e[1] === 21)
  await writer.query("XA COMMIT 'trbxa'")
  t.ok(await seen(ada, 'UPDATE', 21), 'the XA update arrives')
  t.same(early ?? rowsOf(ada).find((e) => e[0] === 'UPDATE' && e[1] === 21), ['UPDATE', 21, 'prepared', 21], 'with its committed values, also while prepared')

  // A transaction of 1,200 rows is handed on in parts of 500 (the reader holds one part of it, not
  // the whole): every row arrives.
  ada.events.length = 0
  await writer.query('BEGIN')
  await writer.query('INSERT INTO bl_note (id, owner_id, title) VALUES ?', [Array.from({ length: 1200 }, (_, i) => [1000 + i, 'ada', 'bulk'])])
  await writer.query('COMMIT')
  const bulk = () => new Set(rowsOf(ada).filter((e) => e[0] === 'INSERT' && e[2] === 'bulk').map((e) => e[1])).size
  t.ok(await until(() => bulk() === 1200, 30000), `a transaction of 1,200 rows: every insert arrives (got ${bulk()})`)

  // The binlog connection is KILLed: the gateway reconnects from its position, and a change made
  // while it was down arrives.
  const [dumps] = (await admin.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")) as [{ id: number }[], unknown]
  t.equal(dumps.length, 1, 'one binlog dump connection')
  ada.events.length = 0
  await admin.query(`KILL ${dumps[0]!.id}`)
  await note(30, 'ada', 'while down')
  t.ok(await seen(ada, 'INSERT', 30), 'a change made right after the KILL arrives after the reconnect')
  t.same((await health()).sources['bl']?.changes, { method: 'binlog', status: 'up' }, '/health: up again')
  const [again] = (await admin.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")) as [{ id: number }[], unknown]
  t.equal(again.length, 1, 'one binlog dump connection again')

  // A user without REPLICATION privileges: auto falls back (and fails without triggers), binlog refuses.
  await admin.query("CREATE USER 'plain'@'127.0.0.1' IDENTIFIED BY 'pw'")
  await admin.query("GRANT SELECT, INSERT, UPDATE, DELETE ON binlog_t.* TO 'plain'@'127.0.0.1'")
  const { ctx } = testContext('plain')
  const plainUrl = `mysql://plain:pw@127.0.0.1:${server.port}/binlog_t`
  await t.rejects(createDatabaseSource({ url: plainUrl, changes: { method: 'binlog', tables: ['bl_other'] } }, { ...ctx, cwd: dir }), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /REPLICATION SLAVE/ }, 'method binlog without the privilege: the coded error names it')
  await t.rejects(createDatabaseSource({ url: plainUrl, changes: { tables: ['bl_other'] } }, { ...ctx, cwd: dir }), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /REPLICATION SLAVE.*triggers/ }, 'auto without the privilege nor the triggers: the coded error names both')
})

t.test('auto on the shared MariaDB (log_bin OFF)', async (t) => {
  const db = await freshDatabase('mysql', 'binlog')
  if (db.skipReason) {
    t.comment(db.skipReason)
    t.pass('skipped: ' + db.skipReason)
    return
  }
  t.teardown(() => db.cleanup())
  const admin = await mysql.createConnection(db.url)
  t.teardown(() => admin.end())
  await admin.query('CREATE TABLE bl_auto (id INT PRIMARY KEY)')
  const { ctx, dir } = testContext('auto')
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  await t.rejects(createDatabaseSource({ url: db.url, changes: { method: 'binlog' } }, { ...ctx, cwd: dir }), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /log_bin is OFF/ }, 'method binlog: the coded error names log_bin')
  await t.rejects(createDatabaseSource({ url: db.url, changes: {} }, { ...ctx, cwd: dir }), { code: 'TRB_ERR_DB_CHANGES_UNAVAILABLE', message: /log_bin is OFF.*tributary_changes/ }, 'auto without install: the coded error names log_bin and the missing triggers')
  const source = await createDatabaseSource({ url: db.url, changes: { install: true, pollIntervalMs: 20 } }, { ...ctx, cwd: dir })
  t.teardown(() => source.close())
  t.same((await source.health()).changes, { method: 'triggers', status: 'up' }, 'auto with install: the changelog triggers')

  // A failing poll shows in health (item: a broken poller is reported), and recovers.
  await admin.query('RENAME TABLE tributary_changes TO tributary_changes_away')
  await new Promise((r) => setTimeout(r, 100))
  const broken = (await source.health()).changes
  t.equal(broken?.status, 'reconnecting', 'the changelog poll fails: reconnecting')
  t.match(broken?.lastError, /tributary_changes/, 'with the last error')
  await admin.query('RENAME TABLE tributary_changes_away TO tributary_changes')
  await new Promise((r) => setTimeout(r, 100))
  t.same((await source.health()).changes, { method: 'triggers', status: 'up' }, 'up again once the poll works')
})
