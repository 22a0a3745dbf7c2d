/**
 * The demo config's custom REST routes (Hasura RESTified endpoints): `:param` path segments feed
 * the operation's variables, GET/DELETE take the others from the query string, POST a JSON body,
 * and a result whose every root field is null is a 404 JSON error.
 */
import t from 'tap'
import { startDemo } from './helpers/demo.js'

t.test('custom routes of the demo', async (t) => {
  const { app, config } = await startDemo(t)
  t.same(config.routes.map((r) => `${r.method} ${r.path} ${r.operation}`), [
    'GET /api/v1/todos/ Todos',
    'GET /api/v1/todo/:id/ TodoById',
    'POST /api/v1/todo/ CreateTodo',
    'DELETE /api/v1/todo/:id/ DeleteTodo',
  ])

  t.test('GET /api/v1/todos/ → Todos, with take/skip from the query string', async (t) => {
    const all = await app.inject({ method: 'GET', url: '/api/v1/todos/' })
    t.equal(all.statusCode, 200)
    t.same(all.json().todo_findManyTodo.map((x: { id: number }) => x.id), [1, 2, 3, 4, 5])
    t.equal(all.headers['cache-control'], 'public, max-age=5, stale-while-revalidate=30', "Todos' own # @cache line")
    t.match(all.headers.etag, /^W\//)
    const page = await app.inject({ method: 'GET', url: '/api/v1/todos/?take=2&skip=1' })
    t.same(page.json().todo_findManyTodo.map((x: { id: number }) => x.id), [2, 3])
    const noSlash = await app.inject({ method: 'GET', url: '/api/v1/todos' })
    t.equal(noSlash.statusCode, 200, 'the trailing slash is optional')
  })

  t.test('GET /api/v1/todo/:id/ → TodoById; a missing row is a 404', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/todo/2/' })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { todo_findUniqueTodo: { completed: false, createdAt: '2026-11-20T09:30:00.000Z', id: 2, title: 'Add a data source in config.ts' } })
    const missing = await app.inject({ method: 'GET', url: '/api/v1/todo/999/' })
    t.equal(missing.statusCode, 404)
    t.match(missing.headers['content-type'], /application\/json/)
    t.equal(missing.headers['cache-control'], 'no-store')
    t.equal(missing.json().errors[0].extensions.code, 'TRB_ERR_DB_NOT_FOUND')
    const bad = await app.inject({ method: 'GET', url: '/api/v1/todo/abc/' })
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().errors[0].extensions.variable, 'id')
    const extra = await app.inject({ method: 'GET', url: '/api/v1/todo/1/?nope=1' })
    t.equal(extra.statusCode, 400, 'unknown params are refused on routes too')
  })

  t.test('POST /api/v1/todo/ → CreateTodo from a JSON body; DELETE /api/v1/todo/:id/ → DeleteTodo', async (t) => {
    const created = await app.inject({ method: 'POST', url: '/api/v1/todo/', payload: { title: 'Made through a route', completed: true } })
    t.equal(created.statusCode, 200)
    const todo = created.json().todo_createOneTodo
    t.equal(todo.title, 'Made through a route')
    t.equal(todo.completed, true)
    t.type(todo.id, 'number')
    t.equal(created.headers['cache-control'], 'no-store')

    const missingTitle = await app.inject({ method: 'POST', url: '/api/v1/todo/', payload: { completed: true } })
    t.equal(missingTitle.statusCode, 400)
    t.equal(missingTitle.json().errors[0].extensions.instancePath, '/title')

    const fetched = await app.inject({ method: 'GET', url: `/api/v1/todo/${todo.id}/` })
    t.equal(fetched.json().todo_findUniqueTodo.title, 'Made through a route')

    const deleted = await app.inject({ method: 'DELETE', url: `/api/v1/todo/${todo.id}/` })
    t.equal(deleted.statusCode, 200)
    t.same(deleted.json(), { todo_deleteOneTodo: { id: todo.id, title: 'Made through a route' } })
    const again = await app.inject({ method: 'DELETE', url: `/api/v1/todo/${todo.id}/` })
    t.equal(again.statusCode, 404, 'deleting a missing row is a 404')
    t.equal(again.json().errors[0].extensions.code, 'TRB_ERR_DB_NOT_FOUND')
    const gone = await app.inject({ method: 'GET', url: `/api/v1/todo/${todo.id}/` })
    t.equal(gone.statusCode, 404)
  })

  t.test('a method the route does not map is a JSON 404', async (t) => {
    const res = await app.inject({ method: 'PUT', url: '/api/v1/todo/1/', payload: {} })
    t.equal(res.statusCode, 404)
    t.ok(res.json().errors[0].extensions.code)
  })
})
