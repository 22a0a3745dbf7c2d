/**
 * Attack: unbounded results (issue 7 item 5), over real HTTP against the demo. Aliased lists with
 * huge `take`s are refused by the cost limit before anything runs (naming the cost and the limit),
 * with `take` read from the variables of each request; a stored operation's `take` has `maximum`
 * in its variables JSON Schema; `server.maxResponseBytes` refuses whatever still comes out too big.
 */
import t from 'tap'
import { startDemo } from './helpers/demo.js'

interface Body {
  data?: Record<string, unknown> | null
  errors?: { message: string; extensions: { code: string } }[]
}

async function post(url: string, query: string, variables?: Record<string, unknown>, accept = 'application/graphql-response+json') {
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ query, variables }) })
  return { status: res.status, body: (await res.json()) as Body }
}

const aliases = (n: number, take: string) => Array.from({ length: n }, (_, i) => `a${i}: todo_findManyTodo(take: ${take}) { id title }`).join(' ')

t.test('the query cost limit', async (t) => {
  const { url } = await startDemo(t, { listen: true })

  t.test('30 aliases of take: 2147483647 are refused before they run', async (t) => {
    const res = await post(url, `{ ${aliases(30, '2147483647')} }`)
    t.equal(res.status, 400)
    t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
    t.match(res.body.errors?.[0].message, /costs 64424509410, more than the maximum of 20000 \(maxCost\)/)
    t.notOk(res.body.data)
  })

  t.test('30 aliases of take: 1000 (each within maxTake) cost 30000: refused', async (t) => {
    const res = await post(url, `{ ${aliases(30, '1000')} }`)
    t.equal(res.status, 400)
    t.match(res.body.errors?.[0].message, /costs 30000, more than the maximum of 20000/)
  })

  t.test('take from variables is priced per request, the document cached once', async (t) => {
    const query = `query($n: Int) { ${aliases(30, '$n')} }`
    const big = await post(url, query, { n: 1000 })
    t.equal(big.status, 400)
    t.match(big.body.errors?.[0].message, /costs 30000/)
    const small = await post(url, query, { n: 2 })
    t.equal(small.status, 200, 'the same document with take 2 costs 60')
    t.equal((small.body.data?.a29 as unknown[]).length, 2)
    const absent = await post(url, query, {})
    t.equal(absent.status, 200, 'no take: each list counts defaultListSize (10), 300 in all')
    const negative = await post(url, query, { n: -1000 })
    t.equal(negative.status, 400, 'a negative take costs its absolute value')
  })

  t.test('a normal query still works', async (t) => {
    const res = await post(url, '{ todo_findManyTodo(take: 2) { id } }')
    t.same(res.body, { data: { todo_findManyTodo: [{ id: 1 }, { id: 2 }] } })
  })
})

t.test('stored operations: take has maximum maxTake in the variables JSON Schema', async (t) => {
  const { url, gateway } = await startDemo(t, { listen: true })
  const res = await fetch(`${url}/operations/Todos?take=2147483647`)
  t.equal(res.status, 400)
  const body = (await res.json()) as { errors: { extensions: { code: string; schemaPath: string } }[] }
  t.equal(body.errors[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
  t.equal(body.errors[0].extensions.schemaPath, '#/properties/take/maximum')
  const skip = await fetch(`${url}/operations/Todos?skip=-1`)
  t.equal(skip.status, 400, 'skip has minimum 0')
  const take = gateway.operations.get('Todos')!.variablesSchema.properties!.take
  t.match(take, { maximum: 1000, minimum: -1000 })
  const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as Record<string, unknown>
  t.match(JSON.stringify(openapi), /"name":"take"[^}]*"maximum":1000/, 'the OpenAPI document shows it')
  const ok = await fetch(`${url}/operations/Todos?take=1000`)
  t.equal(ok.status, 200, 'take = maxTake works')
})

t.test('server.maxResponseBytes is the last guard', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { server: { maxResponseBytes: 2000 } } })
  // Database results are charged to the request's result budget as they arrive: the fields past it
  // fail at their paths (application/json: 200 with errors, GraphQL over HTTP).
  const res = await post(url, `{ ${aliases(15, '5')} }`, undefined, 'application/json')
  t.equal(res.status, 200)
  t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(res.body.errors?.[0].message, /exceed 2000 bytes \(server\.maxResponseBytes\)/)
  // Whatever else comes out too big (here introspection beside data, no database) meets the last
  // guard. Introspection alone has its own, higher bound (server.maxIntrospectionBytes, 128 MiB).
  const alone = await post(url, '{ __schema { types { name fields { name } } } }', undefined, 'application/json')
  t.equal(alone.status, 200, 'introspection alone is held to maxIntrospectionBytes, not maxResponseBytes')
  t.ok(alone.body.data, 'and answered')
  const schema = await post(url, '{ __schema { types { name fields { name } } } messages { id } }', undefined, 'application/json')
  t.equal(schema.status, 400)
  t.equal(schema.body.errors?.[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(schema.body.errors?.[0].message, /more than the maximum of 2000 \(maxResponseBytes\)/)
  const stored = await fetch(`${url}/operations/Todos?take=100`)
  t.equal(stored.status, 200, 'a response under the limit is sent')
  const small = await post(url, '{ todo_findManyTodo(take: 1) { id } }')
  t.same(small.body, { data: { todo_findManyTodo: [{ id: 1 }] } })
})
