/** Creates the `Todo` table of docs/architecture.md §6: six columns, `id` an auto-increment primary key. */
import type { Knex } from 'knex'

export async function up(knex: Knex): Promise<void> {
  const client = String(knex.client.config.client)
  await knex.schema.createTable('Todo', (t) => {
    // knex's increments() is `int unsigned` on MySQL, which maps to BigInt; keep `id` a signed Int everywhere.
    if (client.includes('mysql')) t.specificType('id', 'int not null auto_increment primary key')
    else t.increments('id').primary()
    t.string('title', 255).notNullable()
    t.boolean('completed').notNullable().defaultTo(false)
    t.timestamp('createdAt', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updatedAt', { useTz: true }).nullable()
    t.text('description').nullable()
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('Todo')
}
