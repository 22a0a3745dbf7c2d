// GraphQL over WebSocket (graphql-transport-ws) on a real fastify server with @fastify/websocket:
// graphql-ws's own client and raw `ws` sockets for the close codes.
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyWebsocket from '@fastify/websocket'
import WebSocket from 'ws'
import { createClient, type Client } from 'graphql-ws'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { GraphQLError, type FormattedExecutionResult, type GraphQLFormattedError, type GraphQLSchema } from 'graphql'
import { createSubscriptionHandler, websocketServerOptions, type SubscriptionHandlerOptions } from '../gateway/http/subscriptions.js'

interface Probe { started: number; returned: number }

function buildSchema(probe: Probe, greeting = 'hello'): GraphQLSchema {
  return makeExecutableSchema({
    typeDefs: /* GraphQL */ `
      type Query { hello: String!, whoami: String, boom: String, safe: String }
      type Mutation { echo(text: String!): String! }
      type Node { name: String, child: Node }
      type Tick { id: Int!, node: Node }
      type Subscription { counter: Tick!, failing: Int }
    `,
    resolvers: {
      Query: {
        hello: () => greeting,
        whoami: (_: unknown, __: unknown, ctx: { user?: unknown }) => String(ctx.user ?? 'anonymous'),
        boom: () => { throw new Error('SELECT secret FROM credentials') },
        safe: () => { throw new GraphQLError('You may see this') },
      },
      Mutation: { echo: (_: unknown, args: { text: string }) => args.text },
      Node: { name: () => 'n', child: () => ({}) },
      Subscription: {
        counter: {
          subscribe: async function * counter () {
            probe.started++
            try {
              for (let id = 1; ; id++) {
                await sleep(50)
                yield { counter: { id, node: {} } }
              }
            } finally {
              probe.returned++
            }
          },
        },
        failing: {
          subscribe: async function * failing () {
            yield { failing: 1 }
            await sleep(20)
            throw new Error('connection to 10.0.0.7:5432 refused')
          },
        },
      },
    },
  })
}

interface TestServer { app: FastifyInstance; url: string; probe: Probe; setSchema(s: GraphQLSchema): void }

async function startServer(t: Test, extra: Partial<SubscriptionHandlerOptions> = {}): Promise<TestServer> {
  const probe: Probe = { started: 0, returned: 0 }
  let schema = buildSchema(probe)
  const app = Fastify({ logger: { level: 'silent' } })
  await app.register(fastifyWebsocket, { options: { ...websocketServerOptions, maxPayload: 1024 * 1024 } })
  const wsHandler = createSubscriptionHandler({
    getSchema: () => schema,
    context: (_request, params) => ({ user: params.user }),
    maxDepth: 4,
    logger: app.log,
    ...extra,
  })
  app.route({ method: 'GET', url: '/graphql', handler: async () => ({ ok: true }), wsHandler })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { app, url: `ws://127.0.0.1:${address.port}/graphql`, probe, setSchema: (s) => { schema = s } }
}

function client(t: Test, url: string, connectionParams?: Record<string, unknown>): Client {
  const c = createClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, connectionParams })
  t.teardown(() => c.dispose())
  return c
}

/** Runs one operation to its end and returns every `next` result, or the `error` payload. */
async function run(c: Client, query: string, variables?: Record<string, unknown>): Promise<{ results: FormattedExecutionResult<Record<string, unknown>, unknown>[]; error?: unknown }> {
  const results: FormattedExecutionResult<Record<string, unknown>, unknown>[] = []
  try {
    for await (const r of c.iterate({ query, variables })) results.push(r)
    return { results }
  } catch (error) {
    return { results, error }
  }
}

interface RawSocket { ws: WebSocket; messages: unknown[]; closed: Promise<{ code: number; reason: string }>; opened: Promise<void> }

function raw(t: Test, url: string, protocols?: string | string[]): RawSocket {
  const ws = new WebSocket(url, protocols)
  const messages: unknown[] = []
  ws.on('message', (d) => messages.push(JSON.parse(String(d))))
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
  const opened = new Promise<void>((resolve, reject) => { ws.on('open', () => resolve()); ws.on('error', reject) })
  t.teardown(() => ws.terminate())
  return { ws, messages, closed, opened }
}

async function until(cond: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) return false
    await sleep(10)
  }
  return true
}

