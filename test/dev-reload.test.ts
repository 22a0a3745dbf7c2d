/**
 * `tributary dev` (what `npm run dev` runs): edits under the operations folder are picked up without
 * a restart (same process, same port); a broken edit keeps the last good version serving and prints
 * the error with file, line and column; fixing it serves the new version again.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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
  const configIndex = pathToFileURL(join(root, 'dist/gateway/config/index.js')).href
  writeFileSync(
    join(dir, 'config.js'),
    `import { defineConfig, schema } from ${JSON.stringify(configIndex)}
export default defineConfig({
  datasources: [schema({
    typeDefs: 'type Query { hello: String, version: Int }',
    resolvers: { Query: { hello: () => 'world', version: () => 2 } },
  })],
  server: { port: 0, logLevel: 'info' },
  operations: { dir: ${JSON.stringify(ops)} },
  generatedDir: ${JSON.stringify(join(dir, 'generated'))},
})
`,
  )
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

  t.equal(child.exitCode, null, 'never restarted')
  t.equal(child.pid, pid)
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exits cleanly on SIGTERM')
})
