/**
 * The Chinook example deployment: one database source, namespace `chinook`.
 *
 * Run it from the repository root:
 *   npm start -- --config examples/chinook/config.ts
 * `CHINOOK_DATABASE_URL` points it at PostgreSQL or MySQL instead of the SQLite copy shipped here
 * (see examples/chinook/README.md for loading the database on each engine).
 */
import { database, defineConfig } from '../../gateway/config/index.js'

export default defineConfig({
  datasources: [
    database({
      namespace: 'chinook',
      // `sqlite:` paths are relative to the working directory (the repository root).
      url: process.env.CHINOOK_DATABASE_URL || 'sqlite:examples/chinook/chinook.sqlite',
    }),
  ],
  operations: { dir: 'examples/chinook/operations' },
  generatedDir: 'examples/chinook/generated',
})
