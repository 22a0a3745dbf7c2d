/**
 * Apollo Federation v2 subgraphs as a data source (README "Apollo Federation subgraphs"): three real
 * subgraph servers on 127.0.0.1 built with `@apollo/subgraph` (products, inventory, reviews),
 * composed and executed by the gateway, namespaced, through its real HTTP (/graphql and a stored
 * operation). Entity resolution across subgraphs is batched (`_entities` requests counted), errors
 * land at their paths, and upstream failures follow the remote GraphQL connector's contract.
 */
import t from 'tap'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { parse, type OperationDefinitionNode } from 'graphql'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getOperation, postGraphQL, startGateway, startGraphQLUpstream, type GraphQLUpstream } from './helpers/graphql-upstream.js'
import { defineConfig, federation, resolveConfig } from '../gateway/config/index.js'
import { sharedScalars } from '../gateway/scalars.js'
import { isJitSafe } from '../gateway/operations/jit-safety.js'

const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@external", "@requires", "@shareable"])'
const PRODUCTS = [
  { upc: '1', name: 'Table', price: 899, releasedAt: '2026-01-02T03:04:05.000Z' },
  { upc: '2', name: 'Couch', price: 1299, releasedAt: '2026-02-03T04:05:06.000Z' },
  { upc: '3', name: 'Chair', price: 54, releasedAt: '2026-03-04T05:06:07.000Z' },
]
const REVIEWS = [
  { id: 'r1', upc: '1', body: 'Love it' },
  { id: 'r2', upc: '1', body: 'Too wide' },
  { id: 'r3', upc: '3', body: 'Comfy' },
]

type Resolvers = Parameters<typeof buildSubgraphSchema>[0] extends infer A ? (A extends { resolvers?: infer R } ? R : never) : never

const subgraph = (typeDefs: string, resolvers: unknown) => buildSubgraphSchema({ typeDefs: parse(`${LINK}\n${typeDefs}`), resolvers: resolvers as Resolvers })

function productsSubgraph() {
  return subgraph(
    `scalar DateTime
     type Product @key(fields: "upc") { upc: String! name: String! price: Int! releasedAt: DateTime! }
     "A recursive input type: documents with a variable of it run on graphql-js, not graphql-jit (gateway/operations/jit-safety.ts)."
     input ProductFilter { upcIn: [String!] not: ProductFilter }
     type Query { topProducts(first: Int = 5, filter: ProductFilter): [Product!]! product(upc: String!): Product releasedSince(after: DateTime!): [Product!]! }`,
    {
      Query: {
        releasedSince: (_: unknown, a: { after: unknown }) => {
          if (typeof a.after !== 'string') throw new Error(`after arrived as ${JSON.stringify(a.after)}`)
          return PRODUCTS.filter((p) => p.releasedAt > (a.after as string))
        },
        topProducts: (_: unknown, a: { first: number; filter?: { upcIn?: string[] } }) => PRODUCTS.filter((p) => !a.filter?.upcIn || a.filter.upcIn.includes(p.upc)).slice(0, a.first),
        product: (_: unknown, a: { upc: string }) => PRODUCTS.find((p) => p.upc === a.upc) ?? null,
      },
      Product: { __resolveReference: (ref: { upc: string }) => PRODUCTS.find((p) => p.upc === ref.upc) },
    },
  )
}

function inventorySubgraph() {
  return subgraph(
    `type Product @key(fields: "upc") {
       upc: String!
       price: Int! @external
       inStock: Boolean!
       shippingEstimate: Int @requires(fields: "price")
     }`,
    {
      Product: {
        __resolveReference: (ref: { upc: string; price?: number }) => ({ ...ref, inStock: ref.upc !== '2' }),
        shippingEstimate: (p: { upc: string; price: number }) => {
          if (p.upc === '3') throw new Error('no carrier serves chairs')
          return p.price > 1000 ? 0 : Math.round(p.price / 100)
        },
      },
    },
  )
}

function reviewsSubgraph() {
  return subgraph(
    `type Review { id: ID! body: String! product: Product! }
     type Product @key(fields: "upc") { upc: String! reviews: [Review!]! }
     type Query { latestReviews: [Review!]! }`,
    {
      Query: { latestReviews: () => REVIEWS },
      Review: { product: (r: { upc: string }) => ({ upc: r.upc }) },
      Product: {
        __resolveReference: (ref: { upc: string }) => ref,
        reviews: (p: { upc: string }) => REVIEWS.filter((r) => r.upc === p.upc),
      },
    },
  )
}

