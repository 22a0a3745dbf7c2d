/** Namespacing at build time and collision detection. */
import t from 'tap'
import { graphql, printSchema } from 'graphql'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { composeSchema, type ComposableSource } from '../gateway/compose/index.js'

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
