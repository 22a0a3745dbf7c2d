/** Seeds the demo todos once (a migration, so it never runs twice on the same database). */
import type { Knex } from 'knex'

/** The seed rows; `createdAt` is fixed so that responses are reproducible. */
export const seedTodos = [
  { id: 1, title: 'Read docs/architecture.md', completed: true, createdAt: '2026-11-20T09:00:00.000Z', description: 'Layout, naming and the HTTP contract' },
  { id: 2, title: 'Add a data source in config.ts', completed: false, createdAt: '2026-11-20T09:30:00.000Z', description: null },
  { id: 3, title: 'Write an operation in operations/', completed: false, createdAt: '2026-11-20T10:00:00.000Z', description: 'One named operation per .graphql file' },
  { id: 4, title: 'Call GET /operations/TodoById?id=1', completed: false, createdAt: '2026-11-20T10:30:00.000Z', description: null },
  { id: 5, title: 'Open the playground at /graphql', completed: true, createdAt: '2026-11-20T11:00:00.000Z', description: null },
]

export async function up(knex: Knex): Promise<void> {
  const client = String(knex.client.config.client)
  const toDb = (iso: string) => (client.includes('sqlite') ? iso : new Date(iso))
  await knex('Todo').insert(seedTodos.map((t) => ({ ...t, createdAt: toDb(t.createdAt) })))
  // PostgreSQL sequences do not move when ids are given explicitly.
  if (client === 'pg' || client.includes('postgres')) {
    await knex.raw(`select setval(pg_get_serial_sequence('"Todo"', 'id'), (select max(id) from "Todo"))`)
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex('Todo').whereIn('id', seedTodos.map((t) => t.id)).delete()
}
