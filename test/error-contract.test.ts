/**
 * One error contract: every error body carries a code of gateway/errors.ts, with the status the
 * README's "Error codes" table gives it. The requests of issue 8, through real HTTP, plus the
 * recorder that test/error-codes-after.ts reads (TRIBUTARY_ERROR_CODE_LOG, set by .taprc).
 */
import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { errorCodes } from '../gateway/errors.js'
import { startDemo } from './helpers/demo.js'

interface ErrorBody { errors: { message: string; extensions: { code: string; originalCode?: string } }[] }

t.test('bad requests get table codes and the same status on /graphql and /operations', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const call = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${url}${path}`, init)
    const body = (await res.json()) as ErrorBody
    return { status: res.status, code: body.errors?.[0]?.extensions.code, body }
  }
  const cases: [string, string, RequestInit, number, string][] = [
    ['invalid JSON on /graphql', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":' }, 400, 'TRB_ERR_BAD_REQUEST'],
    ['invalid JSON on /operations', '/operations/CreateTodo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":' }, 400, 'TRB_ERR_BAD_REQUEST'],
    ['a form POST to /graphql', '/graphql', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'query=%7B__typename%7D' }, 415, 'TRB_ERR_BAD_REQUEST'],
    ['a form POST to /operations', '/operations/CreateTodo', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'title=x' }, 415, 'TRB_ERR_BAD_REQUEST'],
    ['a text/plain POST to /graphql', '/graphql', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"query":"{ __typename }"}' }, 415, 'TRB_ERR_BAD_REQUEST'],
    ['a text/plain POST to /operations', '/operations/CreateTodo', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"title":"x"}' }, 415, 'TRB_ERR_BAD_REQUEST'],
    ['an unknown media type', '/graphql', { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<q/>' }, 415, 'TRB_ERR_BAD_REQUEST'],
    ['a request line over 16 KiB (Node refuses it before fastify)', `/graphql?query=${'x'.repeat(20_000)}`, {}, 431, 'TRB_ERR_BAD_REQUEST'],
    ['a too large body', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `{ __typename } #${'x'.repeat(1_100_000)}` }) }, 413, 'TRB_ERR_BAD_REQUEST'],
    ['a GraphQL validation error', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: '{"query":"{ nope }"}' }, 400, 'TRB_ERR_GRAPHQL_VALIDATION'],
    ['a GraphQL syntax error', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: '{"query":"{"}' }, 400, 'TRB_ERR_GRAPHQL_VALIDATION'],
    ['a variable that does not coerce', '/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: JSON.stringify({ query: 'query($at: DateTime!) { todo_findManyTodo(where: { createdAt: { gt: $at } }) { id } }', variables: { at: 'yesterday' } }) }, 400, 'TRB_ERR_GRAPHQL_VALIDATION'],
    ['an unknown route', '/nope', {}, 404, 'TRB_ERR_NOT_FOUND'],
    ['an unknown operation', '/operations/Nope', {}, 404, 'TRB_ERR_OPERATION_NOT_FOUND'],
    ['a bad variable', '/operations/TodoById?id=abc', {}, 400, 'TRB_ERR_OPERATION_VARIABLES'],
    ['an empty Int variable', '/operations/TodoById?id=', {}, 400, 'TRB_ERR_OPERATION_VARIABLES'],
    ['a mutation over GET', `/graphql?query=${encodeURIComponent('mutation { todo_deleteOneTodo(where: { id: 99 }) { id } }')}`, {}, 405, 'TRB_ERR_GRAPHQL_METHOD'],
  ]
  for (const [name, path, init, status, code] of cases) {
    const res = await call(path, init)
    t.same([res.status, res.code], [status, code], `${name}: ${status} ${code}`)
    t.ok(errorCodes.includes(res.code!), `${name}: the code is in the table`)
  }
  const coerced = await call('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'query($at: DateTime!) { todo_findManyTodo(where: { createdAt: { gt: $at } }) { id } }', variables: { at: 'yesterday' } }) })
  t.equal(coerced.body.errors[0]!.extensions.originalCode, 'BAD_USER_INPUT', 'a foreign code is kept in extensions.originalCode')
  const ok = await call('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ messages { id } }"}' })
  t.equal(ok.status, 200, 'a normal request still works')
})

t.test('the recorder writes the codes this process sent', { skip: process.env.TRIBUTARY_ERROR_CODE_LOG ? false : 'TRIBUTARY_ERROR_CODE_LOG is not set (run through tap with .taprc)' }, async (t) => {
  const file = join(resolve(process.env.TRIBUTARY_ERROR_CODE_LOG!), `${process.pid}.codes`)
  t.ok(existsSync(file), `${file} exists`)
  const codes = readFileSync(file, 'utf8').split('\n').filter(Boolean)
  for (const code of ['TRB_ERR_BAD_REQUEST', 'TRB_ERR_GRAPHQL_VALIDATION', 'TRB_ERR_OPERATION_VARIABLES', 'TRB_ERR_NOT_FOUND']) t.ok(codes.includes(code), `${code} recorded`)
})

t.test('malformed HTTP gets the coded JSON body too (clientErrorHandler)', async (t) => {
  const { url } = await startDemo(t, { listen: true })
  const { port } = new URL(url)
  const net = await import('node:net')
  const response = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write('GET /health HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n'))
    let out = ''
    socket.on('data', (d) => (out += d))
    socket.on('end', () => resolve(out))
    socket.on('error', reject)
  })
  t.match(response, /^HTTP\/1\.1 400 Bad Request\r\n/)
  const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as ErrorBody
  t.equal(body.errors[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
})
