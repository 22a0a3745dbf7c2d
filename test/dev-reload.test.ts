/**
 * `tributary dev` (what `npm run dev` runs): edits under the operations folder are picked up without
 * a restart (same process, same port); a broken edit keeps the last good version serving and prints
 * the error with file, line and column; fixing it serves the new version again. An operation edit
 * introspects no database again (the connector's `database introspected` debug line is counted); a
 * config edit rebuilds only the source whose definition changed, and a request in flight during the
 * reload finishes on the previous version before its sources are closed.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import Database from 'better-sqlite3'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const cli = join(root, 'dist/gateway/cli.js')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('dev mode reloads operations in place', { skip: existsSync(cli) ? false : 'dist/ is missing: run `node scripts/build.mjs --if-needed --no-generate` (npm test does)' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-dev-'))
  const ops = join(dir, 'operations')
  mkdirSync(ops)
  writeFileSync(join(ops, 'Hello.graphql'), 'query Hello {\n  hello\n}\n')
  const sqlite = new Database(join(dir, 'notes.sqlite'))
  sqlite.exec(`create table note (id integer primary key, body text not null); insert into note (body) values ('first')`)
  sqlite.close()
  // The resolver `slow` answers once the test lets it: it waits on this loopback server.
  const held: ServerResponse[] = []
  let heldSignal = () => {}
  const gate = createServer((_req, res) => {
    held.push(res)
    heldSignal()
  })
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r))
  const gateUrl = `http://127.0.0.1:${(gate.address() as { port: number }).port}/`
  t.teardown(() => gate.close())
  const configIndex = pathToFileURL(join(root, 'dist/gateway/config/index.js')).href
  const writeConfig = (version: number, server = '') =>
    writeFileSync(
      join(dir, 'config.js'),
      `import { defineConfig, schema, database } from ${JSON.stringify(configIndex)}
export default defineConfig({
  datasources: [schema({
    name: 'app',
    typeDefs: 'type Query { hello: String, version: Int, slow: String }',
    resolvers: { Query: { hello: () => 'world', version: () => ${version}, slow: async () => (await fetch(${JSON.stringify(gateUrl)})).text() } },
  }), database({ namespace: 'db', url: ${JSON.stringify(`sqlite:${join(dir, 'notes.sqlite')}`)} })],
  server: { port: 0, logLevel: 'debug'${server} },
  operations: { dir: ${JSON.stringify(ops)} },
  generatedDir: ${JSON.stringify(join(dir, 'generated'))},
})
`,
    )
  writeConfig(2)
  const child = spawn(process.execPath, [cli, 'dev', '--config', join(dir, 'config.js')], { cwd: root, env: { ...process.env, NODE_ENV: 'development' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  const until = async (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 45_000) => {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline && child.exitCode === null) {
      if (await check()) return true
      await sleep(100)
    }
    t.fail(`timed out waiting for ${what}\n${out}`)
    return false
  }
  if (!(await until(() => /watching for changes/.test(out), 'the dev server'))) return
  const base = /(http:\/\/127\.0\.0\.1:\d+)\/operations\/Hello/.exec(out)?.[1]
  t.ok(base, 'the summary prints the operation URL')
  const pid = child.pid
  const call = async (name: string) => {
    const res = await fetch(`${base}/operations/${name}`)
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  t.same(await call('Hello'), { status: 200, body: { hello: 'world' } })
  t.equal((await call('Version')).status, 404)
  const introspections = () => out.match(/"source":"db"[^\n]*"msg":"database introspected"/g)?.length ?? 0
  t.equal(introspections(), 1, 'the database source is introspected once at startup')

  // A new file: served without a restart.
  writeFileSync(join(ops, 'Version.graphql'), 'query Version {\n  version\n}\n')
  await until(async () => (await call('Version')).status === 200, 'the new operation')
  t.same(await call('Version'), { status: 200, body: { version: 2 } })

  // An edit to an existing file.
  writeFileSync(join(ops, 'Hello.graphql'), 'query Hello {\n  hello\n  version\n}\n')
  await until(async () => 'version' in (await call('Hello')).body, 'the edited operation')
  t.same(await call('Hello'), { status: 200, body: { hello: 'world', version: 2 } })

  // A broken edit: the error is printed, the last good version keeps serving.
  const before = out.length
  writeFileSync(join(ops, 'Hello.graphql'), 'query Hello {\n  hello\n  nope\n}\n')
  await until(() => /reload failed/.test(out.slice(before)), 'the reload error')
  const printed = out.slice(before)
  t.match(printed, /reload failed; still serving the last good version/)
  t.match(printed, /Hello\.graphql:3:3: Cannot query field \\?"nope\\?" on type \\?"Query\\?"/, 'the error names file, line and column')
  t.same(await call('Hello'), { status: 200, body: { hello: 'world', version: 2 } }, 'the last good version still serves')
  t.same(await call('Version'), { status: 200, body: { version: 2 } })

  // Fixed: served again.
  writeFileSync(join(ops, 'Hello.graphql'), 'query Hello {\n  hello\n}\n')
  await until(async () => !('version' in (await call('Hello')).body), 'the fixed operation')
  t.same(await call('Hello'), { status: 200, body: { hello: 'world' } })

  // A deleted file stops being served.
  rmSync(join(ops, 'Version.graphql'))
  await until(async () => (await call('Version')).status === 404, 'the deleted operation to disappear')

  // An operation over the database source: compiled against the schema served, nothing introspected.
  writeFileSync(join(ops, 'Notes.graphql'), 'query Notes {\n  db_findManyNote {\n    body\n  }\n}\n')
  await until(async () => (await call('Notes')).status === 200, 'the database operation')
  t.same(await call('Notes'), { status: 200, body: { db_findManyNote: [{ body: 'first' }] } })
  t.equal(introspections(), 1, 'no operation reload introspected the database again')
  const reloads = [...out.matchAll(/operations reloaded in (\d+) ms: (\d+) operations?/g)]
  t.ok(reloads.length >= 5, 'every operation reload prints what it reloaded')
  t.equal(reloads.at(-1)![2], '2', 'Hello and Notes')
  t.comment(`operation reload times (ms): ${reloads.map((m) => m[1]).join(', ')}`)

  // A config edit while a request is in flight: only the changed source is built again, the request
  // finishes on the previous version, whose own sources are closed only after it.
  const graphql = (query: string) =>
    fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) }).then(async (r) => ({ status: r.status, body: await r.json() }))
  const gated = new Promise<void>((r) => (heldSignal = r))
  const slow = graphql('{ slow }')
  await gated
  const beforeConfig = out.length
  writeConfig(3)
  await until(() => /config reloaded in \d+ ms/.test(out.slice(beforeConfig)), 'the config reload')
  t.match(out.slice(beforeConfig), /config reloaded in \d+ ms: source app rebuilt, 1 reused; 2 operations/)
  t.same((await graphql('{ version }')).body, { data: { version: 3 } }, 'the new version serves')
  t.notMatch(out.slice(beforeConfig), /previous version closed/, 'the previous version stays open while its request runs')
  held.shift()!.end('done')
  t.same(await slow, { status: 200, body: { data: { slow: 'done' } } }, 'the request in flight finished on the previous version')
  await until(() => /previous version closed/.test(out.slice(beforeConfig)), 'the previous version to close')
  t.equal(introspections(), 1, 'the unchanged database source was reused, not introspected again')
  t.notMatch(out.slice(beforeConfig), /restart to apply/, 'a reload that changes no start-up setting asks for no restart')

  // A setting the HTTP server read at start (its rate limit, a WebSocket limit): the reload says a restart applies it.
  const beforeServer = out.length
  writeConfig(4, ", rateLimit: { max: 1000, timeWindowMs: 60000 } }, graphql: { maxDepth: 9")
  await until(() => /restart to apply/.test(out.slice(beforeServer)), 'the reload asking for a restart')
  t.match(out.slice(beforeServer), /restart to apply: server\.rateLimit, graphql\.maxDepth \(read when the server starts\)/)
  t.same((await graphql('{ version }')).body, { data: { version: 4 } }, 'the rest of the reload is served')

  t.equal(child.exitCode, null, 'never restarted')
  t.equal(child.pid, pid)
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exits cleanly on SIGTERM')
})
