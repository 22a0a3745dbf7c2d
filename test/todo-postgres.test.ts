/**
 * The demo deployment with TODO_DATABASE_URL pointing at postgres: migrations, seed and every stored
 * operation's expected response, through the same HTTP app as on SQLite.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { freshDatabase } from './helpers/chinook.js'
import { startDemo } from './helpers/demo.js'

const db = await freshDatabase('postgres', 'todo-demo')
t.teardown(() => db.cleanup())

t.test('the demo on postgres', { skip: db.skipReason }, async (t) => {
  const { app } = await startDemo(t, { env: { TODO_DATABASE_URL: db.url } })
  const dir = fileURLToPath(new URL('../operations', import.meta.url))
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.expected.json')).sort()) {
    const expected = JSON.parse(readFileSync(join(dir, file), 'utf8'))
    const [method, url] = expected.request.split(' ')
    const res = await app.inject({ method, url, ...(expected.body !== undefined ? { payload: expected.body } : {}) })
    t.equal(res.statusCode, expected.status, file)
    const body = res.json()
    if (file.startsWith('CreateTodo')) {
      t.match(body.todo_createOneTodo.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      body.todo_createOneTodo.createdAt = '<date-time>'
    }
    t.same(body, expected.response, file)
  }
  const again = await app.inject({ method: 'POST', url: '/operations/CreateTodo', payload: { title: 'x'.repeat(300) } })
  t.equal(again.statusCode, 400, 'a too-long title is refused by the database and nothing is written')
  const count = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ todo_aggregateTodo { _count { _all } } }' } })
  t.equal(count.json().data.todo_aggregateTodo._count._all, 5, 'five rows: five seeded, one created, one deleted')
})
