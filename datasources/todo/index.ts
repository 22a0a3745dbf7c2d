/**
 * The `todo` data source: a SQLite database by default (`data/todo.sqlite`, created, migrated and
 * seeded on first start). `TODO_DATABASE_URL` points it at PostgreSQL or MySQL instead. Raw SQL
 * (`todo_queryRaw`, `todo_executeRaw`, as in the specification's schema) in development mode only:
 * in production the fields do not exist.
 */
import { database } from '../../gateway/config/index.js'
import * as createTodo from './migrations/001-create-todo.js'
import * as seedTodos from './migrations/002-seed-todos.js'

export default database({
  namespace: 'todo',
  url: process.env.TODO_DATABASE_URL || 'sqlite:data/todo.sqlite',
  rawSql: 'development',
  migrations: {
    '001-create-todo': createTodo,
    '002-seed-todos': seedTodos,
  },
})
