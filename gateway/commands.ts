/**
 * The `tributary` command's commands (`npx tributary <command> [options]`; `tributary --help` lists
 * them), run by its entry `cli.ts` once Node's module compile cache is on (compile-cache.ts):
 *
 * - `start`: starts the deployment's side services, loads its data sources, writes `generated/`,
 *   serves the gateway and prints every URL it serves. `--workers N` runs N worker processes on the
 *   one port (node:cluster; the primary starts the side services and restarts a worker that dies).
 * - `dev`: `start`, then reloads on changes to the config, `datasources/` and `operations/`,
 *   swapping the schema and operations in place; a broken edit keeps the last good version.
 * - `generate` (alias `build`): loads everything and writes `generated/`; fails on an invalid operation.
 * - `init`: scaffolds a project (gateway/scaffold.ts).
 *
 * The config is `--config <file>`, else `TRIBUTARY_CONFIG`, else `./tributary.config.ts` (`.js`,
 * `.mjs`, `.cjs`), else `./config.ts`; `--database <url>` serves one database with no config file at all.
 * Paths (`operations/`, `generated/`) are relative to the working directory.
 */
import cluster from 'node:cluster'
import { existsSync, readFileSync, watch } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import closeWithGrace from 'close-with-grace'
import { pino, type Logger } from 'pino'
import { isUnionType } from 'graphql'
import { configPathFrom, loadConfigFile, projectRoot } from './config/load.js'
import { database, resolveConfig, type DataSourceDefinition, type TributaryConfig } from './config/index.js'
import { settingsNeedingRestart } from './config/restart-settings.js'
import type { Gateway } from './runtime.js'
import { traceLogMixin } from './observability/tracing.js'
import { launchServices, servicesNeededBy, startServices, type RunningService } from './services.js'
import { relayRevocations } from './auth/revocations.js'
import { flushCompileCache } from './compile-cache.js'

// The gateway itself (runtime, HTTP app, codegen: about 1,200 modules, 2 s of CPU) loads
// only once a command needs it, so --help, a bad argument, a refused --database and the primary of
// --workers (which only runs the side services) answer without it.
const gatewayModules = () =>
  Promise.all([import('./runtime.js'), import('./codegen/index.js'), import('./http/app.js'), import('./http/health.js')]).then(
    ([runtime, codegen, app, health]) => ({ createGateway: runtime.createGateway, reloadOperations: runtime.reloadOperations, writeGenerated: codegen.writeGenerated, buildApp: app.buildApp, startDraining: health.startDraining }),
  )

// `init` and `--database` only: scaffold.ts and database-check.ts load knex and better-sqlite3 (about
// 570 modules, 0.5 s of CPU), which a start from a config file must not wait for before it spawns its
// side services.
const scaffoldModule = () => import('./scaffold.js')

/** Set in the workers of `start --workers N`: their index (1..N). The primary runs the side services. */
const workerIndex = cluster.isWorker ? Number(process.env.TRIBUTARY_WORKER) || 1 : 0

function createLogger(level: string): Logger {
  const pretty = process.stdout.isTTY && process.env.NODE_ENV !== 'production'
  return pino({ level, mixin: traceLogMixin, ...(pretty ? { transport: { target: 'pino-pretty', options: { ignore: 'pid,hostname', translateTime: 'HH:MM:ss' } } } : {}) })
}

function fail(err: unknown): never {
  const e = err as Error & { code?: string }
  process.stderr.write(`\n✖ ${e.code ? `${e.code}: ` : ''}${e.message}\n`)
  if (process.env.LOG_LEVEL === 'debug' && e.stack) process.stderr.write(`${e.stack}\n`)
  process.exit(1)
}

/** How long a development reload waits for the previous version's requests before closing its sources. */
const RELOAD_DRAIN_MS = 30_000

/** Where the config comes from: a file, or the `--database` flag. */
interface ConfigSource {
  /** For messages: `config tributary.config.ts` or `--database sqlite:./app.db`. */
  label: string
  /** The config file, when there is one (development mode watches it). */
  file?: string
  /** Loads, validates and freezes the config; `fresh` re-imports the file (development reload). */
  load(fresh: boolean): Promise<TributaryConfig>
}

