/**
 * Start-up (issue 30): side services start while the gateway loads its modules and the data sources
 * that do not read from them (gateway/services.ts `launchServices`, `servicesNeededBy`; commands.ts
 * `serve`). A gated service (test/fixtures/services/gated.mjs) answers only when the test lets it, so
 * "loaded before the service answered" is a fact of ordering, not of timing. Real processes and ports.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { launchServices, servicesNeededBy } from '../gateway/services.js'
import { freePort, processExited as gone } from './helpers/cli.js'
import type { DataSourceDefinition, ServiceDefinition } from '../gateway/config/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const gated = join(root, 'test/fixtures/services/gated.mjs')

/** The live processes (not zombies) whose environment holds `GATE_FILE=<gate>`: a gated service, spawned or starting. */
function gatedProcesses(gate: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`GATE_FILE=${gate}`) && !gone(Number(entry))) pids.push(Number(entry))
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids
}

async function until(what: () => boolean, label: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`${label}: not within 30 s`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** A gated service on a free port, with its gate and pid files in a temporary folder. */
async function gatedService(name = 'gated', extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-overlap-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const gate = join(dir, 'gate')
  const pidFile = join(dir, 'pid')
  const def: ServiceDefinition = { name, script: gated, url, readyUrl: `${url}/ready`, env: { GATE_FILE: gate, PID_FILE: pidFile, SERVICE_PORT: String(port), ...extraEnv } }
  return { dir, port, url, def, gate, open: () => writeFileSync(gate, ''), pid: () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined) }
}

t.test('servicesNeededBy: the services whose host and port a source reads from while it loads', async (t) => {
  const services: ServiceDefinition[] = [
    { name: 'roles', script: '/x.js', url: 'http://127.0.0.1:4001', readyUrl: 'http://127.0.0.1:4001/openapi.json' },
    { name: 'graph', script: '/y.js', url: 'http://localhost:4002/graphql', readyUrl: 'http://localhost:4002/health' },
  ]
  const need = (def: object) => servicesNeededBy(def, services)
  // The demo's system source: a committed document, the service only as the base URL of requests.
  t.same(need({ kind: 'rest', namespace: 'system', openapi: '/repo/datasources/system/openapi.json', baseUrl: 'http://127.0.0.1:4001' }), [])
  t.same(need({ kind: 'rest', namespace: 'system', openapi: 'http://localhost:4001/openapi.json' }), ['roles'], 'a document read from the service (loopback names are one host)')
  t.same(need({ kind: 'rest', namespace: 'other', openapi: 'http://127.0.0.1:4009/openapi.json' }), [], 'another port')
  t.same(need({ kind: 'graphql', namespace: 'g', url: 'http://[::1]:4002/graphql' }), ['graph'])
  t.same(need({ kind: 'database', namespace: 'todo', url: 'sqlite:./data/todo.sqlite' }), [])
  t.same(need({ kind: 'database', namespace: 'pg', url: 'postgres://u:p@127.0.0.1:4001/db' }), ['roles'], 'any URL of the definition, whatever its scheme')
  t.same(need({ kind: 'federation', namespace: 'f', subgraphs: [{ name: 'a', url: 'http://127.0.0.1:4002/graphql' }] }), ['graph'], 'at any depth')
  t.same(need({ kind: 'schema', typeDefs: 'type Query { a: String }' }), [])
  t.same(servicesNeededBy({ kind: 'graphql', url: 'http://127.0.0.1:4002' }, []), [])
})

t.test('launchServices: spawned first, sources that need no service go on, the others wait for it', async (t) => {
  const service = await gatedService()
  const launch = launchServices([service.def], pino({ level: 'silent' }))
  t.teardown(() => launch.stop())
  await launch.spawned
  await until(() => service.pid() !== undefined, 'the service process runs')
  let ready = false
  void launch.ready.then(() => (ready = true))
  const fileSource: DataSourceDefinition = { kind: 'rest', namespace: 'file', openapi: '/tmp/doc.json', baseUrl: service.url }
  const urlSource: DataSourceDefinition = { kind: 'rest', namespace: 'remote', openapi: `${service.url}/openapi.json` }
  await launch.whenReady(servicesNeededBy(fileSource, [service.def]))
  t.equal(ready, false, 'a source reading a file went on while the service still does not answer')
  let remoteMayLoad = false
  const waiting = launch.whenReady(servicesNeededBy(urlSource, [service.def])).then(() => (remoteMayLoad = true))
  t.equal(remoteMayLoad, false)
  service.open()
  await waiting
  const [running] = await launch.ready
  t.equal(running.name, 'gated')
  t.equal(running.pid, service.pid())
  t.ok(ready)
})

