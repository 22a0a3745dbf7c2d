/**
 * Tributary as an Apollo Federation v2 subgraph (`server.federation`, README "Tributary as a
 * subgraph"), driven over real HTTP as a router drives it: `_service { sdl }` (the `@link`, `@key`
 * on every model with a primary key, composite keys too), `_entities` answered by ONE statement per
 * type (statements counted from the debug log), representations as hostile client input (count
 * bound, unknown types, missing or ill-typed keys: coded errors at their index, never
 * TRB_ERR_INTERNAL), and the row filters and field permissions of every other path.
 * The database is the subgraphs example's (examples/federation-subgraphs/todos), on a scratch SQLite file.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { database, federation, graphql, resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { DEFAULT_MAX_REPRESENTATIONS } from '../gateway/compose/subgraph.js'
import { createTables, seed } from '../examples/federation-subgraphs/todos/migrations.js'
import { commentsSubgraph } from '../examples/federation-subgraphs/subgraphs/comments.js'
import { serveGateway } from './helpers/serve.js'
import { sqlLog } from './helpers/sql-log.js'
import { freshDatabase } from './helpers/chinook.js'
import { mint } from './helpers/auth.js'
import { postGraphQL, startGateway, startGraphQLUpstream } from './helpers/graphql-upstream.js'

const secret = 'federation-subgraph-test-secret-0123456789'

interface Body {
  data?: { _entities?: unknown[]; _service?: { sdl: string }; todo_findManyTodo?: unknown } | null
  errors?: { message: string; path?: (string | number)[]; extensions: { code: string } }[]
}

/** A Tributary subgraph over a fresh copy of the example's database; `gql` posts to /graphql, `statements` fills from the debug log. */
async function start(t: Test, extra: Partial<TributaryConfigInput> = {}, maxTake?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'trb-subgraph-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { stream, statements } = sqlLog()
  const config = resolveConfig({
    datasources: [database({ namespace: 'todo', url: `sqlite:${join(dir, 'todos.sqlite')}`, migrations: { '001': createTables, '002': seed }, ...(maxTake ? { maxTake } : {}) })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    ...extra,
    server: { logLevel: 'debug', federation: true, ...extra.server },
  })
  const { url } = await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream), cwd: dir })
  const gql = async (query: string, variables?: Record<string, unknown>, token?: string) => {
    statements.length = 0
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    })
    return { status: res.status, body: (await res.json()) as Body }
  }
  return { gql, statements, url }
}

const ENTITIES = 'query ($r: [_Any!]!) { _entities(representations: $r) { __typename ... on todo_Todo { id title assignee: assigneeId } ... on todo_TodoLabel { label todo { title } } } }'

