/**
 * Variables of stored operations over HTTP: query params coerced to Int, Float, Boolean, String and
 * enums; repeated params as lists; `variables=<JSON>`, `name=<JSON>` and `a[b]=1` for input objects;
 * unknown params and every bad or missing variable named in one 400 with its JSON Schema path.
 * Fixture operations (test/fixtures/operations-demo) run against the demo schema.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'

const dir = fileURLToPath(new URL('./fixtures/operations-demo', import.meta.url))
const q = (value: unknown) => encodeURIComponent(JSON.stringify(value))

interface ErrorItem {
  message: string
  path?: string[]
  extensions: { code: string; variable: string; instancePath: string; schemaPath: string }
}

t.test('variables from the query string', async (t) => {
  const { app } = await startDemo(t, { rawSql: true, override: { operations: { dir } } })
  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url })
    return { status: res.statusCode, body: res.json(), headers: res.headers }
  }

  t.test('Int, Float, Boolean (bare ?flag is true), String, enum and repeated params as a list', async (t) => {
    const res = await get('/operations/Coerce?ids=1&ids=3&completed&title=A&mode=insensitive&minAvg=2.9&take=5')
    t.equal(res.status, 200, JSON.stringify(res.body))
    t.same(res.body.todo_findManyTodo, [{ id: 1, title: 'Read docs/architecture.md', completed: true }], 'ids [1,3], completed=true, title contains "A" case-insensitively')
    t.equal(res.body.todo_groupByTodo.length, 2, 'minAvg=2.9 is a Float: both groups average 3')
    t.equal(res.body.deatail, 'Detail of "A"')

    const higher = await get('/operations/Coerce?title=&minAvg=3.1')
    t.same(higher.body.todo_groupByTodo, [], 'minAvg=3.1 keeps no group')
    t.equal(higher.body.todo_findManyTodo.length, 5, 'an empty String is a string; absent filters are left out')
  })

  t.test('an empty value for a non-String variable is 400 naming it; for a String it is the empty string', async (t) => {
    for (const [url, variable] of [['/operations/Coerce?title=x&take=', 'take'], ['/operations/Coerce?title=x&minAvg=', 'minAvg'], ['/operations/Coerce?title=x&ids=', 'ids'], ['/operations/Coerce?title=x&ids=1&ids=', 'ids'], ['/operations/Coerce?title=x&mode=', 'mode'], ['/operations/Coerce?title=x&order=', 'order']] as const) {
      const res = await get(url)
      t.equal(res.status, 400, url)
      const errors = res.body.errors as ErrorItem[]
      t.same(errors.map((e) => [e.extensions.code, e.extensions.variable]), [['TRB_ERR_OPERATION_VARIABLES', variable]], `${url}: names ${variable}`)
      t.match(errors[0]!.message, new RegExp(`Variable "${variable}"`))
    }
    const empty = await get('/operations/Coerce?title=')
    t.equal(empty.status, 200, 'an empty String variable is the empty string')
    t.equal(empty.body.deatail, 'Detail of ""')
  })

  t.test('an empty value does not fall back to the default: leave the parameter out for that', async (t) => {
    const res = await get('/operations/TodoById?id=')
    t.equal(res.status, 400, '?id= for `$id: Int = 1` is refused, not run with null or with 1')
    t.same((res.body.errors as ErrorItem[]).map((e) => e.extensions.variable), ['id'])
    t.match((res.body.errors as ErrorItem[])[0]!.message, /Variable "id" is empty/)
    const absent = await get('/operations/TodoById')
    t.equal(absent.status, 200)
    t.equal(absent.body.todo_findUniqueTodo.id, 1, 'an absent parameter takes the default')
  })

  t.test('one value for a list variable is a one-item list; explicit false; enum with a default', async (t) => {
    const res = await get('/operations/Coerce?ids=3&title=write&mode=insensitive&completed=false&order=desc')
    t.equal(res.status, 200)
    t.same(res.body.todo_findManyTodo, [{ id: 3, title: 'Write an operation in operations/', completed: false }])
    const desc = await get('/operations/Coerce?title=o&order=desc&take=2')
    t.same(desc.body.todo_findManyTodo.map((x: { id: number }) => x.id), [5, 4], 'enum order=desc, Int take=2')
  })

  t.test('a numeric-looking String stays a string', async (t) => {
    const res = await get('/operations/Coerce?title=123')
    t.equal(res.status, 200)
    t.equal(res.body.deatail, 'Detail of "123"')
  })

  t.test('nested input objects: a[b]=1, a[b][]=1, name=<JSON> and variables=<JSON>', async (t) => {
    const brackets = await get('/operations/FindTodos?where[id][equals]=2')
    t.equal(brackets.status, 200)
    t.same(brackets.body.todo_findManyTodo.map((x: { id: number }) => x.id), [2], 'where[id][equals]=2 is coerced to an Int inside the object')

    const list = await get(`/operations/FindTodos?where[id][in][]=1&where[id][in][]=4&orderBy=${q([{ id: 'desc' }])}`)
    t.equal(list.status, 200)
    t.same(list.body.todo_findManyTodo.map((x: { id: number }) => x.id), [4, 1])

    const json = await get(`/operations/FindTodos?where=${q({ completed: { equals: true } })}`)
    t.same(json.body.todo_findManyTodo.map((x: { id: number }) => x.id), [1, 5], 'an input object variable as JSON in its own param')

    const all = await get(`/operations/FindTodos?variables=${q({ where: { title: { startsWith: 'Read' } }, take: 1 })}`)
    t.equal(all.status, 200)
    t.same(all.body.todo_findManyTodo, [{ id: 1, title: 'Read docs/architecture.md', completed: true }])

    const mixed = await get(`/operations/FindTodos?variables=${q({ where: { completed: { equals: false } } })}&take=1`)
    t.same(mixed.body.todo_findManyTodo.map((x: { id: number }) => x.id), [2], 'params are merged with variables=<JSON>')
  })

  t.test('an unknown param is a 400 naming it', async (t) => {
    const res = await get('/operations/Coerce?title=a&nope=1')
    t.equal(res.status, 400)
    t.equal(res.headers['cache-control'], 'no-store')
    t.notOk(res.headers.etag, 'errors never carry an ETag')
    t.same(res.body.errors.map((e: ErrorItem) => [e.extensions.variable, e.extensions.instancePath, e.extensions.schemaPath]), [['nope', '/nope', '#/additionalProperties']])
  })

  t.test('the 400 names every bad variable with its JSON Schema path and every missing required one', async (t) => {
    const res = await get('/operations/Coerce?ids=1&ids=x&minAvg=abc&mode=loud&take=1.5&completed=maybe&zzz=1')
    t.equal(res.status, 400)
    const errors = res.body.errors as ErrorItem[]
    t.ok(errors.every((e) => e.extensions.code === 'TRB_ERR_OPERATION_VARIABLES'))
    const byPath = Object.fromEntries(errors.map((e) => [e.extensions.instancePath, e]))
    t.same(Object.keys(byPath).sort(), ['/completed', '/ids/1', '/minAvg', '/mode', '/take', '/title', '/zzz'])
    t.equal(byPath['/title'].extensions.schemaPath, '#/required')
    t.match(byPath['/title'].message, /"title" is required/)
    t.equal(byPath['/ids/1'].extensions.schemaPath, '#/properties/ids/items/type')
    t.same(byPath['/ids/1'].path, ['ids', '1'])
    t.equal(byPath['/ids/1'].extensions.variable, 'ids')
    t.equal(byPath['/minAvg'].extensions.schemaPath, '#/properties/minAvg/type')
    t.match(byPath['/minAvg'].message, /must be number or null/)
    t.equal(byPath['/completed'].extensions.schemaPath, '#/properties/completed/type')
    t.equal(byPath['/take'].extensions.schemaPath, '#/properties/take/type')
    t.equal(byPath['/mode'].extensions.schemaPath, '#/properties/mode/enum')
    t.match(byPath['/mode'].message, /one of default, insensitive/)
    t.equal(byPath['/zzz'].extensions.schemaPath, '#/additionalProperties')
  })

  t.test('bad nested input names the nested path', async (t) => {
    const res = await get(`/operations/FindTodos?where=${q({ completed: { equals: 'yes' }, nope: 1 })}`)
    t.equal(res.status, 400)
    const paths = (res.body.errors as ErrorItem[]).map((e) => [e.extensions.instancePath, e.extensions.schemaPath]).sort()
    t.same(paths, [
      ['/where/completed/equals', '#/$defs/todo_BoolFilter/properties/equals/type'],
      ['/where/nope', '#/$defs/todo_TodoWhereInput/additionalProperties'],
    ])
    const nope = (res.body.errors as ErrorItem[]).find((e) => e.extensions.instancePath === '/where/nope')!
    t.equal(nope.message, 'Variable "where.nope" is not a field of the input object todo_TodoWhereInput')
    const badJson = await get('/operations/FindTodos?where={oops')
    t.equal(badJson.status, 400)
    t.equal(badJson.body.errors[0].extensions.variable, 'where')
    const badVariables = await get('/operations/FindTodos?variables=[1]')
    t.equal(badVariables.status, 400)
    t.equal(badVariables.body.errors[0].extensions.variable, 'variables')
  })

  t.test('null is accepted for a nullable enum', async (t) => {
    const res = await get(`/operations/FindTodos?variables=${q({ where: { title: { contains: 'read', mode: null } } })}`)
    t.equal(res.status, 200, JSON.stringify(res.body))
    const direct = await get(`/operations/Coerce?title=a&variables=${q({ mode: null })}`)
    t.equal(direct.status, 200, JSON.stringify(direct.body))
  })

  t.test('a missing required variable of a mutation body is named; JSON bodies are not coerced', async (t) => {
    const res = await app.inject({ method: 'POST', url: '/operations/UpdateTitle', payload: { id: '1' } })
    t.equal(res.statusCode, 400)
    const errors = (res.json().errors as ErrorItem[]).map((e) => [e.extensions.instancePath, e.extensions.schemaPath]).sort()
    t.same(errors, [['/id', '#/properties/id/type'], ['/title', '#/required']])
  })
})
