/**
 * README "Observability", metrics: `GET /metrics` serves Prometheus text through prom-client with
 * the request, operation, upstream and SQL metrics, the gauges and the default process metrics;
 * labels stay bounded under thousands of distinct URLs and documents; access is limited by
 * `metrics.allowedIps` / `metrics.bearerToken`; `metrics.enabled: false` serves nothing. Real
 * sources: a SQLite file, a REST and a GraphQL upstream on 127.0.0.1.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { startObservedGateway } from './helpers/observed-gateway.js'
import { resolveConfig } from '../gateway/config/index.js'

/** The sample lines (not comments) of a metric family, e.g. `tributary_http_requests_total`. */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
}

/** The value of the sample with exactly these labels (`route="/x",method="GET"`), or undefined. */
function value(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `) || (labels === '' && l.startsWith(`${name} `)))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

t.test('GET /metrics reports requests, operations, upstream calls, SQL, gauges and process metrics', async (t) => {
  const { app } = await startObservedGateway(t)
  const before = await app.inject({ url: '/metrics' })
  t.equal(before.statusCode, 200)
  t.match(before.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.equal(before.headers['cache-control'], 'no-store')

  t.equal((await app.inject({ url: '/operations/Mixed' })).statusCode, 200)
  t.equal((await app.inject({ url: '/operations/Items' })).statusCode, 200)
  t.equal((await app.inject({ url: '/operations/Broken' })).statusCode, 502)
  t.equal((await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ db_findManyItem { id } }' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'query Hello { gql_hello }\n' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/no/such/route' })).statusCode, 404)

  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(value(text, 'tributary_http_requests_total', 'route="/operations/*",method="GET",status="200"'), 2)
  t.equal(value(text, 'tributary_http_requests_total', 'route="/operations/*",method="GET",status="502"'), 1)
  t.equal(value(text, 'tributary_http_requests_total', 'route="/graphql",method="POST",status="200"'), 2)
  t.equal(value(text, 'tributary_http_requests_total', 'route="(unmatched)",method="GET",status="404"'), 1)
  // The first scrape was counted once its response was sent.
  t.equal(value(text, 'tributary_http_requests_total', 'route="/metrics",method="GET",status="200"'), 1)

  t.equal(value(text, 'tributary_operation_duration_seconds_count', 'operation="Mixed"'), 1)
  t.equal(value(text, 'tributary_operation_duration_seconds_count', 'operation="Items"'), 1)
  t.equal(value(text, 'tributary_operation_duration_seconds_count', 'operation="Broken"'), 1)
  // A document sent as text is labelled by its stored operation's name when it is one, else (graphql).
  t.equal(value(text, 'tributary_operation_duration_seconds_count', 'operation="Hello"'), 1)
  t.equal(value(text, 'tributary_operation_duration_seconds_count', 'operation="(graphql)"'), 1)
  t.ok(value(text, 'tributary_operation_duration_seconds_bucket', 'le="10",operation="Mixed"') === 1, 'histogram buckets')

  t.equal(value(text, 'tributary_upstream_duration_seconds_count', 'source="up",status="200"'), 1)
  t.equal(value(text, 'tributary_upstream_duration_seconds_count', 'source="up",status="503"'), 1)
  t.equal(value(text, 'tributary_upstream_duration_seconds_count', 'source="gql",status="200"'), 2)
  t.ok((value(text, 'tributary_sql_duration_seconds_count', 'source="db"') ?? 0) >= 3, 'one SQL statement per database query at least')

  t.equal(value(text, 'tributary_subscriptions_active', ''), 0)
  t.equal(value(text, 'tributary_live_pollers', ''), 0)
  t.equal(value(text, 'tributary_db_pool_connections', 'source="db",state="used"'), 0)
  t.ok(value(text, 'tributary_db_pool_connections', 'source="db",state="free"') !== undefined)
  t.ok(value(text, 'tributary_upstream_pool_connections', 'source="up",state="connected"') !== undefined)
  t.ok(value(text, 'tributary_upstream_pool_connections', 'source="gql",state="running"') !== undefined)
  t.ok(samples(text, 'process_cpu_seconds_total').length === 1, 'default process metrics')
  t.ok(samples(text, 'nodejs_eventloop_lag_seconds').length === 1, 'default Node.js metrics')
})

t.test('gauges: subscriptions over SSE and WebSocket, live pollers', async (t) => {
  const { app } = await startObservedGateway(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const gauge = async (name: string) => value((await app.inject({ url: '/metrics' })).body, name, '')
  const start = await gauge('tributary_subscriptions_active')

  /** Opens an event stream and resolves once its first `data:` event arrived. */
  const openStream = async (path: string) => {
    const controller = new AbortController()
    const res = await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
    const reader = res.body!.getReader()
    let text = ''
    while (!text.includes('data:')) text += new TextDecoder().decode((await reader.read()).value)
    return () => controller.abort()
  }
  const closeSse = await openStream('/operations/Ticks')
  t.equal(await gauge('tributary_subscriptions_active'), start! + 1, 'an SSE subscription is counted')

  const { WebSocket } = await import('ws')
  const ws = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws')
  await new Promise((resolve) => ws.once('open', resolve))
  const messages: string[] = []
  const waitFor = async (type: string) => {
    for (let i = 0; i < 100 && !messages.includes(type); i++) await sleep(50)
  }
  ws.on('message', (m) => messages.push(String(JSON.parse(String(m)).type)))
  ws.send(JSON.stringify({ type: 'connection_init' }))
  await waitFor('connection_ack')
  ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { local_tick }' } }))
  await waitFor('next')
  t.ok(messages.includes('next'), 'the subscription runs')
  t.equal(await gauge('tributary_subscriptions_active'), start! + 2, 'a WebSocket subscription is counted')
  ws.send(JSON.stringify({ id: '1', type: 'complete' }))
  for (let i = 0; i < 50 && (await gauge('tributary_subscriptions_active')) !== start! + 1; i++) await sleep(50)
  t.equal(await gauge('tributary_subscriptions_active'), start! + 1, 'complete ends it')
  ws.close()
  closeSse()
  for (let i = 0; i < 50 && (await gauge('tributary_subscriptions_active')) !== start; i++) await sleep(50)
  t.equal(await gauge('tributary_subscriptions_active'), start, 'a client leaving ends it')

  t.equal(await gauge('tributary_live_pollers'), 0)
  const closeLive = await openStream('/operations/Now?live=true')
  t.equal(await gauge('tributary_live_pollers'), 1, 'a live query runs one poller')
  closeLive()
  for (let i = 0; i < 50 && (await gauge('tributary_live_pollers')) !== 0; i++) await sleep(50)
  t.equal(await gauge('tributary_live_pollers'), 0, 'and stops it when its last client leaves')
})

t.test('attack: thousands of distinct URLs and documents add no series', async (t) => {
  const { app } = await startObservedGateway(t)
  const warm = async () => {
    await app.inject({ url: '/random/warm' })
    await app.inject({ url: '/operations/NoSuchOperation-warm' })
    await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'query Warm { db_findManyItem { id } }' } })
    await app.inject({ url: '/operations/Items?x=warm' })
  }
  await warm()
  const series = (text: string) =>
    text.split('\n').filter((l) => l.startsWith('tributary_') && !l.startsWith('tributary_upstream_pool') && !l.startsWith('tributary_db_pool')).length
  // Metrics are per process: compare with a scrape made after a first one (which adds route="/metrics").
  await app.inject({ url: '/metrics' })
  const first = (await app.inject({ url: '/metrics' })).body
  for (let i = 0; i < 2500; i++) {
    await app.inject({ url: `/random/${i}/${'x'.repeat(i % 50)}` })
    await app.inject({ url: `/operations/NoSuchOperation${i}` })
    await app.inject({ method: 'POST', url: '/graphql', payload: { query: `query Attack${i} { db_findManyItem { id } }` } })
    await app.inject({ url: `/operations/Items?x=${i}` })
  }
  const after = (await app.inject({ url: '/metrics' })).body
  t.equal(series(after), series(first), 'the series count does not grow with distinct URLs, operation names or query strings')
  const delta = (name: string, labels: string) => (value(after, name, labels) ?? 0) - (value(first, name, labels) ?? 0)
  t.equal(delta('tributary_http_requests_total', 'route="(unmatched)",method="GET",status="404"'), 2500)
  t.equal(delta('tributary_operation_duration_seconds_count', 'operation="(graphql)"'), 2500)
  // Unknown query parameters are refused (400) before the operation runs: counted under the route pattern.
  t.equal(delta('tributary_http_requests_total', 'route="/operations/*",method="GET",status="400"'), 2500)
  t.equal(delta('tributary_http_requests_total', 'route="/operations/*",method="GET",status="404"'), 2500)
  t.notOk(after.includes('Attack1'), 'client-chosen operation names are not labels')
})

t.test('access: loopback only by default, bearer token, allowed addresses, off', async (t) => {
  await t.test('default: loopback only', async (t) => {
    const { app } = await startObservedGateway(t)
    t.equal((await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode, 200)
    t.equal((await app.inject({ url: '/metrics', remoteAddress: '::1' })).statusCode, 200)
    const foreign = await app.inject({ url: '/metrics', remoteAddress: '203.0.113.7' })
    t.equal(foreign.statusCode, 403)
    t.equal(foreign.json().errors[0].extensions.code, 'TRB_ERR_METRICS_DENIED')
    t.notOk(foreign.body.includes('tributary_'), 'no metric leaks')
  })

  await t.test('bearer token: any address with the token, 401 without', async (t) => {
    const token = 'scrape-secret-0123456789'
    const { app } = await startObservedGateway(t, { metrics: { bearerToken: token, path: '/internal/metrics' } })
    const none = await app.inject({ url: '/internal/metrics', remoteAddress: '203.0.113.7' })
    t.equal(none.statusCode, 401)
    t.equal(none.headers['www-authenticate'], 'Bearer realm="metrics"')
    t.equal(none.json().errors[0].extensions.code, 'TRB_ERR_METRICS_DENIED')
    const wrong = await app.inject({ url: '/internal/metrics', headers: { authorization: `Bearer ${token}x` } })
    t.equal(wrong.statusCode, 401)
    const right = await app.inject({ url: '/internal/metrics', remoteAddress: '203.0.113.7', headers: { authorization: `Bearer ${token}` } })
    t.equal(right.statusCode, 200)
    t.match(right.body, /tributary_http_requests_total/)
    t.equal((await app.inject({ url: '/metrics' })).statusCode, 404, 'only the configured path serves them')
  })

  await t.test('allowedIps', async (t) => {
    const { app } = await startObservedGateway(t, { metrics: { allowedIps: ['10.1.2.3'] } })
    t.equal((await app.inject({ url: '/metrics', remoteAddress: '10.1.2.3' })).statusCode, 200)
    t.equal((await app.inject({ url: '/metrics', remoteAddress: '::ffff:10.1.2.3' })).statusCode, 200, 'an IPv4-mapped address is its IPv4 address')
    t.equal((await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode, 403)
  })

  await t.test('enabled: false serves nothing', async (t) => {
    const { app } = await startObservedGateway(t, { metrics: { enabled: false } })
    const res = await app.inject({ url: '/metrics' })
    t.equal(res.statusCode, 404)
    t.equal(res.json().errors[0].extensions.code, 'TRB_ERR_NOT_FOUND')
  })
})

t.test('metrics and telemetry config is validated', async (t) => {
  const base = { datasources: [{ kind: 'schema', typeDefs: 'type Query { a: Int }' }] }
  const bad: [unknown, RegExp][] = [
    [{ path: '/graphql' }, /metrics\.path: must not be a path the gateway serves/],
    [{ path: '/operations/metrics' }, /metrics\.path/],
    [{ path: 'metrics' }, /metrics\.path/],
    [{ bearerToken: 'short' }, /metrics\.bearerToken/],
    [{ allowedIps: ['localhost'] }, /metrics\.allowedIps\[0\]/],
    [{ enabled: 'yes' }, /metrics\.enabled/],
    [{ scrape: true }, /metrics\.scrape: is not a known option/],
    [{ eventLoopPrecisionMs: 0 }, /metrics\.eventLoopPrecisionMs/],
    [{ eventLoopPrecisionMs: 60001 }, /metrics\.eventLoopPrecisionMs/],
    [{ eventLoopPrecisionMs: 2.5 }, /metrics\.eventLoopPrecisionMs/],
    [{ eventLoopPrecisionMs: '10' }, /metrics\.eventLoopPrecisionMs/],
  ]
  for (const [metrics, message] of bad) t.throws(() => resolveConfig({ ...base, metrics }), { code: 'TRB_ERR_CONFIG_INVALID', message }, JSON.stringify(metrics))
  t.throws(() => resolveConfig({ ...base, telemetry: { otlpEndpoint: 'grpc://collector' } }), { message: /telemetry\.otlpEndpoint/ })

  const defaults = resolveConfig(base, {})
  t.same(defaults.metrics, { enabled: true, path: '/metrics', bearerToken: null, allowedIps: ['127.0.0.1', '::1'], eventLoopPrecisionMs: 10 })
  t.same(defaults.telemetry, { otlpEndpoint: null, serviceName: 'tributary', traceProbesAndAssets: false })
  const withToken = resolveConfig({ ...base, metrics: { bearerToken: 'x'.repeat(16) } }, {})
  t.equal(withToken.metrics.allowedIps, null, 'a bearer token opens the metrics to any address that has it')
  const fromEnv = resolveConfig(base, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SERVICE_NAME: 'edge' })
  t.same(fromEnv.telemetry, { otlpEndpoint: 'http://127.0.0.1:4318', serviceName: 'edge', traceProbesAndAssets: false })
})
