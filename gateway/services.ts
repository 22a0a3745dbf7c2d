/**
 * Side services a deployment starts with the gateway (the demo's role service): child processes
 * spawned before the gateway loads its modules, awaited until their `readyUrl` answers (by the
 * sources that read from them, {@link servicesNeededBy}, and before the gateway listens), and stopped
 * with the gateway. A service whose `readyUrl` already answers is left alone (it runs elsewhere).
 *
 * A service never outlives the gateway: it runs with an IPC channel and `service-guard.ts`
 * preloaded, which ends it when the channel closes (the gateway exited, crashed or was killed). In
 * development a service that exits on its own is restarted with backoff ({@link RESTART_BACKOFF}).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { get as httpGet } from 'node:http'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { ServiceDefinition } from './config/index.js'
import { SourceLoadError } from './errors.js'
import { compileCacheEnv } from './compile-cache.js'

/**
 * Whether `url` answers with a status below 500 within 1 s. A plain `node:http(s)` GET without
 * keep-alive: Node's global `fetch` would load its own bundled undici on the start-up's critical
 * path (~0.1 s of CPU) only for these polls (bench/README.md, start-up).
 */
async function answers(url: string): Promise<boolean> {
  let protocol: string
  try {
    protocol = new URL(url).protocol
  } catch {
    return false
  }
  if (protocol !== 'http:' && protocol !== 'https:') return false
  const get = protocol === 'https:' ? (await import('node:https')).get : httpGet
  return new Promise((resolve) => {
    const timer = setTimeout(() => req.destroy(new Error('timeout')), 1000)
    const done = (ok: boolean) => {
      clearTimeout(timer)
      resolve(ok)
    }
    const req = get(url, { agent: false }, (res) => {
      res.on('error', () => done(false))
      res.on('end', () => done((res.statusCode ?? 500) < 500))
      res.resume()
    })
    req.on('error', () => done(false))
  })
}

/** A started service. */
export interface RunningService {
  name: string
  url: string
  /** True when this process started it (false: it was already running). */
  owned: boolean
  /** The process id of the current instance; undefined when not owned or between a crash and its restart. */
  readonly pid: number | undefined
  /** How many times it was restarted after a crash. */
  readonly restarts: number
  stop(): Promise<void>
}

/**
 * How long {@link startServices} waits for a service's `readyUrl` by default, in milliseconds: 60 s.
 * A service that exits is reported at once; the wait only bounds one that hangs. 15 s was too short
 * for a TypeScript service started through tsx on a loaded two-core machine.
 */
export const DEFAULT_SERVICE_READY_TIMEOUT_MS = 60_000

/**
 * How often a starting service's `readyUrl` is tried, in milliseconds: 25. A refused connection costs
 * this process well under a millisecond; the gateway listens at most this long after the service answers.
 */
const READY_POLL_MS = 25

/** Options of {@link startServices}. */
export interface StartServicesOptions {
  /**
   * Restart an owned service that exits on its own (development mode), after
   * {@link RESTART_BACKOFF}. Default false: the exit is logged as an error and the service stays down.
   */
  restart?: boolean
}

/**
 * Restart delays: the first restart after `initialMs`, each further consecutive one after twice the
 * previous delay, at most `maxMs`. A service that ran `stableMs` or longer before crashing starts
 * again from `initialMs`.
 */
export const RESTART_BACKOFF = { initialMs: 500, maxMs: 30_000, stableMs: 10_000 } as const

const guardJs = fileURLToPath(new URL('./service-guard.js', import.meta.url))

