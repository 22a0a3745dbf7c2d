/** Namespacing at build time, collision detection, and the shared scalars across sources (issue 9 §1). */
import t from 'tap'
import {
  GraphQLFloat, GraphQLScalarType, buildClientSchema, execute, graphql, introspectionFromSchema, printSchema,
  type GraphQLInputObjectType, type GraphQLObjectType,
} from 'graphql'
import { makeExecutableSchema } from '@graphql-tools/schema'
import type { ExecutionRequest, Executor } from '@graphql-tools/utils'
import { composeSchema, type ComposableSource } from '../gateway/compose/index.js'
import { applyNamespace, foreignScalarNames } from '../gateway/compose/namespace.js'
import { ExactInteger, bytesOf, parseJsonExact, sharedScalars, toWireValue } from '../gateway/scalars.js'

const local = (name: string, namespace: string, typeDefs: string, resolvers: Parameters<typeof makeExecutableSchema>[0]['resolvers'] = {}): ComposableSource => ({
  name,
  namespace,
  subschema: { kind: 'local', schema: makeExecutableSchema({ typeDefs, resolvers }), health: async () => ({ status: 'up' }), close: async () => {} },
})

t.test('namespaces rename root fields and types; resolvers and extensions move with them', async (t) => {
  const todo = local(
    'todo',
    'todo',
    `scalar DateTime
     enum SortOrder { asc desc }
     type Todo { id: Int! at: DateTime order: SortOrder }
     union Thing = Todo
     type Query { findUniqueTodo(id: Int!): Todo things: [Thing!]! }`,
    {
      Query: { findUniqueTodo: (_: unknown, a: { id: number }) => ({ id: a.id, order: 'asc' }), things: () => [{ id: 7 }] },
      Thing: { __resolveType: () => 'Todo' },
    },
  )
  const demo = local('source#1', '', 'type Message { id: ID! } type Query { messages: [Message!]! }', { Query: { messages: () => [{ id: '1' }] } })
  const schema = composeSchema([todo, demo])
  const sdl = printSchema(schema)
  t.match(sdl, /todo_findUniqueTodo\(id: Int!\): todo_Todo/)
  t.match(sdl, /type todo_Todo/)
  t.match(sdl, /enum todo_SortOrder/)
  t.match(sdl, /scalar DateTime/)
  t.notMatch(sdl, /todo_DateTime/)
  t.match(sdl, /messages: \[Message!\]!/)
  const res = await graphql({ schema, source: '{ todo_findUniqueTodo(id: 3) { id order } todo_things { __typename ... on todo_Todo { id } } messages { id } }' })
  t.same(res, { data: { todo_findUniqueTodo: { id: 3, order: 'asc' }, todo_things: [{ __typename: 'todo_Todo', id: 7 }], messages: [{ id: '1' }] } })
})