t.test('a subscription streams results with increasing ids; completing it releases the upstream iterator', async (t) => {
  const { url, probe } = await startServer(t)
  const c = client(t, url)
  const ids: number[] = []
  for await (const r of c.iterate<{ counter: { id: number } }>({ query: 'subscription { counter { id } }' })) {
    t.notOk(r.errors, 'no errors')
    ids.push(r.data!.counter.id)
    if (ids.length === 3) break // the iterator's return() sends `complete`
  }
  t.same(ids, [1, 2, 3], 'ids increase from 1')
  t.ok(await until(() => probe.returned === 1), "the source generator's finally block ran")
  t.equal(probe.started, 1)
  // the socket is still usable afterwards
  t.same((await run(c, '{ hello }')).results, [{ data: { hello: 'hello' } }])
})

t.test('closing the socket releases every running subscription', async (t) => {
  const { url, probe } = await startServer(t)
  const c = client(t, url)
  const got: number[] = []
  const done = new Promise<void>((resolve) => {
    c.subscribe<{ counter: { id: number } }>({ query: 'subscription { counter { id } }' }, {
      next: (r) => { got.push(r.data!.counter.id) },
      error: () => resolve(),
      complete: () => resolve(),
    })
    c.subscribe<{ counter: { id: number } }>({ query: 'subscription { counter { id } }' }, { next: () => {}, error: () => {}, complete: () => {} })
  })
  t.ok(await until(() => got.length >= 2), 'results arrive')
  await c.dispose()
  await done
  t.ok(await until(() => probe.returned === 2), 'both generators returned')
})

t.test('queries and mutations work over the socket, with variables and context from connectionParams', async (t) => {
  const { url } = await startServer(t)
  const c = client(t, url, { user: 'ada' })
  t.same((await run(c, '{ hello whoami }')).results, [{ data: { hello: 'hello', whoami: 'ada' } }])
  t.same((await run(c, 'mutation M($t: String!) { echo(text: $t) }', { t: 'hi' })).results, [{ data: { echo: 'hi' } }])
})

t.test('an invalid document gets an error message and the socket stays usable', async (t) => {
  const { url } = await startServer(t)
  const c = client(t, url)
  const unknownField = await run(c, '{ nope }')
  t.same(unknownField.results, [])
  const errors = unknownField.error as GraphQLFormattedError[]
  t.ok(Array.isArray(errors), 'error payload is a list of GraphQL errors')
  t.match(errors[0]!.message, /Cannot query field "nope"/)

  const syntax = await run(c, '{ hello ')
  t.match((syntax.error as GraphQLFormattedError[])[0]!.message, /Syntax Error/)

  const badVariable = await run(c, 'mutation M($t: String!) { echo(text: $t) }', { t: 5 })
  t.match((badVariable.results[0]!.errors ?? [])[0]!.message, /Variable "\$t"/)

  t.same((await run(c, '{ hello }')).results, [{ data: { hello: 'hello' } }], 'still usable')
})

t.test('the depth limit applies to subscriptions, queries and fragments', async (t) => {
  const { url, probe } = await startServer(t)
  const c = client(t, url)
  const deepSub = await run(c, 'subscription { counter { node { child { child { name } } } } }')
  const errors = deepSub.error as GraphQLFormattedError[]
  t.match(errors[0], { message: /depth 5, more than the maximum of 4/, extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } })
  t.equal(probe.started, 0, 'the subscription never started')

  const viaFragment = await run(c, 'subscription { ...F } fragment F on Subscription { counter { node { ...N } } } fragment N on Node { child { child { name } } }')
  t.match((viaFragment.error as GraphQLFormattedError[])[0], { extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } })

  const ok = c.iterate<{ counter: { node: { child: { name: string } } } }>({ query: 'subscription { counter { node { child { name } } } }' })
  const first = await ok.next()
  t.same(first.value, { data: { counter: { node: { child: { name: 'n' } } } } }, 'depth 4 is allowed')
  await ok.return?.(undefined)

  // fragment cycles are reported by graphql-js' NoFragmentCyclesRule; the depth rule must not loop
  const cycle = await run(c, '{ ...Q } fragment Q on Query { ...Q hello }')
  t.match((cycle.error as GraphQLFormattedError[])[0]!.message, /Cannot spread fragment "Q" within itself/)
  const nestedCycle = await run(c, 'subscription { counter { node { ...N } } } fragment N on Node { child { ...N } }')
  t.match((nestedCycle.error as GraphQLFormattedError[])[0]!.message, /Cannot spread fragment "N" within itself/)

  // the parser's token limit
  const huge = await run(c, `{ ${'hello '.repeat(16000)}}`)
  t.match((huge.error as GraphQLFormattedError[])[0]!.message, /more tha[nt] 15000 tokens/)

  // introspection has its own, larger allowance
  const intro = await run(c, '{ __schema { types { fields { type { ofType { ofType { name } } } } } } }')
  t.notOk(intro.error, 'introspection deeper than maxDepth is allowed')
})

