/**
 * Attack: prototype pollution through every place a client-chosen key becomes an object key — the
 * query string (plain and bracket keys), `variables=<JSON>`, JSON-typed query values, JSON bodies of
 * /operations and /graphql, and custom routes. Each shape must get a 400 with a code, and afterwards
 * `Object.prototype` must be clean and normal requests must still answer 200.
 */
import t, { type Test } from 'tap'
import { startDemo } from './helpers/demo.js'

const enc = encodeURIComponent

t.test('prototype pollution is refused everywhere, over real HTTP', async (t) => {
  const { url } = await startDemo(t, { listen: true })

  const get = async (path: string) => {
    const res = await fetch(url + path, { headers: { accept: 'application/json' } })
    return { status: res.status, body: (await res.json()) as { errors?: { extensions: { code: string } }[] } & Record<string, unknown> }
  }
  const post = async (path: string, body: string) => {
    const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body })
    return { status: res.status, body: (await res.json()) as { errors?: { extensions: { code: string } }[] } & Record<string, unknown> }
  }
  const clean = (t: Test) => {
    const probe = {} as Record<string, unknown>
    t.equal(probe.polluted, undefined, 'Object.prototype.polluted is not set')
    t.equal(probe.title, undefined, 'Object.prototype.title is not set')
    t.equal(Object.getPrototypeOf(probe), Object.prototype)
    t.same(Object.keys(Object.prototype), [])
  }

  const queryShapes = [
    '__proto__[polluted]=1',
    '__proto__[title]=x',
    '__proto__=1',
    'constructor[prototype][polluted]=1',
    'constructor=1',
    'prototype=1',
    'id[__proto__][polluted]=1',
    'id[constructor][prototype][polluted]=1',
    'a[b][__proto__][polluted]=1',
    'id=1&__proto__[polluted]=1',
    '__proto__[]=1',
  ]
  for (const shape of queryShapes) {
    t.test(`GET /operations/TodoById?${shape}`, async (t) => {
      const res = await get(`/operations/TodoById?${shape}`)
      t.equal(res.status, 400)
      t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
      clean(t)
    })
    t.test(`custom route GET /api/v1/todo/1/?${shape}`, async (t) => {
      const res = await get(`/api/v1/todo/1/?${shape}`)
      t.equal(res.status, 400)
      t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
      clean(t)
    })
  }

  t.test('a key nested deeper than the limit is refused', async (t) => {
    const res = await get(`/operations/TodoById?id${'[a]'.repeat(17)}=1`)
    t.equal(res.status, 400)
    t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
    t.match(JSON.stringify(res.body), /nested deeper than 16/)
  })

  const jsonShapes = ['{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '{"id":{"__proto__":{"polluted":1}}}']
  for (const json of jsonShapes) {
    t.test(`GET /operations/TodoById?variables=${json}`, async (t) => {
      const res = await get(`/operations/TodoById?variables=${enc(json)}`)
      t.equal(res.status, 400)
      t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
      clean(t)
    })
    t.test(`POST /operations/CreateTodo ${json}`, async (t) => {
      const res = await post('/operations/CreateTodo', json)
      t.equal(res.status, 400)
      t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
      clean(t)
    })
    t.test(`POST /graphql with variables ${json}`, async (t) => {
      const res = await post('/graphql', `{"query":"query($id: Int) { todo_findUniqueTodo(where: { id: $id }) { id } }","variables":${json}}`)
      t.equal(res.status, 400)
      t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_BAD_REQUEST')
      clean(t)
    })
    t.test(`GET /graphql?variables=${json}`, async (t) => {
      const q = enc('query($id: Int) { todo_findUniqueTodo(where: { id: $id }) { id } }')
      const res = await get(`/graphql?query=${q}&variables=${enc(json)}`)
      t.equal(res.status, 400)
      t.ok(res.body.errors?.[0].extensions.code, 'the error carries a code')
      clean(t)
    })
  }

  t.test('a __proto__ title does not leak into a later create', async (t) => {
    await get('/operations/TodoById?__proto__[title]=x')
    const res = await post('/operations/CreateTodo', '{}')
    t.equal(res.status, 400, 'title is still required')
    t.equal(res.body.errors?.[0].extensions.code, 'TRB_ERR_OPERATION_VARIABLES')
    clean(t)
  })

  t.test('normal requests still answer 200 after every attack', async (t) => {
    const one = await get('/operations/TodoById?id=1')
    t.equal(one.status, 200)
    t.equal((one.body.todo_findUniqueTodo as { id: number }).id, 1)
    const route = await get('/api/v1/todo/2/')
    t.equal(route.status, 200)
    t.equal((route.body.todo_findUniqueTodo as { id: number }).id, 2)
    const list = await get('/operations/Todos?take=2')
    t.equal(list.status, 200)
    const created = await post('/operations/CreateTodo', '{"title":"after the attack"}')
    t.equal(created.status, 200)
    t.equal((created.body.todo_createOneTodo as { title: string }).title, 'after the attack')
    clean(t)
  })
})

t.test('defence in depth: the suite, like npm start, runs with --disable-proto=throw', async (t) => {
  t.throws(() => (({}) as { __proto__: unknown }).__proto__, /__proto__/)
  const pkg = JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'))) as { scripts: Record<string, string> }
  t.match(pkg.scripts.start, /node --disable-proto=throw /)
  t.match(pkg.scripts.dev, /node --disable-proto=throw /)
})
