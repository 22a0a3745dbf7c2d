/** GET/POST /operations/*: coercion, exact shapes, errors, ETag and Cache-Control. */
import t from 'tap'
import { weakEtag } from '../gateway/http/operations-routes.js'
import { startDemo } from './helpers/demo.js'

t.test('stored operations over HTTP', async (t) => {
  const { app } = await startDemo(t)

  t.test('GET /operations/TodoById?id=1: the data object with exact JSON types', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /application\/json/)
    const body = res.json()
    t.same(body, { todo_findUniqueTodo: { completed: true, createdAt: '2026-11-20T09:00:00.000Z', id: 1, title: 'Read docs/architecture.md' } })
    t.type(body.todo_findUniqueTodo.id, 'number')
    t.type(body.todo_findUniqueTodo.completed, 'boolean')
    t.match(body.todo_findUniqueTodo.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    t.match(res.headers.etag, /^W\/".+"$/)
    t.equal(res.headers['cache-control'], 'public, max-age=0, must-revalidate')
  })

  t.test('the default variable applies when the param is absent', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById' })
    t.equal(res.statusCode, 200)
    t.equal(res.json().todo_findUniqueTodo.id, 1)
  })

  t.test('TodoAndRoles', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoAndRoles?id=3' })
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.same(Object.keys(body), ['todo_findUniqueTodo', 'system_getAllRoles'])
    t.equal(body.todo_findUniqueTodo.id, 3)
    t.same(body.system_getAllRoles.map((r: { code: string; remark: string }) => [r.code, typeof r.remark]), [['admin', 'string'], ['user', 'string']])
    t.equal(body.system_getAllRoles[1].remark, '')
  })

  t.test('ETag and If-None-Match', async (t) => {
    const first = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })
    const again = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1', headers: { 'if-none-match': first.headers.etag as string } })
    t.equal(again.statusCode, 304)
    t.equal(again.body, '')
    const other = await app.inject({ method: 'GET', url: '/operations/TodoById?id=2', headers: { 'if-none-match': first.headers.etag as string } })
    t.equal(other.statusCode, 200)
  })

  t.test('credentials force private caching', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1', headers: { authorization: 'Bearer x' } })
    t.match(res.headers['cache-control'], /^private/)
  })

  t.test('id=abc is a 400 naming the variable and its JSON Schema path', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById?id=abc' })
    t.equal(res.statusCode, 400)
    t.equal(res.headers['cache-control'], 'no-store')
    const err = res.json().errors[0]
    t.equal(err.extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
    t.equal(err.extensions.variable, 'id')
    t.equal(err.extensions.instancePath, '/id')
    t.match(err.extensions.schemaPath, /^#\/properties\/id\//)
    t.match(err.message, /id/)
  })

  t.test('an unknown param is a 400', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1&nope=2' })
    t.equal(res.statusCode, 400)
    t.equal(res.json().errors[0].extensions.variable, 'nope')
  })

  t.test('an unknown operation is a 404', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/NoSuchThing' })
    t.equal(res.statusCode, 404)
    t.equal(res.json().errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND')
  })

  t.test('a query also answers POST with a JSON body', async (t) => {
    const res = await app.inject({ method: 'POST', url: '/operations/TodoById', headers: { 'content-type': 'application/json' }, payload: '{"id":2}' })
    t.equal(res.statusCode, 200)
    t.equal(res.json().todo_findUniqueTodo.id, 2)
    t.equal(res.headers['cache-control'], 'no-store')
  })

  t.test('malformed JSON is a 400 and the server keeps serving', async (t) => {
    const res = await app.inject({ method: 'POST', url: '/operations/TodoById', headers: { 'content-type': 'application/json' }, payload: '{"id":' })
    t.equal(res.statusCode, 400)
    t.ok(res.json().errors[0].extensions.code)
    const wrongType = await app.inject({ method: 'POST', url: '/operations/TodoById', headers: { 'content-type': 'application/json' }, payload: '{"id":"1"}' })
    t.equal(wrongType.statusCode, 400, 'JSON bodies are not coerced')
    const ok = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })
    t.equal(ok.statusCode, 200)
  })

  t.test('a mutation over GET is a 405 with Allow: POST', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/CreateTodo?title=x' })
    t.equal(res.statusCode, 405)
    t.equal(res.headers.allow, 'POST')
  })

  t.test('HEAD answers like GET without a body', async (t) => {
    const get = await app.inject({ method: 'GET', url: '/operations/TodoById?id=1' })
    const head = await app.inject({ method: 'HEAD', url: '/operations/TodoById?id=1' })
    t.equal(head.statusCode, 200)
    t.equal(head.body, '')
    t.equal(head.headers.etag, get.headers.etag)
  })

  t.test('CSRF: POST variables must be JSON; a body-less cross-site POST is refused', async (t) => {
    const form = await app.inject({ method: 'POST', url: '/operations/CreateTodo', headers: { 'content-type': 'text/plain' }, payload: '' })
    t.equal(form.statusCode, 415)
    t.equal(form.json().errors[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
    const urlencoded = await app.inject({ method: 'POST', url: '/operations/CreateTodo', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'title=x' })
    t.equal(urlencoded.statusCode, 415)
    const crossSite = await app.inject({ method: 'POST', url: '/operations/TodoById', headers: { 'sec-fetch-site': 'cross-site' } })
    t.equal(crossSite.statusCode, 400)
    const sameOrigin = await app.inject({ method: 'POST', url: '/operations/TodoById', headers: { 'sec-fetch-site': 'same-origin' } })
    t.equal(sameOrigin.statusCode, 200, 'a same-origin POST without a body runs with no variables')
    const noBody = await app.inject({ method: 'POST', url: '/operations/TodoById' })
    t.equal(noBody.statusCode, 200, 'so does a non-browser POST without a body')
  })

  t.test('a missing row comes back as null data on /operations', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/TodoById?id=999' })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { todo_findUniqueTodo: null })
  })

  t.test('GET /health reports every data source', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/health' })
    t.equal(res.statusCode, 200)
    const body = res.json()
    t.equal(body.status, 'ok')
    t.same(Object.keys(body.sources).sort(), ['demo', 'system', 'todo'])
    t.equal(body.sources.todo.status, 'up')
  })
})

t.test('weakEtag: weak, deterministic, different for different bodies, short and long', async (t) => {
  const short = '{"todo_findUniqueTodo":{"id":1}}'
  const long = JSON.stringify({ rows: Array.from({ length: 100 }, (_, i) => ({ id: i, title: `row ${i}` })) })
  t.ok(long.length >= 1024, 'the long body takes the native hash')
  for (const body of [short, long]) {
    t.match(weakEtag(body), /^W\/"[0-9a-z]+-[0-9A-Za-z_-]+"$/)
    t.equal(weakEtag(body), weakEtag(body.slice(0)), 'the same body, the same tag')
    t.not(weakEtag(body), weakEtag(body.replace('1', '2')), 'one character changed, another tag')
  }
  t.not(weakEtag(''), weakEtag(' '))
})
