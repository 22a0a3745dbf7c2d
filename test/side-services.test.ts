/**
 * Side services (issue 7, item 7): a service started through gateway/services.ts must not outlive
 * its parent, even one killed with SIGKILL; in development a crashed service is restarted with
 * backoff, in production it stays down and is logged. Real processes, the real role service, real ports.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino, type Logger } from 'pino'
import { RESTART_BACKOFF, startServices } from '../gateway/services.js'
import { processExited as exited } from './helpers/cli.js'

const parentScript = fileURLToPath(new URL('./fixtures/services/parent.ts', import.meta.url))
const roleScript = fileURLToPath(new URL('../datasources/system/service.js', import.meta.url))

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  return typeof address === 'object' && address ? address.port : 0
}

/** True when `port` can be listened on at 127.0.0.1 (nobody holds it). */
async function portIsFree(port: number): Promise<boolean> {
  const server = createServer()
  return new Promise((resolve) => {
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

async function answers(url: string): Promise<boolean> {
  try {
    // Generous: a loaded machine answers slowly; a refused connection fails at once anyway.
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) })
    await res.arrayBuffer()
    return res.ok
  } catch {
    return false
  }
}

async function waitFor(what: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now()
  while (!(await what())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await sleep(25)
  }
  return Date.now() - started
}

for (const restart of [false, true]) {
  t.test(`SIGKILL of the parent ends its side service and frees its port (${restart ? 'development' : 'production'})`, async (t) => {
    const port = await freePort()
    const parent = spawn(process.execPath, ['--import', 'tsx', parentScript], {
      env: { ...process.env, SERVICE_PORT: String(port), RESTART: restart ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    t.teardown(() => { if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL') })
    const pid = await new Promise<number>((resolve, reject) => {
      let buffered = ''
      parent.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString()
        const line = buffered.split('\n').find((l) => l.startsWith('{"pid"'))
        if (line) resolve((JSON.parse(line) as { pid: number }).pid)
      })
      parent.once('exit', (code) => reject(new Error(`the parent exited (${code})`)))
    })
    t.teardown(() => { if (!exited(pid)) process.kill(pid, 'SIGKILL') })
    t.ok(await answers(`http://127.0.0.1:${port}/api/v1/role/all`), 'the role service answers')
    t.notOk(await portIsFree(port), 'it holds its port')

    parent.kill('SIGKILL')
    const gone = await waitFor(() => exited(pid), 5000)
    t.ok(gone < 5000, `the service exited ${gone} ms after the parent was killed`)
    await waitFor(() => portIsFree(port), 2000)
    t.ok(await portIsFree(port), 'its port is free')
    t.notOk(await answers(`http://127.0.0.1:${port}/api/v1/role/all`))
  })
}

/** A pino logger whose records are collected in `lines`. */
function collectingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>)
      done()
    },
  })
  return { logger: pino({ level: 'info' }, stream), lines }
}

/** Starts the real role service on a free port through `startServices`, logging into `lines`. */
async function startRoles(t: Test, restart: boolean) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const { logger, lines } = collectingLogger()
  const [service] = await startServices(
    [{ name: 'roles', script: roleScript, url, readyUrl: `${url}/openapi.json`, env: { ROLE_SERVICE_PORT: String(port), LOG_LEVEL: 'warn' } }],
    logger,
    { restart },
  )
  t.teardown(() => service.stop())
  return { port, url, lines, service }
}

t.test('development: a crashed side service is restarted with backoff', async (t) => {
  const { port, url, lines, service } = await startRoles(t, true)
  const delays: number[] = []
  for (let crash = 1; crash <= 2; crash++) {
    const pid = service.pid!
    process.kill(pid, 'SIGKILL')
    const crashedAt = Date.now()
    await waitFor(() => exited(pid), 3000)
    await waitFor(async () => service.pid !== undefined && service.pid !== pid && (await answers(`${url}/api/v1/role/all`)), 20_000)
    delays.push(Date.now() - crashedAt)
    t.equal(service.restarts, crash, `restart ${crash}`)
  }
  t.ok(delays[0] >= RESTART_BACKOFF.initialMs, `first restart after ${delays[0]} ms (>= ${RESTART_BACKOFF.initialMs})`)
  t.ok(delays[1] >= 2 * RESTART_BACKOFF.initialMs, `second restart after ${delays[1]} ms (>= ${2 * RESTART_BACKOFF.initialMs})`)
  const warnings = lines.filter((l) => l.msg === 'service exited; restarting it')
  t.same(warnings.map((l) => l.restartInMs), [RESTART_BACKOFF.initialMs, 2 * RESTART_BACKOFF.initialMs], 'the delay doubles')
  t.equal(warnings[0].signal, 'SIGKILL')

  const pid = service.pid!
  await service.stop()
  t.ok(exited(pid), 'stop() ends it')
  await sleep(RESTART_BACKOFF.initialMs * 3)
  t.equal(service.pid, undefined, 'a stopped service is not restarted')
  t.ok(await portIsFree(port))
})

t.test('production: a crashed side service is logged and stays down', async (t) => {
  const { url, lines, service } = await startRoles(t, false)
  const pid = service.pid!
  process.kill(pid, 'SIGKILL')
  await waitFor(() => exited(pid), 3000)
  await sleep(RESTART_BACKOFF.initialMs * 3)
  t.equal(service.pid, undefined)
  t.equal(service.restarts, 0)
  t.notOk(await answers(`${url}/api/v1/role/all`))
  t.ok(lines.some((l) => l.msg === 'service exited; not restarting it (production mode)' && l.level === 50))
})