t.test('the subgraph: SDL with @link and @key, _entities batched per type, bad representations refused at their index', async (t) => {
  const { gql, statements } = await start(t)

  const sdl = (await gql('{ _service { sdl } }')).body.data!._service!.sdl
  t.match(sdl, /^extend schema @link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.3", import: \["@key"\]\)/)
  t.match(sdl, /type todo_Todo @key\(fields: "id"\) \{/, 'a model keyed by its primary key, under its namespaced name')
  t.match(sdl, /type todo_TodoLabel @key\(fields: "todoId label"\) \{/, 'a composite primary key')
  t.notMatch(sdl, /_entities|_service|_Any|_Entity/, 'the SDL leaves out the subgraph fields themselves')

  const reps = [
    { __typename: 'todo_Todo', id: 3 },
    { __typename: 'todo_TodoLabel', todoId: 2, label: 'federation' },
    { __typename: 'todo_Todo', id: 99 },
    { __typename: 'todo_Todo', id: 1, title: 'ignored: not a key' },
    { __typename: 'todo_TodoLabel', todoId: 1, label: 'docs' },
    { __typename: 'todo_Todo', id: 3 },
  ]
  const ok = await gql(ENTITIES, { r: reps })
  t.equal(ok.status, 200)
  t.same(ok.body, {
    data: {
      _entities: [
        { __typename: 'todo_Todo', id: 3, title: 'Ask Hive Gateway', assignee: 1 },
        { __typename: 'todo_TodoLabel', label: 'federation', todo: { title: 'Compose the subgraphs' } },
        null,
        { __typename: 'todo_Todo', id: 1, title: 'Write the supergraph', assignee: 1 },
        { __typename: 'todo_TodoLabel', label: 'docs', todo: { title: 'Write the supergraph' } },
        { __typename: 'todo_Todo', id: 3, title: 'Ask Hive Gateway', assignee: 1 },
      ],
    },
  }, 'in the order of the representations; a key without a row is null')
  t.equal(statements.length, 2, `one statement per type: ${statements.join(' | ')}`)
  t.match(statements.find((x) => x.includes('FROM "Todo" AS t0 WHERE')), /"id" IN \(\?, \?, \?\)/, 'the distinct keys 3, 99 and 1: id 3, asked twice, is fetched once')

  // Fragments on _Entity and named fragments, as routers write them.
  const frag = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ...E } } fragment E on _Entity { ... on todo_Todo { ...T } } fragment T on todo_Todo { title }', { r: [{ __typename: 'todo_Todo', id: 2 }] })
  t.same(frag.body, { data: { _entities: [{ title: 'Compose the subgraphs' }] } })

  const bad = await gql(ENTITIES, {
    r: [
      { __typename: 'todo_Todo', id: 2 },
      { __typename: 'Nope', id: 1 },
      { id: 1 },
      { __typename: 'todo_Todo' },
      { __typename: 'todo_Todo', id: 'x' },
      { __typename: 'todo_TodoLabel', todoId: 1 },
      'a string',
      { __typename: '__proto__', id: 1 },
      { __typename: 'todo_Todo', id: null },
      { __typename: 'todo_Todo', id: 'x'.repeat(100_000) },
    ],
  })
  t.equal(bad.status, 200, 'field errors: 200 with partial data')
  t.same(bad.body.data!._entities, [{ __typename: 'todo_Todo', id: 2, title: 'Compose the subgraphs', assignee: 2 }, null, null, null, null, null, null, null, null, null])
  t.same(bad.body.errors!.map((e) => [e.path, e.extensions.code]), [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => [['_entities', i], 'TRB_ERR_GRAPHQL_VALIDATION']), 'each bad representation has its coded error at its index')
  t.ok(bad.body.errors![8]!.message.length < 400, 'a 100 000-character key is not echoed back whole')
  t.match(bad.body.errors![0]!.message, /representations\[1\] names "Nope", which is not an entity type/)
  t.match(bad.body.errors![2]!.message, /lacks the key field id of todo_Todo/)
  t.match(bad.body.errors![3]!.message, /key field id that is not a valid Int/)
  t.equal(statements.length, 1, 'the valid one still costs one statement')
})

t.test('attack: representations are bounded (documented default 1000, configurable), checked before any statement', async (t) => {
  t.equal(DEFAULT_MAX_REPRESENTATIONS, 1000)
  const { gql, statements } = await start(t)
  const many = (n: number) => Array.from({ length: n }, (_, i) => ({ __typename: 'todo_Todo', id: i + 1 }))
  const atLimit = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id } } }', { r: many(1000) })
  t.equal(atLimit.body.data!._entities!.filter(Boolean).length, 3, '1000 representations: the 3 rows that exist')
  t.equal(statements.length, 1, '1000 representations of one type: still one statement')
  const labels = Array.from({ length: 1000 }, (_, i) => ({ __typename: 'todo_TodoLabel', todoId: (i % 3) + 1, label: i < 3 ? ['docs', 'federation', 'federation'][i] : `l${i}` }))
  const composite = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_TodoLabel { label } } }', { r: labels })
  t.same(composite.body.data!._entities!.slice(0, 4), [{ label: 'docs' }, { label: 'federation' }, { label: 'federation' }, null], '1000 composite keys: an OR of 1000 terms')
  t.equal(statements.length, 1, '1000 composite keys of one type: one statement')
  const over = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id } } }', { r: many(1001) })
  t.same(over.body.data, null)
  t.same(over.body.errors!.map((e) => e.extensions.code), ['TRB_ERR_GRAPHQL_LIMIT'])
  t.match(over.body.errors![0]!.message, /1001 representations, more than the maximum of 1000 \(server\.federation\.maxRepresentations\)/)
  t.equal(statements.length, 0, 'nothing ran')

  const small = await start(t, { server: { federation: { maxRepresentations: 2 } } })
  const refused = await small.gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id } } }', { r: many(3) })
  t.same(refused.body.errors!.map((e) => e.extensions.code), ['TRB_ERR_GRAPHQL_LIMIT'])
  const chunked = await start(t, {}, 2)
  const five = await chunked.gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id } } }', { r: [3, 2, 1, 2, 4].map((id) => ({ __typename: 'todo_Todo', id })) })
  t.same(five.body, { data: { _entities: [{ id: 3 }, { id: 2 }, { id: 1 }, { id: 2 }, null] } })
  t.equal(chunked.statements.length, 2, 'maxTake 2: the 4 distinct keys in 2 statements')

  t.throws(() => resolveConfig({ datasources: [], server: { federation: { maxRepresentations: 0 } } } as never), { code: 'TRB_ERR_CONFIG_INVALID' })
})

