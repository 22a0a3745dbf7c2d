/**
 * `hooks.global.onConnectionInit` (README "Hooks") on every upstream subscription connection: a
 * GraphQL source over graphql-ws and over SSE, a Federation subgraph over graphql-ws and over SSE,
 * all against one real upstream on 127.0.0.1 (GraphQL over HTTP, GraphQL over SSE, graphql-ws) that
 * records what each connection carried: the `connection_init` payload and upgrade headers of a
 * socket, the headers of an SSE request. Also: subscriptions share a socket only when the hook gives
 * them the same payload, and a hook that throws fails the subscription with `TRB_ERR_HOOK`.
 */
import t from 'tap'
import { createServer } from 'node:http'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { graphql as graphqlRun, parse, subscribe } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'
import { federation, graphql as graphqlSource, resolveConfig } from '../gateway/config/index.js'
import type { ConnectionInitArgs } from '../gateway/hooks/index.js'
import { serveGateway } from './helpers/serve.js'
import { mint } from './helpers/auth.js'

const secret = 'connection-init-secret-0123456789abcdef'

// ----- the upstream: one subgraph schema served over HTTP, SSE and graphql-ws -----
const upstreamSchema = buildSubgraphSchema({
  typeDefs: parse('extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])\ntype Query { ping: String }\ntype Subscription { tick: Int! }'),
  resolvers: {
    Query: { ping: () => 'pong' },
    Subscription: { tick: { subscribe: async function* () { yield { tick: 1 }; await new Promise(() => undefined) } } },
  } as never,
})
/** What each upstream connection carried. */
const seen = { sockets: [] as { params: Record<string, unknown>; headers: Record<string, unknown> }[], sse: [] as Record<string, unknown>[] }
const server = createServer(async (req, res) => {
  let body = ''
  for await (const chunk of req) body += chunk
  const { query, variables } = JSON.parse(body) as { query: string; variables?: Record<string, unknown> }
  if (!String(req.headers.accept).includes('text/event-stream')) {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(await graphqlRun({ schema: upstreamSchema, source: query, variableValues: variables })))
    return
  }
  seen.sse.push({ ...req.headers })
  const result = await subscribe({ schema: upstreamSchema, document: parse(query), variableValues: variables })
  res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'keep-alive' })
  if (!(Symbol.asyncIterator in result)) return void res.end(`event: next\ndata: ${JSON.stringify(result)}\n\nevent: complete\ndata:\n\n`)
  res.on('close', () => void result.return?.())
  for await (const event of result) res.write(`event: next\ndata: ${JSON.stringify(event)}\n\n`)
})
const wss = new WebSocketServer({ server, path: '/graphql' })
useServer({ schema: upstreamSchema, onConnect: (ctx) => void seen.sockets.push({ params: { ...ctx.connectionParams }, headers: { ...ctx.extra.request.headers } }) }, wss)
await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
t.teardown(() => new Promise<void>((ok) => {
  for (const c of wss.clients) c.terminate()
  wss.close()
  server.closeAllConnections()
  server.close(() => ok())
}))
const upstream = `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`

