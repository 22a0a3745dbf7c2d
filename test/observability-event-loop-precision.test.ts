/**
 * `metrics.eventLoopPrecisionMs` (README "Observability"): the interval of the event-loop delay
 * histogram behind `nodejs_eventloop_lag_*` (prom-client's `eventLoopMonitoringPrecision`). Its own
 * test process: the process's metric set is made once, by its first gateway. With 250 ms the
 * histogram's smallest value is about 0.25 s (it records whole intervals), where the default 10 ms
 * gives about 0.01 s: a setting that did not reach prom-client fails here. (What it saves, an idle
 * process's CPU, is measured in bench/README.md, not here.)
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { startObservedGateway } from './helpers/observed-gateway.js'

/** The value of an unlabelled metric in Prometheus text. */
function metric(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
  if (!m) throw new Error(`no ${name} in the scrape`)
  return Number(m[1])
}

t.test('metrics.eventLoopPrecisionMs sets the histogram interval', async (t) => {
  const { app, gateway } = await startObservedGateway(t, { metrics: { eventLoopPrecisionMs: 250 } })
  t.equal(gateway.config.metrics.eventLoopPrecisionMs, 250)
  await sleep(1500) // six intervals
  const res = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })
  t.equal(res.statusCode, 200)
  const min = metric(res.body, 'nodejs_eventloop_lag_min_seconds')
  const p50 = metric(res.body, 'nodejs_eventloop_lag_p50_seconds')
  t.ok(min >= 0.2 && min < 1, `the smallest sample is about one interval: ${min} s`)
  t.ok(p50 >= 0.24 && p50 < 1, `p50 ${p50} s`)
})
