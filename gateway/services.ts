/**
 * Side services a deployment starts with the gateway (the demo's role service): child processes
 * started before the data sources load, awaited until their `readyUrl` answers, and stopped with
 * the gateway. A service whose `readyUrl` already answers is left alone (it runs elsewhere).
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

/**
 * Starts the services in order. Each owned service runs with an IPC channel and
 * `gateway/service-guard.ts` preloaded, so it exits when this process dies, even by `SIGKILL`.
 * @throws SourceLoadError when one exits or does not answer within `readyTimeoutMs` (default {@link DEFAULT_SERVICE_READY_TIMEOUT_MS}).
 */
export async function startServices(services: readonly ServiceDefinition[], logger: Logger, options: StartServicesOptions = {}): Promise<RunningService[]> {
  const running: RunningService[] = []
  for (const s of services) {
    if (await answers(s.readyUrl)) {
      logger.info({ service: s.name, url: s.url }, 'service already running; not starting it')
      running.push({ name: s.name, url: s.url, owned: false, pid: undefined, restarts: 0, stop: async () => {} })
      continue
    }
    let child: ChildProcess | undefined = spawnService(s)
    let exited = false
    child.once('exit', () => (exited = true))
    const timeoutMs = s.readyTimeoutMs ?? DEFAULT_SERVICE_READY_TIMEOUT_MS
    const deadline = Date.now() + timeoutMs
    while (!(await answers(s.readyUrl))) {
      if (exited || Date.now() > deadline) {
        child.kill('SIGTERM')
        throw new SourceLoadError(s.name, exited ? 'the service exited during startup' : `no answer from ${s.readyUrl} within ${timeoutMs} ms (readyTimeoutMs)`)
      }
      await sleep(100)
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
    running.push({
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
    })
  }
  return running
}
