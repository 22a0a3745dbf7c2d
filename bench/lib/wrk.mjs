/**
 * One wrk run (https://github.com/wg/wrk, Debian's `wrk` package), the `--client wrk` load generator
 * of bench/run.mjs. wrk is C with one epoll loop per thread: on a 2-vCPU machine it drives a server
 * with about half of the other core where autocannon (JavaScript) needs all of it, so a fast server's
 * req/s are the server's and not the load generator's ceiling (issue 30's `cache` scenario).
 *
 *   runWrk({ label, url, method?, headers?, body?, duration, connections, threads?, progress? })
 *
 * Only `http://127.0.0.1:<port>/` URLs, at most 600 s and 1000 connections (as autocannon-worker.mjs).
 * A request with a method other than GET, headers or a body is sent by a Lua script written next to
 * the run (`wrk.method`, `wrk.headers`, `wrk.body`, as escaped Lua strings); wrk cannot send
 * different bodies in turn nor hold a fixed rate, so `bodies` and `rate` are refused (the caller
 * keeps autocannon for those).
 *
 * @returns a result shaped as autocannon-worker.mjs' (the fields bench/run.mjs reads): `{ url, method,
 *   duration (s, as wrk measured it), connections, requests: { total }, reqPerSec, latency: { average, p50, p90, p99 } (ms),
 *   errors, timeouts, non2xx, clientCpuPct (wrk's CPU, % of one core, sampled from /proc every
 *   100 ms), client: 'wrk' }`
 * @throws when wrk is not on PATH (with the install command); the promise rejects when wrk exits
 *   non-zero, writes to stderr (a script error, after which wrk would run its default GET) or prints no summary
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cpuTimeOf } from './processes.mjs'

/**
 * The wrk processes running, killed when this process exits (bench/lib/processes.mjs turns SIGINT
 * and SIGTERM into an exit after stopping its own children).
 */
const live = new Set()
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL')
})

/** Whether `wrk` runs here (cached). */
let available
export function wrkAvailable() {
  available ??= spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined
  return available
}

/** Throws, with the install command, when wrk does not run here (`--client wrk` checks it before starting anything). */
export function requireWrk() {
  if (!wrkAvailable()) throw new Error('--client wrk: wrk is not installed (Debian: apt-get install -y wrk)')
}

/**
 * `text` as a quoted Lua string literal, byte for byte: backslash, `"` and every control character
 * escaped (`\ddd`, decimal). A long string `[[…]]` would not do: Lua drops a newline right after
 * its opening bracket and turns CR LF into LF. Other characters stay as they are (the script is
 * UTF-8, the bytes wrk sends).
 */
function luaString(text) {
  return `"${text.replace(/[\\"\u0000-\u001f\u007f]/g, (c) => (c === '\\' || c === '"' ? `\\${c}` : `\\${String(c.charCodeAt(0)).padStart(3, '0')}`))}"`
}

/** wrk's latency figure (`1.23ms`, `850.00us`, `1.02s`) in ms. */
function ms(figure) {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(figure.trim())
  if (!m) return NaN
  const v = Number(m[1])
  return m[2] === 'us' ? v / 1000 : m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000
}

export function runWrk({ label, url, method = 'GET', headers, body, bodies, rate, duration, connections, threads = 1, progress }) {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`wrk: refusing url ${url}: only http://127.0.0.1:<port>/ is allowed`)
  if (!(duration > 0 && duration <= 600) || !(connections >= 1 && connections <= 1000)) throw new Error('wrk: duration must be in (0, 600] s and connections in [1, 1000]')
  if (bodies || rate) throw new Error('wrk: no bodies in turn nor fixed rate (autocannon runs those)')
  requireWrk()
  const dir = mkdtempSync(join(tmpdir(), 'tributary-wrk-'))
  const args = [`-t${Math.min(threads, connections)}`, `-c${connections}`, `-d${duration}s`, '--latency', '--timeout', '10s']
  if (method !== 'GET' || headers || body !== undefined) {
    const lines = [`wrk.method = ${luaString(method)}`]
    for (const [k, v] of Object.entries(headers ?? {})) lines.push(`wrk.headers[${luaString(k)}] = ${luaString(String(v))}`)
    if (body !== undefined) lines.push(`wrk.body = ${luaString(body)}`)
    writeFileSync(join(dir, 'request.lua'), `${lines.join('\n')}\n`)
    args.push('-s', join(dir, 'request.lua'))
  }
  args.push(url)
  return new Promise((ok, fail) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    live.add(child)
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c))
    child.stderr.setEncoding('utf8').on('data', (c) => (err += c))
    let cpu = 0
    let tick = 0
    const sampler = setInterval(() => {
      try {
        cpu = cpuTimeOf(child.pid)
      } catch {
        // gone: the last sample stands
      }
      if (++tick % 10 === 0) progress?.(`${label}: ${tick / 10}/${duration} s (wrk)`)
    }, 100)
    const killer = setTimeout(() => child.kill('SIGKILL'), (duration + 30) * 1000)
    child.once('exit', (code) => {
      live.delete(child)
      clearInterval(sampler)
      clearTimeout(killer)
      rmSync(dir, { recursive: true, force: true })
      const done = /(\d+) requests in ([\d.]+(?:us|ms|s|m))/.exec(out)
      const total = Number(done?.[1])
      const elapsed = done ? ms(done[2]) / 1000 : NaN
      // wrk reports a script error on stderr and then runs its default GET, exit code 0: refused too.
      if (code !== 0 || err.trim() !== '' || !Number.isFinite(total) || !(elapsed > 0)) return fail(new Error(`wrk run "${label}" failed (exit ${code}): ${(err || out).trim()}`))
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
      const dist = (p) => ms(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '')
      ok({
        url,
        method,
        duration: elapsed,
        connections,
        requests: { total },
        reqPerSec: total / elapsed,
        latency: { average: +ms(/^\s+Latency\s+(\S+)/m.exec(out)?.[1] ?? '').toFixed(2), p50: +dist(50).toFixed(2), p90: +dist(90).toFixed(2), p99: +dist(99).toFixed(2) },
        errors: socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0,
        timeouts: socket ? Number(socket[4]) : 0,
        non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
        clientCpuPct: Math.round((100 * cpu) / (elapsed * 1000)),
        client: 'wrk',
      })
    })
  })
}
