// The REST connector against upstreams that misbehave, all real node:http servers on 127.0.0.1:
// retries (fail N times then succeed, throttle with Retry-After, drop), the circuit breaker, the
// connection cap and its queue, maxResponseBytes (flood), separate timeouts (hang), a /health that
// never blocks and `..` path parameters. Each test counts the upstream requests.
import t from 'tap'
import { performance } from 'node:perf_hooks'
import { parseRetryAfter, retryDelay } from '../gateway/connectors/rest/request.js'
import { itemsSource, memoryLogger, sendJson, startUpstream, testContext } from './helpers/rest-upstream.js'
import { eventually } from './helpers/eventually.js'

const fast = { baseDelayMs: 10, maxDelayMs: 2000 }
const item = { id: 'a', name: 'A' }

function result(r: { errors?: readonly { extensions?: Record<string, unknown> }[] }): unknown[] {
  return [codeOf(r), (r.errors?.[0]?.extensions?.http as { status?: number } | undefined)?.status]
}

function codeOf(result: { errors?: readonly { extensions?: Record<string, unknown> }[] }): unknown {
  return result.errors?.[0]?.extensions?.code
}

t.test('retryDelay: backoff with jitter, Retry-After, idempotent statuses only', async (t) => {
  const retry = { retries: 3, baseDelayMs: 100, maxDelayMs: 1000 }
  const err = (status: number, code = 'TRB_ERR_UPSTREAM') => Object.assign(new Error('x'), { code, extensions: { code, http: { status } } })
  t.equal(retryDelay(err(503), 0, retry, () => 0), 50)
  t.equal(retryDelay(err(503), 0, retry, () => 1), 100)
  t.equal(retryDelay(err(503), 2, retry, () => 1), 400)
  t.equal(retryDelay(err(503), 5, { ...retry, retries: 9 }, () => 1), 1000, 'capped at maxDelayMs')
  t.equal(retryDelay(err(503), 3, retry), undefined, 'no retry past retries')
  t.equal(retryDelay(err(404), 0, retry), undefined, '4xx is not retried')
  t.equal(retryDelay(err(500), 0, retry), undefined, '500 is not retried')
  t.equal(retryDelay(err(504, 'TRB_ERR_UPSTREAM_TIMEOUT'), 0, retry, () => 0), 50)
  t.equal(retryDelay(err(503, 'TRB_ERR_UPSTREAM_UNAVAILABLE'), 0, retry), undefined, 'an open circuit is not retried')
  t.equal(parseRetryAfter('2'), 2000)
  t.ok((parseRetryAfter(new Date(Date.now() + 3000).toUTCString()) ?? 0) > 1000, 'an HTTP date')
  t.equal(parseRetryAfter('soon'), undefined)
  t.equal(parseRetryAfter(undefined), undefined)
})

t.test('GET fails twice with 503 then succeeds: 3 upstream requests, one answer', async (t) => {
  const up = await startUpstream(t, (_req, res, n) => (n <= 2 ? sendJson(res, 503, { message: 'busy' }) : sendJson(res, 200, [item])))
  const source = await itemsSource(t, up, { retry: fast })
  const result = await source.run('{ listItems { id name } }')
  t.same(result.errors, undefined)
  t.same(result.data, { listItems: [item] })
  t.equal(up.hits.get('GET /items'), 3)
})

t.test('failing three times exhausts the default 2 retries: 3 requests, the last error', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 502, { message: 'bad gateway' }))
  const source = await itemsSource(t, up, { retry: { baseDelayMs: 5 } })
  const result = await source.run('{ listItems { id } }')
  t.equal(codeOf(result), 'TRB_ERR_UPSTREAM')
  t.same(result.errors?.[0]?.extensions?.http, { status: 502 })
  t.equal(up.total(), 3)
})

