/**
 * Issue 28: Relay connections `<model>Connection(first, after, last, before, where, orderBy)` beside
 * the Prisma API, on PostgreSQL, MariaDB/MySQL and SQLite, on a Sakila-like slice made by the test
 * (test/fixtures/sakila-fts/<engine>/10-base.sql, with two descriptions set NULL), through ONE
 * gateway on 127.0.0.1 (namespaces `pg`, `my`, `lite`). Pages walked forward and backward are
 * compared with the engine's own ORDER BY (NULLs first ascending); bad cursors, counts above
 * maxTake, `first` with `last` and relation orders are coded 400s. An unreachable engine skips its part.
 */
import t, { type Test } from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway, type Answer } from './helpers/db-gateway.js'

type Sql = (text: string, bindings?: unknown[]) => Promise<Record<string, unknown>[]>
const NS: Record<Dialect, string> = { postgres: 'pg', mysql: 'my', sqlite: 'lite' }
const MAX_TAKE = 50

const engines: { dialect: Dialect; sql: Sql }[] = []
const sources: ReturnType<typeof database>[] = []
for (const dialect of ['postgres', 'mysql', 'sqlite'] as const) {
  const db = await realworldDatabase(dialect, 'relay28', 'sakila-fts')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    continue
  }
  t.teardown(db.cleanup)
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql: Sql = (text, bindings = []) => rawRows(knex, dialect, text, bindings, db.schema)
  await sql(`update film set description = null where film_id in (2, 5)`)
  sources.push(database({ namespace: NS[dialect], url: db.url, maxTake: MAX_TAKE, ...(dialect === 'postgres' ? { schema: db.schema! } : {}) }))
  engines.push({ dialect, sql })
}
const server = sources.length ? await startDatabaseGateway(t, sources) : null

interface Page {
  edges: { cursor: string; node: { filmId: number; title: string; language: { name: string } } }[]
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null }
  totalCount: number
}

async function page(d: Dialect, args: string, vars: Record<string, unknown> = {}): Promise<{ page: Page | null; res: Answer }> {
  const field = `${NS[d]}_filmConnection`
  const res = await server!.gql(
    `query($first: Int, $after: String, $last: Int, $before: String) { ${field}(first: $first, after: $after, last: $last, before: $before, ${args}) {
      totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { filmId title language { name } } } } }`,
    vars,
  )
  return { page: (res.body.data?.[field] as Page | undefined) ?? null, res }
}

function refused(t: Test, res: Answer, pattern: RegExp): void {
  t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_INPUT', res.body.errors?.[0]?.message ?? 'no error')
  t.match(res.body.errors?.[0]?.message ?? '', pattern)
}

for (const { dialect, sql } of engines) {
  t.test(dialect, async (t) => {
    const orders: [string, string][] = [
      ['orderBy: { title: asc }', 'title asc, film_id'],
      ['orderBy: [{ description: asc }], where: { filmId: { lte: 12 } }', `description asc${dialect === 'postgres' ? ' nulls first' : ''}, film_id`],
      ['orderBy: [{ description: desc }]', `description desc${dialect === 'postgres' ? ' nulls last' : ''}, film_id`],
      ['orderBy: [{ rating: desc }, { filmId: desc }], where: { title: { startsWith: "A" } }', 'rating desc, film_id desc'],
    ]
    for (const [args, order] of orders) {
      t.test(`forward and backward pages: ${args}`, async (t) => {
        const where = /startsWith/.test(args) ? `where title like 'A%'` : /lte: 12/.test(args) ? 'where film_id <= 12' : ''
        const want = (await sql(`select film_id from film ${where} order by ${order}`)).map((r) => Number(r['film_id']))
        // Forward with first: 4.
        const seen: number[] = []
        let after: string | null = null
        for (let i = 0; i < 10; i++) {
          const { page: p, res } = await page(dialect, args, { first: 4, after })
          t.same(res.body.errors ?? [], [])
          if (!p) return
          t.equal(p.totalCount, want.length, 'totalCount')
          t.equal(p.pageInfo.hasPreviousPage, after !== null, 'hasPreviousPage')
          t.equal(p.edges[0]?.node.language.name, p.edges.length ? 'English' : undefined, 'nested relation in node')
          seen.push(...p.edges.map((e) => Number(e.node.filmId)))
          t.equal(p.pageInfo.endCursor, p.edges[p.edges.length - 1]?.cursor ?? null)
          if (!p.pageInfo.hasNextPage) break
          after = p.pageInfo.endCursor
        }
        t.same(seen, want, 'forward pages = the engine\'s order')
        // Backward with last: 3.
        const back: number[][] = []
        let before: string | null = null
        for (let i = 0; i < 10; i++) {
          const { page: p } = await page(dialect, args, { last: 3, before })
          if (!p) return
          t.equal(p.pageInfo.hasNextPage, before !== null, 'hasNextPage backward')
          back.unshift(p.edges.map((e) => Number(e.node.filmId)))
          if (!p.pageInfo.hasPreviousPage) break
          before = p.pageInfo.startCursor
        }
        t.same(back.flat(), want, 'backward pages = the engine\'s order')
      })
    }
    t.test('bad input is a coded 400', async (t) => {
      refused(t, (await page(dialect, 'orderBy: { title: asc }', { first: 2, after: 'not a cursor!' })).res, /invalid cursor/)
      const { page: p } = await page(dialect, 'orderBy: { title: asc }', { first: 2 })
      refused(t, (await page(dialect, 'orderBy: { filmId: desc }', { first: 2, after: p!.pageInfo.endCursor })).res, /invalid cursor/)
      refused(t, (await page(dialect, 'orderBy: { title: asc }', { first: 2, after: Buffer.from('["title:asc,filmId:asc"]').toString('base64url') })).res, /invalid cursor/)
      // A cursor is opaque but the client holds it: one re-encoded with values of the wrong shape for
      // its key fields (title: String, filmId: Int) is refused before any value reaches the driver.
      const [signature, title, filmId] = JSON.parse(Buffer.from(p!.pageInfo.endCursor!, 'base64url').toString('utf8')) as [string, string, number]
      for (const values of [[{ a: 1 }, filmId], [title, [1, 2]], [title, true], [title, 'x'], [title, 1.5], [1, filmId]]) {
        const forged = Buffer.from(JSON.stringify([signature, ...values])).toString('base64url')
        refused(t, (await page(dialect, 'orderBy: { title: asc }', { first: 2, after: forged })).res, /invalid cursor/)
      }
      refused(t, (await page(dialect, '', { first: MAX_TAKE + 1 })).res, /maxTake/)
      refused(t, (await page(dialect, '', { first: -1 })).res, /from 0/)
      refused(t, (await page(dialect, '', { first: 1, last: 1 })).res, /not both/)
      refused(t, (await page(dialect, 'orderBy: { language: { name: asc } }', { first: 1 })).res, /scalar fields/)
      const none = await page(dialect, '', { first: 0 })
      t.same(none.page?.edges, [])
      t.equal(none.page?.pageInfo.hasNextPage, true)
      t.equal(none.page?.pageInfo.startCursor, null)
    })
  })
}
