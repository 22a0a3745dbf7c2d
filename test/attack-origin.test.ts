/**
 * Attack: cross-site WebSocket hijacking, cross-origin HTTP and DNS rebinding (issue 7, item 2).
 *
 * A page on another site opens `ws://gateway/graphql` (its browser sends `Origin`), or sends a CORS
 * preflight, or reaches the gateway under a rebound host name. Each is driven through a real `ws`
 * client, real `fetch` and real `node:http` requests against the demo on 127.0.0.1, and must be
 * refused with a coded error before anything runs; the gateway's own origin (the playground),
 * listed origins and clients without `Origin` keep working.
 */
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { startDemo } from './helpers/demo.js'
import { run, upgrade } from './helpers/ws.js'

const operationsDir = fileURLToPath(new URL('../operations', import.meta.url))

/** A raw HTTP/1.1 request with a chosen `Host` header (fetch does not let one set it). */
function rawGet(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url + path, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }))
    })
    req.on('error', reject)
    req.end()
  })
}

const EXECUTE_RAW = 'mutation { todo_executeRaw(query: "DELETE FROM todo") }'
const COUNT = '{ todo_aggregateTodo { _count { _all } } }'

t.test('development: a foreign Origin cannot open /graphql over WebSocket', async (t) => {
  const { url, app } = await startDemo(t, { listen: true })
  const count = async () => (await app.inject({ method: 'POST', url: '/graphql', payload: { query: COUNT } })).json().data.todo_aggregateTodo._count._all as number
  const before = await count()
  t.ok(before > 0)

  for (const origin of ['https://evil.example', 'http://127.0.0.1.evil.example', 'http://localhost:' + new URL(url).port, 'null', 'file://', 'http://127.0.0.1:1']) {
    const res = await upgrade(url, { origin })
    t.equal(res.open, false, `${origin}: not upgraded`)
    if (res.open) {
      // What the hostile page does once the socket is open.
      await run(res.socket, EXECUTE_RAW).catch(() => undefined)
      res.socket.close()
      continue
    }
    t.equal(res.status, 403, `${origin}: 403`)
    t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_ORIGIN_FORBIDDEN')
  }
  t.equal(await count(), before, 'nothing ran')

  t.test('the gateway\'s own origin (the playground) still works, http or https scheme', async (t) => {
    for (const origin of [url, url.replace('http:', 'https:'), url.toUpperCase().replace('HTTP:', 'http:')]) {
      const res = await upgrade(url, { origin })
      t.equal(res.open, true, `${origin}: upgraded`)
      if (!res.open) continue
      const result = await run(res.socket, COUNT)
      t.equal((result.data?.todo_aggregateTodo as { _count: { _all: number } })._count._all, before)
      res.socket.close()
    }
    // The playground page itself is served to a browser on the same origin.
    const page = await fetch(url + '/graphql', { headers: { accept: 'text/html' } })
    t.equal(page.status, 200)
  })

  t.test('a client without Origin (not a browser) is accepted', async (t) => {
    const res = await upgrade(url)
    t.equal(res.open, true)
    if (!res.open) return
    const result = await run(res.socket, COUNT)
    t.ok(result.data)
    res.socket.close()
  })

  t.test('cross-origin HTTP: no CORS for a foreign origin; its preflight is refused', async (t) => {
    const preflight = await fetch(url + '/graphql', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    t.equal(preflight.status, 403)
    t.equal(((await preflight.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code, 'TRB_ERR_ORIGIN_FORBIDDEN')
    t.equal(preflight.headers.get('access-control-allow-origin'), null)
    const simple = await fetch(url + '/operations/TodoById?id=1', { headers: { origin: 'https://evil.example' } })
    t.equal(simple.status, 200)
    t.equal(simple.headers.get('access-control-allow-origin'), null, 'the browser may not read it')
  })

  t.test('Host is not checked by default', async (t) => {
    const res = await rawGet(url, '/operations/TodoById?id=1', { host: 'anything.example' })
    t.equal(res.status, 200)
  })
})

t.test('production: a persisted CreateTodo cannot be run from another site', async (t) => {
  const { url, app } = await startDemo(t, { listen: true, override: { mode: 'production' } })
  const createTodo = readFileSync(join(operationsDir, 'CreateTodo.graphql'), 'utf8')
  const count = async () => (await app.inject({ method: 'GET', url: '/operations/Todos?take=100' })).json().todo_findManyTodo.length as number
  const before = await count()
  const res = await upgrade(url, { origin: 'https://evil.example' })
  t.equal(res.open, false)
  if (res.open) res.socket.close()
  else t.equal(res.status, 403)
  t.equal(await count(), before, 'no todo was created')

  const own = await upgrade(url, { origin: url })
  t.equal(own.open, true, 'the own origin is accepted')
  if (own.open) {
    const result = await run(own.socket, createTodo, { title: 'from the own origin' })
    t.ok(result.data, JSON.stringify(result))
    own.socket.close()
  }
  t.equal(await count(), before + 1)
})

t.test('server.allowedOrigins: listed origins get WebSocket and CORS', async (t) => {
  const listed = 'https://app.example.com'
  const { url } = await startDemo(t, { listen: true, override: { server: { allowedOrigins: ['HTTPS://App.Example.com:443'] } } })

  const ws = await upgrade(url, { origin: listed })
  t.equal(ws.open, true)
  if (ws.open) {
    t.ok((await run(ws.socket, COUNT)).data)
    ws.socket.close()
  }
  const foreign = await upgrade(url, { origin: 'https://other.example.com' })
  t.equal(foreign.open, false)
  if (!foreign.open) t.equal(foreign.status, 403)

  const preflight = await fetch(url + '/graphql', {
    method: 'OPTIONS',
    headers: { origin: listed, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), listed)
  t.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/)
  t.equal(preflight.headers.get('access-control-allow-headers'), 'content-type')

  const post = await fetch(url + '/graphql', { method: 'POST', headers: { origin: listed, 'content-type': 'application/json' }, body: JSON.stringify({ query: COUNT }) })
  t.equal(post.status, 200)
  t.equal(post.headers.get('access-control-allow-origin'), listed)

  const other = await fetch(url + '/graphql', {
    method: 'OPTIONS',
    headers: { origin: 'https://other.example.com', 'access-control-request-method': 'POST' },
  })
  t.equal(other.status, 403)
  const otherGet = await fetch(url + '/operations/TodoById?id=1', { headers: { origin: 'https://other.example.com' } })
  t.equal(otherGet.headers.get('access-control-allow-origin'), null)
})

t.test('server.allowedHosts: a rebound host name gets 421', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { server: { allowedHosts: ['127.0.0.1', '.example.com', 'localhost:4000'] } } })
  const port = new URL(url).port

  for (const host of ['evil.example', `attacker.test:${port}`, 'localhost', `localhost:${port}`, 'example.com.evil.test']) {
    const res = await rawGet(url, '/operations/TodoById?id=1', { host })
    t.equal(res.status, 421, `Host ${host}: 421`)
    t.equal(JSON.parse(res.body).errors[0].extensions.code, 'TRB_ERR_MISDIRECTED')
    const ws = await upgrade(url, { host, origin: `http://${host}` })
    t.equal(ws.open, false, `Host ${host}: no upgrade`)
    if (ws.open) ws.socket.close()
    else t.equal(ws.status, 421)
  }
  for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `api.example.com:${port}`, 'EXAMPLE.com', 'localhost:4000']) {
    const res = await rawGet(url, '/operations/TodoById?id=1', { host })
    t.equal(res.status, 200, `Host ${host}: 200`)
  }
  const ws = await upgrade(url, { origin: url })
  t.equal(ws.open, true, 'a listed host with its own origin upgrades')
  if (ws.open) ws.socket.close()
})

t.test('config: allowedOrigins and allowedHosts are validated', async (t) => {
  const { resolveConfig, schema } = await import('../gateway/config/index.js')
  const base = { datasources: [schema({ typeDefs: 'type Query { a: Int }' })] }
  t.throws(() => resolveConfig({ ...base, server: { allowedOrigins: ['app.example.com'] } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /server\.allowedOrigins\[0\]/ })
  t.throws(() => resolveConfig({ ...base, server: { allowedOrigins: ['https://app.example.com/path'] } }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(() => resolveConfig({ ...base, server: { allowedHosts: [] } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /server\.allowedHosts/ })
  t.throws(() => resolveConfig({ ...base, server: { allowedHosts: ['http://x'] } }), { code: 'TRB_ERR_CONFIG_INVALID' })
  const ok = resolveConfig({ ...base, server: { allowedOrigins: ['HTTP://Localhost:80'], allowedHosts: ['Example.COM', '[::1]:4000'] } })
  t.same(ok.server.allowedOrigins, ['http://localhost'])
  t.same(ok.server.allowedHosts, ['example.com', '[::1]:4000'])
  t.equal(resolveConfig(base).server.allowedHosts, null)
  t.same(resolveConfig(base).server.allowedOrigins, [])
})
