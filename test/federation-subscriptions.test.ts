/**
 * Subgraph subscriptions and progressive override of the federation connector (README "Apollo
 * Federation subgraphs"), with real `@apollo/subgraph` servers on 127.0.0.1:
 *
 * - a reviews subgraph serving `Subscription.reviewAdded` over graphql-ws (graphql-ws `useServer`)
 *   and over GraphQL over SSE, its events' `product { name }` resolved from the products subgraph;
 *   clients subscribe to the gateway over WebSocket (graphql-ws) and SSE (stored operation); closing
 *   the client subscription completes the upstream one; a dropped upstream socket reaches the client
 *   as a coded error;
 * - `@override(from:, label: "percent(50)")` splits requests between two subgraphs, one draw per
 *   request; a custom label follows `overrideLabels(label, context)`.
 */
import t from 'tap'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { createPubSub } from '@graphql-yoga/subscription'
import { graphql, parse, subscribe, type ExecutionResult, type GraphQLSchema } from 'graphql'
import { createClient } from 'graphql-ws'
import { useServer } from 'graphql-ws/use/ws'
import { createServer } from 'node:http'
import WebSocket, { WebSocketServer } from 'ws'
import { postGraphQL, startGateway, startGraphQLUpstream } from './helpers/graphql-upstream.js'
import { federation, resolveConfig } from '../gateway/config/index.js'

const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@override"])'
const NAMES: Record<string, string> = { '1': 'Table', '2': 'Couch' }

type Resolvers = Parameters<typeof buildSubgraphSchema>[0] extends infer A ? (A extends { resolvers?: infer R } ? R : never) : never
const subgraph = (typeDefs: string, resolvers: unknown) => buildSubgraphSchema({ typeDefs: parse(`${LINK}\n${typeDefs}`), resolvers: resolvers as Resolvers })

const products = () =>
  subgraph(
    `type Product @key(fields: "upc") { upc: String! name: String! price: Int! tagline: String! }
     type Query { product(upc: String!): Product }`,
    {
      Query: { product: (_: unknown, a: { upc: string }) => ({ upc: a.upc }) },
      Product: {
        __resolveReference: (ref: { upc: string }) => ref,
        name: (p: { upc: string }) => NAMES[p.upc],
        price: () => 100,
        tagline: () => 'old tagline',
      },
    },
  )

/** The subgraph taking over `name`, `price` (half of the requests) and `tagline` (label `beta`) from products. */
const catalog = () =>
  subgraph(
    `type Product @key(fields: "upc") {
       upc: String!
       name: String! @override(from: "products", label: "percent(50)")
       price: Int! @override(from: "products", label: "percent(50)")
       tagline: String! @override(from: "products", label: "beta")
     }`,
    {
      Product: {
        __resolveReference: (ref: { upc: string }) => ref,
        name: (p: { upc: string }) => `new ${NAMES[p.upc]}`,
        price: () => 200,
        tagline: () => 'new tagline',
      },
    },
  )

/**
 * The reviews subgraph on one port: GraphQL over HTTP (POST JSON), GraphQL over SSE (POST with
 * `accept: text/event-stream`, graphql-sse "distinct connections") and graphql-ws on `/graphql`.
 * `active` counts the open upstream subscriptions; `started` resolves on the next one.
 */