t.test('POST is never retried; PUT is', async (t) => {
  const up = await startUpstream(t, (req, res, n) => (n === 1 ? sendJson(res, 503, { message: 'busy' }) : sendJson(res, req.method === 'POST' ? 201 : 200, item)))
  const source = await itemsSource(t, up, { retry: fast })
  const post = await source.run('mutation { createItem(input: { id: "a" }) { id } }')
  t.equal(codeOf(post), 'TRB_ERR_UPSTREAM')
  t.equal(up.hits.get('POST /items'), 1, 'one POST')
  const put = await source.run('mutation { putItem(id: "a", input: { id: "a" }) { id } }')
  t.same(put.data, { putItem: { id: 'a' } })
  t.equal(up.hits.get('PUT /items/a'), 2, 'the PUT was retried once')
})

t.test('retries: 0 makes one request', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 503, { message: 'busy' }))
  const source = await itemsSource(t, up, { retry: { retries: 0 } })
  t.equal(codeOf(await source.run('{ listItems { id } }')), 'TRB_ERR_UPSTREAM')
  t.equal(up.total(), 1)
})

t.test('429 with Retry-After: 1 waits a second, then succeeds', async (t) => {
  const up = await startUpstream(t, (_req, res, n) => (n === 1 ? sendJson(res, 429, { message: 'slow down' }, { 'retry-after': '1' }) : sendJson(res, 200, [item])))
  const source = await itemsSource(t, up, { retry: { ...fast, baseDelayMs: 1 } })
  const started = performance.now()
  const result = await source.run('{ listItems { id } }')
  const elapsed = performance.now() - started
  t.same(result.data, { listItems: [{ id: 'a' }] })
  t.equal(up.total(), 2)
  t.ok(elapsed >= 950 && elapsed < 3000, `waited the Retry-After (${Math.round(elapsed)} ms)`)
})

t.test('a Retry-After longer than maxDelayMs is not waited for: one request, the 429', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 503, { message: 'maintenance' }, { 'retry-after': '120' }))
  const source = await itemsSource(t, up, { retry: fast })
  const started = performance.now()
  const result = await source.run('{ listItems { id } }')
  t.equal(codeOf(result), 'TRB_ERR_UPSTREAM')
  t.same(result.errors?.[0]?.extensions?.http, { status: 503 })
  t.equal(up.total(), 1)
  t.ok(performance.now() - started < 1000)
})

t.test('a dropped connection is retried on a new one', async (t) => {
  const up = await startUpstream(t, (req, res, n) => (n === 1 ? req.socket.destroy() : sendJson(res, 200, item)))
  const source = await itemsSource(t, up, { retry: fast })
  const result = await source.run('{ getItem(id: "a") { id } }')
  t.same(result.data, { getItem: { id: 'a' } })
  t.equal(up.hits.get('GET /items/a'), 2)
})

t.test('circuit breaker: opens after 3 failures, fails fast, shows in /health and logs, half-opens and closes', async (t) => {
  let healthy = false
  const up = await startUpstream(t, (req, res) => {
    if (req.method === 'HEAD') return void res.writeHead(200).end()
    return healthy ? sendJson(res, 200, [item]) : sendJson(res, 500, { message: 'down' })
  })
  const { logger, lines } = memoryLogger()
  const source = await itemsSource(t, up, { retry: { retries: 0 }, circuitBreaker: { threshold: 3, halfOpenAfterMs: 300 } }, testContext(t, logger))
  t.match(await source.health(), { status: 'up', circuit: 'closed' })
  for (let i = 0; i < 3; i++) t.equal(codeOf(await source.run('{ listItems { id } }')), 'TRB_ERR_UPSTREAM')
  t.equal(up.hits.get('GET /items'), 3)
  const open = await source.run('{ listItems { id } }')
  t.equal(codeOf(open), 'TRB_ERR_UPSTREAM_UNAVAILABLE')
  t.same(open.errors?.[0]?.extensions?.http, { status: 503 })
  t.match(open.errors?.[0]?.message, /circuit open/)
  t.equal(up.hits.get('GET /items'), 3, 'no request while open')
  t.match(await source.health(), { status: 'down', circuit: 'open' })
  t.ok(lines.some((l) => l.circuit === 'open' && /circuit opened/.test(String(l.msg))), 'the opening is logged')

  await new Promise((r) => setTimeout(r, 350))
  t.match(await source.health(), { circuit: 'half-open' })
  healthy = true
  const again = await source.run('{ listItems { id } }')
  t.same(again.data, { listItems: [{ id: 'a' }] })
  t.equal(up.hits.get('GET /items'), 4, 'one trial call')
  t.match(await source.health(), { status: 'up', circuit: 'closed' })
  t.ok(lines.some((l) => l.circuit === 'closed'), 'the closing is logged')
})