t.test('collisions name both sources', async (t) => {
  const a = local('source#0', '', 'type Role { code: String } type Query { a: Role }')
  const b = local('source#1', '', 'type Role { name: Int } type Query { b: Role }')
  t.throws(() => composeSchema([a, b]), { code: 'TRB_ERR_COMPOSE_COLLISION', message: /Role is defined by both source#0 .* and source#1/ })
  const c = local('source#2', '', 'type Query { a: Int }')
  t.throws(() => composeSchema([a, c]), { code: 'TRB_ERR_COMPOSE_COLLISION', message: /Query\.a is defined by both source#0 and source#2/ })
  const objectDateTime = local('weird', 'weird', 'type DateTime { iso: String } type Query { now: DateTime }')
  const scalarDateTime = local('todo', 'todo', 'scalar DateTime type Query { at: DateTime }')
  t.throws(() => composeSchema([scalarDateTime, objectDateTime]), { code: 'TRB_ERR_COMPOSE_COLLISION', message: /DateTime is defined by both todo \(scalar DateTime\) and weird \(object DateTime\)/ })
})

t.test('bad and duplicate namespaces fail', async (t) => {
  const a = local('x', 'x', 'type Query { a: Int }')
  t.throws(() => composeSchema([a, local('x', 'x', 'type Query { b: Int }')]), { code: 'TRB_ERR_COMPOSE_NAMESPACE', message: /namespace "x" is used by x and x/ })
  t.throws(() => composeSchema([local('bad', 'a-b', 'type Query { b: Int }')]), { code: 'TRB_ERR_COMPOSE_NAMESPACE' })
})

// ---------------------------------------------------------------- shared scalars (issue 9 §1)

const ALL_SCALARS = 'scalar DateTime scalar JSON scalar BigInt scalar Decimal scalar Bytes'
const scalarFields = 'at: DateTime doc: JSON big: BigInt dec: Decimal bin: Bytes'

/** A source whose schema uses every shared scalar; `implemented` supplies the shared instances as resolvers. */
function allScalars(name: string, namespace: string, implemented = true, extra = ''): ComposableSource {
  return local(
    name,
    namespace,
    `${ALL_SCALARS} type Item { ${scalarFields} } input ItemInput { ${scalarFields} }
     directive @stamp(at: DateTime) on FIELD_DEFINITION
     type Query { item: Item echo(input: ItemInput!): Item ${extra} }`,
    {
      ...(implemented ? sharedScalars : {}),
      Query: {
        item: () => ({ at: new Date(Date.UTC(2026, 10, 20, 10, 0, 0, 5)), doc: { a: [1] }, big: 9007199254740993n, dec: '0.10', bin: Buffer.from([1, 2, 255]) }),
        echo: (_: unknown, a: { input: unknown }) => a.input,
      },
    },
  )
}

t.test('the shared scalars are one instance in the composed schema, whatever the sources', async (t) => {
  // The three reported cases: two namespaces over one document, a namespaced and a plain source,
  // and a source that merely declares the scalars in SDL.
  const schema = composeSchema([allScalars('a', 'a'), allScalars('b', 'b'), allScalars('c', '', false)])
  for (const [name, shared] of Object.entries(sharedScalars)) t.equal(schema.getType(name), shared, `${name} is the shared instance`)
  for (const field of ['a_item', 'b_item', 'item']) {
    const item = schema.getQueryType()!.getFields()[field]!.type as GraphQLObjectType
    for (const [f, scalar] of Object.entries({ at: 'DateTime', doc: 'JSON', big: 'BigInt', dec: 'Decimal', bin: 'Bytes' })) {
      t.equal(item.getFields()[f]!.type, sharedScalars[scalar], `${field}.${f} refers to the shared ${scalar}`)
    }
  }
  const input = schema.getType('b_ItemInput') as GraphQLInputObjectType
  t.equal(input.getFields().bin!.type, sharedScalars.Bytes, 'input fields too')
  t.equal(schema.getDirective('stamp')!.args[0]!.type, sharedScalars.DateTime, 'and directive arguments')
  t.notMatch(printSchema(schema), /_(DateTime|JSON|BigInt|Decimal|Bytes)\b/, 'no namespaced copy')

  const res = await graphql({
    schema,
    source: `query($bin: Bytes!) {
      a_item { at doc big dec bin } item { at big bin }
      b_echo(input: { at: "2026-11-20T10:00:00.005Z", big: "9007199254740993", dec: "12345678901234.567891", bin: $bin, doc: { x: { y: [1, null] } } }) { at doc big dec bin }
      echo(input: { at: "2026-11-20T10:00:00.005Z", bin: "AAL/" }) { at bin }
    }`,
    variableValues: { bin: 'AQL/' },
  })
  t.same(JSON.parse(JSON.stringify(res)), {
    data: {
      a_item: { at: '2026-11-20T10:00:00.005Z', doc: { a: [1] }, big: '9007199254740993', dec: '0.10', bin: 'AQL/' },
      item: { at: '2026-11-20T10:00:00.005Z', big: '9007199254740993', bin: 'AQL/' },
      b_echo: { at: '2026-11-20T10:00:00.005Z', doc: { x: { y: [1, null] } }, big: '9007199254740993', dec: '12345678901234.567891', bin: 'AQL/' },
      echo: { at: '2026-11-20T10:00:00.005Z', bin: 'AAL/' },
    },
  }, 'every source serialises and parses with the shared semantics (a declared-only scalar too)')
  const bad = await graphql({ schema, source: '{ b_echo(input: { big: "1.5" }) { big } }' })
  t.match(bad.errors?.[0]?.message, /BigInt cannot represent/, 'and validates with them')
})

t.test('applyNamespace keeps the shared instances through mapSchema, with or without a namespace', async (t) => {
  const { schema } = allScalars('x', 'x').subschema
  for (const ns of ['', 'x']) {
    const renamed = applyNamespace(schema, ns)
    for (const [name, shared] of Object.entries(sharedScalars)) t.equal(renamed.getType(name), shared, `${name} (namespace "${ns}")`)
    t.equal(applyNamespace(renamed, '').getType('DateTime'), sharedScalars.DateTime, 'idempotent')
  }
  t.same([...foreignScalarNames(schema, false)], [], 'the shared and declared-only scalars are not foreign')
})

t.test('a scalar that shares a name but has a meaning of its own', async (t) => {
  const UnixTime = new GraphQLScalarType({
    name: 'DateTime',
    serialize: (v) => (v instanceof Date ? Math.floor(v.getTime() / 1000) : v),
    parseValue: (v) => new Date((v as number) * 1000),
    parseLiteral: (ast) => new Date(Number((ast as { value: string }).value) * 1000),
  })
  const own = (namespace: string) =>
    local('legacy', namespace, 'scalar DateTime scalar JSON type Query { now: DateTime doc: JSON }', {
      DateTime: UnixTime,
      JSON: sharedScalars.JSON,
      Query: { now: () => new Date(1_700_000_000_000), doc: () => ({ a: 1 }) },
    })
  t.same([...foreignScalarNames(own('x').subschema.schema, false)], ['DateTime'])

  // Namespaced: it becomes legacy_DateTime and keeps its own semantics beside the shared DateTime.
  const schema = composeSchema([own('legacy'), allScalars('a', 'a')])
  t.equal(schema.getType('DateTime'), sharedScalars.DateTime)
  t.equal(schema.getType('JSON'), sharedScalars.JSON, 'its shared JSON is still shared')
  const legacy = schema.getType('legacy_DateTime') as GraphQLScalarType
  t.ok(legacy, 'the foreign scalar is namespaced')
  t.not(legacy, sharedScalars.DateTime)
  const res = await graphql({ schema, source: '{ legacy_now legacy_doc a_item { at } }' })
  t.same(JSON.parse(JSON.stringify(res)), { data: { legacy_now: 1_700_000_000, legacy_doc: { a: 1 }, a_item: { at: '2026-11-20T10:00:00.005Z' } } })

  // Without a namespace it cannot be renamed: a clear collision.
  t.throws(() => composeSchema([own(''), allScalars('a', 'a')]), {
    code: 'TRB_ERR_COMPOSE_COLLISION',
    message: /legacy defines its own scalar DateTime, but DateTime is the name of a shared scalar; give the source a namespace/,
  })
  t.throws(() => composeSchema([own('')]), { code: 'TRB_ERR_COMPOSE_COLLISION' }, 'even alone')
})

t.test('remote GraphQL scalars: shared unless they declare another specification', async (t) => {
  const upstream = makeExecutableSchema({
    typeDefs: `scalar DateTime @specifiedBy(url: "https://example.com/unix-seconds")
               scalar BigInt
               scalar JSON @specifiedBy(url: "${sharedScalars.JSON!.specifiedByURL}")
               type Query { when: DateTime big: BigInt doc: JSON }`,
    resolvers: { Query: { when: () => 1_700_000_000, big: () => '9007199254740993', doc: () => ({ a: 1 }) } },
  })
  const remote = (name: string, namespace: string): ComposableSource => ({
    name,
    namespace,
    subschema: {
      kind: 'remote',
      // What the connector builds: the upstream's introspection, no implementations.
      schema: buildClientSchema(introspectionFromSchema(upstream)),
      executor: (async (req: ExecutionRequest) => execute({ schema: upstream, document: req.document, variableValues: req.variables })) as Executor,
      health: async () => ({ status: 'up' }),
      close: async () => {},
    },
  })
  t.same([...foreignScalarNames(remote('r', 'r').subschema.schema, true)], ['DateTime'])
  const schema = composeSchema([remote('r1', 'r1'), remote('r2', 'r2'), allScalars('a', 'a')])
  t.equal(schema.getType('BigInt'), sharedScalars.BigInt, 'a remote BigInt without a specification is the shared one')
  t.equal(schema.getType('JSON'), sharedScalars.JSON, 'so is one with the shared specification')
  t.ok(schema.getType('r1_DateTime') && schema.getType('r2_DateTime'), 'a remote DateTime of another specification is namespaced')
  const res = await graphql({ schema, source: '{ r1_when r1_big r2_doc a_item { at } }' })
  t.same(JSON.parse(JSON.stringify(res)), { data: { r1_when: 1_700_000_000, r1_big: '9007199254740993', r2_doc: { a: 1 }, a_item: { at: '2026-11-20T10:00:00.005Z' } } })
  t.throws(() => composeSchema([remote('plain', '')]), { code: 'TRB_ERR_COMPOSE_COLLISION', message: /plain defines its own scalar DateTime/ })
})

t.test('the wire forms of parsed shared-scalar values', async (t) => {
  t.equal(toWireValue('DateTime', new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6))), '2026-01-02T03:04:05.006Z')
  t.equal(toWireValue('Bytes', Buffer.from([0, 255])), 'AP8=')
  t.equal(toWireValue('Bytes', { type: 'Buffer', data: [0, 255] }), 'AP8=', "graphql-jit's inlined Buffer")
  t.same(toWireValue('JSON', { type: 'Buffer', data: [0, 255] }), { type: 'Buffer', data: [0, 255] }, 'only for Bytes')
  t.equal(toWireValue('BigInt', '9007199254740993'), '9007199254740993')
  t.equal(bytesOf({ type: 'Buffer', data: [256] }), undefined, 'not bytes')
  t.equal(sharedScalars.Bytes!.serialize({ type: 'Buffer', data: [1, 2] }), 'AQI=')
})

t.test('parseJsonExact keeps integers beyond 2^53 exact for BigInt and Decimal, and rounded elsewhere', async (t) => {
  const text = '{"id":9007199254740993,"neg":-12345678901234567890,"safe":9007199254740991,"f":12345678901234567.5,"e":1e300,"s":"9007199254740993","nested":[{"n":18446744073709551615}]}'
  const v = parseJsonExact(text) as Record<string, unknown> & { nested: [{ n: unknown }] }
  t.ok(v.id instanceof ExactInteger)
  t.equal(sharedScalars.BigInt!.serialize(v.id), '9007199254740993')
  t.equal(sharedScalars.BigInt!.serialize(v.neg), '-12345678901234567890')
  t.equal(sharedScalars.Decimal!.serialize(v.nested[0].n), '18446744073709551615')
  t.equal(v.safe, 9007199254740991, 'safe integers stay numbers')
  t.equal(v.f, 12345678901234568, 'fractions stay numbers')
  t.equal(v.e, 1e300)
  t.equal(v.s, '9007199254740993', 'strings are untouched')
  t.equal(GraphQLFloat.serialize(v.id), 9007199254740992, 'a Float reads the rounded number')
  t.equal(JSON.stringify(sharedScalars.JSON!.serialize(v.nested)), '[{"n":18446744073709552000}]', 'so does a JSON value')
  t.same(parseJsonExact('{"a":[1,2,"x"]}'), { a: [1, 2, 'x'] }, 'plain path')
  t.throws(() => parseJsonExact('{"a":12345678901234567890'), SyntaxError)
})
