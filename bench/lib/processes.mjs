/**
 * Child processes of the benchmarks: the gateway started exactly as `npm start` starts it
 * (`node dist/gateway/cli.js start`), the hand-written baseline server, and autocannon runs.
 * Every child is spawned in its own process group and is stopped by its id (SIGTERM to the group,
 * then SIGKILL after a grace period); all of them are stopped when this process exits.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

/** The repository root. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

const children = new Set()

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }
}

process.on('exit', () => {
  for (const c of children) killGroup(c, 'SIGKILL')
})
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stderr.write(`\n[bench] ${sig}: stopping child processes\n`)
    for (const c of children) killGroup(c, 'SIGTERM')
    setTimeout(() => process.exit(130), 2000).unref()
  })
}

/** A consistent copy of a SQLite file (WAL included) at `dest`, through better-sqlite3's online backup. */
export async function copySqlite(src, dest) {
  const db = new Database(src, { readonly: true, fileMustExist: true })
  try {
    await db.backup(dest)
  } finally {
    db.close()
  }
}

/** A free TCP port on 127.0.0.1 (bound then released). */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer()
    s.once('error', fail)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => ok(port))
    })
  })
}

/**
 * Spawns `node <args>` with `env`, in its own process group, and resolves once a line of its stdout
 * matches `ready` (the match is returned). Rejects when it exits first or after `timeoutMs`.
 * Output lines go to `onLine`; the last 200 are kept for error messages. `wrap` (e.g.
 * `['valgrind', '--tool=callgrind', …]`) runs node under that command, in the same process (pid).
 * @returns { child, pid, match, lines, stop(graceMs?) }
 */
export function startNode({ name, args, env, ready, timeoutMs = 90_000, onLine, wrap = [] }) {
  const [command, ...prefix] = [...wrap, process.execPath]
  const child = spawn(command, [...prefix, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.add(child)
  const lines = []
  const exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })))
  exited.then(() => children.delete(child))
  const handle = {
    name,
    child,
    pid: child.pid,
    lines,
    exited,
    /** SIGTERM to the group, SIGKILL after `graceMs`. Resolves when the process has exited. */
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited
      killGroup(child, 'SIGTERM')
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs)
      const res = await exited
      clearTimeout(timer)
      // The gateway stops its side services itself; make sure nothing of the group is left.
      killGroup(child, 'SIGKILL')
      return res
    },
  }
  return new Promise((ok, fail) => {
    let done = false
    const timer = setTimeout(() => {
      if (done) return
      done = true
      handle.stop(2000)
      fail(new Error(`${name} did not become ready in ${timeoutMs} ms; last output:\n${lines.slice(-30).join('\n')}`))
    }, timeoutMs)
    const feed = (stream) => {
      let buf = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk) => {
        buf += chunk
        let i
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i)
          buf = buf.slice(i + 1)
          lines.push(line)
          if (lines.length > 200) lines.shift()
          onLine?.(line)
          if (!done) {
            const m = ready.exec(line)
            if (m) {
              done = true
              clearTimeout(timer)
              ok({ ...handle, match: m })
            }
          }
        }
      })
    }
    feed(child.stdout)
    feed(child.stderr)
    exited.then(({ code, signal }) => {
      if (done) return
      done = true
      clearTimeout(timer)
      fail(new Error(`${name} exited (${signal ?? code}) before it was ready; last output:\n${lines.slice(-30).join('\n')}`))
    })
  })
}

/**
 * The node flags that `npm start` runs the gateway with, read from package.json's `scripts.start`
 * (`node <flags> dist/gateway/cli.js start`), e.g. `['--disable-proto=throw', '--max-semi-space-size=128']`.
 */
export const START_NODE_FLAGS = (() => {
  const start = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start
  const m = /\bnode((?: --\S+)*) dist\/gateway\/cli\.js start/.exec(start)
  if (!m) throw new Error(`package.json scripts.start does not run node … dist/gateway/cli.js start: ${start}`)
  return m[1].trim().split(/\s+/).filter(Boolean)
})()

/**
 * A config module in `work`: the built config `source` (a path under the checkout, e.g.
 * `dist/config.js`) with its generated files written under `work`, so that a gateway started on it
 * never rewrites the checkout's generated/ (a production-mode start renders them for production).
 * @returns the module's absolute path, for startGateway's `config`
 */
export function isolatedConfig(work, source, name) {
  const file = join(work, `${name}.config.mjs`)
  writeFileSync(file, `import base from ${JSON.stringify(join(root, source))}\nexport default { ...base, generatedDir: ${JSON.stringify(join(work, `generated-${name}`))} }\n`)
  return file
}