t.test('the breaker counts calls, retries included', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 503, { message: 'down' }))
  const source = await itemsSource(t, up, { retry: { retries: 2, baseDelayMs: 1 }, circuitBreaker: { threshold: 2, halfOpenAfterMs: 60_000 } })
  t.same(result(await source.run('{ listItems { id } }')), ['TRB_ERR_UPSTREAM', 503])
  t.equal(up.hits.get('GET /items'), 3, 'one call, three attempts')
  t.match(await source.health(), { circuit: 'closed' })
  t.same(result(await source.run('{ listItems { id } }')), ['TRB_ERR_UPSTREAM', 503])
  t.equal(up.hits.get('GET /items'), 6)
  t.same(result(await source.run('{ listItems { id } }')), ['TRB_ERR_UPSTREAM_UNAVAILABLE', 503], 'two failed calls open it')
  t.equal(up.hits.get('GET /items'), 6)
})

t.test('a 200 with invalid JSON or an HTML page is not retried and does not open the circuit', async (t) => {
  let n = 0
  const up = await startUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': n++ % 2 ? 'text/html' : 'application/json' }).end(n % 2 ? '{"id": ' : '<html><body>Sign in</body></html>')
  })
  const source = await itemsSource(t, up, { retry: { retries: 2, baseDelayMs: 1 }, circuitBreaker: { threshold: 2, halfOpenAfterMs: 60_000 } })
  for (let i = 0; i < 4; i++) t.same(result(await source.run('{ listItems { id } }')), ['TRB_ERR_UPSTREAM', 502], 'a coded 502 each time')
  t.equal(up.total(), 4, 'one request per call: the same answer would come back')
  t.match(await source.health(), { circuit: 'closed' })
})

t.test('4xx answers do not open the circuit', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 404, { message: 'no such item' }))
  const source = await itemsSource(t, up, { circuitBreaker: { threshold: 2 } })
  for (let i = 0; i < 4; i++) t.equal(codeOf(await source.run('{ getItem(id: "x") { id } }')), 'TRB_ERR_UPSTREAM')
  t.equal(up.total(), 4)
})

t.test('200 concurrent calls use at most `connections` sockets; past the queue they fail fast', async (t) => {
  const held: Array<() => void> = []
  const up = await startUpstream(t, (_req, res) => { held.push(() => sendJson(res, 200, [item])) })
  const source = await itemsSource(t, up, { connections: 4, maxQueue: 150 })
  const calls = Array.from({ length: 200 }, () => source.run('{ listItems { id } }'))
  // Every call is issued, 4 on sockets and 150 queued (the other 46 refused at once), once 4 sockets are up.
  t.ok(await eventually(() => up.sockets() >= 4), 'the pool opened its sockets')
  await new Promise((r) => setTimeout(r, 100))
  t.equal(up.sockets(), 4, 'four sockets')
  t.equal(up.maxConcurrent(), 4)
  const release = setInterval(() => { while (held.length) held.shift()!() }, 5)
  t.teardown(() => clearInterval(release))
  const results = await Promise.all(calls)
  const ok = results.filter((r) => r.errors === undefined).length
  const refused = results.filter((r) => codeOf(r) === 'TRB_ERR_UPSTREAM_UNAVAILABLE').length
  t.equal(ok, 154, 'connections + maxQueue calls answered')
  t.equal(refused, 46, 'the rest refused at once')
  t.equal(up.total(), 154)
  t.equal(up.sockets(), 4, 'still four sockets')
  t.same((await source.run('{ listItems { id } }')).data, { listItems: [{ id: 'a' }] }, 'a normal call still works')
})

