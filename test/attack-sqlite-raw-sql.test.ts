/**
 * Attack: raw SQL (`rawSql: true`) on SQLite may not reach another file or code, however the statement
 * is written. `ATTACH`/`DETACH`, `VACUUM INTO`, `load_extension()` and `PRAGMA` are refused with 400
 * `TRB_ERR_DB_RAW_REFUSED` through comments, case, whitespace, quoting, leading semicolons, a second
 * statement, a CTE, a trigger or a view; nothing is attached, no file is written, the connection keeps
 * its settings; ordinary raw SQL (and the words inside string literals and comments) still runs. The
 * gateway runs in production mode: the guard holds on every deployment that enables raw SQL.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import Database from 'better-sqlite3'
import { database, resolveConfig } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { explainRefusal, rawSqliteRefusal } from '../gateway/connectors/database/sqlite-raw-guard.js'

const dir = mkdtempSync(join(tmpdir(), 'trb-raw-sqlite-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const file = join(dir, 'notes.sqlite')
const secret = join(dir, 'secret.sqlite')
const copy = join(dir, 'copy.sqlite')
{
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT NOT NULL)')
  db.close()
  new Database(secret).exec('CREATE TABLE secret (v TEXT); INSERT INTO secret VALUES (1)')
}

const ops = join(dir, 'operations')
mkdirSync(ops)
writeFileSync(join(ops, 'Execute.graphql'), 'mutation Execute($q: String!) { db_executeRaw(query: $q) }\n')
writeFileSync(join(ops, 'Query.graphql'), 'query Query($q: String!) { db_queryRaw(query: $q) }\n')
const config = resolveConfig({
  datasources: [database({ namespace: 'db', url: `sqlite:${file}`, rawSql: true })],
  operations: { dir: ops },
  generatedDir: join(dir, 'generated'),
  mode: 'production',
})
const { url: base } = await serveGateway(t, config, { cwd: dir })
/** An operation's answer: the data's fields, or `errors`. */
type Body = Record<string, unknown> & { errors?: { message: string; extensions: { code: string } }[] }
/** Runs `query` through the stored operation of `field` (POST /operations/…): HTTP status and body. */
const raw = async (field: 'db_executeRaw' | 'db_queryRaw', query: string) => {
  const res = await fetch(`${base}/operations/${field === 'db_executeRaw' ? 'Execute' : 'Query'}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ q: query }) })
  return { status: res.status, body: (await res.json()) as Body }
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`
const attacks: string[] = [
  `ATTACH ${q(secret)} AS s`,
  `attach database ${q(secret)} as s`,
  `/* a comment */ AtTaCh\n\t${q(secret)} AS "s"`,
  `-- line comment\nATTACH ${q(secret)} AS s`,
  `;;  ATTACH ${q(secret)} AS s`,
  `DETACH main`,
  `VACUUM INTO ${q(copy)}`,
  `vacuum main into ${q(copy)}`,
  `VACUUM/**/INTO${q(copy)}`,
  `SELECT load_extension('/tmp/evil')`,
  `select LOAD_EXTENSION('/tmp/evil', 'entry')`,
  `select "load_extension"('/tmp/evil')`,
  `select [load_extension]('/tmp/evil')`,
  'select `load_extension`(\'/tmp/evil\')',
  `select load_extension/**/('/tmp/evil')`,
  `WITH c(x) AS (SELECT load_extension('/tmp/evil')) SELECT x FROM c`,
  `SELECT 1 WHERE 0 AND load_extension('/tmp/evil')`,
  `CREATE TRIGGER t_load AFTER INSERT ON note BEGIN SELECT load_extension('/tmp/evil'); END`,
  `CREATE VIEW v_load AS SELECT load_extension('/tmp/evil') AS x`,
  `CREATE TABLE c_load (a CHECK (load_extension('/tmp/evil')))`,
  `SELECT 1; ATTACH ${q(secret)} AS s`,
  `PRAGMA foreign_keys = OFF`,
  `/*x*/pragma writable_schema=1`,
  `PRAGMA main.journal_mode = DELETE`,
]

t.test('statements that reach files or code are refused with a coded 400', async (t) => {
  for (const sql of attacks) {
    for (const field of ['db_executeRaw', 'db_queryRaw'] as const) {
      const res = await raw(field, sql)
      t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_RAW_REFUSED', `${field}: ${JSON.stringify(sql)}`)
      t.equal(res.status, 400)
    }
  }
  t.notOk(existsSync(copy), 'VACUUM INTO wrote nothing')
  const dbs = await raw('db_queryRaw', 'SELECT name FROM pragma_database_list')
  t.same(dbs.body.db_queryRaw, [{ name: 'main' }], 'nothing is attached')
  const fk = await raw('db_queryRaw', 'SELECT foreign_keys FROM pragma_foreign_keys')
  t.same(fk.body.db_queryRaw, [{ foreign_keys: 1 }], 'the connection keeps its settings')
  const objects = await raw('db_queryRaw', "SELECT name FROM sqlite_schema WHERE name LIKE '%_load' ORDER BY name")
  t.same(objects.body.db_queryRaw, [], 'no trigger, view or table calling load_extension was created')
})

t.test('ordinary raw SQL still runs, words in literals and comments included', async (t) => {
  t.same((await raw('db_executeRaw', `INSERT INTO note (body) VALUES ('ATTACH load_extension PRAGMA VACUUM INTO')`)).body, { db_executeRaw: 1 })
  t.same((await raw('db_queryRaw', `/* load_extension, ATTACH */ SELECT body FROM note -- VACUUM INTO 'x'`)).body, { db_queryRaw: [{ body: 'ATTACH load_extension PRAGMA VACUUM INTO' }] })
  const info = await raw('db_queryRaw', `SELECT name FROM pragma_table_info('note') ORDER BY cid`)
  t.same(info.body.db_queryRaw, [{ name: 'id' }, { name: 'body' }], 'read-only pragmas as table-valued functions')
  t.same((await raw('db_queryRaw', 'VACUUM')).body, { db_queryRaw: [] }, 'VACUUM of the database itself (outside a transaction)')
})

t.test('each check refuses on its own', async (t) => {
  // The tokenizer alone (no database).
  for (const sql of attacks) t.ok(rawSqliteRefusal(sql), `tokenizer: ${JSON.stringify(sql)}`)
  t.equal(rawSqliteRefusal(`SELECT 'load_extension(' || "body" FROM note -- ATTACH`), null)
  // SQLite's bytecode alone, on a connection.
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  for (const sql of [`ATTACH ${q(secret)} AS s`, `DETACH s`, `VACUUM INTO ${q(copy)}`, `select "load_extension"('x')`, `select 1 where 0 and load_extension('x')`]) {
    t.ok(explainRefusal(db, sql), `bytecode: ${JSON.stringify(sql)}`)
  }
  t.equal(explainRefusal(db, 'SELECT body FROM note'), null)
  t.equal(explainRefusal(db, 'VACUUM'), null)
})
