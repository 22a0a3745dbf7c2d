/**
 * `tributary init` (gateway/scaffold.ts) in-process: namespaces from URLs, the files it writes, and
 * a project scaffolded with no database and with a real PostgreSQL database, each loaded and served.
 * test/adoption-package.test.ts runs the same command from the installed package on SQLite.
 */
import t, { type Test } from 'tap'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { namespaceFromUrl, scaffold } from '../gateway/scaffold.js'
import { resolveConfig } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { freshDatabase } from './helpers/chinook.js'
import pg from 'pg'

const root = fileURLToPath(new URL('..', import.meta.url))

function project(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-scaffold-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The scaffolded config imports 'tributary', as in a project that installed the package.
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(root, join(dir, 'node_modules', 'tributary-gateway'), 'dir')
  return dir
}

async function serveProject(t: Test, dir: string) {
  // tap already runs TypeScript through tsx, so the config is imported directly here; the CLI's own
  // loading of a user's .ts config is tested through the installed package (test/adoption-package.test.ts).
  const mod = (await import(pathToFileURL(join(dir, 'tributary.config.ts')).href)) as { default: unknown }
  const config = resolveConfig(mod.default)
  const gateway = await createGateway({ ...config, operations: { ...config.operations, dir: join(dir, 'operations') }, generatedDir: join(dir, 'generated') }, { logger: pino({ level: 'silent' }), cwd: dir })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  return app
}

t.test('namespaceFromUrl', async (t) => {
  t.equal(namespaceFromUrl('sqlite:./app.db'), 'app')
  t.equal(namespaceFromUrl('sqlite:/data/my-shop.v2.sqlite'), 'my_shop_v2')
  t.equal(namespaceFromUrl('postgres://u:p@127.0.0.1:5432/shop?schema=x'), 'shop')
  t.equal(namespaceFromUrl('mysql://root@127.0.0.1/2024_sales'), 'db_2024_sales')
  t.equal(namespaceFromUrl('postgres://127.0.0.1'), 'db')
  t.equal(namespaceFromUrl('sqlite:__x__.db'), 'x')
})

t.test('init without a database: a local schema source that serves at once', async (t) => {
  const dir = project(t)
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'mine', scripts: { start: 'node server.js' } }))
  const lines: string[] = []
  await scaffold({ cwd: dir, force: false, log: (l) => lines.push(l) })
  t.match(lines.join('\n'), /wrote tributary\.config\.ts/)
  t.equal(readFileSync(join(dir, '.gitignore'), 'utf8'), 'node_modules\n# Tributary: cached introspection of the data sources\ngenerated/sources\n')
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  t.same(pkg.scripts, { start: 'node server.js', dev: 'tributary dev', generate: 'tributary generate' }, 'an existing script is kept')
  const app = await serveProject(t, dir)
  const res = await app.inject({ method: 'GET', url: '/operations/Example?name=you' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { hello_greeting: 'Hello, you!' })

  lines.length = 0
  await scaffold({ cwd: dir, force: false, log: (l) => lines.push(l) })
  t.match(lines.join('\n'), /kept tributary\.config\.ts/)
  t.match(lines.join('\n'), /kept \.gitignore/)
  t.equal(readFileSync(join(dir, '.gitignore'), 'utf8').match(/generated\/sources/g)?.length, 1, 'the .gitignore entry is not repeated')
})

t.test('init --database with an unreachable database writes nothing', async (t) => {
  const dir = project(t)
  await t.rejects(scaffold({ cwd: dir, database: 'postgres://postgres@127.0.0.1:1/none', force: false, log: () => {} }), { code: 'TRB_ERR_SOURCE_LOAD' })
  t.throws(() => readFileSync(join(dir, 'tributary.config.ts')), { code: 'ENOENT' })
})

t.test('init --database on PostgreSQL: the example operation reads a real table', async (t) => {
  const db = await freshDatabase('postgres', 'scaffold')
  t.teardown(() => db.cleanup())
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return
  }
  const client = new pg.Client({ connectionString: db.url.replace(/\?schema=.*/, '') })
  await client.connect()
  await client.query(`create table "${db.schema}".author (id serial primary key, name text not null); insert into "${db.schema}".author (name) values ('Ursula'), ('Octavia')`)
  await client.end()
  const dir = project(t)
  await scaffold({ cwd: dir, database: db.url, namespace: 'lib', force: false, log: () => {} })
  t.match(readFileSync(join(dir, 'operations/Example.graphql'), 'utf8'), /lib_findManyAuthor\(take: \$take\)/)
  const app = await serveProject(t, dir)
  const res = await app.inject({ method: 'GET', url: '/operations/Example?take=2' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { lib_findManyAuthor: [{ id: 1, name: 'Ursula' }, { id: 2, name: 'Octavia' }] })
})