t.test('launchServices: stop() while a service starts ends it and rejects the wait', async (t) => {
  const service = await gatedService()
  const launch = launchServices([service.def], pino({ level: 'silent' }))
  await launch.spawned
  await until(() => service.pid() !== undefined, 'the service process runs')
  await launch.stop()
  await t.rejects(launch.ready, { code: 'TRB_ERR_SOURCE_LOAD', message: /gated.*the gateway stopped during startup/ })
  await until(() => gone(service.pid()!), 'the service process ends')
})

/** Runs `tributary start --config <file>` (built) in `dir` until it exits or prints its summary. */
async function start(dir: string, config: string, env: Record<string, string>) {
  const port = await freePort()
  const child = spawn(process.execPath, [join(root, 'dist/gateway/cli.js'), 'start', '--config', config], { cwd: dir, env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const code = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  return { child, port, out: () => out, code }
}

function writeConfig(dir: string, service: ServiceDefinition, datasources: string): string {
  const file = join(dir, 'tributary.config.mjs')
  writeFileSync(file, `import { defineConfig, rest, schema } from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/index.js')).href)}
export default defineConfig({
  datasources: [${datasources}],
  services: [${JSON.stringify(service)}],
})
`)
  return file
}

const helloSource = `schema({ namespace: 'hello', typeDefs: 'type Query { hi: String }', resolvers: { Query: { hi: () => 'hi' } } })`

t.test('start: the sources load while a service starts; the summary waits for it', async (t) => {
  const service = await gatedService('gated service')
  const config = writeConfig(service.dir, service.def, helloSource)
  const run = await start(service.dir, config, {})
  t.teardown(() => {
    if (run.child.exitCode === null) run.child.kill('SIGTERM')
  })
  await until(() => service.pid() !== undefined, 'the service process runs')
  t.same(gatedProcesses(service.gate), [service.pid()], 'its process is found by its environment')
  // generated/ is written after the sources load: the gateway went on without the service.
  await until(() => existsSync(join(service.dir, 'generated/schema.graphql')), 'generated/ written while the service does not answer')
  t.notMatch(run.out(), /Tributary is up/, 'not up before its service answers')
  service.open()
  await until(() => run.out().includes('Health') || run.child.exitCode !== null, 'the summary')
  t.match(run.out(), /hello\s+schema/)
  t.match(run.out(), new RegExp(`gated service\\s+${service.url}`))
  const res = await fetch(`http://127.0.0.1:${run.port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ hello_hi }' }) })
  t.same(await res.json(), { data: { hello_hi: 'hi' } })
  run.child.kill('SIGTERM')
  t.equal(await run.code, 0)
  await until(() => gone(service.pid()!), 'the service stops with the gateway')
})

t.test('start: a service that exits during start-up is the error, as before', async (t) => {
  const service = await gatedService('failing service', { EXIT_AT_ONCE: '1' })
  const run = await start(service.dir, writeConfig(service.dir, service.def, helloSource), {})
  t.equal(await run.code, 1)
  t.match(run.out(), /✖ TRB_ERR_SOURCE_LOAD: Data source failing service failed to load: the service exited during startup/)
})

t.test('start: a source that fails while a service starts is the error, and the service is stopped', async (t) => {
  const service = await gatedService('gated service')
  const run = await start(service.dir, writeConfig(service.dir, service.def, `${helloSource}, rest({ namespace: 'broken', openapi: './missing.json' })`), {})
  t.equal(await run.code, 1)
  t.match(run.out(), /✖ TRB_ERR_SOURCE_LOAD: Data source broken failed to load/)
  // Stopped while it starts, perhaps before it ran a line of its own: no process with its environment is left.
  await until(() => gatedProcesses(service.gate).length === 0, 'the service is stopped')
})
