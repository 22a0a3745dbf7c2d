/**
 * Attack: making an upstream's error text reach clients (issue 7, item 8). Real upstreams on
 * 127.0.0.1 (a REST API with an OpenAPI document and a GraphQL API) answer errors that contain an
 * internal address and a stack line. In production the gateway keeps the code and the HTTP status,
 * replaces the text and logs it; in development the text stays, with the upstream method, path and a
 * body excerpt in `extensions.upstream`. Checked on POST /graphql, /operations/* and the WebSocket.
 */
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import mercurius from 'mercurius'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveConfig, type RunMode } from '../gateway/config/index.js'
import { run, upgrade } from './helpers/ws.js'
import { serveLoggedGateway } from './helpers/logged-gateway.js'

const SECRET = 'db timeout at 10.1.2.3:5432'
const STACK = 'at Pool.connect (/srv/app/db.js:10:5)'
const leaks = (text: string) => text.includes('10.1.2.3') || text.includes('db timeout') || text.includes('/srv/app')

const openapi = {
  openapi: '3.0.3',
  info: { title: 'items', version: '1' },
  paths: {
    '/items/{id}': {
      get: {
        operationId: 'getItem',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } } } } },
        },
      },
    },
  },
}

/** The REST and GraphQL upstreams, listening on 127.0.0.1. */
async function startUpstreams(t: Test) {
  const rest = Fastify()
  rest.get('/openapi.json', async () => openapi)
  rest.get('/items/:id', async (request, reply) => {
    const { id } = request.params as { id: string }
    if (id === 'json') return reply.code(500).send({ message: SECRET, stack: STACK })
    if (id === 'text') return reply.code(503).type('text/plain').send(`${SECRET}\n    ${STACK}`)
    return { id, name: `item ${id}` }
  })
  await rest.listen({ host: '127.0.0.1', port: 0 })
  const gql = Fastify()
  gql.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-break']) return reply.code(500).type('text/html').send(`<h1>${SECRET}</h1><pre>${STACK}</pre>`)
  })
  await gql.register(mercurius, {
    schema: 'type Query { ok: String boom: String coded: String }',
    resolvers: {
      Query: {
        ok: () => 'fine',
        boom: () => { throw new Error(SECRET) },
        coded: () => { throw new mercurius.ErrorWithProps(SECRET, { code: 'DB_DOWN', stacktrace: [STACK] }) },
      },
    },
  })
  await gql.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    await rest.close()
    await gql.close()
  })
  const port = (app: typeof rest) => (app.server.address() as { port: number }).port
  return { restUrl: `http://127.0.0.1:${port(rest)}`, gqlUrl: `http://127.0.0.1:${port(gql)}/graphql` }
}

/** A gateway over both upstreams in `mode`, listening, with its log records collected. */
async function startGateway(t: Test, mode: RunMode) {
  const { restUrl, gqlUrl } = await startUpstreams(t)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-upstream-messages-'))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Item.graphql'), 'query Item($id: String!) { up_getItem(id: $id) { id name } }\n')
  const config = resolveConfig({
    mode,
    datasources: [
      { kind: 'rest', namespace: 'up', openapi: `${restUrl}/openapi.json`, baseUrl: restUrl, timeoutMs: 2000 },
      { kind: 'graphql', namespace: 'cms', url: gqlUrl, timeoutMs: 2000, forwardHeaders: ['x-break'] },
    ],
    graphql: { allowArbitraryOperationsInProduction: true },
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
  })
  const { url, logs } = await serveLoggedGateway(t, config, dir)
  const post = async (query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) })
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) as { data?: Record<string, unknown>; errors?: Err[] } }
  }
  const get = async (path: string) => {
    const res = await fetch(url + path)
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) as { errors?: Err[] } }
  }
  return { url, post, get, logs }
}

interface Err { message: string; extensions: { code: string; http?: { status: number }; upstream?: { method: string; path: string; status: number; body?: string } } & Record<string, unknown> }

