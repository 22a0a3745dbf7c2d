/**
 * `federation({ supergraph })`: a supergraph SDL composed elsewhere (README "Apollo Federation
 * subgraphs"). Two real `@apollo/subgraph` servers on 127.0.0.1, their supergraph composed in the test
 * with `@theguild/federation-composition`, served from a file and from a real HTTP server that
 * answers with an ETag, asks for a registry key (`X-Hive-CDN-Key`, as Hive's CDN does) and is polled:
 * a changed supergraph is served without a restart, an invalid one is refused while the last good
 * one stays served.
 */
import t from 'tap'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { composeServices } from '@theguild/federation-composition'
import { parse } from 'graphql'
import { createServer } from 'node:http'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getOperation, postGraphQL, startGateway, startGraphQLUpstream, type GraphQLUpstream } from './helpers/graphql-upstream.js'
import { eventually } from './helpers/eventually.js'
import { federation } from '../gateway/config/index.js'

const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])'
const PRODUCTS = [
  { upc: '1', name: 'Table' },
  { upc: '2', name: 'Couch' },
]
type Resolvers = Parameters<typeof buildSubgraphSchema>[0] extends infer A ? (A extends { resolvers?: infer R } ? R : never) : never
const subgraph = (typeDefs: string, resolvers: unknown) => buildSubgraphSchema({ typeDefs: parse(`${LINK}\n${typeDefs}`), resolvers: resolvers as Resolvers })
const PRODUCTS_SDL = 'type Product @key(fields: "upc") { upc: String! name: String! } type Query { topProducts: [Product!]! }'
const STOCK_SDL = 'type Product @key(fields: "upc") { upc: String! inStock: Boolean! }'

const productsSchema = () =>
  subgraph(PRODUCTS_SDL, { Query: { topProducts: () => PRODUCTS }, Product: { __resolveReference: (r: { upc: string }) => PRODUCTS.find((p) => p.upc === r.upc) } })
const stockSchema = (inStock: boolean) => subgraph(STOCK_SDL, { Product: { __resolveReference: (r: { upc: string }) => ({ ...r, inStock }) } })

/** The supergraph of the products subgraph and one stock subgraph, composed as a registry would. */
function supergraphOf(products: GraphQLUpstream, stock: GraphQLUpstream): string {
  const composed = composeServices([
    { name: 'products', url: products.url, typeDefs: parse(`${LINK}\n${PRODUCTS_SDL}`) },
    { name: 'stock', url: stock.url, typeDefs: parse(`${LINK}\n${STOCK_SDL}`) },
  ])
  if (composed.errors) throw composed.errors[0]
  return composed.supergraphSdl!
}

const QUERY = '{ shop_topProducts { name inStock } }'
const answer = (inStock: boolean) => ({ data: { shop_topProducts: PRODUCTS.map((p) => ({ name: p.name, inStock })) } })

t.test('a supergraph file composed elsewhere is served; a file that is not a supergraph fails the load', async (t) => {
  const products = await startGraphQLUpstream(t, productsSchema())
  const stock = await startGraphQLUpstream(t, stockSchema(true))
  const dir = mkdtempSync(join(tmpdir(), 'tributary-supergraph-'))
  const file = join(dir, 'supergraph.graphql')
  writeFileSync(file, supergraphOf(products, stock))
  const { base } = await startGateway(t, { datasources: [federation({ namespace: 'shop', supergraph: file })] })
  const res = await postGraphQL(base, QUERY)
  t.same(res.body, answer(true), 'entities resolved across the subgraphs the supergraph names')
  t.equal(stock.dataRequests().length, 1, 'one _entities request for both products')
  const health = (await (await fetch(`${base}/health`)).json()) as { sources: Record<string, { status: string }> }
  t.equal(health.sources.shop?.status, 'up', 'the subgraphs of the supergraph are probed')

  writeFileSync(join(dir, 'not.graphql'), 'type Query { a: Int }')
  await t.rejects(startGateway(t, { datasources: [federation({ namespace: 'shop', supergraph: join(dir, 'not.graphql') })] }), {
    code: 'TRB_ERR_SOURCE_LOAD',
    message: /not\.graphql is not a supergraph SDL/,
  })
  await t.rejects(startGateway(t, { datasources: [federation({ namespace: 'shop', supergraph: join(dir, 'missing.graphql') })] }), {
    code: 'TRB_ERR_SOURCE_LOAD',
    message: /cannot read the supergraph file/,
  })
})