async function startReviews(t: { teardown(fn: () => unknown): void }) {
  const pubsub = createPubSub<{ review: [{ id: string; body: string; upc: string }] }>()
  const state = { active: 0, onStart: [] as (() => void)[], onEnd: [] as (() => void)[], headers: [] as Record<string, unknown>[] }
  const schema: GraphQLSchema = subgraph(
    `type Review { id: ID! body: String! product: Product! }
     type Product @key(fields: "upc") { upc: String! }
     type Query { review(id: ID!): Review }
     type Subscription { reviewAdded: Review! }`,
    {
      Query: { review: () => null },
      Review: { product: (r: { upc: string }) => ({ upc: r.upc }) },
      Subscription: {
        reviewAdded: {
          // An iterator, not an async generator: its return() must end it while it waits for an event.
          subscribe: (_: unknown, __: unknown, ctx: { headers?: Record<string, unknown> }) => {
            state.active++
            state.headers.push(ctx?.headers ?? {})
            const source = pubsub.subscribe('review')
            let open = true
            const end = () => {
              if (!open) return
              open = false
              state.active--
              state.onEnd.splice(0).forEach((f) => f())
            }
            return {
              [Symbol.asyncIterator]() {
                return this
              },
              next: async () => {
                const pending = source.next()
                // Listening now (the pubsub's Repeater starts on its first next()).
                state.onStart.splice(0).forEach((f) => f())
                const r = await pending
                if (r.done) end()
                return r.done ? r : { done: false, value: { reviewAdded: r.value } }
              },
              return: async () => {
                end()
                await source.return()
                return { done: true, value: undefined }
              },
            }
          },
        },
      },
    },
  )
  const server = createServer(async (req, res): Promise<void> => {
    let body = ''
    for await (const chunk of req) body += chunk
    const { query, variables, operationName } = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string }
    if (!String(req.headers.accept).includes('text/event-stream')) {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(await graphql({ schema, source: query, variableValues: variables, operationName })))
      return
    }
    const result = await subscribe({ schema, document: parse(query), variableValues: variables, operationName, contextValue: { headers: req.headers } })
    res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'keep-alive' })
    if (!(Symbol.asyncIterator in result)) {
      res.end(`event: next\ndata: ${JSON.stringify(result)}\n\nevent: complete\ndata:\n\n`)
      return
    }
    res.on('close', () => void result.return?.())
    for await (const event of result) res.write(`event: next\ndata: ${JSON.stringify(event)}\n\n`)
    res.end('event: complete\ndata:\n\n')
  })
  const wss = new WebSocketServer({ server, path: '/graphql' })
  useServer({ schema, context: (ctx) => ({ headers: ctx.extra.request.headers }) }, wss)
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  t.teardown(
    () =>
      new Promise<void>((ok) => {
        for (const c of wss.clients) c.terminate()
        wss.close()
        server.close(() => ok())
        server.closeAllConnections()
      }),
  )
  const next = (list: (() => void)[]) => new Promise<void>((ok) => list.push(ok))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`,
    state,
    wss,
    started: () => next(state.onStart),
    ended: () => next(state.onEnd),
    publish: (id: string, upc: string) => pubsub.publish('review', { id, body: `review ${id}`, upc }),
  }
}

t.test('subgraph subscriptions and progressive override', async (t) => {
  const productsUp = await startGraphQLUpstream(t, products())
  const catalogUp = await startGraphQLUpstream(t, catalog())
  const reviews = await startReviews(t)
  const { base } = await startGateway(t, {
    datasources: [
      federation({
        namespace: 'ws',
        forwardHeaders: ['authorization'],
        subgraphs: [
          { name: 'products', url: productsUp.url },
          { name: 'reviews', url: reviews.url, headers: { 'x-gateway': 'tributary' } },
        ],
      }),
      federation({
        namespace: 'sse',
        subgraphs: [
          { name: 'products', url: productsUp.url },
          { name: 'reviews', url: reviews.url, subscriptions: { protocol: 'sse' } },
        ],
      }),
      federation({
        namespace: 'down',
        subgraphs: [
          { name: 'products', url: productsUp.url },
          // Nothing listens there: the connection is refused.
          { name: 'reviews', url: reviews.url, subscriptions: { url: 'ws://127.0.0.1:9/graphql' } },
        ],
      }),
      federation({
        namespace: 'shop',
        subgraphs: [
          { name: 'products', url: productsUp.url },
          { name: 'catalog', url: catalogUp.url },
        ],
        overrideLabels: (label, context) => label === 'beta' && (context.headers as Record<string, unknown>)['x-beta'] === 'yes',
      }),
    ],
    operations: { Reviews: 'subscription Reviews { ws_reviewAdded { id body product { upc name } } }\n' },
  })
  const wsUrl = base.replace(/^http/, 'ws') + '/graphql'

  t.test('graphql-ws to the subgraph, graphql-ws to the client; entity fields from products per event', async (t) => {
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: {} })
    t.teardown(() => client.dispose())
    const started = reviews.started()
    const events = client.iterate({ query: 'subscription { ws_reviewAdded { id body product { upc name } } }' })
    const first = events.next()
    await started
    t.equal(reviews.state.active, 1, 'one upstream subscription')
    t.equal(reviews.state.headers.at(-1)?.['x-gateway'], 'tributary', "the subgraph's headers go on the upgrade request")
    await reviews.publish('r1', '1')
    t.same((await first).value, { data: { ws_reviewAdded: { id: 'r1', body: 'review r1', product: { upc: '1', name: 'Table' } } } })
    const second = events.next()
    await reviews.publish('r2', '2')
    t.same((await second).value, { data: { ws_reviewAdded: { id: 'r2', body: 'review r2', product: { upc: '2', name: 'Couch' } } } }, 'each event resolves its own entity')
    const ended = reviews.ended()
    await events.return!()
    await ended
    t.equal(reviews.state.active, 0, 'closing the client subscription completes the upstream one')
  })

  t.test('SSE to the client (stored operation) over a graphql-ws upstream', async (t) => {
    const controller = new AbortController()
    const started = reviews.started()
    const res = await fetch(`${base}/operations/Reviews`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
    t.equal(res.status, 200)
    await started
    await reviews.publish('r3', '2')
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    while (!/^data:.*\n\n/m.test(text)) text += (await reader.read()).value ?? ''
    const data = JSON.parse(text.split('\n').find((l) => l.startsWith('data:'))!.slice(5)) as ExecutionResult
    t.same(data, { data: { ws_reviewAdded: { id: 'r3', body: 'review r3', product: { upc: '2', name: 'Couch' } } } })
    const ended = reviews.ended()
    controller.abort()
    await ended
    t.equal(reviews.state.active, 0, 'the closed event stream completes the upstream subscription')
  })

  t.test('SSE to the subgraph (protocol: sse), graphql-ws to the client', async (t) => {
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 })
    t.teardown(() => client.dispose())
    const started = reviews.started()
    const events = client.iterate({ query: 'subscription { sse_reviewAdded { id product { name } } }' })
    const first = events.next()
    await started
    t.match(reviews.state.headers.at(-1)?.accept, /text\/event-stream/, 'the subgraph was asked for an event stream')
    await reviews.publish('r4', '1')
    t.same((await first).value, { data: { sse_reviewAdded: { id: 'r4', product: { name: 'Table' } } } })
    const ended = reviews.ended()
    await events.return!()
    await ended
    t.equal(reviews.state.active, 0, 'closing the client subscription aborts the SSE request')
  })

  t.test('a dropped upstream socket reaches the client as TRB_ERR_UPSTREAM and ends the subscription', async (t) => {
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 })
    t.teardown(() => client.dispose())
    const started = reviews.started()
    const received: ExecutionResult[] = []
    const done = new Promise<void>((ok, fail) =>
      client.subscribe({ query: 'subscription { ws_reviewAdded { id } }' }, { next: (r) => void received.push(r as ExecutionResult), error: fail, complete: ok }),
    )
    await started
    for (const socket of reviews.wss.clients) socket.terminate()
    await done
    t.equal(received.length, 1, 'one last event')
    const errors = received[0]!.errors as unknown as { message: string; extensions: { code: string } }[]
    t.equal(errors[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
    t.match(errors[0]?.message, /ws\/reviews.*subscription socket closed/)
  })

  t.test('an unreachable subscription endpoint reaches the client as TRB_ERR_UPSTREAM', async (t) => {
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 })
    t.teardown(() => client.dispose())
    const received: ExecutionResult[] = []
    await new Promise<void>((ok, fail) =>
      client.subscribe({ query: 'subscription { down_reviewAdded { id } }' }, { next: (r) => void received.push(r as ExecutionResult), error: fail, complete: ok }),
    )
    const errors = received[0]?.errors as unknown as { message: string; extensions: { code: string } }[]
    t.equal(errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
    t.notMatch(errors?.[0]?.message, /127\.0\.0\.1|:9\b/, "the message does not carry the subgraph's address")
  })

  t.test('progressive override: percent(50) splits requests, one draw per request', async (t) => {
    const seen = { old: 0, new: 0, mixed: 0 }
    for (let i = 0; i < 24; i++) {
      const res = await postGraphQL(base, '{ shop_product(upc: "1") { name price } }')
      // Without one draw per request, a field can be taken from neither subgraph (an error, a null product).
      const p = (res.body.data?.shop_product ?? {}) as { name?: string; price?: number }
      if (p.name === 'Table' && p.price === 100) seen.old++
      else if (p.name === 'new Table' && p.price === 200) seen.new++
      else seen.mixed++
    }
    t.equal(seen.mixed, 0, 'both fields of a request come from the same subgraph, never from neither')
    t.ok(seen.old > 0 && seen.new > 0, `both subgraphs served requests (${seen.old} old, ${seen.new} new; all on one side: p = 2^-23)`)
  })

  t.test('progressive override: a custom label follows overrideLabels(label, context)', async (t) => {
    const off = await postGraphQL(base, '{ shop_product(upc: "2") { tagline } }')
    t.same(off.body, { data: { shop_product: { tagline: 'old tagline' } } }, 'label off: the old subgraph')
    const on = await postGraphQL(base, '{ shop_product(upc: "2") { tagline } }', undefined, { 'x-beta': 'yes' })
    t.same(on.body, { data: { shop_product: { tagline: 'new tagline' } } }, 'label on: the overriding subgraph')
  })
})

t.test('config: subgraph subscriptions and overrideLabels are validated', async (t) => {
  const source = (extra: Record<string, unknown>, sub: Record<string, unknown> = {}) =>
    resolveConfig({ datasources: [{ kind: 'federation', subgraphs: [{ name: 'a', url: 'http://127.0.0.1:1/graphql', ...sub }], ...extra } as never] })
  t.doesNotThrow(() => source({ overrideLabels: () => false }, { subscriptions: { protocol: 'sse', url: 'http://127.0.0.1:2/stream' } }))
  t.doesNotThrow(() => source({}, { subscriptions: { url: 'ws://127.0.0.1:2/graphql' } }))
  t.throws(() => source({}, { subscriptions: { protocol: 'mqtt' } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /subgraphs\[0\]\.subscriptions\.protocol/ })
  t.throws(() => source({}, { subscriptions: { url: 'ftp://x' } }), { code: 'TRB_ERR_CONFIG_INVALID', message: /subscriptions\.url/ })
  t.throws(() => source({ overrideLabels: 'beta' }), { code: 'TRB_ERR_CONFIG_INVALID', message: /overrideLabels: must be a function/ })
})
