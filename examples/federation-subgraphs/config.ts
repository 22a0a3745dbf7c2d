/**
 * The Tributary subgraph of the subgraphs example (examples/federation-subgraphs/README.md): the
 * todos database (SQLite, created and seeded on first start) served as an Apollo Federation v2
 * subgraph (`server.federation`), on port `TODOS_PORT` (default 4301).
 *
 *   npm start -- --config examples/federation-subgraphs/config.ts
 */
import { database, defineConfig } from '../../gateway/config/index.js'
import { createTables, seed } from './todos/migrations.js'

export default defineConfig({
  datasources: [
    database({
      namespace: 'todo',
      url: process.env.TODOS_DATABASE_URL || 'sqlite:data/federation-subgraphs-todos.sqlite',
      migrations: { '001-create-tables': createTables, '002-seed': seed },
    }),
  ],
  server: { port: Number(process.env.TODOS_PORT || 4301), federation: true },
  operations: { dir: 'examples/federation-subgraphs/todos/operations' },
  generatedDir: 'examples/federation-subgraphs/generated',
})
