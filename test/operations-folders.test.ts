/**
 * Folders under operations/: `users/GetUser.graphql` is served at `/operations/users/GetUser`;
 * files under `internal/` are compiled (callable from code through `gateway.operations`) but answer
 * 404 over HTTP and are left out of the OpenAPI document and the client.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { renderGenerated } from '../gateway/codegen/index.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))

t.test('operation folders', async (t) => {
  const { app, gateway } = await startDemo(t, { rawSql: true, override: { operations: { dir } } })

  t.test('users/GetUser.graphql → /operations/users/GetUser', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/operations/users/GetUser?id=3' })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { todo_findUniqueTodo: { id: 3, title: 'Write an operation in operations/' } })
    const slash = await app.inject({ method: 'GET', url: '/operations/users/GetUser/?id=3' })
    t.equal(slash.statusCode, 200, 'a trailing slash is accepted')
    const post = await app.inject({ method: 'POST', url: '/operations/users/GetUser', payload: { id: 2 } })
    t.equal(post.json().todo_findUniqueTodo.id, 2)
    for (const path of ['/operations/users', '/operations/GetUser', '/operations/users/GetUser/extra']) {
      const r = await app.inject({ method: 'GET', url: path })
      t.equal(r.statusCode, 404, path)
      t.equal(r.json().errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND')
    }
  })

  t.test('internal/ operations: 404 over HTTP, present in gateway.operations', async (t) => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await app.inject({ method, url: '/operations/internal/Secret', ...(method === 'POST' ? { payload: {} } : {}) })
      t.equal(res.statusCode, 404, method)
      t.equal(res.json().errors[0].extensions.code, 'TRB_ERR_OPERATION_NOT_FOUND')
      t.notMatch(res.body, /todo_findManyTodo/)
    }
    const op = gateway.operations.get('internal/Secret')
    t.ok(op, 'compiled')
    t.equal(op!.stored.internal, true)
    const result = await op!.execute({}, {})
    t.same(result, { data: { todo_findManyTodo: [{ id: 1 }] } }, 'callable from code')
  })

  t.test('generated files: internal operations are in the manifest without a path, not in OpenAPI or the client', async (t) => {
    const files = renderGenerated(gateway)
    const manifest = JSON.parse(files['operations.json']) as { operations: { name: string; path: string | null; internal: boolean }[] }
    t.same(manifest.operations.find((o) => o.name === 'internal/Secret'), { ...manifest.operations.find((o) => o.name === 'internal/Secret'), path: null, internal: true })
    t.equal(manifest.operations.find((o) => o.name === 'users/GetUser')?.path, '/operations/users/GetUser')
    const openapi = JSON.parse(files['openapi.json']) as { paths: Record<string, unknown> }
    t.ok(openapi.paths['/operations/users/GetUser'])
    t.notOk(Object.keys(openapi.paths).some((p) => p.includes('internal')))
    t.match(files['client.ts'], /users_GetUser\(variables: Users_GetUserVariables/)
    t.notMatch(files['client.ts'], /Secret/)
  })
})
