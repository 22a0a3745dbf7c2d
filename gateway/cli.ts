#!/usr/bin/env node
/**
 * `tributary <command> [--config <file>]`
 *
 * - `start`: starts the deployment's side services, loads its data sources, writes `generated/`,
 *   serves the gateway and prints every URL it serves.
 * - `dev`: `start`, then reloads on changes to the config, `datasources/` and `operations/`,
 *   swapping the schema and operations in place; a broken edit keeps the last good version.
 * - `generate` (alias `build`): loads everything and writes `generated/`; fails on an invalid operation.
 */
import { existsSync, watch } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import closeWithGrace from 'close-with-grace'
import { pino, type Logger } from 'pino'
import { configPathFrom, loadConfigFile } from './config/load.js'
import type { TributaryConfig } from './config/index.js'
import { createGateway, type Gateway } from './runtime.js'
import { writeGenerated } from './codegen/index.js'
import { buildApp } from './http/app.js'
import { startServices, type RunningService } from './services.js'

function createLogger(level: string): Logger {
  const pretty = process.stdout.isTTY && process.env.NODE_ENV !== 'production'
  return pino({ level, ...(pretty ? { transport: { target: 'pino-pretty', options: { ignore: 'pid,hostname', translateTime: 'HH:MM:ss' } } } : {}) })
}

function fail(err: unknown): never {
  const e = err as Error & { code?: string }
  process.stderr.write(`\n✖ ${e.code ? `${e.code}: ` : ''}${e.message}\n`)
  if (process.env.LOG_LEVEL === 'debug' && e.stack) process.stderr.write(`${e.stack}\n`)
  process.exit(1)
}

function summary(gateway: Gateway, base: string, services: RunningService[], configFile: string): string {
  const lines: string[] = []
  lines.push(`Tributary is up (${gateway.config.mode} mode, config ${relative(process.cwd(), configFile) || configFile})`)
  lines.push('', 'Data sources:')
  const rootCounts = (name: string) => {
    const count = (t: ReturnType<typeof gateway.schema.getQueryType>) =>
      t ? Object.keys(t.getFields()).filter((f) => (name ? f.startsWith(`${name}_`) : true)).length : 0
    return `${count(gateway.schema.getQueryType())} queries, ${count(gateway.schema.getMutationType())} mutations, ${count(gateway.schema.getSubscriptionType())} subscriptions`
  }
  for (const s of gateway.sources) lines.push(`  ${(s.namespace ? s.name : `${s.name} (no namespace)`).padEnd(22)} ${s.kind.padEnd(9)} ${s.namespace ? rootCounts(s.namespace) : ''}`)
  lines.push('', 'Operations:')
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
  lines.push(`  OpenAPI         ${base}/openapi.json`)
  lines.push(`  Health          ${base}/health`)
  for (const s of services) lines.push(`  ${s.name.padEnd(15)} ${s.url}${s.owned ? '' : ' (already running)'}`)
  return lines.join('\n') + '\n'
}

async function load(configFile: string, logger: Logger, fresh = false): Promise<Gateway> {
  const config: TributaryConfig = await loadConfigFile(configFile, { fresh })
  logger.info({ sources: config.datasources.map((d) => `${d.namespace ?? '(none)'}:${d.kind}`) }, 'loading data sources')
  return createGateway(config, { logger })
}

async function generate(configFile: string): Promise<void> {
  const config = await loadConfigFile(configFile)
  const logger = createLogger(config.server.logLevel)
  // Side services are not needed: sources read cached or committed documents when upstreams are down.
  const gateway = await createGateway(config, { logger })
  const changed = await writeGenerated(gateway)
  await gateway.close()
  process.stdout.write(changed.length ? `generated/: wrote ${changed.join(', ')}\n` : 'generated/ is up to date\n')
}

async function serve(configFile: string, dev: boolean): Promise<void> {
  const initial = await loadConfigFile(configFile)
  const logger = createLogger(initial.server.logLevel)
  // In development a crashed side service is restarted with backoff; in production it is logged.
  const services = await startServices(initial.services, logger, { restart: initial.mode === 'development' })
  let gateway: Gateway
  try {
    gateway = await createGateway(initial, { logger })
  } catch (err) {
    await Promise.all(services.map((s) => s.stop()))
    throw err
  }
  const changed = await writeGenerated(gateway)
  if (changed.length) logger.info({ files: changed }, 'generated/ updated')
  const app = await buildApp(gateway, { logger })
  const { host, port } = initial.server
  await app.listen({ host, port })
  const address = app.server.address()
  const actualPort = typeof address === 'object' && address ? address.port : port
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`
  process.stdout.write('\n' + summary(gateway, base, services, configFile) + '\n')

  let watcher: { close(): void }[] = []
  if (dev) {
    let timer: NodeJS.Timeout | undefined
    let reloading = Promise.resolve()
    const reload = (reason: string) => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        reloading = reloading.then(async () => {
          logger.info({ reason }, 'change detected; reloading')
          try {
            const next = await load(configFile, logger, true)
            await writeGenerated(next)
            const previous = app.tributary.swap(next)
            await previous.close()
            logger.info({ operations: next.operations.size }, 'reloaded')
          } catch (err) {
            logger.error({ err: { message: (err as Error).message, code: (err as { code?: string }).code } }, 'reload failed; still serving the last good version')
          }
        })
      }, 150)
    }
    const dirs = [resolve(initial.operations.dir), resolve('datasources'), dirname(configFile)].filter((d) => existsSync(d))
    watcher = dirs.map((dir) =>
      watch(dir, { recursive: dir !== dirname(configFile) }, (_event, file) => {
        const name = String(file ?? '')
        if (dir === dirname(configFile) && resolve(dir, name) !== configFile) return
        if (/\.(graphql|ts|js|json)$/.test(name)) reload(`${relative(process.cwd(), resolve(dir, name))}`)
      }),
    )
    logger.info({ watching: dirs.map((d) => relative(process.cwd(), d) || '.') }, 'watching for changes')
  }

  closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
    if (err) logger.error({ err }, 'closing after an error')
    else logger.info({ signal }, 'closing')
    for (const w of watcher) w.close()
    await app.close()
    await app.tributary.holder.current.close()
    await Promise.all(services.map((s) => s.stop()))
  })
}

const [command = 'start', ...rest] = process.argv.slice(2)
const configFile = configPathFrom(rest)
const run = command === 'start' ? serve(configFile, false) : command === 'dev' ? serve(configFile, true) : command === 'generate' || command === 'build' ? generate(configFile) : null
if (!run) fail(new Error(`unknown command "${command}"; use start, dev, build or generate`))
run.catch(fail)
