/** Config validation (errors name their path), defaults, and finding the config file. */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { resolveConfig, database, schema, rest } from '../gateway/config/index.js'
import { configPathFrom, loadConfigFile } from '../gateway/config/load.js'

const demo = schema({ typeDefs: 'type Query { a: Int }' })
const root = fileURLToPath(new URL('..', import.meta.url))

t.test('a bad config fails with one message naming the path', async (t) => {
  const cases: [unknown, RegExp][] = [
    [{}, /^Invalid config: datasources: is required$/],
    [{ datasources: [] }, /datasources: must NOT have fewer than 1 items/],
    [{ datasources: [demo, { kind: 'database', url: 42 }] }, /datasources\[1\]\.url: must be string/],
    [{ datasources: [demo, { kind: 'database', url: 'oracle://x' }] }, /datasources\[1\]\.url: must match pattern/],
    [{ datasources: [{ kind: 'rest' }] }, /datasources\[0\]\.openapi: is required/],
    [{ datasources: [{ kind: 'nope' }] }, /datasources\[0\]\.kind: must be one of/],
    [{ datasources: [{ ...demo, namespace: 'a__b' }] }, /datasources\[0\]\.namespace: must not contain "__"/],
    [{ datasources: [{ ...demo, namespace: 'todo-list' }] }, /datasources\[0\]\.namespace: must match pattern/],
    [{ datasources: [demo], server: { port: 70000 } }, /server\.port: must be <= 65535/],
    [{ datasources: [demo], server: { prot: 1 } }, /server\.prot: is not a known option/],
    [{ datasources: [demo], codegen: { react: 'yes' as never } }, /codegen\.react: must be boolean/],
    [{ datasources: [demo], codegen: { vue: true } as never }, /codegen\.vue: is not a known option/],
    [{ datasources: [database({ url: 'sqlite:x', migrations: { a: { up: 'no' as never } } })] }, /datasources\[0\]\.migrations\.a\.up: must be a function/],
    [{ datasources: [demo], routes: [{ method: 'GET', path: 'x', operation: 'A' }] }, /routes\[0\]\.path: must match pattern/],
    [{ datasources: [database({ url: 'sqlite:x', maxTake: 0 })] }, /datasources\[0\]\.maxTake: must be >= 1/],
    [{ datasources: [demo], graphql: { maxCost: 0 } }, /graphql\.maxCost: must be >= 1/],
    [{ datasources: [demo], graphql: { maxInputDepth: 1.5 } }, /graphql\.maxInputDepth: must be integer/],
    [{ datasources: [demo], server: { maxResponseBytes: 0 } }, /server\.maxResponseBytes: must be >= 1/],
    [{ datasources: [{ kind: 'database', url: 'sqlite:x', rawSql: 'yes' }] }, /datasources\[0\]\.rawSql: must be one of true, false, "development"/],
    [{ datasources: [{ kind: 'database', url: 'sqlite:x', statementTimeoutMs: 0 }] }, /datasources\[0\]\.statementTimeoutMs: must be >= 1/],
    [{ datasources: [{ kind: 'database', url: 'sqlite:x', statementTimeoutMs: 1.5 }] }, /datasources\[0\]\.statementTimeoutMs: must be integer/],
  ]
  for (const [input, message] of cases) {
    t.throws(() => resolveConfig(input, {}), { code: 'TRB_ERR_CONFIG_INVALID', message }, JSON.stringify(input))
  }
})