t.test('maxResponseBytes: a 50 MB flood is aborted with TRB_ERR_UPSTREAM_TOO_LARGE, not buffered', async (t) => {
  let written = 0
  const up = await startUpstream(t, (req, res) => {
    if (req.url === '/items') return sendJson(res, 200, [item])
    const declared = req.headers['x-declare'] === 'yes'
    res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(50 * 1024 * 1024) } : {}) })
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    res.write('[')
    const pump = () => {
      while (written < 50 * 1024 * 1024) {
        written += chunk.length
        if (!res.write(chunk)) return void res.once('drain', pump)
      }
      res.end(']')
    }
    res.on('error', () => undefined)
    pump()
  })
  const source = await itemsSource(t, up, { maxResponseBytes: 1024 * 1024, retry: { retries: 0 } })
  const result = await source.run('{ big }')
  t.equal(codeOf(result), 'TRB_ERR_UPSTREAM_TOO_LARGE')
  t.same(result.errors?.[0]?.extensions?.http, { status: 502 })
  t.match(result.errors?.[0]?.message, /more than 1048576 bytes/)
  t.ok(written < 20 * 1024 * 1024, `the upstream was cut off (${written} bytes written)`)
  t.equal(up.total(), 1, 'not retried')
  t.same((await source.run('{ listItems { id } }')).data, { listItems: [{ id: 'a' }] })
})

t.test('headersTimeoutMs and bodyTimeoutMs are separate', async (t) => {
  const up = await startUpstream(t, (req, res) => {
    if (req.url === '/items') return // hangs before the headers
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"id":') // then stalls inside the body
  })
  const source = await itemsSource(t, up, { headersTimeoutMs: 200, bodyTimeoutMs: 300, timeoutMs: 10_000, retry: { retries: 1, baseDelayMs: 1 } })
  let started = performance.now()
  const headers = await source.run('{ listItems { id } }')
  t.equal(codeOf(headers), 'TRB_ERR_UPSTREAM_TIMEOUT')
  t.match(headers.errors?.[0]?.message, /200 ms/)
  t.equal(up.hits.get('GET /items'), 2, 'a timed-out GET is retried once')
  t.ok(performance.now() - started < 3000, 'far from timeoutMs (10 s)')
  started = performance.now()
  const body = await source.run('{ getItem(id: "a") { id } }')
  t.equal(codeOf(body), 'TRB_ERR_UPSTREAM_TIMEOUT')
  t.match(body.errors?.[0]?.message, /300 ms/)
  t.equal(up.hits.get('GET /items/a'), 2)
  // undici checks body timeouts about once a second.
  t.ok(performance.now() - started < 4000)
})

t.test('health() answers within 100 ms while the upstream hangs, then reports the probe timeout', async (t) => {
  const up = await startUpstream(t, () => undefined)
  const source = await itemsSource(t, up, { healthTimeoutMs: 300 })
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    await source.health()
    t.ok(performance.now() - started < 100, `answered in ${Math.round(performance.now() - started)} ms`)
  }
  await new Promise((r) => setTimeout(r, 400))
  t.equal(up.hits.get('HEAD /'), 1, 'one probe at a time, not one per /health')
  const h = await source.health()
  t.equal(h.status, 'down')
  t.match(h.message, /no answer within 300 ms/)
})

t.test('health() reports a refused connection as down', async (t) => {
  const up = await startUpstream(t, (_req, res) => res.end())
  const source = await itemsSource(t, up, { baseUrl: 'http://127.0.0.1:1' })
  await new Promise((r) => setTimeout(r, 100))
  const h = await source.health()
  t.equal(h.status, 'down')
  t.match(h.message, /connection refused/)
})

t.test('path parameters "." and ".." are refused with 400 before any upstream call', async (t) => {
  const up = await startUpstream(t, (_req, res) => sendJson(res, 200, item))
  const source = await itemsSource(t, up)
  for (const id of ['..', '.']) {
    const result = await source.run(`{ getItem(id: "${id}") { id } }`)
    t.equal(codeOf(result), 'TRB_ERR_BAD_REQUEST')
    t.same(result.errors?.[0]?.extensions?.http, { status: 400 })
  }
  t.equal(up.total(), 0)
  t.same((await source.run('{ getItem(id: "../x") { id } }')).data, { getItem: { id: 'a' } })
  t.same([...up.hits.keys()], ['GET /items/..%2Fx'], 'other values are percent-encoded')
})
