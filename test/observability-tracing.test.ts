/**
 * README "Observability", traces and logs: with `telemetry.otlpEndpoint`, spans go to a real OTLP/HTTP
 * receiver (a node:http server on 127.0.0.1 that decodes the OTLP JSON it is sent) as one tree per
 * request — server span, `operation <name>`, one span per SQL statement and per upstream call — that
 * continues the client's W3C `traceparent`, and the REST and GraphQL upstreams receive the upstream
 * span's `traceparent`. Log lines carry `reqId` and, while tracing, `traceId`. Without telemetry no
 * SDK starts and nothing is propagated.
 */
import t from 'tap'
import { createServer } from 'node:http'
import { Writable } from 'node:stream'
import { startObservedGateway } from './helpers/observed-gateway.js'
import { observers } from '../gateway/observability/probes.js'
import { eventually } from './helpers/eventually.js'

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: { key: string; value: Record<string, unknown> }[]
  status?: { code?: number }
}

/** A real OTLP/HTTP JSON receiver: collects every span of every `POST /v1/traces`. */
async function startReceiver(t: { teardown(fn: () => unknown): void }) {
  const spans: OtlpSpan[] = []
  const services = new Set<string>()
  const contentTypes: string[] = []
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (text += c))
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']))
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      const body = JSON.parse(text) as {
        resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[]
      }
      for (const rs of body.resourceSpans) {
        for (const a of rs.resource.attributes) if (a.key === 'service.name' && a.value.stringValue) services.add(a.value.stringValue)
        for (const ss of rs.scopeSpans) spans.push(...ss.spans)
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans, services, contentTypes }
}

/** A pino destination collecting JSON log lines. */
function logSink() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, stream }
}

function attr(span: OtlpSpan, key: string): unknown {
  const v = span.attributes?.find((a) => a.key === key)?.value
  return v ? Object.values(v)[0] : undefined
}

/** Production mode logs upstream failures (warn, `upstream error`) through the request's logger. */
const PRODUCTION = { mode: 'production', graphql: { allowArbitraryOperationsInProduction: true } } as const

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CLIENT_SPAN = 'b7ad6b7169203331'

// First, while no SDK has started in this process.
t.test('without telemetry: no SDK, no traceparent upstream, logs carry reqId', async (t) => {
  const receiver = await startReceiver(t)
  const logs = logSink()
  const { app, restTraceparents, graphqlTraceparents } = await startObservedGateway(t, { metrics: { enabled: false }, ...PRODUCTION }, { logger: { level: 'info', stream: logs.stream } })
  t.equal(observers.tracer, undefined, 'no tracer')
  t.equal((await app.inject({ url: '/operations/Mixed', headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } })).statusCode, 200)
  t.equal((await app.inject({ url: '/operations/Broken' })).statusCode, 502)
  t.same(restTraceparents, [undefined, undefined], 'the REST upstream got no traceparent')
  t.same(graphqlTraceparents, [undefined], 'the GraphQL upstream got no traceparent')
  const warn = logs.lines.find((l) => l.msg === 'upstream error')
  t.ok(warn, 'the upstream failure is logged')
  t.match(warn?.reqId, /^req-/, 'with its request id')
  t.notOk('traceId' in (warn ?? {}), 'and no trace id')
  await app.close()
  t.equal(receiver.spans.length, 0, 'nothing was exported')
})