// ----- the gateway: four sources on that upstream, one stored subscription each -----
const dir = mkdtempSync(join(tmpdir(), 'tributary-connection-init-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
mkdirSync(join(dir, 'operations'))
const NAMESPACES = ['gqws', 'gqsse', 'fedws', 'fedsse']
for (const ns of NAMESPACES) writeFileSync(join(dir, 'operations', `${ns}.graphql`), `subscription ${ns} { ${ns}_tick }`)
const hook = ({ payload, namespace, user }: ConnectionInitArgs) => {
  if (user?.claims.sub === 'mallory') throw new Error('not this one')
  return { ...payload, hooked: namespace, sub: user?.claims.sub ?? null, headers: { ...(payload.headers as Record<string, string>), 'x-hooked': namespace } }
}
const config = resolveConfig({
  mode: 'development',
  datasources: [
    graphqlSource({ namespace: 'gqws', url: upstream, headers: { 'x-gateway': 'tributary' } }),
    graphqlSource({ namespace: 'gqsse', url: upstream, subscriptions: { protocol: 'sse' }, headers: { 'x-gateway': 'tributary' } }),
    federation({ namespace: 'fedws', subgraphs: [{ name: 'ticks', url: upstream, headers: { 'x-gateway': 'tributary' } }] }),
    federation({ namespace: 'fedsse', subgraphs: [{ name: 'ticks', url: upstream, subscriptions: { protocol: 'sse' }, headers: { 'x-gateway': 'tributary' } }] }),
  ],
  operations: { dir: join(dir, 'operations') },
  generatedDir: join(dir, 'generated'),
  auth: { jwt: { secret } },
  hooks: { global: { onConnectionInit: { hook } } },
})
const { url } = await serveGateway(t, config, { cwd: dir })
const key = new TextEncoder().encode(secret)

/** The first `data:` event of the stored subscription `name` over SSE; the stream is closed afterwards. */
async function firstEvent(name: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const controller = new AbortController()
  const res = await fetch(`${url}/operations/${name}`, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal })
  const reader = res.body!.getReader()
  let text = ''
  while (!/\ndata: .*\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value)
  controller.abort()
  return JSON.parse(/\ndata: (.*)\n/.exec(text)![1]) as Record<string, unknown>
}

t.test('GraphQL source over graphql-ws: the hook\'s payload is the connection_init payload, its headers the upgrade\'s', async (t) => {
  const before = seen.sockets.length
  t.same(await firstEvent('gqws'), { data: { gqws_tick: 1 } }, 'the GraphQL source serves its Subscription fields')
  const socket = seen.sockets[before]
  t.match(socket.params, { hooked: 'gqws', sub: null, headers: { 'x-gateway': 'tributary', 'x-hooked': 'gqws' } })
  t.equal(socket.headers['x-hooked'], 'gqws', 'the upgrade request carries the hook\'s headers')
})

t.test('GraphQL source over SSE: the hook\'s headers are the request\'s', async (t) => {
  const before = seen.sse.length
  t.same(await firstEvent('gqsse'), { data: { gqsse_tick: 1 } })
  t.match(seen.sse[before], { 'x-hooked': 'gqsse', 'x-gateway': 'tributary' })
})

t.test('Federation subgraph over SSE and over graphql-ws', async (t) => {
  const sse = seen.sse.length
  t.same(await firstEvent('fedsse'), { data: { fedsse_tick: 1 } })
  t.match(seen.sse[sse], { 'x-hooked': 'fedsse', 'x-gateway': 'tributary' })
  const ws = seen.sockets.length
  t.same(await firstEvent('fedws'), { data: { fedws_tick: 1 } })
  t.match(seen.sockets[ws].params, { hooked: 'fedws', headers: { 'x-hooked': 'fedws' } })
})

t.test('the hook sees the caller; callers with different payloads never share a socket', async (t) => {
  const ada = await mint(key, { sub: 'ada' }, { expiresIn: '5m' })
  const bob = await mint(key, { sub: 'bob' }, { expiresIn: '5m' })
  const before = seen.sockets.length
  await firstEvent('gqws', { authorization: `Bearer ${ada}` })
  await firstEvent('gqws', { authorization: `Bearer ${bob}` })
  const subs = seen.sockets.slice(before).map((s) => s.params.sub)
  t.same(subs, ['ada', 'bob'], 'one socket each, each with its own caller\'s payload')
})

t.test('a hook that throws fails the subscription with TRB_ERR_HOOK, over graphql-ws and SSE', async (t) => {
  const mallory = await mint(key, { sub: 'mallory' }, { expiresIn: '5m' })
  for (const name of ['gqws', 'gqsse', 'fedsse']) {
    const event = await firstEvent(name, { authorization: `Bearer ${mallory}` })
    t.match(event, { errors: [{ extensions: { code: 'TRB_ERR_HOOK' } }] }, name)
  }
})
