/**
 * `tributary init --database` and `start --database` through the real CLI (dist/) on a database that
 * would serve nothing: a missing SQLite file (not created), an empty SQLite file, a PostgreSQL schema
 * without tables (the error names the schemas that have tables and `?schema=`), an empty MySQL database,
 * an unreachable server. Each is refused with one `✖ TRB_ERR_SOURCE_LOAD` line on stderr: no stack
 * trace, no Knex warning before it, and no file written.
 */
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import pg from 'pg'
import { freshDatabase } from './helpers/chinook.js'

// About 20 CLI runs of a few seconds each: 43 s on a quiet machine, 125 s on a loaded one (past
// tap's default 120 s, which killed it once).
t.setTimeout(6 * 60_000)

const root = fileURLToPath(new URL('..', import.meta.url))
const cli = join(root, 'dist/gateway/cli.js')
const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'warn', PORT: '0' }
for (const name of ['TRIBUTARY_CONFIG', 'DATABASE_URL']) delete env[name]

function folder(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-dbcheck-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function cli_(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd, env, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Runs `init --database url` and `start --database url`; both must fail with one line matching `line`, writing nothing. */
function refused(t: Test, url: string, line: RegExp): void {
  for (const command of ['init', 'start']) {
    const dir = folder(t)
    const r = cli_([command, '--database', url], dir)
    t.equal(r.status, 1, `${command} fails`)
    const lines = r.stderr.split('\n').filter((l) => l.trim())
    t.equal(lines.length, 1, `${command}: one line on stderr, no stack trace or Knex warning:\n${r.stderr}`)
    t.match(lines[0], /^✖ TRB_ERR_SOURCE_LOAD: Data source \w+ failed to load: /)
    t.match(lines[0], line)
    t.equal(r.stdout, '', `${command} printed nothing else`)
    t.notOk(existsSync(join(dir, 'tributary.config.ts')), `${command} wrote no config`)
    t.notOk(existsSync(join(dir, 'app.db')), `${command} created no database file`)
  }
}

t.test('a missing SQLite file is refused and not created', async (t) => {
  refused(t, 'sqlite:./app.db', /no SQLite database at \S+app\.db \(nothing was created\); pass sqlite:<path> of an existing database file/)
})

t.test('an empty SQLite database and a file that is not one', async (t) => {
  const dir = folder(t)
  new Database(join(dir, 'empty.db')).close()
  refused(t, `sqlite:${join(dir, 'empty.db')}`, /the SQLite database \S+empty\.db has no tables/)
  writeFileSync(join(dir, 'text.db'), 'not a database, but long enough to have a header of one hundred bytes or so: '.repeat(2))
  refused(t, `sqlite:${join(dir, 'text.db')}`, /text\.db cannot be read as a SQLite database: file is not a database/)
})

t.test('a PostgreSQL schema without tables names the schemas that have some, and ?schema=', async (t) => {
  const empty = await freshDatabase('postgres', 'dbcheck_empty')
  t.teardown(() => empty.cleanup())
  const full = await freshDatabase('postgres', 'dbcheck_full')
  t.teardown(() => full.cleanup())
  if (empty.skipReason || full.skipReason) return void t.skip(String(empty.skipReason ?? full.skipReason), async () => {})
  const client = new pg.Client({ connectionString: full.url.replace(/\?schema=.*/, '') })
  await client.connect()
  await client.query(`create table "${full.schema}".artist (id serial primary key, name text not null); create table "${full.schema}".album (id serial primary key, title text not null); insert into "${full.schema}".artist (name) values ('AC/DC')`)
  await client.end()
  refused(t, empty.url, new RegExp(`the PostgreSQL schema "${empty.schema}" of database "\\w+" has no tables; schemas with tables: .*${full.schema} \\(2 tables\\).*; pass \\?schema=<name> \\(postgres://.*\\?schema=`))

  // The schema named: init writes a working project, as a user's would be.
  const dir = folder(t)
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(root, join(dir, 'node_modules/tributary-gateway'), 'dir')
  const init = cli_(['init', '--database', full.url], dir)
  t.equal(init.status, 0, init.stderr)
  t.match(readFileSync(join(dir, 'operations/Example.graphql'), 'utf8'), /findManyAlbum\(take: \$take\)/)
  const gen = cli_(['generate'], dir)
  t.equal(gen.status, 0, gen.stderr)
  t.match(readFileSync(join(dir, 'generated/schema.graphql'), 'utf8'), /findManyArtist/)
})

t.test('an empty MySQL database names the databases that have tables', async (t) => {
  const empty = await freshDatabase('mysql', 'dbcheck_empty')
  t.teardown(() => empty.cleanup())
  if (empty.skipReason) return void t.skip(empty.skipReason, async () => {})
  refused(t, empty.url, new RegExp(`the MySQL database "${empty.schema}" has no tables(; databases with tables: .+; pass mysql://…/<database>|, and no other)`))
})

t.test('an unreachable server: one line, without the Knex warning and its stack', async (t) => {
  refused(t, 'postgres://postgres@127.0.0.1:1/none', /cannot read postgres:\/\/postgres@127\.0\.0\.1:1\/none: connect ECONNREFUSED/)
  refused(t, 'mysql://root@127.0.0.1:1/none', /cannot read mysql:\/\/root@127\.0\.0\.1:1\/none: .*ECONNREFUSED/)

  // A config file's database, unreachable at startup: the same clean line.
  const dir = folder(t)
  writeFileSync(join(dir, 'tributary.config.mjs'), `export default { datasources: [{ kind: 'database', namespace: 'shop', url: 'postgres://postgres@127.0.0.1:1/none' }] }\n`)
  const r = cli_(['start'], dir)
  t.equal(r.status, 1)
  const lines = r.stderr.split('\n').filter((l) => l.trim())
  t.equal(lines.length, 1, `one line on stderr:\n${r.stderr}`)
  t.match(lines[0], /^✖ TRB_ERR_SOURCE_LOAD: Data source shop failed to load: .*ECONNREFUSED/)
})

t.test('--help says what --database needs and names ?schema=', async (t) => {
  const r = cli_(['--help'], root)
  t.match(r.stdout, /must exist and have tables/)
  t.match(r.stdout, /\?schema=<name>/)
})
