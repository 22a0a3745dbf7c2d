/**
 * Request batching on POST /graphql (a JSON array, as graphql-request and Apollo's BatchHttpLink
 * send), over real HTTP against the demo: off by default, answered in order with each element's own
 * errors when on, bounded by graphql.batching.maxOperations, and counted per operation by the rate limiter.
 */
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { startDemo } from './helpers/demo.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

function poster(url: string) {
  return async (body: unknown) => {
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Json }
  }
}
const COUNT = '{ todo_aggregateTodo { _count { _all } } }'
const create = (title: string) => ({ query: `mutation { todo_createOneTodo(data: { title: "${title}" }) { title } }` })

t.test('an array body is refused while batching is off (the default)', async (t) => {
  const { url, config } = await startDemo(t, { listen: true })
  t.equal(config.graphql.batching.maxOperations, 0)
  const post = poster(url)
  const res = await post([{ query: COUNT }, create('batch-off')])
  t.equal(res.status, 400)
  t.equal(res.body.errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
  t.equal((await post({ query: COUNT })).body.data.todo_aggregateTodo._count._all, 5, 'nothing ran')
})

t.test('batching on: answers in order, errors stay in their element', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { graphql: { batching: { maxOperations: 5 } } } })
  const post = poster(url)
  const res = await post([
    create('batch-1'),
    { query: '{ nope }' },
    5,
    { query: 'query ($id: Int!) { todo_findUniqueTodo(where: {id: $id}) { id } }', variables: { id: 2 } },
    { query: COUNT },
  ])
  t.equal(res.status, 200)
  t.ok(Array.isArray(res.body))
  t.equal(res.body.length, 5)
  t.same(res.body[0], { data: { todo_createOneTodo: { title: 'batch-1' } } })
  t.match(res.body[1].errors[0].message, /Cannot query field "nope"/)
  t.equal(res.body[2].errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
  t.same(res.body[3], { data: { todo_findUniqueTodo: { id: 2 } } })
  t.equal(res.body[4].data.todo_aggregateTodo._count._all, 6, 'in order: the mutation ran before the count')
  const get = await fetch(`${url}/graphql?query=${encodeURIComponent(COUNT)}`)
  t.equal(get.status, 200, 'single requests still work')
})

t.test('over graphql.batching.maxOperations: refused whole, nothing runs; 10,000 elements too', async (t) => {
  const { url } = await startDemo(t, { listen: true, override: { graphql: { batching: { maxOperations: 3 } } } })
  const post = poster(url)
  // The demo's database is shared by the tests of this file.
  const before = (await post({ query: COUNT })).body.data.todo_aggregateTodo._count._all as number
  const four = await post([create('over-1'), create('over-2'), create('over-3'), create('over-4')])
  t.equal(four.status, 400)
  t.equal(four.body.errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
  t.match(four.body.errors[0].message, /maxOperations/)
  const empty = await post([])
  t.equal(empty.status, 400)
  const elements = Array.from({ length: 10_000 }, (_, i) => create(`attack-${i}`))
  const cpu = process.cpuUsage()
  const attack = await post(elements)
  const used = process.cpuUsage(cpu)
  t.comment(`10,000-element batch refused with ${((used.user + used.system) / 1000).toFixed(1)} ms of CPU (client and server), ${JSON.stringify(elements).length} bytes`)
  t.equal(attack.status, 400)
  t.equal(attack.body.errors[0].extensions.code, 'TRB_ERR_GRAPHQL_REQUEST')
  t.equal((await post({ query: COUNT })).body.data.todo_aggregateTodo._count._all, before, 'no mutation of a refused batch ran')
  const three = await post([create('ok-1'), create('ok-2'), { query: COUNT }])
  t.equal(three.body[2].data.todo_aggregateTodo._count._all, before + 2, 'exactly the bound is accepted')
})

t.test('server.rateLimit counts every operation of a batch', async (t) => {
  const keyPrefix = `tributary-test-${randomUUID()}:`
  const { url } = await startDemo(t, {
    listen: true,
    override: { graphql: { batching: { maxOperations: 10 } }, server: { rateLimit: { max: 4, timeWindowMs: 60_000, keyPrefix } } },
  })
  const post = poster(url)
  const first = await post([{ query: COUNT }, { query: COUNT }, { query: COUNT }])
  t.equal(first.status, 200)
  t.ok(first.body.every((b: Json) => b.data), 'three operations within a budget of 4')
  const second = await post([{ query: COUNT }, create('limited-1'), create('limited-2')])
  t.equal(second.status, 200)
  t.ok(second.body[0].data, 'the request itself was the fourth')
  t.equal(second.body[1].errors[0].extensions.code, 'TRB_ERR_RATE_LIMITED')
  t.equal(second.body[2].errors[0].extensions.code, 'TRB_ERR_RATE_LIMITED')
  t.equal((await post({ query: COUNT })).status, 429)
})