t.test('a supergraph URL with a registry key, polled with If-None-Match: a new version is served, an invalid one refused', async (t) => {
  const products = await startGraphQLUpstream(t, productsSchema())
  const stockA = await startGraphQLUpstream(t, stockSchema(true))
  const stockB = await startGraphQLUpstream(t, stockSchema(false))
  let served = { sdl: supergraphOf(products, stockA), etag: '"v1"' }
  const seen: { key?: string; ifNoneMatch?: string; status: number; etag: string }[] = []
  const cdn = createServer((req, res) => {
    const key = req.headers['x-hive-cdn-key'] as string | undefined
    const status = key !== 'secret' ? 403 : req.headers['if-none-match'] === served.etag ? 304 : 200
    seen.push({ key, ifNoneMatch: req.headers['if-none-match'] as string | undefined, status, etag: served.etag })
    res.writeHead(status, status === 200 ? { etag: served.etag, 'content-type': 'text/plain' } : {})
    res.end(status === 200 ? served.sdl : undefined)
  })
  await new Promise<void>((ok) => cdn.listen(0, '127.0.0.1', ok))
  t.teardown(() => new Promise<void>((ok) => (cdn.close(() => ok()), cdn.closeAllConnections())))
  const url = `http://127.0.0.1:${(cdn.address() as { port: number }).port}/artifacts/v1/target/supergraph`

  await t.rejects(startGateway(t, { datasources: [federation({ namespace: 'shop', supergraph: url, supergraphHeaders: { 'X-Hive-CDN-Key': 'wrong' } })] }), {
    code: 'TRB_ERR_SOURCE_LOAD',
    message: /cannot read the supergraph at .*: HTTP 403/,
  })
  const { base } = await startGateway(t, { datasources: [federation({ namespace: 'shop', supergraph: url, supergraphHeaders: { 'X-Hive-CDN-Key': 'secret' }, supergraphPollMs: 1000 })] })
  t.same((await postGraphQL(base, QUERY)).body, answer(true))
  t.ok(await eventually(() => seen.some((s) => s.status === 304), 5000), 'an unchanged supergraph costs a 304')
  t.equal(seen.at(-1)?.ifNoneMatch, '"v1"', 'polled with the last ETag')

  // A new version moves the stock subgraph to another server: served without a restart.
  served = { sdl: supergraphOf(products, stockB), etag: '"v2"' }
  t.ok(await eventually(async () => JSON.stringify((await postGraphQL(base, QUERY)).body) === JSON.stringify(answer(false)), 5000, 100), 'the new supergraph is served')
  const before = stockB.dataRequests().length

  // An invalid version is refused; the last good one stays served.
  served = { sdl: 'type Query { broken: Int }', etag: '"v3"' }
  t.ok(await eventually(() => seen.some((s) => s.etag === '"v3"' && s.status === 200), 5000), 'the invalid version was read')
  t.same((await postGraphQL(base, QUERY)).body, answer(false), 'still serving the previous supergraph')
  t.ok(stockB.dataRequests().length > before)
  t.ok(seen.every((s) => s.key !== undefined), 'every read carries the key')
})

t.test('supergraph and subgraphs: exactly one', async (t) => {
  const { resolveConfig } = await import('../gateway/config/index.js')
  t.throws(() => resolveConfig({ datasources: [{ kind: 'federation', supergraph: 'a.graphql', subgraphs: [{ name: 'a', url: 'http://127.0.0.1:1/graphql' }] }] }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(() => resolveConfig({ datasources: [{ kind: 'federation' }] }), { code: 'TRB_ERR_CONFIG_INVALID' })
  t.throws(() => resolveConfig({ datasources: [{ kind: 'federation', supergraph: 'http://127.0.0.1:1/s', supergraphPollMs: 10 }] }), { code: 'TRB_ERR_CONFIG_INVALID', message: /supergraphPollMs/ })
})

t.test('a query plan that cannot be built answers data: null, its library message hidden in production', async (t) => {
  // The federation gateway audit's corrupted-supergraph-node-id suite: each subgraph resolves `node` with an id the other owns.
  const NODE_LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@shareable", "@external"])'
  const node = (typeDefs: string, resolve: (id: string) => unknown) =>
    buildSubgraphSchema({ typeDefs: parse(`${NODE_LINK}\ntype Query { node(id: ID!): Node @shareable } interface Node { id: ID! }\n${typeDefs}`), resolvers: { Query: { node: (_: unknown, a: { id: string }) => resolve(a.id) } } as Resolvers })
  const a = await startGraphQLUpstream(t, node('type Account implements Node @key(fields: "id") { id: ID! username: String! } type Chat implements Node @key(fields: "id") { id: ID! @external }', (id) =>
    id === 'a1' ? { __typename: 'Account', id, username: 'a1-username' } : { __typename: 'Chat', id: 'never' }))
  const b = await startGraphQLUpstream(t, node('type Account implements Node @key(fields: "id") { id: ID! @external } type Chat implements Node @key(fields: "id") { id: ID! text: String! }', (id) =>
    id === 'a1' ? { __typename: 'Account', id: 'never' } : { __typename: 'Chat', id, text: 'c1-text' }))
  const subgraphs = [{ name: 'a', url: a.url }, { name: 'b', url: b.url }]
  const dev = await startGateway(t, { datasources: [federation({ subgraphs })] })
  const res = await postGraphQL(dev.base, '{ node(id: "a1") { id } }')
  t.equal(res.body.data, null, 'data: null, not { node: null }')
  t.equal(res.body.errors?.[0]?.extensions.CRITICAL_ERROR, true)
  t.same(res.body.errors?.[0]?.path, ['node'])
  t.same((await postGraphQL(dev.base, '{ account: node(id: "a1") { __typename } chat: node(id: "c1") { __typename } }')).body, { data: { account: { __typename: 'Account' }, chat: { __typename: 'Chat' } } }, 'a plan that can be built is unaffected')
  const prod = await startGateway(t, { mode: 'production', datasources: [federation({ subgraphs })], operations: { Node: 'query Node { node(id: "a1") { id } }\n' } })
  const masked = await getOperation(prod.base, 'Node')
  t.equal(masked.body.data, undefined, `no partial data on /operations: ${JSON.stringify(masked.body)}`)
  t.equal(masked.body.errors?.[0]?.message, 'The federation query plan could not be built', 'the library message is not shown in production')
})