t.test('_entities keeps row filters and field permissions', async (t) => {
  const { gql, statements } = await start(t, {
    auth: { jwt: { secret }, graphql: 'public' },
    permissions: {
      todo_Todo: { filter: { assigneeId: { equals: { claim: 'sub' } } } },
      'todo_Todo.completed': { roles: ['admin'] },
    },
  })
  const ada = await mint(new TextEncoder().encode(secret), { sub: 1 as never, roles: ['user'] }, { expiresIn: '5m' })
  const reps = [1, 2, 3].map((id) => ({ __typename: 'todo_Todo', id }))
  const mine = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id title } } }', { r: reps }, ada)
  t.same(mine.body, { data: { _entities: [{ id: 1, title: 'Write the supergraph' }, null, { id: 3, title: 'Ask Hive Gateway' }] } }, "Grace's todo is hidden from Ada, as on findMany")
  t.equal(statements.length, 1)
  const anonymous = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id } } }', { r: reps })
  t.same(anonymous.body.errors!.map((e) => [e.path, e.extensions.code]), [0, 1, 2].map((i) => [['_entities', i], 'TRB_ERR_AUTH_REQUIRED']))
  const field = await gql('query ($r: [_Any!]!) { _entities(representations: $r) { ... on todo_Todo { id completed } } }', { r: reps.slice(0, 1) }, ada)
  t.same(field.body.errors!.map((e) => [e.path, e.extensions.code]), [[['_entities', 0, 'completed'], 'TRB_ERR_AUTH_FORBIDDEN']], 'a protected field is refused at its path')
  // The subgraph schema is rebuilt from the protected one: its root fields must keep the same guards
  // (a document that selects, filters or orders by a protected field never takes the direct SQL plan).
  const selected = await gql('{ todo_findManyTodo { id completed } }', undefined, ada)
  t.same(selected.body.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN'], 'a protected field selected on a root field is refused')
  t.notOk(JSON.stringify(selected.body.data ?? null).includes('completed'), 'and not answered')
  const filtered = await gql('{ todo_findManyTodo(where: { completed: { equals: true } }) { id } }', undefined, ada)
  t.same(filtered.body.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN'], 'a filter on a protected field is refused')
  const anonymousFilter = await gql('{ todo_findManyTodo(where: { completed: { equals: true } }) { id } }')
  t.ok(anonymousFilter.body.errors?.length, 'without a token too')
  t.notOk(anonymousFilter.body.data?.todo_findManyTodo, JSON.stringify(anonymousFilter.body))
  const ordered = await gql('query ($o: [todo_TodoOrderByWithRelationInput!]) { todo_findManyTodo(orderBy: $o) { id } }', { o: [{ completed: 'asc' }] }, ada)
  t.same(ordered.body.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN'], 'an order by a protected field in a variable is refused')
})

t.test('PostgreSQL: the subgraph schema keeps the permission guards, so protected fields never take the direct SQL plan', async (t) => {
  // The subgraph schema is rebuilt from the protected one; the direct JSON plan (PostgreSQL's) asked
  // for the guards of the rebuilt schema, found none, and answered a protected field to anyone.
  const db = await freshDatabase('postgres', 'subgraph-perm')
  t.teardown(db.cleanup)
  if (db.skipReason) return void t.pass(`skipped: ${db.skipReason}`)
  const dir = mkdtempSync(join(tmpdir(), 'trb-subgraph-pg-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const federation of [false, true]) {
    const config = resolveConfig({
      datasources: [database({ namespace: 'todo', url: db.url, migrations: federation ? {} : { '001': createTables, '002': seed } })],
      operations: { dir: join(dir, 'operations') },
      generatedDir: join(dir, `generated-${federation}`),
      auth: { jwt: { secret }, graphql: 'public' },
      permissions: { 'todo_Todo.completed': { roles: ['admin'] } },
      server: { federation },
    })
    const { url } = await serveGateway(t, config, { cwd: dir })
    const post = async (query: string) => (await (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as Body
    const selected = await post('{ todo_findManyTodo { id completed } }')
    t.same(selected.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN'], `federation ${federation}: a protected field is refused`)
    t.notOk(JSON.stringify(selected.data ?? null).includes('completed'), 'and not answered')
    const filtered = await post('{ todo_findManyTodo(where: { completed: { equals: true } }) { id } }')
    t.same(filtered.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN'], `federation ${federation}: a filter on it is refused`)
    t.notOk(filtered.data?.todo_findManyTodo)
  }
})

t.test('without server.federation there is no subgraph field', async (t) => {
  const { gql } = await start(t, { server: { federation: false } })
  const res = await gql('{ _service { sdl } }')
  t.same(res.body.errors!.map((e) => e.extensions.code), ['TRB_ERR_GRAPHQL_VALIDATION'])
})

t.test('a merged type with a batched lookup is an entity too: one call of its lookup for every representation', async (t) => {
  const products = [1, 2, 3].map((n) => ({ id: String(n), name: `Product ${n}`, stock: n * 10 }))
  const api = (typeDefs: string) =>
    makeExecutableSchema({
      typeDefs,
      resolvers: { Query: { productsByIds: (_: unknown, a: { ids: string[] }) => a.ids.map((id) => products.find((p) => p.id === id) ?? null) } },
    })
  const catalog = await startGraphQLUpstream(t, api('type Product { id: ID! name: String! } type Query { productsByIds(ids: [ID!]!): [Product]! }'))
  const inventory = await startGraphQLUpstream(t, api('type Product { id: ID! stock: Int! } type Query { productsByIds(ids: [ID!]!): [Product]! }'))
  const merge = { Product: { selectionSet: '{ id }', fieldName: 'productsByIds', key: 'id', argsFromKeys: 'ids' } }
  const { base } = await startGateway(t, {
    datasources: [graphql({ namespace: 'catalog', url: catalog.url, merge }), graphql({ namespace: 'inventory', url: inventory.url, merge })],
    server: { federation: true },
  })
  const sdl = ((await postGraphQL(base, '{ _service { sdl } }')).body.data as { _service: { sdl: string } })._service.sdl
  t.match(sdl, /type Product @key\(fields: "id"\) \{/, 'the merged type keyed by its merge key')
  const res = await postGraphQL(base, 'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Product { id name stock } } }', {
    r: [{ __typename: 'Product', id: '3' }, { __typename: 'Product', id: '9' }, { __typename: 'Product', id: 1 }, { __typename: 'Product', id: { nested: 1 } }],
  })
  t.same(res.body.data, { _entities: [{ id: '3', name: 'Product 3', stock: 30 }, null, { id: '1', name: 'Product 1', stock: 10 }, null] })
  t.same(res.body.errors!.map((e) => [e.path, e.extensions.code]), [[['_entities', 3], 'TRB_ERR_GRAPHQL_VALIDATION']])
  t.equal(catalog.dataRequests().length, 1, 'one lookup call for every representation')
  t.equal(inventory.dataRequests().length, 1, 'and one to the other source for its fields')
})

t.test('a composite key with a DateTime: representations match the rows whatever the column stores', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trb-subgraph-dt-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const migrations = {
    '001': {
      async up(knex: import('knex').Knex) {
        await knex.schema.createTable('Booking', (b) => {
          b.timestamp('day').notNullable()
          b.integer('room').notNullable()
          b.string('guest').notNullable()
          b.primary(['day', 'room'])
        })
        await knex('Booking').insert([
          { day: '2026-03-01 00:00:00', room: 1, guest: 'Ada' },
          { day: '2026-03-02 00:00:00', room: 1, guest: 'Grace' },
        ])
      },
    },
  }
  const config = resolveConfig({
    datasources: [database({ namespace: 'hotel', url: `sqlite:${join(dir, 'hotel.sqlite')}`, migrations })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    server: { federation: true },
  })
  const { url } = await serveGateway(t, config, { cwd: dir })
  const post = async (query: string, variables?: unknown) =>
    (await (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })).json()) as Body
  t.match((await post('{ _service { sdl } }')).data!._service!.sdl, /type hotel_Booking @key\(fields: "day room"\)/)
  const res = await post('query ($r: [_Any!]!) { _entities(representations: $r) { ... on hotel_Booking { day room guest } } }', {
    r: [
      { __typename: 'hotel_Booking', day: '2026-03-02T00:00:00.000Z', room: 1 },
      { __typename: 'hotel_Booking', day: '2026-03-01T00:00:00Z', room: 1 },
      { __typename: 'hotel_Booking', day: '2026-03-01T00:00:00.000Z', room: 2 },
    ],
  })
  t.same(res, {
    data: {
      _entities: [
        { day: '2026-03-02T00:00:00.000Z', room: 1, guest: 'Grace' },
        { day: '2026-03-01T00:00:00.000Z', room: 1, guest: 'Ada' },
        null,
      ],
    },
  })
})

t.test("another Tributary's federation() source composes this subgraph with an @apollo/subgraph service", async (t) => {
  const todos = await start(t)
  const comments = await startGraphQLUpstream(t, commentsSubgraph())
  const { base } = await startGateway(t, {
    datasources: [federation({ namespace: 'board', subgraphs: [{ name: 'todos', url: `${todos.url}/graphql` }, { name: 'comments', url: comments.url }] })],
  })
  todos.statements.length = 0
  const res = await postGraphQL(base, '{ board_latestComments { body todo { id title todoLabels { label } } } }')
  t.same(res.body, {
    data: {
      board_latestComments: [
        { body: 'Hive Gateway answered', todo: { id: 3, title: 'Ask Hive Gateway', todoLabels: [{ label: 'federation' }] } },
        { body: 'It composes', todo: { id: 2, title: 'Compose the subgraphs', todoLabels: [{ label: 'federation' }] } },
        { body: 'Done, see the README', todo: { id: 1, title: 'Write the supergraph', todoLabels: [{ label: 'docs' }] } },
      ],
    },
  })
  t.equal(todos.statements.length, 1, 'the three todos in one _entities statement')
})
