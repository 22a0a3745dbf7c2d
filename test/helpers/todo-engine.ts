/**
 * Runs the demo deployment with `TODO_DATABASE_URL` on a fresh PostgreSQL schema or MySQL database,
 * and checks every stored operation's expected response through the same HTTP app as on SQLite.
 */
import t from 'tap'
import { fileURLToPath } from 'node:url'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { freshDatabase } from './chinook.js'
import { startDemo } from './demo.js'
import { checkExpectedResponses } from './expected-responses.js'

/** Registers the suite for one engine; it skips, saying why, when the engine is unreachable. */
export async function testTodoDemoOn(engine: Exclude<Dialect, 'sqlite'>): Promise<void> {
  const db = await freshDatabase(engine, 'todo-demo')
  t.teardown(() => db.cleanup())

  t.test(`the demo on ${engine}`, { skip: db.skipReason }, async (t) => {
    const { app } = await startDemo(t, { env: { TODO_DATABASE_URL: db.url } })
    await checkExpectedResponses(t, app, fileURLToPath(new URL('../../operations', import.meta.url)))
    const tooLong = await app.inject({ method: 'POST', url: '/operations/CreateTodo', payload: { title: 'x'.repeat(300) } })
    t.equal(tooLong.statusCode, 400, 'a too-long title is refused by the database')
    t.equal(tooLong.json().errors[0].extensions.code, 'TRB_ERR_DB_VALUE')
    const count = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ todo_aggregateTodo { _count { _all } } }' } })
    t.equal(count.json().data.todo_aggregateTodo._count._all, 5, 'five rows: five seeded, one created, one deleted, nothing half-written')
  })
}
