/**
 * Nested Relay connections (issue 28): `<relation>Connection(first, after, last, before, where,
 * orderBy)` on a to-many relation (`M2mcArtist.m2mcAlbumsConnection`) and through a many-to-many
 * shortcut (`M2mcAlbum.m2mcTagsConnection`), on PostgreSQL, MariaDB/MySQL and SQLite, through ONE
 * gateway on 127.0.0.1 (namespaces `pg`, `my`, `lite`) whose SQL log counts the statements. Pages
 * walked forward and backward per parent are compared with the engine's own ORDER BY (NULLs first
 * ascending); every page of every parent is one statement; bad cursors and counts are coded 400s.
 * An unreachable engine skips its part.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase } from './helpers/chinook.js'
import { rawRows } from './helpers/realworld.js'
import { startLoggedGateway } from './helpers/db-gateway.js'

type Sql = (text: string, bindings?: unknown[]) => Promise<Record<string, unknown>[]>
type Body = { data?: Record<string, unknown> | null; errors?: { message: string; extensions: { code: string } }[] }
interface Page {
  edges: { cursor: string; node: { id: number; title?: string; name?: string } }[]
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null }
  totalCount: number
}
const NS: Record<Dialect, string> = { postgres: 'pg', mysql: 'my', sqlite: 'lite' }
const MAX_TAKE = 20

const SCHEMA = [
  'CREATE TABLE m2mc_artist (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL)',
  'CREATE TABLE m2mc_album (id INTEGER PRIMARY KEY, artist_id INTEGER NOT NULL, title VARCHAR(40) NOT NULL, year INTEGER, FOREIGN KEY (artist_id) REFERENCES m2mc_artist (id))',
  'CREATE TABLE m2mc_tag (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL)',
  'CREATE TABLE m2mc_album_tag (album_id INTEGER NOT NULL, tag_id INTEGER NOT NULL, PRIMARY KEY (album_id, tag_id), FOREIGN KEY (album_id) REFERENCES m2mc_album (id), FOREIGN KEY (tag_id) REFERENCES m2mc_tag (id))',
  "INSERT INTO m2mc_artist (id, name) VALUES (1, 'One'), (2, 'Two'), (3, 'None')",
  // Years with NULLs and ties: the key's primary-key tiebreak and the NULL order matter.
  "INSERT INTO m2mc_album (id, artist_id, title, year) VALUES (1, 1, 'a', 1990), (2, 1, 'b', NULL), (3, 1, 'c', 1985), (4, 1, 'd', 1990), (5, 1, 'e', NULL), (6, 1, 'f', 2001), (7, 1, 'g', 1985), (8, 2, 'h', 1970), (9, 2, 'i', NULL), (10, 2, 'j', 1970)",
  "INSERT INTO m2mc_tag (id, name) VALUES (1, 'rock'), (2, 'pop'), (3, 'jazz'), (4, 'folk'), (5, 'punk')",
  'INSERT INTO m2mc_album_tag (album_id, tag_id) VALUES (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 2), (2, 5), (8, 1)',
]

const engines: { dialect: Dialect; sql: Sql }[] = []
const sources: ReturnType<typeof database>[] = []
for (const dialect of ['postgres', 'mysql', 'sqlite'] as const) {
  const db = await freshDatabase(dialect, 'm2mconn_conn')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    continue
  }
  t.teardown(db.cleanup)
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql: Sql = (text, bindings = []) => rawRows(knex, dialect, text, bindings, db.schema)
  for (const s of SCHEMA) await sql(s)
  sources.push(database({ namespace: NS[dialect], url: db.url, maxTake: MAX_TAKE, ...(dialect === 'postgres' ? { schema: db.schema! } : {}) }))
  engines.push({ dialect, sql })
}
const dir = mkdtempSync(join(tmpdir(), 'trb-nested-conn-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const statements: string[] = []
const base = sources.length ? await startLoggedGateway(t, sources, dir, (s) => statements.push(s.sql)) : ''

/** Posts `query`; `count` = the statements it ran. */
async function gql(query: string, variables: Record<string, unknown> = {}): Promise<{ body: Body; count: number }> {
  const before = statements.length
  const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
  const body = (await res.json()) as Body
  return { body, count: statements.length - before }
}

