#!/usr/bin/env node
/**
 * One autocannon run, in its own process (so that the load generator never shares an event loop
 * with a server under test). Spawned by bench/lib/load.mjs:
 *
 *   node bench/autocannon-worker.mjs '<json options>'
 *
 * Options: { url, method?, headers?, body?, bodies?, duration (s), connections, pipelining?, rate? }.
 * `rate`: requests per second across all connections (autocannon's `overallRate`); none: as fast as
 * the server answers.
 * `bodies` (a list of strings): the requests' bodies in turn, across all connections (instead of `body`).
 * Only http://127.0.0.1 URLs are accepted.
 *
 * stdout: one JSON object per line: `{"tick":n,"requests":r,"bytes":b}` once a second, then
 * `{"result":{...}}` (autocannon's result, trimmed) when the run ends. Exit code 0, or 1 on error.
 */
import autocannon from 'autocannon'

const opts = JSON.parse(process.argv[2] ?? '{}')
if (typeof opts.url !== 'string' || !/^http:\/\/127\.0\.0\.1:\d+\//.test(opts.url)) {
  process.stderr.write(`autocannon-worker: refusing url ${opts.url}: only http://127.0.0.1:<port>/ is allowed\n`)
  process.exit(1)
}
const duration = Number(opts.duration)
const connections = Number(opts.connections)
if (!(duration > 0 && duration <= 600) || !(connections >= 1 && connections <= 1000)) {
  process.stderr.write('autocannon-worker: duration must be in (0, 600] s and connections in [1, 1000]\n')
  process.exit(1)
}

let tick = 0
let next = 0
const cpuAtStart = process.cpuUsage()
const instance = autocannon(
  {
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    body: opts.body,
    ...(Array.isArray(opts.bodies) && opts.bodies.length > 0 ? { requests: [{ setupRequest: (req) => ({ ...req, body: opts.bodies[next++ % opts.bodies.length] }) }] } : {}),
    duration,
    connections,
    pipelining: Number(opts.pipelining ?? 1),
    ...(Number(opts.rate) > 0 ? { overallRate: Number(opts.rate) } : {}),
    timeout: 10,
  },
  (err, result) => {
    if (err) {
      process.stderr.write(`autocannon-worker: ${err.message}\n`)
      process.exit(1)
    }
    const pick = (h) => ({ average: h.average, mean: h.mean, stddev: h.stddev, min: h.min, max: h.max, p50: h.p50, p90: h.p90, p99: h.p99 })
    const out = {
      url: opts.url,
      method: opts.method ?? 'GET',
      duration: result.duration,
      connections: result.connections,
      requests: { ...pick(result.requests), total: result.requests.total, sent: result.requests.sent },
      latency: pick(result.latency),
      throughput: pick(result.throughput),
      errors: result.errors,
      timeouts: result.timeouts,
      non2xx: result.non2xx,
      statusCodeStats: result.statusCodeStats,
      /** This load generator's own CPU use, % of one core. */
      clientCpuPct: (() => {
        const u = process.cpuUsage(cpuAtStart)
        return Math.round((u.user + u.system) / 10 / (result.duration * 1000))
      })(),
    }
    process.stdout.write(`${JSON.stringify({ result: out })}\n`)
  },
)
instance.on('tick', ({ counter, bytes }) => {
  tick++
  process.stdout.write(`${JSON.stringify({ tick, requests: counter, bytes })}\n`)
})
process.on('SIGTERM', () => instance.stop())