t.test('defaults come from the environment of docs/architecture.md §3 and the result is frozen', async (t) => {
  const c = resolveConfig({ datasources: [demo] }, { PORT: '4555', HOST: '0.0.0.0', LOG_LEVEL: 'warn' })
  t.equal(c.server.port, 4555)
  t.equal(c.server.host, '0.0.0.0')
  t.equal(c.server.logLevel, 'warn')
  const empty = resolveConfig({ datasources: [demo] }, { HOST: '', LOG_LEVEL: '' })
  t.equal(empty.server.host, '127.0.0.1', 'an empty HOST means the default')
  t.equal(empty.server.logLevel, 'info', 'an empty LOG_LEVEL means the default')
  t.equal(c.mode, 'development')
  t.equal(c.graphql.introspection, true)
  t.equal(c.server.bodyLimit, 1048576)
  t.match(c.server, { requestTimeoutMs: 30000, maxResponseBytes: 16777216, maxWebSockets: 1000 })
  t.match(c.graphql, { maxCost: 20000, defaultListSize: 10, maxInputDepth: 32, maxSubscriptionsPerSocket: 100, shareSubscriptions: true })
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.server) && Object.isFrozen(c.datasources[0]))
  const prod = resolveConfig({ datasources: [rest({ openapi: 'x.json' })] }, { NODE_ENV: 'production' })
  t.equal(prod.mode, 'production')
  t.equal(prod.graphql.introspection, false)
  t.equal(prod.graphql.playground, false)
  t.equal(resolveConfig({ datasources: [demo] }, {}).server.port, 4000)
})

t.test('--config and TRIBUTARY_CONFIG choose the file', async (t) => {
  t.equal(configPathFrom(['--config', 'examples/chinook/config.ts'], {}, '/p'), resolve('/p/examples/chinook/config.ts'))
  t.equal(configPathFrom(['--config=other.js'], {}, '/p'), resolve('/p/other.js'))
  t.equal(configPathFrom([], { TRIBUTARY_CONFIG: '/abs/c.ts' }, '/p'), '/abs/c.ts')
  t.equal(configPathFrom([], {}, '/p'), resolve('/p/tributary.config.ts'), 'no file: the one a user is expected to write')
  t.equal(configPathFrom([], {}, root), resolve(root, 'config.ts'), 'this repository: its config.ts')
  const project = mkdtempSync(join(tmpdir(), 'tributary-config-find-'))
  writeFileSync(join(project, 'config.ts'), '')
  writeFileSync(join(project, 'tributary.config.js'), '')
  t.equal(configPathFrom([], {}, project), join(project, 'tributary.config.js'), 'tributary.config.* comes before config.ts')
})

t.test('a .js config file loads and validates; a missing one fails clearly', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-config-'))
  const file = join(dir, 'config.js')
  writeFileSync(file, `export default { datasources: [{ kind: 'schema', typeDefs: 'type Query { a: Int }' }], server: { port: 4321 } }\n`)
  const c = await loadConfigFile(file)
  t.equal(c.server.port, 4321)
  const bad = join(dir, 'bad.js')
  writeFileSync(bad, `export default { datasources: [{ kind: 'schema' }] }\n`)
  await t.rejects(loadConfigFile(bad), { code: 'TRB_ERR_CONFIG_INVALID', message: /datasources\[0\]\.typeDefs: is required/ })
  await t.rejects(loadConfigFile(join(dir, 'missing.ts')), { code: 'TRB_ERR_CONFIG_LOAD' })
})

t.test('TRIBUTARY_CONFIG runs a .ts config outside the project (through tsx), as a user would', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-config-ts-'))
  const ts = join(dir, 'config.ts')
  writeFileSync(
    ts,
    `const generatedDir: string = ${JSON.stringify(join(dir, 'generated'))}\n` +
      `export default { datasources: [{ kind: 'schema' as const, typeDefs: 'type Query { a: Int }' }], operations: { dir: ${JSON.stringify(join(dir, 'ops'))} }, generatedDir }\n`,
  )
  // The CLI runs as plain node (dist/), as `npm start` runs it; tests themselves run under tsx.
  const cli = fileURLToPath(new URL('../dist/gateway/cli.js', import.meta.url))
  const res = spawnSync(process.execPath, [cli, 'generate'], { env: { ...process.env, TRIBUTARY_CONFIG: ts }, encoding: 'utf8' })
  t.equal(res.status, 0, res.stderr)
  t.match(readFileSync(join(dir, 'generated/schema.graphql'), 'utf8'), /type Query \{\n  a: Int\n\}/)
})