/** `node [--import tsx] --import <service-guard> <script>`: the guard ends the service when its parent dies. */
function spawnService(s: ServiceDefinition): ChildProcess {
  let script = s.script
  const args: string[] = []
  const tsScript = !existsSync(script) && existsSync(script.replace(/\.js$/, '.ts'))
  if (tsScript) script = script.replace(/\.js$/, '.ts')
  // Run from sources (tests, tsx), the guard itself is TypeScript.
  const guard = existsSync(guardJs) ? guardJs : guardJs.replace(/\.js$/, '.ts')
  if (tsScript || guard.endsWith('.ts')) args.push('--import', 'tsx')
  args.push('--import', pathToFileURL(guard).href)
  const child = spawn(process.execPath, [...args, script], {
    // The gateway's compile cache (Node ≥ 22.8) serves the service's modules too.
    env: { ...process.env, ...compileCacheEnv(), ...s.env },
    // The IPC channel is how the service learns that the gateway died (see service-guard.ts).
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  const prefix = (chunk: Buffer) => chunk.toString().split('\n').filter(Boolean).map((l) => `[${s.name}] ${l}`).join('\n') + '\n'
  child.stdout?.on('data', (c: Buffer) => process.stdout.write(prefix(c)))
  child.stderr?.on('data', (c: Buffer) => process.stderr.write(prefix(c)))
  // The gateway does not wait for its services' channels to exit.
  child.channel?.unref()
  return child
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]'])
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' }

/** `host:port` of an absolute URL (loopback names as one host, default ports filled in), or undefined. */
function endpointOf(text: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined
  try {
    const url = new URL(text)
    const host = LOOPBACK.has(url.hostname.toLowerCase()) ? 'loopback' : url.hostname.toLowerCase()
    return `${host}:${url.port || DEFAULT_PORTS[url.protocol] || ''}`
  } catch {
    return undefined
  }
}

/**
 * The names of the services a data source needs to answer while it loads, so that the source can
 * load while the others start: those whose `url` or `readyUrl` has the host and port (loopback names
 * taken as one host) of a URL anywhere in the source's definition (every string, at any depth, that
 * is an absolute URL: an OpenAPI document's or a GraphQL endpoint's URL, a database URL…). A REST
 * source's own `baseUrl` is left out: it is called only when a request comes, once every service
 * answers. A source that reads a file (the demo's `system` source, its committed `openapi.json`)
 * needs none.
 * @param def a data source definition (`datasources[i]` of the config).
 * @param services the config's services.
 */
export function servicesNeededBy(def: object, services: readonly ServiceDefinition[]): string[] {
  if (services.length === 0) return []
  const endpoints = new Set<string>()
  const seen = new Set<object>()
  const walk = (value: unknown, key: string, top: boolean): void => {
    if (typeof value === 'string') {
      const endpoint = top && key === 'baseUrl' && (def as { kind?: string }).kind === 'rest' ? undefined : endpointOf(value)
      if (endpoint) endpoints.add(endpoint)
    } else if (value && typeof value === 'object' && !seen.has(value)) {
      seen.add(value)
      for (const [k, v] of Object.entries(value)) walk(v, k, value === def)
    }
  }
  walk(def, '', false)
  return services.filter((s) => [s.url, s.readyUrl].some((u) => endpoints.has(endpointOf(u) ?? ''))).map((s) => s.name)
}

/**
 * Services being started by {@link launchServices}: the gateway loads its modules and data sources
 * meanwhile (docs/architecture.md §7 "Start-up").
 */
export interface ServiceLaunch {
  /**
   * Resolves once the first service's process is spawned (or found already running), at once when
   * there is none. The gateway awaits it before loading its modules, whose synchronous loading would
   * otherwise hold back the spawn by a second or more.
   */
  readonly spawned: Promise<void>
  /** Every service, in order, once each answers; rejects like {@link startServices}. */
  readonly ready: Promise<RunningService[]>
  /** Resolves once the named services answer (names not started here resolve at once); rejects like {@link startServices}. */
  whenReady(names: readonly string[]): Promise<void>
  /** Stops every service started so far, one still starting included (its wait then rejects). */
  stop(): Promise<void>
}

/**
 * Starts the services in order (each once the one before answers), without waiting for them: see
 * {@link ServiceLaunch}. Each owned service runs with an IPC channel and `gateway/service-guard.ts`
 * preloaded, so it exits when this process dies, even by `SIGKILL`.
 */
export function launchServices(services: readonly ServiceDefinition[], logger: Logger, options: StartServicesOptions = {}): ServiceLaunch {
  const started: RunningService[] = []
  const starting = new Set<() => void>()
  let stopped = false
  let spawnedOne: () => void = () => {}
  const spawned = new Promise<void>((resolve) => (spawnedOne = resolve))
  const each: Promise<RunningService>[] = []
  let previous: Promise<unknown> = Promise.resolve()
  for (const s of services) {
    const one = previous.then(() => {
      if (stopped) throw new SourceLoadError(s.name, 'the gateway stopped during startup')
      return startService(s, logger, options, { spawned: spawnedOne, starting, stopped: () => stopped })
    })
    one.then((r) => started.push(r)).catch(() => spawnedOne())
    each.push(one)
    previous = one
  }
  if (services.length === 0) spawnedOne()
  const ready = Promise.all(each)
  // Awaited by whoever needs them; never an unhandled rejection when nobody does.
  ready.catch(() => undefined)
  return {
    spawned,
    ready,
    whenReady: (names) => Promise.all(services.flatMap((s, i) => (names.includes(s.name) ? [each[i]!] : []))).then(() => undefined),
    stop: async () => {
      stopped = true
      for (const abort of starting) abort()
      await Promise.allSettled(each)
      await Promise.all(started.map((r) => r.stop()))
    },
  }
}

/**
 * Starts the services in order and waits for each. Each owned service runs with an IPC channel and
 * `gateway/service-guard.ts` preloaded, so it exits when this process dies, even by `SIGKILL`.
 * @throws SourceLoadError when one exits or does not answer within `readyTimeoutMs` (default {@link DEFAULT_SERVICE_READY_TIMEOUT_MS}).
 */
export function startServices(services: readonly ServiceDefinition[], logger: Logger, options: StartServicesOptions = {}): Promise<RunningService[]> {
  return launchServices(services, logger, options).ready
}

/** What {@link launchServices} shares with each {@link startService}. */
interface LaunchState {
  /** Called once the process is spawned (or found running). */
  spawned: () => void
  /** Aborts of the services still waiting for their `readyUrl`. */
  starting: Set<() => void>
  stopped: () => boolean
}

async function startService(s: ServiceDefinition, logger: Logger, options: StartServicesOptions, launch: LaunchState): Promise<RunningService> {
  if (await answers(s.readyUrl)) {
    launch.spawned()
    logger.info({ service: s.name, url: s.url }, 'service already running; not starting it')
    return { name: s.name, url: s.url, owned: false, pid: undefined, restarts: 0, stop: async () => {} }
  }
  let child: ChildProcess | undefined = spawnService(s)
  launch.spawned()
  let exited = false
  child.once('exit', () => (exited = true))
  const abort = () => child?.kill('SIGTERM')
  launch.starting.add(abort)
  const timeoutMs = s.readyTimeoutMs ?? DEFAULT_SERVICE_READY_TIMEOUT_MS
  const deadline = Date.now() + timeoutMs
  try {
    while (!(await answers(s.readyUrl))) {
      if (launch.stopped()) throw new SourceLoadError(s.name, 'the gateway stopped during startup')
      if (exited || Date.now() > deadline) {
        child.kill('SIGTERM')
        throw new SourceLoadError(s.name, exited ? 'the service exited during startup' : `no answer from ${s.readyUrl} within ${timeoutMs} ms (readyTimeoutMs)`)
      }
      await sleep(READY_POLL_MS)
    }
  } finally {
    launch.starting.delete(abort)
  }
  let stopping = false
  let restarts = 0
  let failures = 0
  let startedAt = Date.now()
  let timer: NodeJS.Timeout | undefined
  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    child = undefined
    if (stopping) return
    if (!options.restart) {
      logger.error({ service: s.name, code, signal }, 'service exited; not restarting it (production mode)')
      return
    }
    if (Date.now() - startedAt >= RESTART_BACKOFF.stableMs) failures = 0
    const delay = Math.min(RESTART_BACKOFF.initialMs * 2 ** failures, RESTART_BACKOFF.maxMs)
    failures++
    logger.warn({ service: s.name, code, signal, restartInMs: delay }, 'service exited; restarting it')
    timer = setTimeout(() => {
      timer = undefined
      if (stopping) return
      restarts++
      startedAt = Date.now()
      child = spawnService(s)
      child.once('exit', onExit)
    }, delay)
    timer.unref()
  }
  if (exited) onExit(child.exitCode, child.signalCode)
  else child.once('exit', onExit)
  return {
    name: s.name,
    url: s.url,
    owned: true,
    get pid() {
      return child?.pid
    },
    get restarts() {
      return restarts
    },
    stop: () =>
      new Promise<void>((resolveStop) => {
        stopping = true
        clearTimeout(timer)
        const current = child
        if (!current || current.exitCode !== null || current.signalCode !== null) return resolveStop()
        current.once('exit', () => resolveStop())
        current.kill('SIGTERM')
        setTimeout(() => current.kill('SIGKILL'), 3000).unref()
      }),
  }
}
