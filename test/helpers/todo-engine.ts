/**
 * Runs the demo deployment with `TODO_DATABASE_URL` on a fresh PostgreSQL schema or MySQL database,
 * and checks every stored operation's expected response through the same HTTP app as on SQLite.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { freshDatabase } from './chinook.js'
import { startDemo } from './demo.js'

/** Registers the suite for one engine; it skips, saying why, when the engine is unreachable. */
export async function testTodoDemoOn(engine: Exclude<Dialect, 'sqlite'>): Promise<void> {
  const db = await freshDatabase(engine, 'todo-demo')
  t.teardown(() => db.cleanup())

  t.test(`the demo on ${engine}`, { skip: db.skipReason }, async (t) => {
    const { app } = await startDemo(t, { env: { TODO_DATABASE_URL: db.url } })
    const dir = fileURLToPath(new URL('../../operations', import.meta.url))
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
    const tooLong = await app.inject({ method: 'POST', url: '/operations/CreateTodo', payload: { title: 'x'.repeat(300) } })
    t.equal(tooLong.statusCode, 400, 'a too-long title is refused by the database')
    t.equal(tooLong.json().errors[0].extensions.code, 'TRB_ERR_DB_VALUE')
    const count = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ todo_aggregateTodo { _count { _all } } }' } })
    t.equal(count.json().data.todo_aggregateTodo._count._all, 5, 'five rows: five seeded, one created, one deleted, nothing half-written')
  })
}
