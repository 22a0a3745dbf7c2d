/**
 * `npm run chinook:load -- <url>` (examples/chinook/load.ts) loads the Chinook dump shipped in
 * examples/chinook/sql/ into the PostgreSQL schema or MySQL database a URL names, prints its steps and
 * the CHINOOK_DATABASE_URL to use, and the tables are there.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { freshDatabase, repoRoot } from './helpers/chinook.js'

const run = promisify(execFile)

for (const dialect of ['postgres', 'mysql'] as const) {
  t.test(`chinook:load into ${dialect}`, async (t) => {
    const db = await freshDatabase(dialect, 'chinook_load')
    if (db.skipReason) {
      t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
      return
    }
    t.teardown(db.cleanup)
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/chinook/load.ts', db.url], { cwd: repoRoot })
    t.match(stdout, /loaded: 3503 tracks/, 'prints the progress and the row count')
    t.match(stdout, /CHINOOK_DATABASE_URL=/, 'prints the URL to start the example with')
    const { createKnex } = await import('../gateway/connectors/database/connection.js')
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const table = dialect === 'postgres' ? 'artist' : 'Artist'
    const [row] = await knex(table).count({ n: '*' })
    t.equal(Number(row!.n), 275, '275 artists')
  })
}

t.test('chinook:load refuses a URL it cannot load into', async (t) => {
  const err = await run(process.execPath, ['--import', 'tsx', 'examples/chinook/load.ts', 'sqlite:x.sqlite'], { cwd: repoRoot }).then(() => null, (e: { code: number; stderr: string }) => e)
  t.equal(err?.code, 1)
  t.match(err?.stderr, /Unsupported URL/)
})