/** The `_entities` requests a subgraph received, with their representation counts. */
const entityCalls = (s: GraphQLUpstream) =>
  s.dataRequests().filter((r) => r.query.includes('_entities')).map((r) => (r.variables?.representations as unknown[] | undefined)?.length ?? 0)

async function setup(t: { teardown(fn: () => unknown): void }, options: { mode?: 'production'; timeoutMs?: number; dir?: string } = {}) {
  const products = await startGraphQLUpstream(t, productsSubgraph())
  const inventory = await startGraphQLUpstream(t, inventorySubgraph())
  const reviews = await startGraphQLUpstream(t, reviewsSubgraph())
  const gw = await startGateway(t, {
    ...(options.dir ? { dir: options.dir } : {}),
    ...(options.mode ? { mode: options.mode } : {}),
    // Typed by defineConfig's helpers, as a user writes it.
    datasources: defineConfig({
      datasources: [
        federation({
          namespace: 'shop',
          timeoutMs: options.timeoutMs ?? 5000,
          forwardHeaders: ['authorization'],
          subgraphs: [
            { name: 'products', url: products.url },
            { name: 'inventory', url: inventory.url },
            { name: 'reviews', url: reviews.url, headers: { 'x-subgraph': 'reviews' } },
          ],
        }),
      ],
    }).datasources,
    operations: {
      TopProducts: 'query TopProducts($first: Int = 3) { shop_topProducts(first: $first) { upc name inStock reviews { body } } }\n',
      Shipping: 'query Shipping { shop_topProducts { upc shippingEstimate } }\n',
      Stock: 'query Stock { shop_topProducts { upc name inStock } }\n',
    },
  })
  return { products, inventory, reviews, ...gw }
}

t.test('subgraphs composed into one namespaced source; entities resolved across subgraphs in batches', async (t) => {
  const { base, gateway, products, inventory, reviews } = await setup(t)
  const schema = gateway.schema
  t.same(Object.keys(schema.getQueryType()!.getFields()).sort(), ['shop_latestReviews', 'shop_product', 'shop_releasedSince', 'shop_topProducts'], 'root fields are namespaced; _entities and _service are hidden')
  t.same(Object.keys((schema.getType('shop_Product') as { getFields(): object }).getFields()).sort(), ['inStock', 'name', 'price', 'releasedAt', 'reviews', 'shippingEstimate', 'upc'], 'one entity with the fields of three subgraphs')
  t.notOk(schema.getType('_Entity') || schema.getType('_Service') || schema.getType('shop__Entity'), 'no federation internals')
  t.equal(schema.getType('DateTime'), sharedScalars.DateTime, 'DateTime is the shared scalar')

  const res = await postGraphQL(base, '{ shop_topProducts { __typename upc name releasedAt inStock reviews { id body product { name } } } }', undefined, { authorization: 'Bearer t0ken' })
  t.equal(res.status, 200)
  t.same(res.body.errors, undefined)
  t.same(res.body.data, {
    shop_topProducts: PRODUCTS.map((p) => ({
      __typename: 'shop_Product',
      upc: p.upc,
      name: p.name,
      releasedAt: p.releasedAt,
      inStock: p.upc !== '2',
      reviews: REVIEWS.filter((r) => r.upc === p.upc).map((r) => ({ id: r.id, body: r.body, product: { name: p.name } })),
    })),
  })
  t.equal(products.dataRequests().length, 2, 'products: the root field, then one _entities request for the reviewed products')
  t.same(entityCalls(products), [2], 'the two reviewed products (deduplicated) in one _entities call')
  t.same(entityCalls(inventory), [3], 'inventory: one _entities request for the 3 products')
  t.same(entityCalls(reviews), [3], 'reviews: one _entities request for the 3 products')
  t.equal(inventory.dataRequests().length, 1)
  t.equal(reviews.dataRequests().length, 1)
  for (const s of [products, inventory, reviews]) t.equal(s.dataRequests()[0]?.headers.authorization, 'Bearer t0ken', 'the forwarded header reaches every subgraph')
  t.equal(reviews.dataRequests()[0]?.headers['x-subgraph'], 'reviews', 'per-subgraph headers')
  t.equal(inventory.dataRequests()[0]?.headers['x-subgraph'], undefined)

  // @requires: the price comes from products, then shippingEstimate from inventory.
  const shipping = await postGraphQL(base, '{ shop_product(upc: "2") { name shippingEstimate } }')
  t.same(shipping.body, { data: { shop_product: { name: 'Couch', shippingEstimate: 0 } } })

  // A shared scalar both ways: the variable is parsed by the gateway's DateTime and reaches the subgraph in its wire form.
  for (const after of ['2026-02-01T00:00:00.000Z', '2026-02-01T01:00:00+01:00']) {
    const since = await postGraphQL(base, 'query ($after: DateTime!) { shop_releasedSince(after: $after) { name releasedAt } }', { after })
    t.same(since.body, { data: { shop_releasedSince: PRODUCTS.slice(1).map((p) => ({ name: p.name, releasedAt: p.releasedAt })) } })
    t.equal(products.dataRequests().at(-1)?.variables?.after, '2026-02-01T00:00:00.000Z', `${after} is sent as the ISO 8601 UTC wire form`)
  }

  const stored = await getOperation(base, 'TopProducts?first=2')
  t.equal(stored.status, 200)
  t.same(stored.body, {
    shop_topProducts: [
      { upc: '1', name: 'Table', inStock: true, reviews: [{ body: 'Love it' }, { body: 'Too wide' }] },
      { upc: '2', name: 'Couch', inStock: false, reviews: [] },
    ],
  })

  // A probe that timed out on a loaded machine says `down` until the next one: poll for `up`.
  const shopHealth = async () => ((await (await fetch(`${base}/health`)).json()) as { sources: Record<string, { status: string }> }).sources.shop?.status
  let status = await shopHealth()
  for (const end = Date.now() + 15_000; status !== 'up' && Date.now() < end; status = await shopHealth()) await new Promise((r) => setTimeout(r, 250))
  t.equal(status, 'up')
})

