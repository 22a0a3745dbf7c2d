/**
 * Type merging (README "Merged types"): `Product` served by a catalogue and an inventory GraphQL API,
 * both real HTTP servers on 127.0.0.1, becomes one public `Product` with the fields of both, through
 * the gateway's real HTTP (/graphql and a stored operation). Batching is proven by counting the
 * upstream requests: N products cost one request to each API per level.
 */
import t from 'tap'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { isObjectType } from 'graphql'
import { getOperation, postGraphQL, startGateway, startGraphQLUpstream } from './helpers/graphql-upstream.js'
import { graphql, resolveConfig, type DataSourceDefinition } from '../gateway/config/index.js'

const PRODUCTS = [1, 2, 3, 4, 5].map((n) => ({ id: String(n), name: `Product ${n}`, stock: n * 10, code: n % 2 ? 'A' : 'B', since: `2026-0${n}-01T00:00:00.000Z` }))

function catalogSchema() {
  return makeExecutableSchema({
    typeDefs: `
      scalar DateTime
      type Product { id: ID! name: String! since: DateTime! }
      type Category { name: String! }
      type Query {
        products: [Product!]!
        productsByIds(ids: [ID!]!): [Product]!
        product(id: ID!): Product
        categories: [Category!]!
      }
    `,
    resolvers: {
      Query: {
        products: () => PRODUCTS,
        // Not in key order, as many APIs answer: the merge config's key order is restored below.
        productsByIds: (_: unknown, a: { ids: string[] }) => a.ids.map((id) => PRODUCTS.find((p) => p.id === id) ?? null),
        product: (_: unknown, a: { id: string }) => PRODUCTS.find((p) => p.id === a.id) ?? null,
        categories: () => [{ name: 'Chairs' }],
      },
    },
  })
}

function inventorySchema(fail = false) {
  return makeExecutableSchema({
    typeDefs: `
      type Product { id: ID! stock: Int! warehouse: Warehouse }
      type Warehouse { code: String! }
      type Category { shelf: Int! }
      type Query {
        productsByIds(ids: [ID!]!): [Product]!
        lowStock(below: Int!): [Product!]!
        shelves: [Category!]!
      }
    `,
    resolvers: {
      Query: {
        productsByIds: (_: unknown, a: { ids: string[] }) => {
          if (fail) throw new Error('inventory database is down')
          return a.ids.map((id) => PRODUCTS.find((p) => p.id === id) ?? null)
        },
        lowStock: (_: unknown, a: { below: number }) => PRODUCTS.filter((p) => p.stock < a.below),
        shelves: () => [{ shelf: 3 }],
      },
      Product: { warehouse: (p: { code: string }) => ({ code: p.code }) },
    },
  })
}

async function setup(t: { teardown(fn: () => unknown): void }, options: { fail?: boolean; mode?: 'production' } = {}) {
  const catalog = await startGraphQLUpstream(t, catalogSchema())
  const inventory = await startGraphQLUpstream(t, inventorySchema(options.fail))
  // Typed by the config helpers, as a user writes it.
  const datasources: DataSourceDefinition[] = [
    graphql({ namespace: 'catalog', url: catalog.url, merge: { Product: { selectionSet: '{ id }', fieldName: 'productsByIds', key: 'id', argsFromKeys: 'ids' } } }),
    graphql({ namespace: 'inventory', url: inventory.url, merge: { Product: { selectionSet: '{ id }', fieldName: 'productsByIds', key: 'id', argsFromKeys: 'ids' } } }),
  ]
  const gw = await startGateway(t, {
    datasources,
    ...(options.mode ? { mode: options.mode } : {}),
    operations: { Stock: 'query Stock { catalog_products { id name stock warehouse { code } } }\n' },
  })
  return { catalog, inventory, ...gw }
}

t.test('one public Product with the fields of both sources; other names stay namespaced', async (t) => {
  const { gateway } = await setup(t)
  const product = gateway.schema.getType('Product')
  t.ok(product && isObjectType(product), 'Product keeps its name')
  t.same(Object.keys(isObjectType(product) ? product.getFields() : {}).sort(), ['id', 'name', 'since', 'stock', 'warehouse'])
  t.notOk(gateway.schema.getType('catalog_Product'), 'no namespaced copy')
  t.notOk(gateway.schema.getType('inventory_Product'), 'no namespaced copy')
  t.ok(gateway.schema.getType('inventory_Warehouse'), 'a non-merged type is namespaced')
  t.ok(gateway.schema.getType('catalog_Category') && gateway.schema.getType('inventory_Category'), 'same-named types that are not merged stay two types')
  const fields = Object.keys(gateway.schema.getQueryType()!.getFields()).sort()
  t.same(fields, ['catalog_categories', 'catalog_product', 'catalog_products', 'catalog_productsByIds', 'inventory_lowStock', 'inventory_productsByIds', 'inventory_shelves'])
})

