/**
 * The bundled server side (scripts/bundle-gateway.mjs; issue 30, start-up): the built entry modules
 * share one instance of every module (a config's `defineConfig`, an operation's `OperationError`
 * and the gateway's are the same), and a `tributary start` loads the gateway's code from the bundle
 * only (its entries and `dist/gateway/chunks/`, never tsc's per-module output), a few hundred files
 * in all, with `graphql` from node_modules. The start is real (the built command, a schema source,
 * requests on 127.0.0.1) with a `--import` probe (test/fixtures/module-probe.mjs) that records every
 * module the process loads.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { freePort, runCli } from './helpers/cli.js'
// @ts-expect-error a build script in JavaScript, without declarations
import { ENTRIES as BUNDLE_ENTRIES } from '../scripts/bundle-gateway.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const gatewayDir = join(root, 'dist/gateway')
const entry = (path: string) => pathToFileURL(join(gatewayDir, path)).href
const ENTRIES = (BUNDLE_ENTRIES as string[]).map((e) => `${e}.js`)

t.test('the entry modules are the bundle and share one instance of each module', async (t) => {
  for (const file of ENTRIES) t.match(readFileSync(join(gatewayDir, file), 'utf8'), /from "\.{1,2}\/(\.\.\/)?chunks\/[\w-]+\.js"/, `${file} imports the bundle's chunks`)
  const index = await import(entry('index.js'))
  const config = await import(entry('config/index.js'))
  const define = await import(entry('operations/define.js'))
  const runtime = await import(entry('runtime.js'))
  t.equal(typeof index.defineConfig, 'function')
  t.equal(index.defineConfig, config.defineConfig, 'tributary-gateway and tributary-gateway/config: one defineConfig')
  t.equal(index.OperationError, define.OperationError, 'one OperationError for operations and the gateway')
  t.equal(index.createGateway, runtime.createGateway, 'one createGateway')
  const err = new define.OperationError({ code: 'NOT_FOUND', statusCode: 404, message: 'gone' })
  t.ok(err instanceof index.OperationError, 'an error made through one entry is an instance of the other entry\u2019s class')
})

t.test('tributary start loads the gateway from the bundle only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-bundle-'))
  const config = join(dir, 'tributary.config.mjs')
  writeFileSync(config, `import { defineConfig, schema } from ${JSON.stringify(entry('index.js'))}
export default defineConfig({ datasources: [schema({ namespace: 'hello', typeDefs: 'type Query { hi: String }', resolvers: { Query: { hi: () => 'hi' } } })] })
`)
  const probeFile = join(dir, 'modules.json')
  const port = await freePort()
  const cli = runCli(t, ['start', '--config', config], { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', MODULE_PROBE_FILE: probeFile }, { nodeArgs: ['--import', pathToFileURL(join(root, 'test/fixtures/module-probe.mjs')).href], cwd: dir })
  await cli.waitFor('Health', 30_000)
  const out = cli.out
  t.match(out, /Tributary is up/, 'the gateway started')
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ hello_hi }' }) })
  t.same(await res.json(), { data: { hello_hi: 'hi' } }, 'a query is answered')
  // The metrics' route label, read from fastify's route context (gateway/observability/route-info.ts).
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  t.match(metrics, /tributary_http_requests_total\{route="\/graphql",method="POST",status="200"\} 1/, 'the request is counted under its route')
  await new Promise((r) => setTimeout(r, 300))
  cli.child.kill('SIGTERM')
  t.equal(await cli.exited, 0, 'it stops cleanly')
  const loaded = JSON.parse(readFileSync(probeFile, 'utf8')) as { esm: string[]; cjs: string[] }
  const files = [...new Set([...loaded.esm.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u)), ...loaded.cjs])]
  const ours = files.filter((f) => f.startsWith(`${gatewayDir}/`)).map((f) => f.slice(gatewayDir.length + 1))
  t.ok(ours.includes('cli.js') && ours.some((f) => f.startsWith('chunks/')), 'the command and chunks were loaded')
  const unbundled = ours.filter((f) => !ENTRIES.includes(f) && !f.startsWith('chunks/') && f !== 'config/config-validator.cjs')
  t.same(unbundled, [], 'no module of tsc\u2019s per-module output was loaded')
  t.ok(files.some((f) => /node_modules\/graphql\//.test(f)), 'graphql comes from node_modules')
  // (ajv's runtime helpers are required by the prebuilt config validator, config/config-validator.cjs.)
  const fromBundle = files.filter((f) => /node_modules\/(fastify|knex|@graphql-tools\/[^/]+|semver|mercurius)\//.test(f) || (/node_modules\/ajv\//.test(f) && !/node_modules\/ajv\/dist\/runtime\//.test(f)))
  t.same(fromBundle, [], 'fastify, knex, graphql-tools, ajv and mercurius come from the bundle')
  // Before the bundle a start loaded ~1,300 modules; now graphql's ~130, pino's ~30, semver's none, ~60 of the bundle.
  t.ok(files.length < 400, `${files.length} files loaded (fewer than 400)`)
})