const PAGE = 'totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } }'

for (const { dialect, sql } of engines) {
  const ns = NS[dialect]
  t.test(dialect, async (t) => {
    const nullsFirst = dialect === 'postgres' ? ' NULLS FIRST' : ''
    const nullsLast = dialect === 'postgres' ? ' NULLS LAST' : ''
    /** Walks one parent's connection forward (first: 2) and backward (last: 3); each page one statement. */
    const walk = async (t: Test, root: string, conn: string, args: string, want: number[]) => {
      const q = (v: string) => `query($first: Int, $after: String, $last: Int, $before: String) { ${ns}_${root} { ${conn}(first: $first, after: $after, last: $last, before: $before${args}) { ${PAGE} } } }`
      const get = async (vars: Record<string, unknown>): Promise<Page | null> => {
        const { body, count } = await gql(q(''), vars)
        t.same(body.errors ?? [], [], 'no errors')
        t.equal(count, 1, 'one statement')
        const parent = body.data?.[`${ns}_${root.replace(/\(.*$/, '')}`] as Record<string, unknown> | null
        return (parent?.[conn] as Page | undefined) ?? null
      }
      const seen: number[] = []
      let after: string | null = null
      for (let i = 0; i < 10; i++) {
        const p = await get({ first: 2, after })
        if (!p) {
          t.fail('no page')
          return
        }
        t.equal(p.totalCount, want.length, 'totalCount')
        t.equal(p.pageInfo.hasPreviousPage, after !== null, 'hasPreviousPage forward')
        seen.push(...p.edges.map((e) => Number(e.node.id)))
        if (!p.pageInfo.hasNextPage) break
        after = p.pageInfo.endCursor
      }
      t.same(seen, want, 'forward pages = the engine\'s ORDER BY')
      const back: number[][] = []
      let before: string | null = null
      for (let i = 0; i < 10; i++) {
        const p = await get({ last: 3, before })
        if (!p) {
          t.fail('no page')
          return
        }
        t.equal(p.pageInfo.hasNextPage, before !== null, 'hasNextPage backward')
        back.unshift(p.edges.map((e) => Number(e.node.id)))
        if (!p.pageInfo.hasPreviousPage) break
        before = p.pageInfo.startCursor
      }
      t.same(back.flat(), want, 'backward pages = the engine\'s ORDER BY')
    }
    const ids = async (text: string) => (await sql(text)).map((r) => Number(Object.values(r)[0]))

    t.test('to-many: pages per parent, in the engine\'s order', async (t) => {
      for (const artist of [1, 2, 3]) {
        await walk(t, `findUniqueM2mcArtist(where: { id: ${artist} })`, 'm2mcAlbumsConnection', ', orderBy: [{ year: asc }]', await ids(`SELECT id FROM m2mc_album WHERE artist_id = ${artist} ORDER BY year ASC${nullsFirst}, id`))
        await walk(t, `findUniqueM2mcArtist(where: { id: ${artist} })`, 'm2mcAlbumsConnection', ', orderBy: [{ year: desc }, { title: asc }], where: { title: { not: { equals: "e" } } }', await ids(`SELECT id FROM m2mc_album WHERE artist_id = ${artist} AND title <> 'e' ORDER BY year DESC${nullsLast}, title, id`))
      }
    })

    t.test('many-to-many shortcut: pages per parent', async (t) => {
      for (const album of [1, 2, 3]) {
        await walk(t, `findUniqueM2mcAlbum(where: { id: ${album} })`, 'm2mcTagsConnection', ', orderBy: { name: desc }', await ids(`SELECT t.id FROM m2mc_tag t JOIN m2mc_album_tag j ON j.tag_id = t.id WHERE j.album_id = ${album} ORDER BY t.name DESC, t.id`))
      }
    })

    t.test('every parent of a list in one statement; first pages and counts per parent', async (t) => {
      const { body, count } = await gql(`{ ${ns}_findManyM2mcArtist(orderBy: { id: asc }) { id m2mcAlbumsConnection(first: 2, orderBy: { year: asc }) { ${PAGE} } } }`)
      t.same(body.errors ?? [], [])
      t.equal(count, 1, 'one statement for three parents')
      const artists = body.data?.[`${ns}_findManyM2mcArtist`] as { id: number; m2mcAlbumsConnection: Page }[]
      for (const a of artists) {
        const want = await ids(`SELECT id FROM m2mc_album WHERE artist_id = ${a.id} ORDER BY year ASC${nullsFirst}, id`)
        t.same(a.m2mcAlbumsConnection.edges.map((e) => Number(e.node.id)), want.slice(0, 2), `artist ${a.id}: first page`)
        t.equal(a.m2mcAlbumsConnection.totalCount, want.length, `artist ${a.id}: totalCount`)
        t.equal(a.m2mcAlbumsConnection.pageInfo.hasNextPage, want.length > 2, `artist ${a.id}: hasNextPage`)
      }
      // A nested connection inside a root connection's node and a nested list, still one statement.
      const deep = await gql(`{ ${ns}_m2mcArtistConnection(first: 1) { edges { node { m2mcAlbums(take: 1, orderBy: { id: asc }) { m2mcTagsConnection(last: 2, orderBy: { name: asc }) { totalCount edges { node { name } } } } } } } }`)
      t.same(deep.body.errors ?? [], [])
      t.equal(deep.count, 1, 'nested three levels: one statement')
      const conn = deep.body.data?.[`${ns}_m2mcArtistConnection`] as { edges: { node: { m2mcAlbums: { m2mcTagsConnection: { totalCount: number; edges: { node: { name: string } }[] } }[] } }[] }
      t.same(conn.edges[0]!.node.m2mcAlbums[0]!.m2mcTagsConnection, { totalCount: 5, edges: [{ node: { name: 'punk' } }, { node: { name: 'rock' } }] })
    })

    t.test('bad input is a coded 400 (TRB_ERR_DB_INPUT)', async (t) => {
      const q = (args: string) => `query${[/\$c/.test(args) ? '$c: String' : '', /\$n/.test(args) ? '$n: Int' : ''].filter(Boolean).join(', ').replace(/^(.+)$/, '($1)')} { ${ns}_findUniqueM2mcArtist(where: { id: 1 }) { m2mcAlbumsConnection(${args}) { ${PAGE} } } }`
      const code = async (args: string, vars: Record<string, unknown>, pattern: RegExp) => {
        const { body } = await gql(q(args), vars)
        t.equal(body.errors?.[0]?.extensions.code, 'TRB_ERR_DB_INPUT', body.errors?.[0]?.message ?? 'no error')
        t.match(body.errors?.[0]?.message ?? '', pattern)
        t.notMatch(JSON.stringify(body), /SELECT|TRB_ERR_INTERNAL/)
      }
      await code('first: 2, after: $c', { c: 'not a cursor!' }, /invalid cursor/)
      const { body } = await gql(q('first: 2, orderBy: { title: asc }'))
      const p = (body.data?.[`${ns}_findUniqueM2mcArtist`] as { m2mcAlbumsConnection: Page }).m2mcAlbumsConnection
      await code('first: 2, after: $c, orderBy: { year: asc }', { c: p.pageInfo.endCursor }, /invalid cursor/)
      const [signature, title, id] = JSON.parse(Buffer.from(p.pageInfo.endCursor!, 'base64url').toString('utf8')) as [string, string, number]
      for (const values of [[{ a: 1 }, id], [title, [1, 2]], [title, true], [title, 'x'], [title, 1.5]]) {
        await code('first: 2, after: $c, orderBy: { title: asc }', { c: Buffer.from(JSON.stringify([signature, ...values])).toString('base64url') }, /invalid cursor/)
      }
      await code('first: $n', { n: MAX_TAKE + 1 }, /maxTake/)
      await code('first: $n', { n: -1 }, /from 0/)
      await code('first: 1, last: 1', {}, /not both/)
      await code('last: 1, after: $c', { c: p.pageInfo.endCursor }, /after/)
    })
  })
}