t.test('N objects cost one request to each source (batched with key/argsFromKeys), over /graphql and /operations', async (t) => {
  const { base, catalog, inventory } = await setup(t)
  const res = await postGraphQL(base, '{ catalog_products { __typename id name since stock warehouse { __typename code } } }')
  t.equal(res.status, 200)
  t.same(res.body.errors, undefined)
  t.same(
    res.body.data?.catalog_products,
    PRODUCTS.map((p) => ({ __typename: 'Product', id: p.id, name: p.name, since: p.since, stock: p.stock, warehouse: { __typename: 'inventory_Warehouse', code: p.code } })),
  )
  t.equal(catalog.dataRequests().length, 1, 'one request to the catalogue')
  t.equal(inventory.dataRequests().length, 1, 'one request to the inventory for 5 products')
  const batched = inventory.dataRequests()[0]!
  t.match(batched.query, /productsByIds/)
  t.same(Object.values(batched.variables ?? {}).flat().sort(), ['1', '2', '3', '4', '5'], 'the 5 keys in one list argument')

  // The other direction: the inventory's root field, completed by the catalogue.
  const before = catalog.dataRequests().length
  const reverse = await postGraphQL(base, '{ inventory_lowStock(below: 35) { id stock name } }')
  t.same(reverse.body, { data: { inventory_lowStock: [{ id: '1', stock: 10, name: 'Product 1' }, { id: '2', stock: 20, name: 'Product 2' }, { id: '3', stock: 30, name: 'Product 3' }] } })
  t.equal(catalog.dataRequests().length - before, 1, 'one catalogue request for 3 products')

  const inventoryBefore = inventory.dataRequests().length
  const stored = await getOperation(base, 'Stock')
  t.equal(stored.status, 200)
  t.same(stored.body, { catalog_products: PRODUCTS.map((p) => ({ id: p.id, name: p.name, stock: p.stock, warehouse: { code: p.code } })) })
  t.equal(inventory.dataRequests().length - inventoryBefore, 1, 'the stored operation batches too')
})

t.test('args: one call per object, all of one level in one upstream request', async (t) => {
  const catalog = await startGraphQLUpstream(t, catalogSchema())
  const inventory = await startGraphQLUpstream(t, inventorySchema())
  const { base } = await startGateway(t, {
    datasources: [
      { kind: 'graphql', namespace: 'catalog', url: catalog.url, merge: { Product: { selectionSet: '{ id }', fieldName: 'product', args: { id: 'id' } } } },
      { kind: 'graphql', namespace: 'inventory', url: inventory.url, merge: { Product: {} } },
    ],
  })
  const res = await postGraphQL(base, '{ inventory_lowStock(below: 25) { id stock name } }')
  t.same(res.body, { data: { inventory_lowStock: [{ id: '1', stock: 10, name: 'Product 1' }, { id: '2', stock: 20, name: 'Product 2' }] } })
  t.equal(catalog.dataRequests().length, 1, 'two product(id:) calls in one request')
  t.equal((catalog.dataRequests()[0]!.query.match(/product\(/g) ?? []).length, 2, 'two aliased root fields')
  // The inventory has no fieldName: its fields are reached from its own root fields only.
  const fromCatalog = await postGraphQL(base, '{ catalog_product(id: "1") { name stock } }')
  t.equal(fromCatalog.body.data?.catalog_product, null)
  t.ok(fromCatalog.body.errors?.length, 'stock cannot be fetched for a catalogue product: an error, not a wrong value')
})

t.test('a failing source gives null and an error at its path; the other fields stay', async (t) => {
  const dev = await setup(t, { fail: true })
  const res = await postGraphQL(dev.base, '{ catalog_products { id name warehouse { code } } }')
  t.equal(res.status, 200)
  t.same(
    res.body.data?.catalog_products,
    PRODUCTS.map((p) => ({ id: p.id, name: p.name, warehouse: null })),
    'the catalogue fields are intact',
  )
  // One error per field that failed, each at its own path (GraphQL spec §7.1.2): a client tells a
  // failed `warehouse` from a null one by its path.
  t.same(
    res.body.errors?.map((e: { path?: unknown[] }) => e.path),
    PRODUCTS.map((_, i) => ['catalog_products', i, 'warehouse']),
    'an error at each product whose warehouse could not be fetched',
  )
  for (const error of res.body.errors ?? []) {
    t.equal(error.extensions.code, 'TRB_ERR_UPSTREAM')
    t.match(error.message, /inventory database is down/, 'development shows the upstream message')
  }

  const prod = await setup(t, { fail: true, mode: 'production' })
  const stored = await getOperation(prod.base, 'Stock')
  t.equal(stored.status, 502, 'an upstream failure is 502 on /operations')
  t.equal(stored.body.errors?.[0]?.extensions.code, 'TRB_ERR_UPSTREAM')
  t.notMatch(JSON.stringify(stored.body), /inventory database is down/, 'production masks the upstream message')
})

t.test('merge config is checked against the sources', async (t) => {
  const catalog = await startGraphQLUpstream(t, catalogSchema())
  const inventory = await startGraphQLUpstream(t, inventorySchema())
  const inv = { kind: 'graphql' as const, namespace: 'inventory', url: inventory.url, merge: { Product: {} } }
  const attempt = (merge: Record<string, unknown>, other: DataSourceDefinition = inv) =>
    startGateway(t, { datasources: [{ kind: 'graphql', namespace: 'catalog', url: catalog.url, merge } as DataSourceDefinition, other] })
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ Nope: {} }, /catalog: merge\.Nope: catalog has no object type Nope/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'nope', key: 'id', argsFromKeys: 'ids' } }, /merge\.Product\.fieldName: catalog has no Query field nope/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'productsByIds', key: 'id', argsFromKeys: 'keys' } }, /merge\.Product\.argsFromKeys: productsByIds has no argument keys/],
    [{ Product: { selectionSet: '{ name }', fieldName: 'productsByIds', key: 'id', argsFromKeys: 'ids' } }, /merge\.Product\.key: id is not in the selectionSet/],
    [{ Product: { selectionSet: '{ id', fieldName: 'product', args: { id: 'id' } } }, /merge\.Product\.selectionSet: not a selection set/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'product', args: { sku: 'id' } } }, /merge\.Product\.args\.sku: product has no argument sku/],
  ]
  for (const [merge, message] of cases) await t.rejects(attempt(merge), { code: 'TRB_ERR_CONFIG_INVALID', message }, message.source)
  await t.rejects(
    attempt({ Product: {} }, { kind: 'graphql', namespace: 'inventory', url: inventory.url }),
    { code: 'TRB_ERR_CONFIG_INVALID', message: /catalog: merge\.Product: no other source lists Product/ },
  )
  await t.rejects(
    startGateway(t, {
      datasources: [
        { kind: 'graphql', url: catalog.url, merge: { Product: {} } },
        { kind: 'graphql', url: inventory.url, merge: { Product: {} } },
      ],
    }),
    { code: 'TRB_ERR_COMPOSE_COLLISION', message: /Query\.productsByIds is defined by both source#0 and source#1/ },
    'merging sources without namespaces still collide on root fields',
  )
})