t.test('traces: request → operation → SQL and upstream calls, traceparent in and out, traceId in logs', async (t) => {
  const receiver = await startReceiver(t)
  const logs = logSink()
  const { app, restTraceparents, graphqlTraceparents } = await startObservedGateway(
    t,
    { telemetry: { otlpEndpoint: receiver.url, serviceName: 'tributary-test' }, ...PRODUCTION },
    { logger: { level: 'info', stream: logs.stream } },
  )
  t.ok(observers.tracer, 'the SDK runs')
  const mixed = await app.inject({ url: '/operations/Mixed', headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } })
  t.equal(mixed.statusCode, 200, mixed.body)
  const broken = await app.inject({ url: '/operations/Broken' })
  t.equal(broken.statusCode, 502)
  const viaGraphql = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ db_findManyItem { id } }' }, headers: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` } })
  t.equal(viaGraphql.statusCode, 200)
  const named = await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'query ListItems { db_findManyItem { id } }' }, headers: { traceparent: `00-${'3'.repeat(32)}-${'2'.repeat(16)}-01` } })
  t.equal(named.statusCode, 200)
  // Health probes and static assets are not traced (telemetry.traceProbesAndAssets is off).
  t.equal((await app.inject({ url: '/health/live', headers: { traceparent: `00-${'4'.repeat(32)}-${'2'.repeat(16)}-01` } })).statusCode, 200)
  // Closing the app flushes the spans to the receiver.
  await app.close()
  // Until the spans stop coming (the exporter may post them in more than one batch).
  let seen = -1
  await eventually(() => {
    const settled = receiver.spans.length >= 10 && receiver.spans.length === seen
    seen = receiver.spans.length
    return settled
  }, 10_000, 300)

  t.ok(receiver.services.has('tributary-test'), 'service.name')
  t.ok(receiver.contentTypes.every((c) => c.startsWith('application/json')), 'OTLP over HTTP, JSON encoding')

  const inTrace = receiver.spans.filter((s) => s.traceId === CLIENT_TRACE)
  const server = inTrace.find((s) => s.kind === 2)
  t.ok(server, 'a server span continues the client trace')
  t.equal(server?.name, 'GET /operations/*')
  t.equal(server?.parentSpanId, CLIENT_SPAN, 'its parent is the client span of the traceparent')
  t.equal(attr(server!, 'http.response.status_code'), 200)
  const operation = inTrace.find((s) => s.name === 'operation Mixed')
  t.ok(operation, 'an operation span')
  t.equal(operation?.parentSpanId, server?.spanId, 'operation under the request')
  const sql = inTrace.filter((s) => attr(s, 'db.system.name') === 'sqlite')
  t.ok(sql.length >= 1, 'SQL statement spans')
  for (const s of sql) {
    t.equal(s.parentSpanId, operation?.spanId, 'SQL under the operation')
    t.equal(s.name, 'SELECT')
    t.match(String(attr(s, 'db.query.text')), /^select /i)
    t.equal(attr(s, 'tributary.source'), 'db')
  }
  const rest = inTrace.find((s) => attr(s, 'tributary.source') === 'up')
  const gql = inTrace.find((s) => attr(s, 'tributary.source') === 'gql')
  t.ok(rest && gql, 'one span per upstream call')
  t.equal(rest?.kind, 3, 'client span')
  t.equal(rest?.parentSpanId, operation?.spanId, 'REST call under the operation')
  t.equal(gql?.parentSpanId, operation?.spanId, 'GraphQL call under the operation')
  t.equal(attr(rest!, 'http.response.status_code'), 200)
  t.equal(restTraceparents[0], `00-${CLIENT_TRACE}-${rest?.spanId}-01`, 'the REST upstream received the traceparent of its call span')
  t.equal(graphqlTraceparents[0], `00-${CLIENT_TRACE}-${gql?.spanId}-01`, 'the GraphQL upstream received the traceparent of its call span')

  // A request without traceparent starts its own trace; its failed upstream call is an error span.
  const brokenServer = receiver.spans.find((s) => s.kind === 2 && attr(s, 'http.response.status_code') === 502)
  t.ok(brokenServer && brokenServer.traceId !== CLIENT_TRACE && !brokenServer.parentSpanId, 'a new root trace')
  const brokenCall = receiver.spans.find((s) => s.traceId === brokenServer?.traceId && attr(s, 'tributary.source') === 'up')
  t.equal(brokenCall?.status?.code, 2, 'the 503 upstream call has an error status')
  t.equal(restTraceparents[1]?.split('-')[1], brokenServer?.traceId)

  // /graphql documents get the same tree.
  const graphqlOp = receiver.spans.find((s) => s.traceId === '1'.repeat(32) && s.name === 'operation (graphql)')
  t.ok(graphqlOp, '/graphql operation span in the client trace')
  t.ok(receiver.spans.some((s) => s.parentSpanId === graphqlOp?.spanId && attr(s, 'db.system.name') === 'sqlite'), 'its SQL under it')
  const namedOp = receiver.spans.find((s) => s.traceId === '3'.repeat(32) && s.name.startsWith('operation '))
  t.equal(namedOp?.name, 'operation ListItems', 'a named /graphql operation\'s span carries its name')
  t.equal(attr(namedOp!, 'graphql.operation.name'), 'ListItems')
  t.notOk(receiver.spans.some((s) => s.traceId === '4'.repeat(32)), 'no span for a health probe')

  // Logs: the upstream failure's warning carries its request id and its trace id.
  const warn = logs.lines.find((l) => l.msg === 'upstream error')
  t.ok(warn, 'the upstream failure is logged')
  t.match(warn?.reqId, /^req-/)
  t.equal(warn?.traceId, brokenServer?.traceId, 'with the trace id of its request')
  t.match(warn?.spanId, /^[0-9a-f]{16}$/)
})