t.test('production: upstream text is masked, code and status kept, text logged', async (t) => {
  const { url, post, get, logs } = await startGateway(t, 'production')

  const rest = await post('{ json: up_getItem(id: "json") { id } text: up_getItem(id: "text") { id } ok: up_getItem(id: "1") { id } }')
  t.equal(rest.status, 200)
  t.notOk(leaks(rest.text), rest.text)
  t.same(rest.body.data, { json: null, text: null, ok: { id: '1' } }, 'partial data')
  const byPath = Object.fromEntries((rest.body.errors ?? []).map((e) => [String((e as unknown as { path: string[] }).path[0]), e]))
  t.equal(byPath.json.message, 'Upstream up failed: 500 Internal Server Error')
  t.same(byPath.json.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 500 } })
  t.equal(byPath.text.message, 'Upstream up failed: 503 Service Unavailable')
  t.same(byPath.text.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 503 } })

  const op = await get('/operations/Item?id=json')
  t.equal(op.status, 502)
  t.notOk(leaks(op.text), op.text)
  t.equal(op.body.errors?.[0].extensions.code, 'TRB_ERR_UPSTREAM')
  t.equal(op.body.errors?.[0].extensions.http?.status, 500)

  const gql = await post('{ cms_boom cms_coded cms_ok }')
  t.notOk(leaks(gql.text), gql.text)
  t.equal(gql.body.data?.cms_ok, 'fine')
  const boom = gql.body.errors?.find((e) => (e as unknown as { path: string[] }).path[0] === 'cms_boom')
  const coded = gql.body.errors?.find((e) => (e as unknown as { path: string[] }).path[0] === 'cms_coded')
  t.equal(boom?.message, 'Upstream cms returned an error')
  t.same(boom?.extensions, { code: 'TRB_ERR_UPSTREAM' })
  t.same(coded?.extensions, { code: 'TRB_ERR_UPSTREAM', originalCode: 'DB_DOWN' }, 'the upstream code is kept as originalCode, its other extensions are not')

  const broken = await post('{ cms_ok }', { 'x-break': '1' })
  t.notOk(leaks(broken.text), broken.text)
  t.equal(broken.body.errors?.[0].extensions.code, 'TRB_ERR_UPSTREAM')
  t.equal(broken.body.errors?.[0].message, 'Upstream cms failed: 500 Internal Server Error')

  const ws = await upgrade(url)
  t.equal(ws.open, true)
  if (ws.open) {
    const result = await run(ws.socket, '{ up_getItem(id: "json") { id } cms_boom }')
    t.notOk(leaks(JSON.stringify(result)), JSON.stringify(result))
    t.equal((result.errors as Err[]).length, 2)
    ws.socket.close()
  }

  const logged = logs.filter((l) => l.msg === 'upstream error')
  t.ok(logged.some((l) => String(l.upstreamMessage).includes(SECRET) && (l.upstream as { path: string }).path === '/items/json'), 'the REST text is logged')
  t.ok(logged.some((l) => String(l.upstreamMessage) === SECRET && (l.upstream as { source: string }).source === 'cms'), 'the GraphQL text is logged')
  t.ok(logged.some((l) => String((l.upstream as { body?: string }).body).includes(STACK)), 'the body excerpt is logged')

  const normal = await post('{ up_getItem(id: "7") { name } cms_ok }')
  t.same(normal.body, { data: { up_getItem: { name: 'item 7' }, cms_ok: 'fine' } }, 'a normal request still works')
})

t.test('development: upstream text stays, with method, path and a body excerpt', async (t) => {
  const { post, get } = await startGateway(t, 'development')

  const rest = await post('{ up_getItem(id: "json") { id } }')
  const [err] = rest.body.errors ?? []
  t.equal(err.message, `Upstream up failed: 500 Internal Server Error: ${SECRET}`)
  t.equal(err.extensions.code, 'TRB_ERR_UPSTREAM')
  t.same(err.extensions.http, { status: 500 })
  t.match(err.extensions.upstream, { method: 'GET', path: '/items/json', status: 500 })
  t.match(err.extensions.upstream?.body, SECRET)

  const text = await get('/operations/Item?id=text')
  t.equal(text.status, 502)
  t.match(text.body.errors?.[0].extensions.upstream, { method: 'GET', path: '/items/text', status: 503, body: `${SECRET} ${STACK}` })

  const gql = await post('{ cms_boom cms_coded }')
  const boom = gql.body.errors?.find((e) => (e as unknown as { path: string[] }).path[0] === 'cms_boom')
  t.equal(boom?.message, SECRET)
  t.match(boom?.extensions, { code: 'TRB_ERR_UPSTREAM', upstream: { method: 'POST', path: '/graphql', status: 200 } })
  const coded = gql.body.errors?.find((e) => (e as unknown as { path: string[] }).path[0] === 'cms_coded')
  t.match(coded?.extensions, { code: 'TRB_ERR_UPSTREAM', originalCode: 'DB_DOWN', stacktrace: [STACK] }, 'the upstream extensions stay in development')

  const broken = await post('{ cms_ok }', { 'x-break': '1' })
  t.match(broken.body.errors?.[0].extensions.upstream, { method: 'POST', path: '/graphql', status: 500 })
  t.match(broken.body.errors?.[0].extensions.upstream?.body, SECRET)
})
