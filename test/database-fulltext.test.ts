/**
 * Issue 28: full-text search (`StringFilter.search`) and ordering by relevance (`_relevance`, as
 * Prisma's) on PostgreSQL (`websearch_to_tsquery`, `ts_rank`), MariaDB/MySQL (`FULLTEXT`,
 * `MATCH … AGAINST … IN BOOLEAN MODE`) and SQLite (FTS5 tables, `MATCH`, `bm25()`), on a Sakila-like
 * slice made by the test (test/fixtures/sakila-fts/<engine>/10-base.sql), through ONE gateway on
 * 127.0.0.1 serving the three engines under namespaces `pg`, `my` and `lite`. Every answer is
 * compared with the engine's own SQL; columns without a full-text index, query-syntax errors and
 * over-long texts are coded 400s; the search text is a bound parameter. An unreachable engine skips
 * its part.
 */
import t, { type Test } from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { MAX_SEARCH_CHARS } from '../gateway/connectors/database/compiler/fulltext.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway, type Answer } from './helpers/db-gateway.js'

type Sql = (text: string, bindings?: unknown[]) => Promise<Record<string, unknown>[]>
const NS: Record<Dialect, string> = { postgres: 'pg', mysql: 'my', sqlite: 'lite' }

const engines: { dialect: Dialect; sql: Sql }[] = []
const sources: ReturnType<typeof database>[] = []
for (const dialect of ['postgres', 'mysql', 'sqlite'] as const) {
  const db = await realworldDatabase(dialect, 'fts28', 'sakila-fts')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    continue
  }
  t.teardown(db.cleanup)
  sources.push(database({ namespace: NS[dialect], url: db.url, ...(dialect === 'postgres' ? { schema: db.schema! } : {}) }))
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  engines.push({ dialect, sql: (text, bindings = []) => rawRows(knex, dialect, text, bindings, db.schema) })
}
const server = sources.length ? await startDatabaseGateway(t, sources) : null
const gql = (q: string, v?: Record<string, unknown>): Promise<Answer> => server!.gql(q, v)
const ids = (rows: Record<string, unknown>[]): number[] => rows.map((r) => Number(r['film_id']))
const env = (d: Dialect) => engines.find((e) => e.dialect === d)

/** `findManyFilm` ids (namespaced) for a where/orderBy text. */
async function filmIds(d: Dialect, args: string, model = 'Film', vars?: Record<string, unknown>, decl = ''): Promise<{ ids: number[] | null; res: Answer }> {
  const field = `${NS[d]}_findMany${model}`
  const res = await gql(`query${decl} { ${field}(${args}) { filmId } }`, vars)
  const rows = res.body.data?.[field] as { filmId: number | string }[] | null | undefined
  return { ids: rows ? rows.map((r) => Number(r.filmId)) : null, res }
}

