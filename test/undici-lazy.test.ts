/**
 * undici loads at its first use (gateway/undici.ts; issue 30, start-up): a start whose config has
 * only a schema source never loads it; one with a REST source loads it at the source's first
 * upstream call, not before the gateway is ready, and that call is answered. Real processes
 * (`tributary start`, built), a real upstream on 127.0.0.1, and a `--require` probe
 * (test/fixtures/undici-probe.cjs) that records the load.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { freePort } from './helpers/cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const probe = join(root, 'test/fixtures/undici-probe.cjs')

async function until(what: () => boolean, label: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`${label}: not within 30 s`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** `tributary start --config <config>` in `dir` with the probe preloaded; resolves once its summary is printed. */
async function start(t: Test, dir: string, datasources: string) {
  const config = join(dir, 'tributary.config.mjs')
  writeFileSync(config, `import { defineConfig, rest, schema } from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/index.js')).href)}
export default defineConfig({ datasources: [${datasources}] })
`)
  const marker = join(dir, 'undici-loaded')
  const port = await freePort()
  const child = spawn(process.execPath, ['--require', probe, join(root, 'dist/gateway/cli.js'), 'start', '--config', config], {
    cwd: dir,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', UNDICI_PROBE_FILE: marker },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGTERM')
  })
  await until(() => out.includes('Health') || child.exitCode !== null, 'the start summary')
  t.match(out, /Tributary is up/, 'the gateway started')
  const gql = async (query: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
    return { status: res.status, body: await res.json() }
  }
  return { marker, gql, loaded: () => existsSync(marker) }
}

t.test('a config with a schema source only never loads undici', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-undici-'))
  const gw = await start(t, dir, `schema({ namespace: 'hello', typeDefs: 'type Query { hi: String }', resolvers: { Query: { hi: () => 'hi' } } })`)
  t.same(await gw.gql('{ hello_hi }'), { status: 200, body: { data: { hello_hi: 'hi' } } })
  t.notOk(gw.loaded(), 'undici not loaded after start and a query')
})

t.test('a REST source loads undici at its first upstream call, which is answered', async (t) => {
  let calls = 0
  const upstream = createServer((req, res) => {
    calls++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ message: `hello from ${req.url}` }))
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  t.teardown(() => upstream.close())
  const { port } = upstream.address() as { port: number }
  const dir = mkdtempSync(join(tmpdir(), 'tributary-undici-'))
  const doc = join(dir, 'openapi.json')
  writeFileSync(doc, JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'greeting', version: '1' },
    paths: { '/greeting': { get: { operationId: 'getGreeting', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } } } } } } } } },
  }))
  const gw = await start(t, dir, `rest({ namespace: 'greet', openapi: ${JSON.stringify(doc)}, baseUrl: 'http://127.0.0.1:${port}' })`)
  t.notOk(gw.loaded(), 'not loaded when the gateway is ready')
  t.equal(calls, 0)
  t.same(await gw.gql('{ greet_getGreeting { message } }'), { status: 200, body: { data: { greet_getGreeting: { message: 'hello from /greeting' } } } })
  t.equal(calls, 1, 'one upstream call')
  t.ok(gw.loaded(), 'loaded by the first call')
  t.match(readFileSync(gw.marker, 'utf8'), /connectors[\\/]rest[\\/]request\.[jt]s/, 'by the REST connector')
  t.same(await gw.gql('{ greet_getGreeting { message } }'), { status: 200, body: { data: { greet_getGreeting: { message: 'hello from /greeting' } } } }, 'the pool serves the next call')
  t.equal(calls, 2)
})
