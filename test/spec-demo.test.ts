/**
 * The demo deployment's schema, exactly as docs/architecture.md §6 (the specification) states it:
 * the demo types and fields with their nullability, and the todo table's six columns.
 */
import t from 'tap'
import { isNonNullType, printType, type GraphQLObjectType } from 'graphql'
import { startDemo } from './helpers/demo.js'

t.test('the demo schema matches the specification to the letter', async (t) => {
  const { gateway } = await startDemo(t)
  const schema = gateway.schema
  t.equal(printType(schema.getType('Message')!).replace(/"""[^]*?"""\s*/g, '').replace(/\s+/g, ' '), 'type Message { id: String content: String }', 'Message { id: String, content: String }, both nullable')
  const field = (type: string, name: string) => (schema.getType(type) as GraphQLObjectType).getFields()[name]!
  t.equal(String(field('Query', 'messages').type), '[Message!]!')
  t.equal(String(field('Query', 'deatail').type), 'String')
  t.same(field('Query', 'deatail').args.map((a) => `${a.name}: ${String(a.type)}`), ['title: String!'])
  t.equal(String(field('Subscription', 'messageCreated').type), 'Message')
  const todo = (schema.getType('todo_Todo') as GraphQLObjectType).getFields()
  t.same(Object.fromEntries(Object.entries(todo).filter(([, f]) => !f.args.length).map(([n, f]) => [n, String(f.type)])), {
    id: 'Int!', title: 'String!', completed: 'Boolean!', createdAt: 'DateTime!', updatedAt: 'DateTime', description: 'String',
  }, 'Todo: six columns, updatedAt and description nullable')
  t.notOk(isNonNullType(field('Query', 'deatail').type))
})

t.test("the README's Quick start examples, verbatim", async (t) => {
  const { app } = await startDemo(t)
  const one = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })
  t.equal(one.body, '{"todo_findUniqueTodo":{"completed":true,"createdAt":"2026-11-20T09:00:00.000Z","id":1,"title":"Read docs/architecture.md"}}')
  const both = await app.inject({ method: 'GET', url: '/operations/TodoAndRoles' })
  t.same(Object.keys(both.json()), ['todo_findUniqueTodo', 'system_getAllRoles'])
  const post = await app.inject({
    method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' },
    payload: '{"query":"{ todo_findManyTodo(take: 2) { id title } system_getAllRoles { code } }"}',
  })
  t.equal(post.statusCode, 200)
  t.same(post.json().data.system_getAllRoles, [{ code: 'admin' }, { code: 'user' }])
  t.same(post.json().data.todo_findManyTodo.map((r: { id: number }) => r.id), [1, 2])
})

t.test("the seed's mutation root carries todo_executeRaw in development mode only", async (t) => {
  const dev = await startDemo(t)
  t.equal(dev.config.mode, 'development')
  t.equal(String(dev.gateway.schema.getMutationType()!.getFields()['todo_executeRaw']?.type), 'Int', 'development: Mutation.todo_executeRaw')
  t.ok(dev.gateway.schema.getQueryType()!.getFields()['todo_queryRaw'], 'development: Query.todo_queryRaw')
  const raw = (query: string) => dev.app.inject({ method: 'POST', url: '/graphql', payload: { query: 'mutation ($q: String!) { todo_executeRaw(query: $q) }', variables: { q: query } } })
  t.same((await raw("UPDATE todo SET title = title WHERE id = 1")).json(), { data: { todo_executeRaw: 1 } }, 'it runs')
  const attach = (await raw(`/**/ attach 'pwn.sqlite' as pwn`)).json()
  t.equal(attach.errors?.[0]?.extensions?.code, 'TRB_ERR_DB_RAW_REFUSED', 'the demo database is SQLite: ATTACH is refused')

  const prod = await startDemo(t, { override: { mode: 'production', graphql: { allowArbitraryOperationsInProduction: true } } })
  t.notOk(prod.gateway.schema.getMutationType()!.getFields()['todo_executeRaw'], 'production: no todo_executeRaw')
  t.notOk(prod.gateway.schema.getQueryType()!.getFields()['todo_queryRaw'], 'production: no todo_queryRaw')
  const refused = (await prod.app.inject({ method: 'POST', url: '/graphql', payload: { query: 'mutation { todo_executeRaw(query: "DELETE FROM todo") }' } })).json()
  t.match(refused.errors?.[0]?.message, /Cannot query field "todo_executeRaw"/)
})