t.test('a subgraph error lands at its path; siblings stay; masked in production, 502 on /operations', async (t) => {
  const dev = await setup(t)
  const res = await postGraphQL(dev.base, '{ shop_topProducts { upc name shippingEstimate } }')
  t.equal(res.status, 200)
  t.same(res.body.data, {
    shop_topProducts: [
      { upc: '1', name: 'Table', shippingEstimate: 9 },
      { upc: '2', name: 'Couch', shippingEstimate: 0 },
      { upc: '3', name: 'Chair', shippingEstimate: null },
    ],
  })
  t.equal(res.body.errors?.length, 1)
  t.same(res.body.errors?.[0]?.path, ['shop_topProducts', 2, 'shippingEstimate'])
  t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
  t.match(res.body.errors?.[0]?.message, /no carrier serves chairs/, 'development keeps the subgraph message')

  // The same error in a document that graphql-js executes (a variable of a recursive input type): the
  // list index stays in the path there too.
  const filtered = 'query ($f: shop_ProductFilter) { shop_topProducts(filter: $f) { upc name shippingEstimate } }'
  const filteredDocument = parse(filtered)
  const operation = filteredDocument.definitions[0] as OperationDefinitionNode
  t.equal(isJitSafe(dev.gateway.schema, filteredDocument, operation), false, 'the document runs on graphql-js')
  const viaJs = await postGraphQL(dev.base, filtered, { f: { upcIn: ['1', '3'] } })
  t.same(viaJs.body.data, { shop_topProducts: [{ upc: '1', name: 'Table', shippingEstimate: 9 }, { upc: '3', name: 'Chair', shippingEstimate: null }] })
  t.same(viaJs.body.errors?.map((e: { path?: unknown }) => e.path), [['shop_topProducts', 1, 'shippingEstimate']], 'graphql-js keeps the index')
  t.equal(viaJs.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')

  const prod = await setup(t, { mode: 'production' })
  const stored = await getOperation(prod.base, 'Shipping')
  t.equal(stored.status, 502)
  t.same(stored.body.errors?.[0]?.path, ['shop_topProducts', 2, 'shippingEstimate'])
  t.equal(stored.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
  t.equal(stored.body.errors?.[0]?.message, 'Upstream shop/inventory returned an error')
  t.notMatch(JSON.stringify(stored.body), /carrier|127\.0\.0\.1/, 'no subgraph text or address in production')
})

t.test('a subgraph that is down or too slow: coded errors, 502 / 504 on /operations, the other subgraphs intact', async (t) => {
  const down = await setup(t)
  await down.inventory.close()
  const res = await postGraphQL(down.base, '{ shop_topProducts { upc name inStock } }')
  t.equal(res.body.data, null, 'inStock is non-null: the error propagates to the nullable root')
  t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
  t.same(res.body.errors?.[0]?.extensions.http, { status: 502 })
  t.notMatch(JSON.stringify(res.body), /127\.0\.0\.1/, 'no upstream address')
  const names = await postGraphQL(down.base, '{ shop_topProducts { name } }')
  t.same(names.body, { data: { shop_topProducts: PRODUCTS.map((p) => ({ name: p.name })) } }, 'fields of the other subgraphs still work')
  const stored = await getOperation(down.base, 'Stock')
  t.equal(stored.status, 502)
  const health = (await (await fetch(`${down.base}/health`)).json()) as { sources: Record<string, { status: string; message?: string }> }
  t.equal(health.sources.shop?.status, 'down')
  t.match(health.sources.shop?.message, /^inventory: /)

  const slow = await setup(t, { timeoutMs: 300 })
  slow.inventory.delayMs = 1500
  const late = await getOperation(slow.base, 'Stock')
  t.equal(late.status, 504)
  t.equal(late.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM_TIMEOUT')
  t.match(late.body.errors?.[0]?.message, /Upstream shop\/inventory timed out after 300 ms/)
})

t.test('the cached SDLs let the gateway start while a subgraph is down; composition errors fail the load', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-federation-cache-'))
  const first = await setup(t, { dir })
  const urls = [first.products.url, first.inventory.url, first.reviews.url]
  await first.close()
  await first.reviews.close()
  const second = await startGateway(t, {
    dir,
    datasources: [{ kind: 'federation', namespace: 'shop', subgraphs: ['products', 'inventory', 'reviews'].map((name, i) => ({ name, url: urls[i]! })) }],
  })
  const res = await postGraphQL(second.base, '{ shop_topProducts { name inStock } }')
  t.same(res.body.data, { shop_topProducts: PRODUCTS.map((p) => ({ name: p.name, inStock: p.upc !== '2' })) }, 'served with the cached reviews SDL')

  const empty = mkdtempSync(join(tmpdir(), 'tributary-federation-nocache-'))
  await t.rejects(
    startGateway(t, { dir: empty, datasources: [{ kind: 'federation', namespace: 'shop', subgraphs: [{ name: 'reviews', url: urls[2]! }] }] }),
    { code: 'TRB_ERR_SOURCE_LOAD', message: /cannot read the SDL of subgraph reviews/ },
  )

  const clash = await startGraphQLUpstream(t, subgraph('type Product @key(fields: "upc") { upc: String! name: Int! }', { Product: { __resolveReference: (r: unknown) => r } }))
  await t.rejects(
    startGateway(t, { dir: empty, datasources: [{ kind: 'federation', namespace: 'shop', subgraphs: [{ name: 'products', url: urls[0]! }, { name: 'clash', url: clash.url }] }] }),
    { code: 'TRB_ERR_SOURCE_LOAD', message: /^Data source shop failed to load: the subgraphs do not compose: .*Product\.name.*(?<! undefined)$/ },
  )
  t.throws(
    () => resolveConfig({ datasources: [{ kind: 'federation', subgraphs: [{ name: 'a', url: urls[0] }, { name: 'a', url: urls[1] }] }] }),
    { code: 'TRB_ERR_CONFIG_INVALID', message: /datasources\[0\]\.subgraphs\[1\]\.name: another subgraph has the name a/ },
  )
  t.throws(() => resolveConfig({ datasources: [{ kind: 'federation', subgraphs: [] }] }), { code: 'TRB_ERR_CONFIG_INVALID', message: /datasources\[0\]\.subgraphs/ })
})

t.test('a federation entity merged with a plain GraphQL source (type merging across kinds)', async (t) => {
  const products = await startGraphQLUpstream(t, productsSubgraph())
  const { makeExecutableSchema } = await import('@graphql-tools/schema')
  const pricing = await startGraphQLUpstream(
    t,
    makeExecutableSchema({
      typeDefs: 'type Product { upc: String! discount: Int! } type Query { discounts(upcs: [String!]!): [Product]! }',
      resolvers: { Query: { discounts: (_: unknown, a: { upcs: string[] }) => a.upcs.map((upc) => ({ upc, discount: Number(upc) * 5 })) } },
    }),
  )
  const { base } = await startGateway(t, {
    datasources: [
      {
        kind: 'federation',
        namespace: 'shop',
        subgraphs: [{ name: 'products', url: products.url }],
        merge: { Product: { selectionSet: '{ upc }', fieldName: 'product', args: { upc: 'upc' } } },
      },
      { kind: 'graphql', namespace: 'pricing', url: pricing.url, merge: { Product: { selectionSet: '{ upc }', fieldName: 'discounts', key: 'upc', argsFromKeys: 'upcs' } } },
    ],
  })
  const res = await postGraphQL(base, '{ shop_topProducts { __typename name discount } }')
  t.same(res.body, { data: { shop_topProducts: PRODUCTS.map((p) => ({ __typename: 'Product', name: p.name, discount: Number(p.upc) * 5 })) } })
  t.equal(pricing.dataRequests().length, 1, 'one pricing request for the 3 products')
})
