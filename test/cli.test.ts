/**
 * The CLI as a user runs it: `tributary start` brings up the role service and the gateway and prints
 * every URL; `tributary generate` fails on an invalid operation naming file, line and column.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

const root = fileURLToPath(new URL('..', import.meta.url))
const cli = join(root, 'dist/gateway/cli.js')

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

t.test('start prints its sources, operations and URLs, and serves them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cli-'))
  const [port, rolePort] = [await freePort(), await freePort()]
  const child = spawn(process.execPath, [cli, 'start'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), ROLE_SERVICE_PORT: String(rolePort), SYSTEM_API_URL: '', TODO_DATABASE_URL: `sqlite:${join(dir, 'todo.sqlite')}`, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  const deadline = Date.now() + 60_000
  while (!out.includes('Health') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100))
  t.match(out, /Tributary is up/, out)
  const base = `http://127.0.0.1:${port}`
  t.match(out, new RegExp(`GraphQL\\s+${base}/graphql`))
  t.match(out, new RegExp(`${base}/operations/TodoById`))
  t.match(out, new RegExp(`${base}/operations/TodoAndRoles`))
  t.match(out, new RegExp(`role service\\s+http://127.0.0.1:${rolePort}`))
  t.match(out, new RegExp(`Health\\s+${base}/health \\(also /health/live, /health/ready\\)`))
  t.match(out, new RegExp(`Metrics\\s+${base}/metrics \\(Prometheus; from 127.0.0.1, ::1\\)`), 'the metrics URL, and who may read it')
  t.match(out, /todo\s+database/)
  t.match(out, /system\s+rest/)

  const todo = await fetch(`${base}/operations/TodoById?id=1`)
  t.equal(todo.status, 200)
  t.same(await todo.json(), { todo_findUniqueTodo: { completed: true, createdAt: '2026-11-20T09:00:00.000Z', id: 1, title: 'Read docs/architecture.md' } })
  const both = await fetch(`${base}/operations/TodoAndRoles`)
  t.equal(((await both.json()) as any).system_getAllRoles[0].code, 'admin')
  for (const path of ['/health/live', '/health/ready', '/metrics']) t.equal((await fetch(`${base}${path}`)).status, 200, `${path} as printed`)
  const roles = await fetch(`http://127.0.0.1:${rolePort}/api/v1/role/all`)
  t.equal(roles.status, 200)

  // A client (a browser, a load balancer) holds a connection it has not used yet: shutdown does not wait for it.
  const silent = connect(port, '127.0.0.1')
  await new Promise((resolve) => silent.once('connect', resolve))
  t.teardown(() => silent.destroy())
  const stopping = Date.now()
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exits cleanly on SIGTERM')
  t.ok(Date.now() - stopping < 8000, `stopped in ${Date.now() - stopping} ms, before close-with-grace's 10 s limit`)
  const after = await fetch(`http://127.0.0.1:${rolePort}/api/v1/role/all`).then(() => 'up', () => 'down')
  t.equal(after, 'down', 'the role service stopped with the gateway')
})

t.test('generate fails on an invalid operation, naming file, line and column', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cli-bad-'))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'config.js'), `export default { datasources: [{ kind: 'schema', typeDefs: 'type Query { hello: String }' }], operations: { dir: ${JSON.stringify(join(dir, 'operations'))} }, generatedDir: ${JSON.stringify(join(dir, 'generated'))} }\n`)
  writeFileSync(join(dir, 'operations/Good.graphql'), 'query Good { hello }\n')
  writeFileSync(join(dir, 'operations/Bad.graphql'), 'query Bad {\n  hello\n  goodbye\n}\n')
  const res = spawnSync(process.execPath, [cli, 'generate', '--config', join(dir, 'config.js')], { cwd: root, encoding: 'utf8' })
  t.equal(res.status, 1)
  t.match(res.stderr, /TRB_ERR_OPERATION_INVALID/)
  t.match(res.stderr, /operations\/Bad\.graphql:3:3: Cannot query field "goodbye" on type "Query"/)
})

t.test('the startup summary of a deployment without operations has no empty Operations: header', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cli-noops-'))
  writeFileSync(join(dir, 'tributary.config.mjs'), `export default { datasources: [{ kind: 'schema', namespace: 'meta', typeDefs: 'type Query { hello: String }' }] }\n`)
  const child = spawn(process.execPath, [cli, 'start'], { cwd: dir, env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', TRIBUTARY_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (/Health\s+http/.test(out)) resolve()
    })
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    child.once('exit', (code) => reject(new Error(`start exited with ${code}:\n${out}`)))
  })
  t.match(out, /Data sources:\n\s+meta\s+schema/)
  t.notMatch(out, /Operations:/, 'no header over an empty list')
  t.match(out, /URLs:\n\s+GraphQL/)
  if (process.env.NODE_ENV !== 'production') t.match(out, /Console\s+http:\/\/\S+\/console \(open to loopback clients\)/, 'the console URL beside the others')
})

t.test('production start serves when generated/ cannot be written (a read-only filesystem); development fails', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-cli-rofs-'))
  // generated/ below a regular file: every write there fails (ENOTDIR), as on a read-only filesystem.
  writeFileSync(join(dir, 'blocker'), '')
  const sqlite = new Database(join(dir, 'notes.sqlite'))
  sqlite.exec('create table note (id integer primary key, body text not null)')
  sqlite.close()
  // A database source too: its introspection cache (generated/sources/) cannot be written either.
  writeFileSync(join(dir, 'tributary.config.mjs'), `export default { datasources: [{ kind: 'schema', namespace: 'meta', typeDefs: 'type Query { hello: String }', resolvers: { Query: { hello: () => 'hi' } } }, { kind: 'database', namespace: 'db', url: 'sqlite:notes.sqlite' }], generatedDir: 'blocker/generated' }\n`)
  const child = spawn(process.execPath, [cli, 'start'], { cwd: dir, env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', TRIBUTARY_CONFIG: '', NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      const m = /GraphQL\s+(http:\/\/\S+)\/graphql/.exec(out)
      if (m && /Health\s+http/.test(out)) resolve(m[1]!)
    })
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    child.once('exit', (code) => reject(new Error(`start exited with ${code}:\n${out}`)))
  })
  t.match(out, /generated\/ could not be written; serving without updating it/, 'a warning says so')
  t.match(out, /"code":"ENOTDIR"/, 'with the filesystem error code')
  t.match(out, /could not write a cache file; the gateway runs on/, "the database source's introspection cache: a warning too")
  const res = await fetch(`${url}/health/ready`)
  t.equal(res.status, 200, 'and it serves')
  child.kill('SIGTERM')

  const dev = spawnSync(process.execPath, [cli, 'start'], { cwd: dir, env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', TRIBUTARY_CONFIG: '', NODE_ENV: 'development' }, encoding: 'utf8', timeout: 60_000 })
  t.not(dev.status, 0, 'development fails: the developer needs generated/')
  t.match(`${dev.stdout}${dev.stderr}`, /ENOTDIR/)
})