function summary(gateway: Gateway, base: string, services: RunningService[], source: ConfigSource): string {
  const lines: string[] = []
  lines.push(`Tributary is up (${gateway.config.mode} mode, ${source.label})`)
  lines.push('', 'Data sources:')
  const rootCounts = (name: string) => {
    const count = (t: ReturnType<typeof gateway.schema.getQueryType>) =>
      t ? Object.keys(t.getFields()).filter((f) => (name ? f.startsWith(`${name}_`) : true)).length : 0
    return `${count(gateway.schema.getQueryType())} queries, ${count(gateway.schema.getMutationType())} mutations, ${count(gateway.schema.getSubscriptionType())} subscriptions`
  }
  for (const s of gateway.sources) lines.push(`  ${(s.namespace ? s.name : `${s.name} (no namespace)`).padEnd(22)} ${s.kind.padEnd(9)} ${s.namespace ? rootCounts(s.namespace) : ''}`)
  // No header over an empty list: a deployment without stored operations or routes prints none.
  if (gateway.operations.size || gateway.config.routes.length) lines.push('', 'Operations:')
  for (const op of gateway.operations.values()) {
    if (op.stored.internal) {
      lines.push(`  (internal)      ${op.name}`)
      continue
    }
    const methods = op.kind === 'query' ? 'GET|POST' : op.kind === 'mutation' ? 'POST' : 'GET (SSE)'
    lines.push(`  ${methods.padEnd(15)} ${base}/operations/${op.name}`)
  }
  for (const r of gateway.config.routes) lines.push(`  ${r.method.padEnd(15)} ${base}${r.path}  -> ${r.operation}`)
  lines.push('', 'URLs:')
  if (gateway.config.mode === 'development' || gateway.config.graphql.allowArbitraryOperationsInProduction) {
    lines.push(`  GraphQL         ${base}/graphql (POST, GET)`)
  } else {
    lines.push(`  GraphQL         ${base}/graphql (persisted operations only)`)
  }
  if (gateway.config.graphql.playground) lines.push(`  Playground      ${base}/graphql (open in a browser)`)
  lines.push(`  Subscriptions   ${base.replace(/^http/, 'ws')}/graphql (graphql-transport-ws)`)
  if (gateway.config.server.federation) {
    const entities = gateway.schema.getType('_Entity')
    const count = entities && isUnionType(entities) ? entities.getTypes().length : 0
    const refused = gateway.config.mode === 'production' && !gateway.config.graphql.allowArbitraryOperationsInProduction
    lines.push(`  Subgraph        ${base}/graphql (Apollo Federation v2, ${count} entity types${refused ? '; persisted operations only: set graphql.allowArbitraryOperationsInProduction for a router' : ''})`)
  }
  lines.push(`  OpenAPI         ${base}/openapi.json`)
  if (gateway.config.console.enabled) {
    const guard = gateway.config.mode === 'development' ? 'open to loopback clients' : 'X-Tributary-Admin-Secret or a token with a role of console.roles'
    lines.push(`  Console         ${base}/console (${guard})`)
  }
  lines.push(`  Health          ${base}/health (also /health/live, /health/ready)`)
  const { metrics } = gateway.config
  if (metrics.enabled) {
    const guard = [metrics.bearerToken !== null ? 'bearer token' : '', metrics.allowedIps !== null ? `from ${metrics.allowedIps.join(', ')}` : ''].filter(Boolean).join(', ')
    lines.push(`  Metrics         ${base}${metrics.path} (Prometheus${guard ? `; ${guard}` : ''})`)
  }
  for (const s of services) lines.push(`  ${s.name.padEnd(15)} ${s.url}${s.owned ? '' : ' (already running)'}`)
  return lines.join('\n') + '\n'
}

async function generate(source: ConfigSource): Promise<void> {
  const config = await source.load(false)
  const logger = createLogger(config.server.logLevel)
  // Side services are not needed: sources read cached or committed documents when upstreams are down.
  const { createGateway, writeGenerated } = await gatewayModules()
  const gateway = await createGateway(config, { logger, deliverEvents: false })
  const changed = await writeGenerated(gateway)
  await gateway.close()
  process.stdout.write(changed.length ? `generated/: wrote ${changed.join(', ')}\n` : 'generated/ is up to date\n')
}