function refused(t: Test, res: Answer, pattern: RegExp): void {
  t.equal(res.body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_INPUT', res.body.errors?.[0]?.message ?? 'no error')
  t.match(res.body.errors?.[0]?.message ?? '', pattern)
  t.notMatch(res.body.errors?.[0]?.message ?? '', /select|from \w+ as/i, 'no SQL in the message')
}

t.test('postgres', { skip: !env('postgres') && 'unreachable' }, async (t) => {
  const { sql } = env('postgres')!
  t.test('search on a text column and on a tsvector column, as the engine answers', async (t) => {
    for (const q of ['epic drama', '"mad scientist"', 'feminist -drama', 'china or india']) {
      const got = await filmIds('postgres', `where: { description: { search: $q } }, orderBy: { filmId: asc }`, 'Film', { q }, '($q: String)')
      t.same(got.ids, ids(await sql(`select film_id from film where to_tsvector(description) @@ websearch_to_tsquery(?) order by film_id`, [q])), q)
      const tsv = await filmIds('postgres', `where: { fulltext: { search: $q } }, orderBy: { filmId: asc }`, 'Film', { q }, '($q: String)')
      t.same(tsv.ids, ids(await sql(`select film_id from film where fulltext @@ websearch_to_tsquery(?) order by film_id`, [q])), `tsvector ${q}`)
    }
  })
  t.test('_relevance orders by ts_rank, ties by key', async (t) => {
    const q = 'epic drama feminist'
    const got = await filmIds('postgres', `orderBy: [{ _relevance: { fields: [title, description], search: $q, sort: desc } }], take: 6`, 'Film', { q }, '($q: String!)')
    t.same(got.res.body.errors ?? [], [])
    t.same(got.ids, ids(await sql(`select film_id from film order by ts_rank(to_tsvector(concat_ws(' ', title, description)), websearch_to_tsquery(?)) desc, film_id limit 6`, [q])))
    const one = await filmIds('postgres', `orderBy: { _relevance: { fields: fulltext, search: "lumberjack", sort: desc } }, take: 3`)
    t.same(one.ids, ids(await sql(`select film_id from film order by ts_rank(fulltext, websearch_to_tsquery('lumberjack')) desc, film_id limit 3`)))
  })
  t.test('an over-long search text is a coded 400', async (t) => {
    const got = await filmIds('postgres', `where: { title: { search: $q } }`, 'Film', { q: 'x'.repeat(MAX_SEARCH_CHARS + 1) }, '($q: String)')
    refused(t, got.res, /at most 1000 characters/)
  })
})

t.test('mysql', { skip: !env('mysql') && 'unreachable' }, async (t) => {
  const { sql } = env('mysql')!
  t.test('search on a column with a FULLTEXT index of its own, as MATCH … AGAINST answers', async (t) => {
    for (const [field, column, q] of [['title', 'title', 'epic'], ['description', 'description', '+epic +drama'], ['description', 'description', '"mad scientist"'], ['description', 'description', 'lumber*'], ['title', 'title', "epic'; DROP TABLE film"]] as const) {
      const got = await filmIds('mysql', `where: { ${field}: { search: $q } }, orderBy: { filmId: asc }`, 'Film', { q }, '($q: String)')
      t.same(got.res.body.errors ?? [], [], q)
      t.same(got.ids, ids(await sql(`select film_id from film where match(${column}) against (? in boolean mode) order by film_id`, [q])), q)
    }
    t.equal(Number((await sql(`select count(*) as n from film`))[0]!['n']), 14, 'the table is still there')
    const combined = await filmIds('mysql', `where: { OR: [{ title: { search: "epic" } }, { NOT: { description: { search: "china" } } }] }, orderBy: { filmId: asc }`)
    t.same(combined.ids, ids(await sql(`select film_id from film where match(title) against ('epic' in boolean mode) or not (match(description) against ('china' in boolean mode)) order by film_id`)))
  })
  t.test('search elsewhere is refused with a coded 400', async (t) => {
    refused(t, (await filmIds('mysql', `where: { rating: { search: "G" } }`)).res, /FULLTEXT index on Film\.rating/)
    // film_text has one FULLTEXT index over (title, description): MATCH(title) alone needs its own.
    refused(t, (await filmIds('mysql', `where: { title: { search: "epic" } }`, 'FilmText')).res, /FULLTEXT index on FilmText\.title/)
  })
  t.test('a boolean-mode syntax error is a coded 400, never a 500', async (t) => {
    for (const q of ['+(', '@3', '(a))', '+-', '*']) {
      const got = await filmIds('mysql', `where: { title: { search: $q } }`, 'Film', { q }, '($q: String)')
      refused(t, got.res, /full-text search text is not valid/)
    }
  })
  t.test('_relevance orders by MATCH … AGAINST on exactly an index\'s columns', async (t) => {
    const q = 'epic drama feminist'
    const got = await filmIds('mysql', `orderBy: [{ _relevance: { fields: [description, title], search: $q, sort: desc } }], take: 6`, 'Film', { q }, '($q: String!)')
    t.same(got.res.body.errors ?? [], [])
    t.same(got.ids, ids(await sql(`select film_id from film order by match(title, description) against (? in boolean mode) desc, film_id limit 6`, [q])))
    const asc = await filmIds('mysql', `orderBy: { _relevance: { fields: title, search: "epic", sort: asc } }, where: { filmId: { lte: 3 } }`)
    t.same(asc.ids, ids(await sql(`select film_id from film where film_id <= 3 order by match(title) against ('epic' in boolean mode), film_id`)))
    refused(t, (await filmIds('mysql', `orderBy: { _relevance: { fields: title, search: "epic", sort: desc } }`, 'FilmText')).res, /FULLTEXT index on exactly FilmText\.title/)
  })
})

t.test('sqlite', { skip: !env('sqlite') && 'unreachable' }, async (t) => {
  const { sql } = env('sqlite')!
  t.test('search through an external-content FTS5 table and on an FTS5 table, as MATCH answers', async (t) => {
    for (const [field, q] of [['title', 'epic'], ['description', 'epic AND drama'], ['description', '"mad scientist"'], ['description', 'lumber*'], ['title', "epic'; DROP TABLE film"]] as const) {
      const got = await filmIds('sqlite', `where: { ${field}: { search: $q } }, orderBy: { filmId: asc }`, 'Film', { q }, '($q: String)')
      if (q.includes("'")) {
        // FTS5 barewords are letters and digits: a quote is a syntax error, reported as such.
        refused(t, got.res, /full-text search text is not valid/)
        continue
      }
      t.same(got.res.body.errors ?? [], [], q)
      t.same(got.ids, ids(await sql(`select film_id from film where film_id in (select rowid from film_fts where ${field} match ?) order by film_id`, [q])), q)
      const own = await gql(`query($q: String) { lite_findManyFilmText(where: { ${field}: { search: $q } }) { filmId } }`, { q })
      const rows = (own.body.data?.['lite_findManyFilmText'] as { filmId: string }[]).map((r) => Number(r.filmId)).sort((a, b) => a - b)
      t.same(rows, ids(await sql(`select film_id from film_text where ${field} match ? order by film_id`, [q])), `FilmText ${q}`)
    }
    t.equal(Number((await sql(`select count(*) as n from film`))[0]!['n']), 14, 'the table is still there')
    const not = await filmIds('sqlite', `where: { NOT: { title: { search: "epic" } }, filmId: { lte: 3 } }, orderBy: { filmId: asc }`)
    t.same(not.ids, ids(await sql(`select film_id from film where film_id <= 3 and film_id not in (select rowid from film_fts where title match 'epic') order by film_id`)))
  })
  t.test('search elsewhere is refused with a coded 400; FTS5 shadow tables are no models', async (t) => {
    refused(t, (await filmIds('sqlite', `where: { rating: { search: "G" } }`)).res, /FTS5 table indexing Film\.rating/)
    refused(t, (await filmIds('sqlite', `where: { filmId: { search: "1" } }`, 'FilmText')).res, /FTS5 table indexing FilmText\.filmId/)
    for (const shadow of ['FilmFtsData', 'FilmFtsIdx', 'FilmTextContent', 'FilmTextDocsize', 'FilmTextConfig']) {
      const res = await gql(`{ lite_findMany${shadow} { __typename } }`)
      t.match(res.body.errors?.[0]?.message, /Cannot query field/, `no model for ${shadow}`)
    }
  })
  t.test('an FTS5 syntax error is a coded 400, never a 500', async (t) => {
    for (const q of ['epic AND (', '"', 'nosuchcolumn:epic', '']) {
      const got = await filmIds('sqlite', `where: { description: { search: $q } }`, 'Film', { q }, '($q: String)')
      refused(t, got.res, /full-text search text is not valid/)
    }
  })
  t.test('_relevance orders by -bm25() on the chosen columns', async (t) => {
    const q = 'epic OR drama OR feminist'
    const got = await filmIds('sqlite', `orderBy: [{ _relevance: { fields: [title, description], search: $q, sort: desc } }], take: 6`, 'Film', { q }, '($q: String!)')
    t.same(got.res.body.errors ?? [], [])
    t.same(got.ids, ids(await sql(`select film_id from film order by coalesce((select -bm25(film_fts, 1.0, 1.0) from film_fts where film_fts match ? and rowid = film.film_id), 0) desc, film_id limit 6`, [q])))
    const title = await filmIds('sqlite', `orderBy: { _relevance: { fields: title, search: "epic", sort: desc } }, take: 3`)
    t.same(title.ids, ids(await sql(`select film_id from film order by coalesce((select -bm25(film_fts, 1.0, 0.0) from film_fts where film_fts match 'epic' and rowid = film.film_id), 0) desc, film_id limit 3`)))
  })
})
