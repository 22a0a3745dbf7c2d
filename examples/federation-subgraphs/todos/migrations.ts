/**
 * The todos database of the subgraphs example: `Todo` (a primary key, `@key(fields: "id")`) and
 * `TodoLabel` (a composite primary key, `@key(fields: "todoId label")`), created and seeded on first
 * start. `assigneeId` is the id of a `User` of the users subgraph.
 */
import type { Knex } from 'knex'

export const createTables = {
  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('Todo', (t) => {
      t.integer('id').primary()
      t.string('title', 255).notNullable()
      t.boolean('completed').notNullable().defaultTo(false)
      t.integer('assigneeId').nullable()
    })
    await knex.schema.createTable('TodoLabel', (t) => {
      t.integer('todoId').notNullable().references('id').inTable('Todo')
      t.string('label', 64).notNullable()
      t.primary(['todoId', 'label'])
    })
  },
}

export const seed = {
  async up(knex: Knex): Promise<void> {
    await knex('Todo').insert([
      { id: 1, title: 'Write the supergraph', completed: true, assigneeId: 1 },
      { id: 2, title: 'Compose the subgraphs', completed: false, assigneeId: 2 },
      { id: 3, title: 'Ask Hive Gateway', completed: false, assigneeId: 1 },
    ])
    await knex('TodoLabel').insert([
      { todoId: 1, label: 'docs' },
      { todoId: 2, label: 'federation' },
      { todoId: 3, label: 'federation' },
    ])
  },
}