async function serve(source: ConfigSource, dev: boolean): Promise<void> {
  const initial = await source.load(false)
  const logger = createLogger(initial.server.logLevel)
  // In development a crashed side service is restarted with backoff; in production it is logged.
  // Workers leave the side services to their primary. The services start while this process loads
  // its modules and the sources that do not read from them (docs/architecture.md §7 "Start-up"):
  // their processes are spawned first, before the module loading holds this thread for a second.
  const launch = launchServices(workerIndex ? [] : initial.services, logger, { restart: initial.mode === 'development' })
  await launch.spawned
  const { createGateway, reloadOperations, writeGenerated, buildApp, startDraining } = await gatewayModules().catch(async (err: unknown) => {
    await launch.stop()
    throw err
  })
  // A service's failure is the error even when a source failed meanwhile (as when every source waited for the services).
  let serviceFailure: unknown
  launch.ready.catch((err: unknown) => (serviceFailure ??= err))
  const beforeLoad = (def: DataSourceDefinition) => launch.whenReady(servicesNeededBy(def, initial.services))
  let gateway: Gateway
  try {
    gateway = await createGateway(initial, { logger, beforeLoad })
  } catch (err) {
    const failure = serviceFailure
    await launch.stop()
    throw failure ?? err
  }
  // One writer of generated/: the first worker (the others start after it listens). In production a
  // generated/ that cannot be written (a read-only filesystem) is a warning: serving does not read it.
  let changed: string[] = []
  if (workerIndex <= 1) {
    try {
      changed = await writeGenerated(gateway)
    } catch (err) {
      if (initial.mode !== 'production') throw err
      const e = err as NodeJS.ErrnoException
      logger.warn({ err: { code: e.code, message: e.message } }, 'generated/ could not be written; serving without updating it')
    }
  }
  if (changed.length) logger.info({ files: changed }, 'generated/ updated')
  const app = await buildApp(gateway, { logger, trackInFlight: dev })
  // It listens (and prints its summary) once its services answer: the requests that reach them work from the start.
  let services: RunningService[]
  try {
    services = await launch.ready
  } catch (err) {
    await app.close()
    await gateway.close()
    throw err
  }
  const { host, port } = initial.server
  await app.listen({ host, port })
  const address = app.server.address()
  const actualPort = typeof address === 'object' && address ? address.port : port
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`
  if (workerIndex <= 1) process.stdout.write('\n' + summary(gateway, base, services, source) + '\n')

  let watcher: { close(): void }[] = []
  if (dev) {
    const operationsDir = resolve(initial.operations.dir)
    const datasourcesDir = resolve('datasources')
    let timer: NodeJS.Timeout | undefined
    let reloading = Promise.resolve()
    // The files changed since the last reload: only operation files → the operations are compiled
    // again against the schema served; anything else → the config is loaded again and only the sources
    // whose definition changed (or whose datasources/<name>/ folder did) are built again.
    const changed = new Set<string>()
    const reload = (file: string) => {
      changed.add(file)
      clearTimeout(timer)
      timer = setTimeout(() => {
        const files = [...changed]
        changed.clear()
        reloading = reloading.then(() => reloadFiles(files))
      }, 100)
    }
    const reloadFiles = async (files: string[]) => {
      const shown = files.map((f) => relative(process.cwd(), f))
      const operationsOnly = files.every((f) => !relative(operationsDir, f).startsWith('..') && f !== source.file)
      logger.info({ files: shown }, 'change detected; reloading')
      const started = performance.now()
      try {
        const current = app.tributary.holder.current
        let next: Gateway
        if (operationsOnly) {
          next = await reloadOperations(current)
        } else {
          // A file under datasources/<folder>/ rebuilds the source named (or namespaced) <folder>;
          // a file outside any such folder, every source.
          const rebuild = new Set<string>()
          for (const f of files) {
            const inside = relative(datasourcesDir, f)
            if (inside.startsWith('..') || f === source.file) continue
            const folder = inside.split(/[\\/]/)[0]!
            if (inside.includes('/') || inside.includes('\\')) rebuild.add(folder)
            else for (const s of current.sources) rebuild.add(s.name)
          }
          const config = await source.load(true)
          next = await createGateway(config, { logger, previous: current, rebuild })
        }
        await writeGenerated(next)
        app.tributary.swap(next)
        const ms = Math.round(performance.now() - started)
        if (operationsOnly) process.stdout.write(`operations reloaded in ${ms} ms: ${next.operations.size} operation${next.operations.size === 1 ? '' : 's'}\n`)
        else {
          const reused = next.sources.length - next.built.length
          process.stdout.write(`config reloaded in ${ms} ms: ${next.built.length ? next.built.map((n) => `source ${n} rebuilt`).join(', ') : 'no source rebuilt'}${reused ? `, ${reused} reused` : ''}; ${next.operations.size} operations\n`)
          // The HTTP server keeps what it started with: say which edited settings wait for a restart.
          const pending = settingsNeedingRestart(initial, next.config)
          if (pending.length) {
            logger.warn({ settings: pending }, 'settings applied at start changed; restart to apply them')
            process.stdout.write(`restart to apply: ${pending.join(', ')} (read when the server starts)\n`)
          }
        }
        // Requests the previous version is serving finish on it; then its own sources are closed. Not
        // awaited: a long request (an SSE stream) must not hold the next reload back.
        void app.tributary
          .drained(RELOAD_DRAIN_MS)
          .then(() => current.close(next))
          .then(
            () => logger.debug({ closed: current.sources.filter((s) => !next.sources.includes(s)).map((s) => s.name) }, 'previous version closed'),
            (err: Error) => logger.warn({ err: { message: err.message } }, 'closing the previous version failed'),
          )
      } catch (err) {
        logger.error({ err: { message: (err as Error).message, code: (err as { code?: string }).code } }, 'reload failed; still serving the last good version')
      }
    }
    const configFile = source.file
    const configDir = configFile ? dirname(configFile) : undefined
    const dirs = [operationsDir, datasourcesDir, ...(configDir ? [configDir] : [])].filter((d, i, all) => existsSync(d) && all.indexOf(d) === i)
    watcher = dirs.map((dir) =>
      watch(dir, { recursive: dir !== configDir }, (_event, file) => {
        const name = String(file ?? '')
        if (dir === configDir && resolve(dir, name) !== configFile) return
        if (/\.(graphql|ts|js|json)$/.test(name)) reload(resolve(dir, name))
      }),
    )
    logger.info({ watching: dirs.map((d) => relative(process.cwd(), d) || '.') }, 'watching for changes')
  }

  closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
    if (err) logger.error({ err }, 'closing after an error')
    else logger.info({ signal }, 'closing')
    for (const w of watcher) w.close()
    // Readiness turns false first (a load balancer stops sending), then in-flight requests drain.
    await startDraining(app, initial.server.shutdownDelayMs)
    await app.close()
    await app.tributary.holder.current.close()
    await Promise.all(services.map((s) => s.stop()))
  })
  // Every module a start needs is loaded now: their compiled code goes to the cache (Node ≥ 22.10),
  // after the summary (not on the way to ready) and after the signal handlers above, so that a
  // SIGTERM or Ctrl-C right after the start waits for the write instead of cutting it short.
  flushCompileCache()
}

/**
 * The primary of `start --workers N`: starts the side services, forks worker 1, then (once it listens,
 * so migrations and generated/ run once) the others; a worker that dies is replaced after 1 s.
 * SIGTERM/SIGINT are passed to the workers, and the primary exits once they all have.
 */
async function primary(source: ConfigSource, workers: number): Promise<void> {
  const initial = await source.load(false)
  const logger = createLogger(initial.server.logLevel)
  const services = await startServices(initial.services, logger, { restart: initial.mode === 'development' })
  let stopping = false
  const revoked = new Map<string, number>()
  const fork = (index: number): Promise<void> =>
    new Promise((resolve) => {
      const worker = cluster.fork({ TRIBUTARY_WORKER: String(index) })
      // Logouts reach every worker even without Redis (gateway/auth/revocations.ts).
      relayRevocations(worker, () => Object.values(cluster.workers ?? {}), revoked, initial.auth.oidc?.maxRevokedSessions)
      worker.once('listening', () => resolve())
      worker.once('exit', (code, signal) => {
        resolve()
        if (stopping) return
        logger.error({ worker: index, code, signal }, 'worker exited; starting another in 1 s')
        // Not when SIGTERM/SIGINT came meanwhile: the primary would wait for that worker for good.
        setTimeout(() => {
          if (!stopping) void fork(index)
        }, 1000).unref()
      })
    })
  await fork(1)
  await Promise.all(Array.from({ length: workers - 1 }, (_, i) => fork(i + 2)))
  logger.info({ workers }, 'workers listening')
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal)
    const done = async () => {
      await Promise.all(services.map((s) => s.stop()))
      process.exit(0)
    }
    const check = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        clearInterval(check)
        void done()
      }
    }, 50)
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

const HELP = `Usage: tributary <command> [options]

Commands:
  start       load the data sources, write generated/ and serve the gateway (default)
  dev         start, then reload on changes to the config, datasources/ and operations/
  generate    load everything and write generated/ (alias: build); fails on an invalid operation
  init        scaffold tributary.config.ts, operations/, a .gitignore entry and package.json scripts

Options:
  --config <file>       the config file (default: TRIBUTARY_CONFIG, ./tributary.config.ts|.js|.mjs|.cjs, ./config.ts)
  --database <url>      serve this database with no config file (sqlite:./app.db, postgres://..., mysql://...);
                        with init: the config serves it and the example operation reads a table of it.
                        It must exist and have tables (a missing SQLite file is not created).
                        PostgreSQL reads one schema: public, or the one ?schema=<name> names
                        (postgres://user:pass@host/db?schema=chinook)
  --namespace <name>    the namespace of the --database source (default: from the database name)
  --host <host>         listening host (default: HOST or 127.0.0.1)
  --port <port>         listening port (default: PORT or 4000)
  --workers <n>         start: run n worker processes on the port (node:cluster; 1 to 64, default 1)
  --force               init: overwrite existing files
  -h, --help            show this help
  -v, --version         print the version
`

function version(): string {
  return (JSON.parse(readFileSync(resolve(projectRoot, 'package.json'), 'utf8')) as { version: string }).version
}

/** The config of `--database <url>`: that one database, with `operations/` and `generated/` of the working directory. */
async function databaseSource(url: string, namespace: string | undefined): Promise<ConfigSource> {
  const { namespaceFromUrl } = await scaffoldModule()
  const ns = namespace ?? namespaceFromUrl(url)
  return {
    label: `--database ${url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} (namespace ${ns})`,
    load: async () => {
      const { checkDatabase } = await import('./database-check.js')
      await checkDatabase(url, ns)
      return resolveConfig({ datasources: [database({ namespace: ns, url })] })
    },
  }
}

function fileSource(argv: readonly string[]): ConfigSource {
  const file = configPathFrom(argv)
  return { label: `config ${relative(process.cwd(), file) || file}`, file, load: (fresh) => loadConfigFile(file, { fresh }) }
}

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>
  function parse() {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        database: { type: 'string' },
        namespace: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        workers: { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    })
  }
  try {
    parsed = parse()
  } catch (err) {
    fail(new Error(`${(err as Error).message}\n\n${HELP}`))
  }
  const { values, positionals } = parsed
  if (values.help) return void process.stdout.write(HELP)
  if (values.version) return void process.stdout.write(`${version()}\n`)
  const [command = 'start', ...extra] = positionals
  if (extra.length) fail(new Error(`unexpected argument "${extra[0]}"\n\n${HELP}`))
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) fail(new Error(`--port must be a port number, not "${values.port}"`))
    process.env.PORT = values.port
  }
  if (values.host !== undefined) process.env.HOST = values.host
  if (command === 'init') return (await scaffoldModule()).scaffold({ cwd: process.cwd(), database: values.database, namespace: values.namespace, force: values.force ?? false, log: (line) => process.stdout.write(`${line}\n`) })
  const source = values.database ? await databaseSource(values.database, values.namespace) : fileSource(argv)
  if (values.workers !== undefined) {
    if (!/^\d{1,2}$/.test(values.workers) || Number(values.workers) < 1 || Number(values.workers) > 64) fail(new Error(`--workers must be a number from 1 to 64, not "${values.workers}"`))
    if (command !== 'start') fail(new Error('--workers applies to start only'))
  }
  const workers = Number(values.workers ?? 1)
  if (command === 'start' && workers > 1 && cluster.isPrimary) return primary(source, workers)
  if (command === 'start') return serve(source, false)
  if (command === 'dev') return serve(source, true)
  if (command === 'generate' || command === 'build') return generate(source)
  fail(new Error(`unknown command "${command}"\n\n${HELP}`))
}

/** Runs the command that `argv` (the arguments after the script) names; a failure is printed and exits 1. */
export function run(argv: string[]): Promise<void> {
  return Promise.resolve()
    .then(() => main(argv))
    .catch(fail)
}