t.test('the merge config shape is validated at startup (ajv), naming the path', async (t) => {
  const src = (merge: unknown) => ({ datasources: [{ kind: 'graphql', namespace: 'a', url: 'http://127.0.0.1:1/graphql', merge }] })
  const cases: [unknown, RegExp][] = [
    [{ Product: { fieldName: 'byIds', key: 'id', argsFromKeys: 'ids' } }, /datasources\[0\]\.merge\.Product: must have properties argsFromKeys, fieldName, selectionSet when property key is present/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'byIds' } }, /datasources\[0\]\.merge\.Product\.args: is required with fieldName \(or key and argsFromKeys, to batch\)/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'byIds', key: 'id' } }, /datasources\[0\]\.merge\.Product: must have properties argsFromKeys, fieldName, selectionSet when/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'byIds', key: 'id', argsFromKeys: 'ids', args: { id: 'id' } } }, /datasources\[0\]\.merge\.Product: must not have both args/],
    [{ Product: { selectionSet: 'id', fieldName: 'p', args: { id: 'id' } } }, /datasources\[0\]\.merge\.Product\.selectionSet: must match pattern/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'p', args: { id: 3 } } }, /datasources\[0\]\.merge\.Product\.args/],
    [{ Product: { selectionSet: '{ id }', fieldName: 'p', key: 42, argsFromKeys: 'ids' } }, /datasources\[0\]\.merge\.Product\.key/],
    [{ Product: { sideways: true } }, /datasources\[0\]\.merge\.Product\.sideways: is not a known option/],
    [{ 'Not-a-name': {} }, /datasources\[0\]\.merge/],
  ]
  for (const [merge, message] of cases) t.throws(() => resolveConfig(src(merge)), { code: 'TRB_ERR_CONFIG_INVALID', message }, message.source)
  t.doesNotThrow(() => resolveConfig(src({ Product: { selectionSet: '{ id }', fieldName: 'byIds', key: (o: { id: string }) => o.id, argsFromKeys: (ids: readonly unknown[]) => ({ ids }) } })), 'functions are accepted')
  t.throws(() => resolveConfig({ datasources: [{ kind: 'schema', typeDefs: 'type Query { a: Int }', merge: {} }] }), { message: /datasources\[0\]\.merge: is not a known option/ }, 'only remote sources merge')
  // defineConfig's types refuse the same mistakes in an editor.
  // @ts-expect-error key is a field name, a list of field names or a function
  t.ok(graphql({ url: 'http://127.0.0.1:1/graphql', merge: { Product: { selectionSet: '{ id }', fieldName: 'p', key: 42, argsFromKeys: 'ids' } } }))
})
