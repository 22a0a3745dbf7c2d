/** POST/GET /graphql on the demo: the specification's examples, GraphQL over HTTP status codes, introspection. */
import t from 'tap'
import { buildClientSchema, getIntrospectionQuery, lexicographicSortSchema, printSchema } from 'graphql'
import { startDemo } from './helpers/demo.js'

const GQL_RESPONSE = 'application/graphql-response+json'

t.test('the demo over POST /graphql', async (t) => {
  const { app } = await startDemo(t)
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) })

  t.test('a String! variable next to a list of messages', async (t) => {
    const res = await post({ query: 'query ($title: String!) { deatail(title: $title) messages { content id } }', variables: { title: 'hello' } })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /application\/json/)
    const body = res.json()
    t.equal(body.errors, undefined)
    t.equal(body.data.deatail, 'Detail of "hello"')
    t.ok(Array.isArray(body.data.messages) && body.data.messages.length >= 1)
    t.same(Object.keys(body.data.messages[0]), ['content', 'id'])
    t.type(body.data.messages[0].content, 'string')
  })

  t.test('TodoById with variables', async (t) => {
    const res = await post({
      query: 'query TodoById($id: Int = 1) { todo_findUniqueTodo(where: {id: $id}) { completed createdAt id title } }',
      variables: { id: 2 },
      operationName: 'TodoById',
    })
    t.equal(res.statusCode, 200)
    t.same(res.json(), {
      data: { todo_findUniqueTodo: { completed: false, createdAt: '2026-11-20T09:30:00.000Z', id: 2, title: 'Add a data source in config.ts' } },
    })
  })

  t.test('TodoAndRoles joins the database and the REST API', async (t) => {
    const res = await post({
      query: '{ todo_findUniqueTodo(where: {id: 1}) { id title completed } system_getAllRoles { code remark } }',
    })
    t.equal(res.statusCode, 200)
    const { data, errors } = res.json()
    t.equal(errors, undefined)
    t.same(data.todo_findUniqueTodo, { id: 1, title: 'Read docs/architecture.md', completed: true })
    t.same(data.system_getAllRoles.map((r: { code: string }) => r.code), ['admin', 'user'])
    t.equal(data.system_getAllRoles[1].remark, '')
  })

  t.test('GET /graphql runs queries and refuses mutations with 405 + Allow', async (t) => {
    const ok = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent('{ todo_findUniqueTodo(where: {id: 1}) { id } }')}` })
    t.equal(ok.statusCode, 200)
    t.same(ok.json().data, { todo_findUniqueTodo: { id: 1 } })
    const mutation = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent('mutation { todo_deleteManyTodo { count } }')}` })
    t.equal(mutation.statusCode, 405)
    t.equal(mutation.headers.allow, 'POST')
    t.equal(mutation.json().errors[0].extensions.code, 'TRB_ERR_GRAPHQL_METHOD')
    const still = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent('{ todo_aggregateTodo { _count { _all } } }')}` })
    t.equal(still.json().data.todo_aggregateTodo._count._all, 5, 'nothing was deleted')
  })

  t.test('request errors: 400 with graphql-response+json, 200 with legacy application/json', async (t) => {
    const bad = await post({ query: '{ nope }' }, { accept: GQL_RESPONSE })
    t.equal(bad.statusCode, 400)
    t.match(bad.headers['content-type'], /application\/graphql-response\+json/)
    t.match(bad.json().errors[0].message, /Cannot query field "nope"/)
    const legacy = await post({ query: '{ nope }' }, { accept: 'application/json' })
    t.equal(legacy.statusCode, 200)
    t.ok(legacy.json().errors.length)
    const syntax = await post({ query: '{ messages { id ' }, { accept: GQL_RESPONSE })
    t.equal(syntax.statusCode, 400)
    t.match(syntax.json().errors[0].message, /Syntax Error/)
  })

  t.test('malformed requests get 400 JSON and the server keeps serving', async (t) => {
    const broken = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: '{"query": ' })
    t.equal(broken.statusCode, 400)
    t.ok(broken.json().errors[0].message)
    const noQuery = await post({ variables: {} })
    t.equal(noQuery.statusCode, 400)
    t.equal(noQuery.json().errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
    const badVars = await post({ query: '{ messages { id } }', variables: [1] })
    t.equal(badVars.statusCode, 400)
    const nullExt = await post({ query: '{ messages { id } }', extensions: null })
    t.equal(nullExt.statusCode, 200, 'extensions: null is accepted (graphql-http audit 0222)')
    const after = await post({ query: '{ messages { id } }' })
    t.equal(after.statusCode, 200)
  })

  t.test('variables of the wrong type are a request error', async (t) => {
    const res = await post({ query: 'query ($id: Int!) { todo_findUniqueTodo(where: {id: $id}) { id } }', variables: { id: 'abc' } }, { accept: GQL_RESPONSE })
    t.equal(res.statusCode, 400)
    t.match(res.json().errors[0].message, /Int cannot represent non-integer value/)
  })

  t.test('token limit', async (t) => {
    const huge = await post({ query: `{ ${'messages { id } '.repeat(2000)} }` }, { accept: GQL_RESPONSE })
    t.equal(huge.statusCode, 400)
    t.match(huge.json().errors[0].message, /tokens/)
  })
})

t.test('introspection answers the full standard query and converts back to the schema', async (t) => {
  const { app, gateway } = await startDemo(t)
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true }) }),
  })
  t.equal(res.statusCode, 200)
  const { data, errors } = res.json()
  t.equal(errors, undefined)
  const rebuilt = buildClientSchema(data)
  t.equal(printSchema(lexicographicSortSchema(rebuilt)), printSchema(lexicographicSortSchema(gateway.schema)))
  const sdl = printSchema(rebuilt)
  t.match(sdl, /todo_findUniqueTodo\(where: todo_TodoWhereUniqueInput!\): todo_Todo/)
  t.match(sdl, /system_getAllRoles/)
  t.match(sdl, /messageCreated: Message/)
  t.match(sdl, /scalar DateTime/)
})

t.test('the playground is served to browsers with local assets only', async (t) => {
  const { app } = await startDemo(t)
  const res = await app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/html/)
  const urls = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((u) => !u.startsWith('data:'))
  t.ok(urls.length >= 1, 'the page loads assets')
  for (const u of urls) {
    t.notOk(/^https?:\/\//.test(u), `${u} is served by the gateway`)
    const asset = await app.inject({ method: 'GET', url: u })
    t.equal(asset.statusCode, 200, `${u} answers`)
  }
})
