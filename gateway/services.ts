/**
 * Side services a deployment starts with the gateway (the demo's role service): child processes
 * started before the data sources load, awaited until their `readyUrl` answers, and stopped with
 * the gateway. A service whose `readyUrl` already answers is left alone (it runs elsewhere).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { ServiceDefinition } from './config/index.js'
import { SourceLoadError } from './errors.js'

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
    await res.arrayBuffer()
    return res.status < 500
  } catch {
    return false
  }
}

/** A started service. */
export interface RunningService {
  name: string
  url: string
  /** True when this process started it (false: it was already running). */
  owned: boolean
  stop(): Promise<void>
}

/**
 * Starts the services in order.
 * @throws SourceLoadError when one exits or does not answer within `readyTimeoutMs` (default 15 s).
 */
export async function startServices(services: readonly ServiceDefinition[], logger: Logger): Promise<RunningService[]> {
  const running: RunningService[] = []
  for (const s of services) {
    if (await answers(s.readyUrl)) {
      logger.info({ service: s.name, url: s.url }, 'service already running; not starting it')
      running.push({ name: s.name, url: s.url, owned: false, stop: async () => {} })
      continue
    }
    let script = s.script
    const args: string[] = []
    if (!existsSync(script) && existsSync(script.replace(/\.js$/, '.ts'))) {
      script = script.replace(/\.js$/, '.ts')
      args.push('--import', 'tsx')
    }
    const child: ChildProcess = spawn(process.execPath, [...args, script], {
      env: { ...process.env, ...s.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const prefix = (chunk: Buffer) => chunk.toString().split('\n').filter(Boolean).map((l) => `[${s.name}] ${l}`).join('\n') + '\n'
    child.stdout?.on('data', (c: Buffer) => process.stdout.write(prefix(c)))
    child.stderr?.on('data', (c: Buffer) => process.stderr.write(prefix(c)))
    let exited = false
    child.on('exit', () => (exited = true))
    const deadline = Date.now() + (s.readyTimeoutMs ?? 15_000)
    while (!(await answers(s.readyUrl))) {
      if (exited || Date.now() > deadline) {
        child.kill('SIGTERM')
        throw new SourceLoadError(s.name, exited ? 'the service exited during startup' : `no answer from ${s.readyUrl}`)
      }
      await sleep(100)
    }
    running.push({
      name: s.name,
      url: s.url,
      owned: true,
      stop: () =>
        new Promise<void>((resolveStop) => {
          if (exited) return resolveStop()
          child.once('exit', () => resolveStop())
          child.kill('SIGTERM')
          setTimeout(() => child.kill('SIGKILL'), 3000).unref()
        }),
    })
  }
  return running
}
