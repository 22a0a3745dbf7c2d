/**
 * Role permissions on types and fields (config `permissions`, Hasura style) on the demo's SQLite
 * todo database: a forbidden field is an error at its path (value null), never the value, on
 * `/graphql` and on a stored operation (which then skips its direct SQL plan), and a protected type
 * is not read through any field that returns it.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { mint } from './helpers/auth.js'

const secret = 'permissions-test-secret-0123456789abcdef'
const key = new TextEncoder().encode(secret)
const dir = fileURLToPath(new URL('./fixtures/operations-auth', import.meta.url))

t.test('field and type permissions', async (t) => {
  const { url } = await startDemo(t, {
    listen: true,
    override: {
      auth: { jwt: { secret } },
      permissions: { 'todo_Todo.description': { roles: ['admin'] }, system_Role: { roles: ['admin', 'auditor'] } },
      operations: { dir },
    },
  })
  const admin = await mint(key, { sub: 'a', roles: ['admin'] }, { expiresIn: '1h' })
  const user = await mint(key, { sub: 'u', roles: ['user'] }, { expiresIn: '1h' })
  const gql = async (query: string, token?: string) => {
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify({ query }) })
    return (await res.json()) as { data?: Record<string, unknown>; errors?: { path?: (string | number)[]; extensions: { code: string } }[] }
  }
  const q = '{ todo_findUniqueTodo(where: { id: 1 }) { id title description } }'
  const forUser = await gql(q, user)
  t.same(forUser.data, { todo_findUniqueTodo: { id: 1, title: forUser.data?.todo_findUniqueTodo && (forUser.data.todo_findUniqueTodo as { title: string }).title, description: null } })
  t.same(forUser.errors?.map((e) => [e.path, e.extensions.code]), [[['todo_findUniqueTodo', 'description'], 'TRB_ERR_AUTH_FORBIDDEN']])
  const anon = await gql(q)
  t.equal(anon.errors?.[0]?.extensions.code, 'TRB_ERR_AUTH_FORBIDDEN', 'anonymous: forbidden too')
  const forAdmin = await gql(q, admin)
  t.equal(forAdmin.errors, undefined)
  t.ok('description' in (forAdmin.data!.todo_findUniqueTodo as object))
  t.same((await gql('{ todo_findUniqueTodo(where: { id: 1 }) { id title } }', user)).errors, undefined, 'other fields stay readable')

  // A type: every field returning it is protected (here the REST source's role list).
  const roles = await gql('{ system_getAllRoles { code } }', user)
  t.same(roles.data, { system_getAllRoles: null })
  t.same(roles.errors?.map((e) => [e.path, e.extensions.code]), [[['system_getAllRoles'], 'TRB_ERR_AUTH_FORBIDDEN']])
  t.ok(((await gql('{ system_getAllRoles { code } }', admin)).data?.system_getAllRoles as unknown[]).length > 0)

  // A stored operation (a database-only query, normally a direct SQL plan).
  const op = async (token: string) => {
    const res = await fetch(`${url}/operations/TodoDescription`, { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, body: (await res.json()) as { errors?: { path?: unknown[]; extensions: { code: string } }[]; data?: unknown } }
  }
  const denied = await op(user)
  t.equal(denied.status, 403)
  t.same(denied.body.errors?.map((e) => [e.path, e.extensions.code]), [[['todo_findUniqueTodo', 'description'], 'TRB_ERR_AUTH_FORBIDDEN']])
  t.notOk(JSON.stringify(denied.body).includes('"description":"'), 'no description value leaks')
  const allowed = await op(admin)
  t.equal(allowed.status, 200)
})

t.test('permissions are validated', async (t) => {
  await t.rejects(startDemo(t, { override: { auth: { jwt: { secret } }, permissions: { todo_Nope: { roles: ['admin'] } } } }), /permissions\.todo_Nope: the schema has no object type/)
  await t.rejects(startDemo(t, { override: { auth: { jwt: { secret } }, permissions: { 'todo_Todo.nope': { roles: ['admin'] } } } }), /todo_Todo has no field nope/)
  await t.rejects(startDemo(t, { override: { permissions: { todo_Todo: { roles: ['admin'] } } } }), /set auth\.jwt/)
  await t.rejects(startDemo(t, { override: { auth: { jwt: { secret } }, permissions: { todo_Todo: { roles: [] } } } }), /permissions\.todo_Todo\.roles/)
})