/**
 * Starts the gateway as `npm start` does: `node <START_NODE_FLAGS> dist/gateway/cli.js start [--config <file>]`, with
 * the given environment on top of this process' (minus variables that would point it elsewhere).
 * `nodeArgs` go before the script (e.g. `--cpu-prof`), `args` after `start` (e.g. `--workers 2`), `wrap`
 * and `timeoutMs` as {@link startNode}. Resolves with `{ ...handle, url }` once the startup summary
 * printed its GraphQL URL.
 */
export async function startGateway({ config, env = {}, nodeArgs = [], args = [], onLine, wrap, timeoutMs }) {
  const base = { ...process.env }
  for (const k of ['SYSTEM_API_URL', 'TRIBUTARY_CONFIG', 'NODE_ENV', 'HOST', 'PORT', 'ROLE_SERVICE_PORT', 'TODO_DATABASE_URL', 'CHINOOK_DATABASE_URL', 'LOG_LEVEL']) delete base[k]
  const port = await freePort()
  const handle = await startNode({
    name: `gateway${config ? ` (${config})` : ''}`,
    args: [...START_NODE_FLAGS, ...nodeArgs, join(root, 'dist/gateway/cli.js'), 'start', ...(config ? ['--config', config] : []), ...args],
    env: { ...base, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    ready: /GraphQL\s+(http:\/\/127\.0\.0\.1:\d+)\/graphql/,
    onLine,
    wrap,
    timeoutMs,
  })
  return { ...handle, url: handle.match[1] }
}

/**
 * Starts bench/baseline-server.mjs with `args` (`onLine`, `wrap` and `timeoutMs` as {@link startNode}); resolves with `{ ...handle, url }`. Node runs it with
 * its default flags, plus `BENCH_BASELINE_NODE_ARGS` (space-separated) when set: e.g. npm start's
 * `--max-semi-space-size=128`, to price what the gateway's flags are worth to the baseline; then
 * `nodeArgs` (e.g. `--perf-basic-prof` for perf-pair.mjs).
 */
export async function startBaseline(args, { wrap, timeoutMs = 30_000, onLine, nodeArgs: extraNodeArgs = [] } = {}) {
  const port = await freePort()
  const nodeArgs = [...(process.env.BENCH_BASELINE_NODE_ARGS ?? '').split(' ').filter(Boolean), ...extraNodeArgs]
  const handle = await startNode({
    name: 'baseline',
    args: [...nodeArgs, join(root, 'bench/baseline-server.mjs'), '--port', String(port), ...args],
    env: { ...process.env },
    ready: /baseline listening (http:\/\/127\.0\.0\.1:\d+)/,
    timeoutMs,
    onLine,
    wrap,
  })
  return { ...handle, url: handle.match[1] }
}

/** Resident set size of a process, in kB, from /proc/<pid>/status (VmRSS; VmHWM is the peak). */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') }
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuTimeOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * One autocannon run in its own process (bench/autocannon-worker.mjs). `progress(text)` gets a status
 * line once a second. Bounded: the worker is stopped `duration + 30` s after it started. `rate`: req/s
 * across the connections (a fixed load; none: as fast as the server answers).
 * @returns autocannon's (trimmed) result plus `reqPerSec` (total requests / duration)
 */
export function runLoad({ label, url, method = 'GET', headers, body, bodies, duration, connections, pipelining = 1, rate, progress }) {
  const opts = { url, method, headers, body, ...(bodies ? { bodies } : {}), duration, connections, pipelining, ...(rate ? { rate } : {}) }
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [join(root, 'bench/autocannon-worker.mjs'), JSON.stringify(opts)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    children.add(child)
    const killer = setTimeout(() => killGroup(child, 'SIGKILL'), (duration + 30) * 1000)
    let result
    let stderr = ''
    let buf = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk) => {
      buf += chunk
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const msg = JSON.parse(buf.slice(0, i))
        buf = buf.slice(i + 1)
        if (msg.result) result = msg.result
        else progress?.(`${label}: ${msg.tick}/${duration} s  ${msg.requests.toLocaleString('en-US')} req/s`)
      }
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (c) => (stderr += c))
    child.once('exit', (code) => {
      clearTimeout(killer)
      children.delete(child)
      if (code !== 0 || !result) return fail(new Error(`autocannon run "${label}" failed (exit ${code}): ${stderr.trim()}`))
      result.reqPerSec = result.requests.total / result.duration
      ok(result)
    })
  })
}
