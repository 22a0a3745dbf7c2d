/**
 * The console's traffic window counts `/graphql` answers by what the endpoint knows of their errors
 * (gateway/http/answer-errors.ts) instead of scanning every body for `"errors"`: a direct answer is
 * counted as a success without a scan; an answer with errors (GraphQL execution, a refusal by
 * `server.maxResponseBytes` of a direct answer) is still counted as failed and its errors recorded;
 * a response key named `errors` in `data` is not an error.
 */
import t from 'tap'
import { startDemo } from './helpers/demo.js'

interface Traffic {
  operations: { name: string; count: number; errorRate: number }[]
  errors: { code: string; operation: string; status: number }[]
}

const post = (query: string, operationName: string, variables?: Record<string, unknown>) => ({ method: 'POST' as const, url: '/graphql', payload: { query, operationName, ...(variables ? { variables } : {}) } })

t.test('answers without errors are not scanned, answers with errors still count as failed', async (t) => {
  const { app } = await startDemo(t)
  for (let i = 0; i < 2; i++) {
    const res = await app.inject(post('query AnswerFine { todo_findManyTodo(take: 2) { id title } }', 'AnswerFine'))
    t.equal(res.statusCode, 200)
    t.notOk(res.json().errors)
  }
  const alias = await app.inject(post('query AnswerAlias { errors: todo_findManyTodo(take: 1) { id } }', 'AnswerAlias'))
  t.equal(alias.statusCode, 200)
  t.ok(Array.isArray(alias.json().data.errors), 'a response key named errors')
  const bad = await app.inject(post('query AnswerBadVar($id: Int!) { todo_findUniqueTodo(where: { id: $id }) { id } }', 'AnswerBadVar', { id: 'x' }))
  t.ok(bad.json().errors?.length, 'a variable that does not coerce: errors (GraphQL execution)')

  const traffic = (await app.inject({ method: 'GET', url: '/console/api/traffic' })).json() as Traffic
  const op = (name: string) => traffic.operations.find((o) => o.name === name)
  t.equal(op('AnswerFine')?.count, 2)
  t.equal(op('AnswerFine')?.errorRate, 0, 'direct answers count as successes')
  t.equal(op('AnswerAlias')?.errorRate, 0, 'a data key named errors is not a failure')
  t.equal(op('AnswerBadVar')?.errorRate, 1, 'an answer with errors counts as failed')
  t.ok(traffic.errors.some((e) => e.operation === 'AnswerBadVar'), 'and its error is recorded')
  t.notOk(traffic.errors.some((e) => e.operation === 'AnswerFine' || e.operation === 'AnswerAlias'))
})

t.test('a direct answer refused by server.maxResponseBytes is counted as failed with its error', async (t) => {
  const query = 'query AnswerBig { todo_findManyTodo(take: 5) { id title completed } }'
  const first = await startDemo(t)
  const full = await first.app.inject(post(query, 'AnswerBig'))
  t.equal(full.statusCode, 200)
  const size = Buffer.byteLength(full.body)
  // The statement's text fits the result budget; the answer around it does not.
  const { app } = await startDemo(t, { override: { server: { maxResponseBytes: size - 5 } } })
  const refused = await app.inject(post(query, 'AnswerBig'))
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().errors[0].extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(refused.json().errors[0].message, /The response would be \d+ bytes/, 'refused by the response guard, not the result budget')
  const traffic = (await app.inject({ method: 'GET', url: '/console/api/traffic' })).json() as Traffic
  const row = traffic.operations.find((o) => o.name === 'AnswerBig')
  t.equal(row?.count, 2, 'both answers counted (one recorder per process)')
  t.equal(row?.errorRate, 0.5, 'the refused one as failed')
  t.ok(traffic.errors.some((e) => e.operation === 'AnswerBig' && e.code === 'TRB_ERR_GRAPHQL_LIMIT' && e.status === 400), 'its error recorded')
})
