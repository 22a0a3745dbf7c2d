/**
 * Nested to-many writes through a many-to-many shortcut (issue 28): Prisma's `delete`, `update`,
 * `updateMany`, `deleteMany`, `upsert` (besides `set`, `disconnect`, `create`, `connect`,
 * `connectOrCreate`, tested in database-nested-updates.test.ts) on `NwAlbum.nwTags` through the pure
 * join table `nw_album_tag`, in updateOne and upsertOne, on SQLite, PostgreSQL and MariaDB, over real
 * HTTP with real JWTs. Every write is compared with the engine's own rows (direct SQL): only rows
 * linked to the parent are touched, a row hidden by NwTag's row filter (by owner) is neither changed
 * nor deleted, `maxNestedWrites: 12` refuses before anything is written, bad keys are coded 400.
 * PostgreSQL and MySQL skip when unreachable.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { mint } from './helpers/auth.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { serveGateway } from './helpers/serve.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; extensions: { code: string } }[] }

const key = new TextEncoder().encode(randomBytes(32).toString('base64url'))
const codes = (b: Body): string[] => (b.errors ?? []).map((e) => e.extensions.code)

for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  t.test(`${dialect}: nested writes through a many-to-many shortcut`, async (t) => {
    const db = await realworldDatabase(dialect, 'm2mconn_nw', 'nested-writes')
    if (db.skipReason) {
      t.pass(`skipped: ${db.skipReason}`)
      return
    }
    t.teardown(db.cleanup)
    const dir = mkdtempSync(join(tmpdir(), 'trb-nested-m2m-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const config = resolveConfig({
      datasources: [database({ url: db.url, ...(dialect === 'postgres' ? { schema: db.schema! } : {}), maxNestedWrites: 12 })],
      generatedDir: join(dir, 'generated'),
      operations: { dir: join(dir, 'operations') },
      mode: 'production',
      graphql: { allowArbitraryOperationsInProduction: true },
      auth: { jwt: { secret: Buffer.from(key).toString() }, graphql: 'public' },
      permissions: { NwTag: { filter: { owner: { claim: 'sub' } }, bypassRoles: ['admin'] }, 'NwArtist.nwAlbums': { roles: ['admin'] } },
    })
    const { url: base } = await serveGateway(t, config, { cwd: dir })
    const alice = await mint(key, { sub: 'alice' }, { expiresIn: '1h' })
    const admin = await mint(key, { sub: 'root', roles: ['admin'] }, { expiresIn: '1h' })
    const gql = async (query: string, token = alice): Promise<Body> => {
      const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query }) })
      return (await res.json()) as Body
    }
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, dialect, text, bindings)
    const num = (v: unknown): unknown => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)
    const tags = async () => (await sql('SELECT id, name, owner FROM nw_tag ORDER BY id')).map((r): Record<string, unknown> => ({ ...r, id: num(r['id']) }))
    const links = async () => (await sql('SELECT album_id, tag_id FROM nw_album_tag ORDER BY album_id, tag_id')).map((r) => [num(r['album_id']), num(r['tag_id'])])
    const snapshot = async () => ({ tags: await tags(), links: await links() })
    /** The names of album `id`'s tags as the engine joins them, in name order. */
    const linkedNames = async (id: number) => (await sql('SELECT t.name FROM nw_tag t JOIN nw_album_tag j ON j.tag_id = t.id WHERE j.album_id = ? ORDER BY t.name', [id])).map((r) => r['name'])

    await sql("INSERT INTO nw_artist (id, name) VALUES (2, 'Two')")
    await sql("INSERT INTO nw_category (id, name, parent_id) VALUES (1, 'root', NULL)")
    for (const a of [[2, 'A', 2], [3, 'B', 2], [5, 'C', 1]]) await sql(dialect === 'postgres' ? 'INSERT INTO nw_album (id, title, artist_id) OVERRIDING SYSTEM VALUE VALUES (?, ?, ?)' : 'INSERT INTO nw_album (id, title, artist_id) VALUES (?, ?, ?)', a)
    await sql("INSERT INTO nw_tag (id, name, owner) VALUES (4, 'jazz', 'alice'), (5, 'blues', 'alice'), (6, 'punk', 'alice'), (7, 'psych', 'alice')")
    // Album 2: rock, pop, secret (bob's), jazz, punk, psych; album 3: rock, jazz; album 5: pop. Blues is linked to none.
    await sql('INSERT INTO nw_album_tag (album_id, tag_id) VALUES (2, 1), (2, 2), (2, 3), (2, 4), (2, 6), (2, 7), (3, 1), (3, 4), (5, 2)')

    await t.test('update, updateMany, delete, deleteMany in one update act on the linked rows only', async (t) => {
      const res = await gql(`mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: {
        update: [{ where: { id: 1 }, data: { name: { set: "rock!" } } }]
        updateMany: [{ where: { name: { startsWith: "p" } }, data: { name: { set: "p!" } } }]
        delete: [{ name: "jazz" }]
        deleteMany: [{ name: { in: ["p!", "blues"] } }]
      } }) { nwTags(orderBy: { name: asc }) { name } } }`)
      // updateMany renamed pop, punk, psych to "p!"... a unique violation: name is UNIQUE. Rolled back.
      t.same(codes(res), ['TRB_ERR_DB_UNIQUE'], 'updateMany of three linked rows to one unique name')
      t.same(await linkedNames(2), ['jazz', 'pop', 'psych', 'punk', 'rock', 'secret'], 'SQL: rolled back')
      const ok = await gql(`mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: {
        update: [{ where: { id: 1 }, data: { name: { set: "rock!" } } }]
        updateMany: [{ where: { name: { startsWith: "ps" } }, data: { owner: { set: "alice" }, name: { set: "psy" } } }]
        delete: [{ name: "jazz" }]
        deleteMany: [{ name: { in: ["punk", "blues"] } }]
      } }) { nwTags(orderBy: { name: asc }) { name } } }`)
      t.same(ok, { data: { updateOneNwAlbum: { nwTags: [{ name: 'pop' }, { name: 'psy' }, { name: 'rock!' }] } } })
      t.same(await linkedNames(2), ['pop', 'psy', 'rock!', 'secret'], 'SQL: album 2\'s tags (bob\'s secret untouched)')
      t.same(await linkedNames(3), ['rock!'], 'SQL: the deleted jazz lost its join row to album 3 too')
      t.same((await tags()).map((r) => r['name']), ['rock!', 'pop', 'secret', 'blues', 'psy'], 'SQL: jazz and punk deleted; blues (not linked) kept by deleteMany')
    })

    await t.test('not linked, hidden, or hidden by the write: coded errors, nothing written', async (t) => {
      const before = await snapshot()
      const cases: [string, string, string][] = [
        ['update of a tag linked to another album only', 'update: [{ where: { id: 5 }, data: { name: { set: "stolen" } } }]', 'TRB_ERR_DB_NOT_FOUND'],
        ['delete of a tag not linked', 'delete: [{ id: 5 }]', 'TRB_ERR_DB_NOT_FOUND'],
        ['update of a hidden (bob\'s) linked tag', 'update: [{ where: { id: 3 }, data: { name: { set: "seen" } } }]', 'TRB_ERR_DB_NOT_FOUND'],
        ['delete of a hidden linked tag', 'delete: [{ id: 3 }]', 'TRB_ERR_DB_NOT_FOUND'],
        ['update that hides the row', 'update: [{ where: { id: 1 }, data: { owner: { set: "bob" } } }]', 'TRB_ERR_AUTH_FORBIDDEN'],
        ['updateMany that hides rows', 'updateMany: [{ where: {}, data: { owner: { set: "bob" } } }]', 'TRB_ERR_AUTH_FORBIDDEN'],
        ['a missing tag after a deleteMany', 'deleteMany: [{}], update: [{ where: { id: 424242 }, data: {} }]', 'TRB_ERR_DB_NOT_FOUND'],
        ['a unique violation after a delete', 'delete: [{ id: 1 }], updateMany: [{ where: { id: { equals: 2 } }, data: { name: { set: "blues" } } }]', 'TRB_ERR_DB_UNIQUE'],
      ]
      for (const [what, ops, code] of cases) {
        const res = await gql(`mutation { a: updateOneNwCategory(where: { id: 1 }, data: { name: { set: "changed" } }) { name } b: updateOneNwAlbum(where: { id: 2 }, data: { title: { set: "Renamed" }, nwTags: { ${ops} } }) { title } }`)
        t.same(codes(res), ['TRB_ERR_DB_ROLLED_BACK', code], `${what}: ${code}, the other field rolled back`, { errors: res.errors })
        t.notMatch(JSON.stringify(res), /TRB_ERR_INTERNAL|UPDATE|DELETE|SELECT/, `${what}: no SQL, nothing internal`)
        t.same(await snapshot(), before, `${what}: SQL: nothing was written`)
      }
      t.same(await sql("SELECT COUNT(*) AS n FROM nw_category WHERE name = 'changed'").then((r) => num(r[0]!['n'])), 0)
      // Set-based writes leave the hidden row alone: nothing matches, nothing is written.
      const many = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { updateMany: [{ where: { name: { equals: "secret" } }, data: { name: { set: "x" } } }], deleteMany: [{ name: { equals: "secret" } }] } }) { nwTags(orderBy: { name: asc }) { name } } }')
      t.same(many, { data: { updateOneNwAlbum: { nwTags: [{ name: 'pop' }, { name: 'psy' }, { name: 'rock!' }] } } }, 'updateMany/deleteMany of a hidden row: nothing')
      t.same(await snapshot(), before)
    })

    await t.test('upsert (update and create branches) and upsertOne', async (t) => {
      const res = await gql(`mutation { updateOneNwAlbum(where: { id: 3 }, data: { nwTags: {
        upsert: [
          { where: { id: 1 }, update: { name: { set: "rock" } }, create: { name: "never" } },
          { where: { id: 5 }, update: { name: { set: "never" } }, create: { name: "new blues", owner: "root" } }
        ]
      } }) { nwTags(orderBy: { name: asc }) { name } } }`, admin)
      t.same(res, { data: { updateOneNwAlbum: { nwTags: [{ name: 'new blues' }, { name: 'rock' }] } } }, 'id 5 is not linked to album 3: created and linked')
      t.same(await linkedNames(3), ['new blues', 'rock'], 'SQL')
      t.same(await sql("SELECT owner FROM nw_tag WHERE id = 5"), [{ owner: 'alice' }], 'SQL: blues itself untouched')
      const noBypass = await gql('mutation { updateOneNwAlbum(where: { id: 3 }, data: { nwTags: { upsert: [{ where: { id: 1 }, update: {}, create: { name: "x" } }] } }) { id } }')
      t.same(codes(noBypass), ['TRB_ERR_AUTH_FORBIDDEN'], 'an upsert that may create in a filtered model needs bypassRoles, as elsewhere')
      const one = await gql('mutation { upsertOneNwAlbum(where: { id: 3 }, create: { title: "never", artist: { connect: { id: 2 } } }, update: { nwTags: { deleteMany: [{ name: { startsWith: "new" } }], update: [{ where: { id: 1 }, data: { name: { set: "rock 2" } } }] } }) { nwTags { name } } }', admin)
      t.same(one, { data: { upsertOneNwAlbum: { nwTags: [{ name: 'rock 2' }] } } }, 'in upsertOne\'s update')
      t.same(await linkedNames(3), ['rock 2'], 'SQL')
      t.same(await sql("SELECT COUNT(*) AS n FROM nw_tag WHERE name = 'new blues'").then((r) => num(r[0]!['n'])), 0, 'SQL: deleteMany deleted the tag itself')
    })

    await t.test('a rule on a relation field guards its nested connection; the connection pages through the shortcut', async (t) => {
      const q = '{ findUniqueNwArtist(where: { id: 2 }) { nwAlbumsConnection(first: 1) { totalCount } } }'
      const denied = await gql(q)
      t.same(codes(denied), ['TRB_ERR_AUTH_FORBIDDEN'], "'NwArtist.nwAlbums' guards nwAlbumsConnection")
      t.same(await gql(q, admin), { data: { findUniqueNwArtist: { nwAlbumsConnection: { totalCount: 2 } } } })
      const tagsConn = await gql('{ findUniqueNwAlbum(where: { id: 2 }) { nwTagsConnection(first: 2, orderBy: { name: asc }) { totalCount edges { node { name } } pageInfo { hasNextPage } } } }')
      t.same(tagsConn, { data: { findUniqueNwAlbum: { nwTagsConnection: { totalCount: 3, edges: [{ node: { name: 'pop' } }, { node: { name: 'psy' } }], pageInfo: { hasNextPage: true } } } } }, 'the row filter applies (bob\'s secret is not counted)')
    })

    await t.test('attack: maxNestedWrites (12) refuses before anything is written; bad keys are 400', async (t) => {
      for (let i = 0; i < 14; i++) {
        await sql('INSERT INTO nw_tag (id, name, owner) VALUES (?, ?, ?)', [200 + i, `bulk${i}`, 'alice'])
        await sql('INSERT INTO nw_album_tag (album_id, tag_id) VALUES (5, ?)', [200 + i])
      }
      const before = await snapshot()
      const over = await gql('mutation { a: updateOneNwCategory(where: { id: 1 }, data: { name: { set: "half" } }) { id } b: updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { updateMany: [{ where: { name: { startsWith: "bulk" } }, data: { owner: { set: "alice" } } }] } }) { id } }')
      t.same(codes(over), ['TRB_ERR_DB_ROLLED_BACK', 'TRB_ERR_DB_INPUT'], 'updateMany of 14 rows, limit 12; the other field rolled back')
      t.match(over.errors?.[1]?.message, /more than 12 rows \(maxNestedWrites\)/)
      const del = await gql('mutation { updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { deleteMany: [{ name: { startsWith: "bulk" } }] } }) { id } }')
      t.same(codes(del), ['TRB_ERR_DB_INPUT'], 'deleteMany of 14 rows: counted before the first delete')
      const set = await gql('mutation { updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { set: [] } }) { id } }')
      t.same(codes(set), ['TRB_ERR_DB_INPUT'], 'set removing 15 join rows')
      const items = Array.from({ length: 13 }, (_, i) => `{ where: { id: ${200 + i} } data: {} }`).join(' ')
      const count = await gql(`mutation { updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { update: [${items}] } }) { id } }`)
      t.same(codes(count), ['TRB_ERR_DB_INPUT'], '13 update items, refused while compiling')
      const ups = Array.from({ length: 7 }, (_, i) => `{ where: { id: ${200 + i} } update: {} create: { name: "u${i}" } }`).join(' ')
      const upsert = await gql(`mutation { updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { upsert: [${ups}] } }) { id } }`, admin)
      t.notOk(upsert.errors, '7 upserts count 7 (not 14)', { errors: upsert.errors })
      t.same(await snapshot(), before, 'SQL: nothing was written')
      for (const [what, ops] of [
        ['no unique field', 'update: [{ where: {}, data: {} }]'],
        ['no unique field in delete', 'delete: [{ owner: { equals: "alice" } }]'],
        ['a key of the wrong type', 'delete: [{ id: "one" }]'],
        ['a key out of range', 'update: [{ where: { id: 99999999999 }, data: {} }]'],
      ] as const) {
        const res = await gql(`mutation { updateOneNwAlbum(where: { id: 5 }, data: { nwTags: { ${ops} } }) { id } }`)
        // Both codes are 400 in the error-code table (a field error's response is 200 with application/json).
        t.ok(['TRB_ERR_DB_INPUT', 'TRB_ERR_GRAPHQL_VALIDATION'].includes(codes(res)[0]!), `${what}: ${codes(res).join()}`)
        t.notMatch(JSON.stringify(res), /TRB_ERR_INTERNAL|SELECT|DELETE/, `${what}: nothing internal`)
      }
      t.same(await snapshot(), before, 'SQL: nothing was written')
    })
  })
}