t.test('errors are masked unless safe', async (t) => {
  const { url } = await startServer(t)
  const c = client(t, url)
  const boom = await run(c, '{ boom safe }')
  const errs = boom.results[0]!.errors!
  t.equal(errs.length, 2)
  const internal = errs.find((e) => e.path?.[0] === 'boom')!
  t.match(internal.message, /^Internal error \(id [0-9a-f-]{36}\)$/)
  t.equal(internal.extensions?.code, 'TRB_ERR_INTERNAL')
  t.notMatch(JSON.stringify(errs), /SELECT|credentials/)
  t.equal(errs.find((e) => e.path?.[0] === 'safe')!.message, 'You may see this')

  const failing = await run(c, 'subscription { failing }')
  t.same(failing.results, [{ data: { failing: 1 } }])
  const failErrors = failing.error as GraphQLFormattedError[]
  t.match(failErrors[0]!.message, /^Internal error \(id /)
  t.notMatch(JSON.stringify(failErrors), /10\.0\.0\.7/)
})

t.test('formatError, onOperation and a swapped schema are honoured', async (t) => {
  const seen: string[] = []
  const { url, probe, setSchema } = await startServer(t, {
    formatError: (err) => ({ message: `formatted: ${err.message}` }),
    onOperation: (info) => {
      seen.push(`${info.operationType}:${info.operationName ?? ''}`)
      return info.operationName === 'Forbidden' ? [new GraphQLError('Only persisted operations are allowed')] : undefined
    },
  })
  const c = client(t, url)
  t.same((await run(c, 'query Forbidden { hello }')).error, [{ message: 'formatted: Only persisted operations are allowed' }])
  t.same((await run(c, '{ nope }')).error, [{ message: 'formatted: Cannot query field "nope" on type "Query".' }])
  setSchema(buildSchema(probe, 'reloaded'))
  t.same((await run(c, 'query Q { hello }')).results, [{ data: { hello: 'reloaded' } }], 'the next operation uses the new schema')
  t.same(seen, ['query:Forbidden', 'query:Q'])
})

t.test('close codes of graphql-transport-ws', async (t) => {
  const { url } = await startServer(t, { onConnect: (_req, params) => params.token !== 'bad' })

  t.test('an unsupported subprotocol closes with 4406', async (t) => {
    const s = raw(t, url, 'graphql-ws')
    t.match(await s.closed, { code: 4406 })
    const none = raw(t, url)
    t.match(await none.closed, { code: 4406 }, 'no subprotocol at all')
  })

  t.test('graphql-transport-ws is chosen among several offered', async (t) => {
    const s = raw(t, url, ['graphql-ws', 'graphql-transport-ws'])
    await s.opened
    t.equal(s.ws.protocol, 'graphql-transport-ws')
    s.ws.send(JSON.stringify({ type: 'connection_init' }))
    t.ok(await until(() => s.messages.length === 1))
    t.same(s.messages, [{ type: 'connection_ack' }])
  })

  t.test('no connection_init within 3 s closes with 4408', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    const start = Date.now()
    t.match(await s.closed, { code: 4408 })
    const waited = Date.now() - start
    t.ok(waited >= 2800 && waited < 6000, `closed after ${waited} ms`)
  })

  t.test('subscribe before connection_ack closes with 4401', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ hello }' } }))
    t.match(await s.closed, { code: 4401 })
  })

  t.test('a second connection_init closes with 4429', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send(JSON.stringify({ type: 'connection_init' }))
    s.ws.send(JSON.stringify({ type: 'connection_init' }))
    t.match(await s.closed, { code: 4429 })
  })

  t.test('a reused operation id closes with 4409', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send(JSON.stringify({ type: 'connection_init' }))
    t.ok(await until(() => s.messages.length === 1), 'acknowledged')
    const sub = JSON.stringify({ id: 'a', type: 'subscribe', payload: { query: 'subscription { counter { id } }' } })
    s.ws.send(sub)
    s.ws.send(sub)
    t.match(await s.closed, { code: 4409 })
  })

  t.test('an invalid message closes with 4400', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send('{not json')
    t.match(await s.closed, { code: 4400 })
  })

  t.test('onConnect returning false closes with 4403', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send(JSON.stringify({ type: 'connection_init', payload: { token: 'bad' } }))
    t.match(await s.closed, { code: 4403 })
  })

  t.test('ping is answered with pong', async (t) => {
    const s = raw(t, url, 'graphql-transport-ws')
    await s.opened
    s.ws.send(JSON.stringify({ type: 'connection_init' }))
    t.ok(await until(() => s.messages.length === 1))
    s.ws.send(JSON.stringify({ type: 'ping' }))
    t.ok(await until(() => s.messages.length === 2))
    t.same(s.messages, [{ type: 'connection_ack' }, { type: 'pong' }])
  })
})
