/**
 * Nested writes in updates (issue 28): Prisma's `set`, `disconnect`, `delete`, `update`,
 * `updateMany`, `deleteMany`, `upsert` under a to-many relation, `update`/`upsert`/`disconnect`/
 * `delete` under a to-one relation, and `connect`/`create`/`set`/`disconnect` through a many-to-many
 * shortcut (a join table), on SQLite, PostgreSQL and MariaDB, over real HTTP with real JWTs. The
 * `nw_*` tables of test/fixtures/nested-writes/<engine>/ (one private database per engine and one
 * gateway per engine) are checked with direct SQL after each write: rollback on any failure, row
 * filters (NwTag by owner, NwTrack hiding names starting with "hidden") on every row touched, and
 * the bounds (`maxNestedWrites: 12`, 5 levels). PostgreSQL and MySQL skip when unreachable.
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
const TABLES = ['nw_label', 'nw_artist', 'nw_profile', 'nw_album', 'nw_track', 'nw_category', 'nw_tag', 'nw_album_tag']

for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  t.test(`${dialect}: nested writes in updates`, async (t) => {
    const db = await realworldDatabase(dialect, 'nested_upd', 'nested-writes')
    if (db.skipReason) {
      t.pass(`skipped: ${db.skipReason}`)
      return
    }
    t.teardown(db.cleanup)
    const dir = mkdtempSync(join(tmpdir(), 'trb-nested-upd-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const config = resolveConfig({
      datasources: [database({ url: db.url, ...(dialect === 'postgres' ? { schema: db.schema! } : {}), maxNestedWrites: 12 })],
      generatedDir: join(dir, 'generated'),
      operations: { dir: join(dir, 'operations') },
      mode: 'production',
      graphql: { allowArbitraryOperationsInProduction: true },
      auth: { jwt: { secret: Buffer.from(key).toString() }, graphql: 'public' },
      permissions: {
        NwTag: { filter: { owner: { claim: 'sub' } }, bypassRoles: ['admin'] },
        NwTrack: { filter: { NOT: [{ name: { startsWith: 'hidden' } }] }, bypassRoles: ['admin'] },
        // An artist named "Signed…" is visible only while it has a label.
        NwArtist: { filter: { OR: [{ labelCode: { gte: '' } }, { NOT: [{ name: { startsWith: 'Signed' } }] }] }, bypassRoles: ['admin'] },
      },
    })
    const { url: base } = await serveGateway(t, config, { cwd: dir })
    const alice = await mint(key, { sub: 'alice' }, { expiresIn: '1h' })
    const admin = await mint(key, { sub: 'root', roles: ['admin'] }, { expiresIn: '1h' })
    const gql = async (query: string, token = alice, variables?: Record<string, unknown>): Promise<Body> => {
      const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) })
      return (await res.json()) as Body
    }
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, dialect, text, bindings)
    const col = async (text: string, bindings: unknown[] = []) => (await sql(text, bindings)).map((r) => Object.values(r)[0]).map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v))
    const snapshot = async () => {
      const out: Record<string, unknown[]> = {}
      for (const table of TABLES) out[table] = await sql(`SELECT * FROM ${table} ORDER BY 1, 2`)
      return out
    }
    // Rows of every test, written directly (ids fixed; 1 is the fixture's artist and album).
    await sql("INSERT INTO nw_label (country, code, name) VALUES ('US', 'SUB', 'Sub Pop'), ('FR', 'V', 'Vogue')")
    await sql("INSERT INTO nw_artist (id, name, label_country, label_code) VALUES (2, 'Two', 'UK', 'EMI'), (3, 'Three', 'UK', 'EMI'), (4, 'Four', 'US', 'SUB')")
    await sql("INSERT INTO nw_profile (id, artist_id, bio) VALUES (50, 2, 'bio two')")
    const albums: [number, string, number][] = [[2, 'A1', 2], [3, 'A2', 2], [4, 'B1', 2], [5, 'Other', 3]]
    for (const a of albums) await sql(dialect === 'postgres' ? 'INSERT INTO nw_album (id, title, artist_id) OVERRIDING SYSTEM VALUE VALUES (?, ?, ?)' : 'INSERT INTO nw_album (id, title, artist_id) VALUES (?, ?, ?)', a)
    await sql("INSERT INTO nw_track (id, name, album_id) VALUES (1, 'one', 2), (2, 'two', 2), (3, 'hidden three', 2), (4, 'four', 5)")
    await sql("INSERT INTO nw_category (id, name, parent_id) VALUES (1, 'root', NULL), (2, 'a', 1), (3, 'b', 1), (4, 'loose', NULL)")

    await t.test('to-many: update, updateMany, delete, deleteMany, upsert, create in one update', async (t) => {
      const res = await gql(`mutation {
        updateOneNwArtist(where: { id: 2 }, data: { nwAlbums: {
          update: [{ where: { id: 2 }, data: { title: { set: "A1 remastered" }, nwTracks: { update: [{ where: { id: 1 }, data: { name: { set: "one!" } } }] } } }]
          updateMany: [{ where: { title: { startsWith: "A2" } }, data: { title: { set: "A2 live" } } }]
          delete: [{ id: 4 }]
          upsert: [{ where: { id: 999 }, update: { title: { set: "never" } }, create: { title: "Upserted" } }]
          create: [{ title: "Created" }]
        } }) { name nwAlbums(orderBy: { title: asc }) { title } }
      }`)
      t.same(res, { data: { updateOneNwArtist: { name: 'Two', nwAlbums: [{ title: 'A1 remastered' }, { title: 'A2 live' }, { title: 'Created' }, { title: 'Upserted' }] } } })
      t.same(await col('SELECT title FROM nw_album WHERE artist_id = 2 ORDER BY title'), ['A1 remastered', 'A2 live', 'Created', 'Upserted'], 'SQL: the albums of artist 2')
      t.same(await col('SELECT name FROM nw_track WHERE id = 1'), ['one!'], 'SQL: an update two levels down')
      t.same(await col('SELECT COUNT(*) FROM nw_album WHERE id = 4'), [0], 'SQL: delete removed B1')
      // upsert's update branch, deleteMany scoped to the parent: artist 3's album stays.
      const up = await gql('mutation { updateOneNwArtist(where: { id: 2 }, data: { nwAlbums: { upsert: [{ where: { id: 3 }, update: { title: { set: "A2 again" } }, create: { title: "never" } }], deleteMany: [{ title: { in: ["Created", "Upserted", "Other"] } }] } }) { nwAlbums(orderBy: { title: asc }) { title } } }')
      t.same(up, { data: { updateOneNwArtist: { nwAlbums: [{ title: 'A1 remastered' }, { title: 'A2 again' }] } } })
      t.same(await col("SELECT artist_id FROM nw_album WHERE title = 'Other'"), [3], 'SQL: deleteMany touched only the parent\'s rows')
    })

    await t.test('to-many: not related, not found, required relation: coded errors, nothing written', async (t) => {
      const before = await snapshot()
      const cases: [string, string, string][] = [
        ['delete of another artist\'s album', 'nwAlbums: { create: [{ title: "x" }], delete: [{ id: 5 }] }', 'TRB_ERR_DB_NOT_FOUND'],
        ['update of another artist\'s album', 'nwAlbums: { update: [{ where: { id: 5 }, data: { title: { set: "stolen" } } }] }', 'TRB_ERR_DB_NOT_FOUND'],
        ['delete of a missing album', 'nwAlbums: { delete: [{ id: 424242 }] }', 'TRB_ERR_DB_NOT_FOUND'],
        ['disconnect of a NOT NULL key', 'nwAlbums: { disconnect: [{ id: 2 }] }', 'TRB_ERR_DB_RELATION_REQUIRED'],
        ['set on a NOT NULL key', 'nwAlbums: { set: [] }', 'TRB_ERR_DB_RELATION_REQUIRED'],
        ['a unique violation after a delete', 'nwAlbums: { delete: [{ id: 3 }], create: [{ title: "A1 remastered" }] }', 'TRB_ERR_DB_UNIQUE'],
        ['a unique violation in updateMany', 'nwAlbums: { updateMany: [{ where: {}, data: { title: { set: "same" } } }] }', 'TRB_ERR_DB_UNIQUE'],
        ['a CHECK violation in a nested updateMany', 'nwAlbums: { update: [{ where: { id: 2 }, data: { nwTracks: { updateMany: [{ where: {}, data: { name: { set: "" } } }] } } }] }', 'TRB_ERR_DB_CHECK'],
        ['an upsert that may create in a filtered model (without bypassRoles)', 'nwAlbums: { update: [{ where: { id: 2 }, data: { nwTracks: { upsert: [{ where: { id: 1 }, update: {}, create: { name: "x" } }] } } }] }', 'TRB_ERR_AUTH_FORBIDDEN'],
        ['a to-one delete of a row others point to', 'nwProfile: { delete: true }, nwLabel: { delete: true }', 'TRB_ERR_DB_FOREIGN_KEY'],
      ]
      for (const [what, data, code] of cases) {
        const res = await gql(`mutation { a: updateOneNwCategory(where: { id: 4 }, data: { name: { set: "changed" } }) { name } b: updateOneNwArtist(where: { id: 2 }, data: { name: { set: "Renamed" }, ${data} }) { name } }`)
        t.same(codes(res), ['TRB_ERR_DB_ROLLED_BACK', code], `${what}: ${code}, the other field rolled back`, { errors: res.errors })
        t.notMatch(JSON.stringify(res), /TRB_ERR_INTERNAL|UPDATE|DELETE|SELECT/, `${what}: no SQL, nothing internal`)
        t.same(await snapshot(), before, `${what}: SQL: nothing was written`)
      }
    })

    await t.test('to-many with a nullable key: set and disconnect (compound and self relations)', async (t) => {
      const res = await gql('mutation { updateOneNwLabel(where: { country_code: { country: "UK", code: "EMI" } }, data: { nwArtists: { disconnect: [{ id: 2 }, { id: 1 }] } }) { nwArtists { name } } }')
      t.same(res, { data: { updateOneNwLabel: { nwArtists: [{ name: 'Three' }] } } }, 'disconnecting a row that is not connected does nothing (Prisma)')
      t.same(await sql('SELECT id, label_country, label_code FROM nw_artist WHERE id IN (2, 3) ORDER BY id'), [{ id: 2, label_country: null, label_code: null }, { id: 3, label_country: 'UK', label_code: 'EMI' }], 'SQL: both key columns set to NULL')
      const set = await gql('mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { set: [{ id: 3 }, { id: 4 }] } }) { nwCategories(orderBy: { id: asc }) { id } } }')
      t.same(set, { data: { updateOneNwCategory: { nwCategories: [{ id: 3 }, { id: 4 }] } } })
      t.same(await sql('SELECT id, parent_id FROM nw_category ORDER BY id'), [{ id: 1, parent_id: null }, { id: 2, parent_id: null }, { id: 3, parent_id: 1 }, { id: 4, parent_id: 1 }], 'SQL: set disconnected a, kept b, connected loose')
      const missing = await gql('mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { set: [{ id: 2 }, { id: 77 }] } }) { id } }')
      t.same(codes(missing), ['TRB_ERR_DB_NOT_FOUND'], 'set to a missing row')
      t.same(await col('SELECT id FROM nw_category WHERE parent_id = 1 ORDER BY id'), [3, 4], 'SQL: rolled back')
    })

    await t.test('to-one: update, upsert, disconnect, delete on both sides', async (t) => {
      const a = await gql('mutation { updateOneNwAlbum(where: { id: 5 }, data: { artist: { update: { name: { set: "Three!" } } } }) { artist { name } } }')
      t.same(a, { data: { updateOneNwAlbum: { artist: { name: 'Three!' } } } }, 'update through a required key (…UpdateOneRequiredWithout…)')
      t.same(await col('SELECT name FROM nw_artist WHERE id = 3'), ['Three!'])
      const b = await gql('mutation { updateOneNwArtist(where: { id: 3 }, data: { nwLabel: { disconnect: true }, nwProfile: { upsert: { update: { bio: { set: "never" } }, create: { bio: "new bio" } } } }) { nwLabel { name } nwProfile { bio } } }')
      t.same(b, { data: { updateOneNwArtist: { nwLabel: null, nwProfile: { bio: 'new bio' } } } })
      t.same(await sql('SELECT label_country, label_code FROM nw_artist WHERE id = 3'), [{ label_country: null, label_code: null }], 'SQL: the compound key set to NULL')
      t.same(await col('SELECT bio FROM nw_profile WHERE artist_id = 3'), ['new bio'], 'SQL: the back side\'s upsert created')
      const c = await gql('mutation { updateOneNwArtist(where: { id: 4 }, data: { nwLabel: { upsert: { update: { name: { set: "Sub Pop!" } }, create: { country: "X", code: "Y", name: "never" } } } }) { nwLabel { name } } }')
      t.same(c, { data: { updateOneNwArtist: { nwLabel: { name: 'Sub Pop!' } } } }, 'upsert on the key side: the row it points to is updated')
      const d = await gql('mutation { updateOneNwArtist(where: { id: 4 }, data: { nwLabel: { delete: true } }) { nwLabel { name } } }')
      t.same(d, { data: { updateOneNwArtist: { nwLabel: null } } })
      t.same(await col("SELECT COUNT(*) FROM nw_label WHERE code = 'SUB'"), [0], 'SQL: delete: true deleted the label')
      const e = await gql('mutation { updateOneNwArtist(where: { id: 3 }, data: { nwProfile: { update: { bio: { set: "edited" } } } }) { nwProfile { bio } } }')
      t.same(e, { data: { updateOneNwArtist: { nwProfile: { bio: 'edited' } } } })
      const f = await gql('mutation { updateOneNwArtist(where: { id: 3 }, data: { nwProfile: { disconnect: true } }) { id } }')
      t.same(codes(f), ['TRB_ERR_DB_RELATION_REQUIRED'], 'the profile\'s key is NOT NULL')
      const g = await gql('mutation { updateOneNwArtist(where: { id: 3 }, data: { nwProfile: { delete: true } }) { nwProfile { bio } } }')
      t.same(g, { data: { updateOneNwArtist: { nwProfile: null } } })
      t.same(await col('SELECT COUNT(*) FROM nw_profile WHERE artist_id = 3'), [0], 'SQL: the back side\'s delete')
      const h = await gql('mutation { updateOneNwArtist(where: { id: 3 }, data: { nwProfile: { delete: true } }) { id } }')
      t.same(codes(h), ['TRB_ERR_DB_NOT_FOUND'], 'delete: true with no related row')
      const v = await gql('mutation($off: Boolean) { updateOneNwCategory(where: { id: 3 }, data: { parent: { disconnect: $off } }) { parent { id } } }', alice, { off: false })
      t.same(v, { data: { updateOneNwCategory: { parent: { id: 1 } } } }, 'disconnect: false (a variable) does nothing')
      const w = await gql('mutation { upsertOneNwCategory(where: { id: 3 }, create: { name: "never" }, update: { parent: { disconnect: true } }) { parent { id } } }')
      t.same(w, { data: { upsertOneNwCategory: { parent: null } } }, 'in upsertOne\'s update')
      t.same(await col('SELECT parent_id FROM nw_category WHERE id = 3'), [null])
    })

    await t.test('many-to-many shortcut: connect, create, set, disconnect through the join table', async (t) => {
      const tags = async () => col('SELECT tag_id FROM nw_album_tag WHERE album_id = 2 ORDER BY tag_id')
      const a = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { connect: [{ id: 1 }, { id: 3 }], create: [{ name: "new", owner: "root" }] } }) { nwTags(orderBy: { id: asc }) { name } } }', admin)
      t.same(a, { data: { updateOneNwAlbum: { nwTags: [{ name: 'rock' }, { name: 'secret' }, { name: 'new' }] } } })
      const created = Number((await col("SELECT id FROM nw_tag WHERE name = 'new'"))[0])
      t.same(await tags(), [1, 3, created], 'SQL: three join rows')
      const again = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { connect: [{ id: 1 }] } }) { id } }', admin)
      t.notOk(again.errors, 'connecting a connected row keeps its join row')
      // Alice sees only her tags: set [] and disconnect leave bob's tag (3) and root's (new) alone.
      const b = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { set: [], disconnect: [{ id: 3 }] } }) { nwTags { name } } }')
      t.same(b, { data: { updateOneNwAlbum: { nwTags: [] } } })
      t.same(await tags(), [3, created], 'SQL: only alice\'s join row was deleted')
      const c = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { connect: [{ id: 2 }] } }) { id } }')
      t.same(codes(c), ['TRB_ERR_AUTH_FORBIDDEN'], 'connecting into a filtered model needs bypassRoles, as before')
      const d = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { set: [{ id: 2 }] } }) { nwTags { name } } }', admin)
      t.same(d, { data: { updateOneNwAlbum: { nwTags: [{ name: 'pop' }] } } })
      t.same(await tags(), [2], 'SQL: set replaced every join row')
      const e = await gql('mutation { createOneNwAlbum(data: { title: "Tagged", artist: { connect: { id: 3 } }, nwTags: { connect: [{ id: 1 }], connectOrCreate: [{ where: { name: "pop" }, create: { name: "pop" } }] } }) { id nwTags(orderBy: { id: asc }) { name } } }', admin)
      t.same((e.data?.['createOneNwAlbum'] as { nwTags: unknown }).nwTags, [{ name: 'rock' }, { name: 'pop' }], 'in createOne')
      const f = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTags: { set: [], connect: [{ id: 424242 }] } }) { id } }', admin)
      t.same(codes(f), ['TRB_ERR_DB_NOT_FOUND'])
      t.same(await tags(), [2], 'SQL: rolled back')
    })

    await t.test('row filters: a hidden row is not found and not touched; a write may not hide a row', async (t) => {
      const tracks = async () => sql('SELECT id, name, album_id FROM nw_track WHERE album_id = 2 ORDER BY id')
      const before = await tracks()
      const upd = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { update: [{ where: { id: 3 }, data: { name: { set: "seen" } } }] } }) { id } }')
      t.same(codes(upd), ['TRB_ERR_DB_NOT_FOUND'], 'update of a hidden track')
      const del = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { delete: [{ id: 3 }] } }) { id } }')
      t.same(codes(del), ['TRB_ERR_DB_NOT_FOUND'], 'delete of a hidden track')
      const hide = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { update: [{ where: { id: 2 }, data: { name: { set: "hidden now" } } }] } }) { id } }')
      t.same(codes(hide), ['TRB_ERR_AUTH_FORBIDDEN'], 'update that hides the row')
      const hideMany = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { updateMany: [{ where: {}, data: { name: { set: "hidden all" } } }] } }) { id } }')
      t.same(codes(hideMany), ['TRB_ERR_AUTH_FORBIDDEN'], 'updateMany that hides rows')
      t.same(await tracks(), before, 'SQL: nothing written')
      const many = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { updateMany: [{ where: {}, data: { name: { set: "same" } } }] } }) { nwTracks { name } } }')
      t.same(many, { data: { updateOneNwAlbum: { nwTracks: [{ name: 'same' }, { name: 'same' }] } } })
      const gone = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { deleteMany: [{}] } }) { nwTracks { name } } }')
      t.same(gone, { data: { updateOneNwAlbum: { nwTracks: [] } } })
      t.same(await tracks(), [{ id: 3, name: 'hidden three', album_id: 2 }], 'SQL: updateMany and deleteMany left the hidden track alone')
      const asAdmin = await gql('mutation { updateOneNwAlbum(where: { id: 2 }, data: { nwTracks: { update: [{ where: { id: 3 }, data: { name: { set: "shown" } } }] } }) { nwTracks { name } } }', admin)
      t.same(asAdmin, { data: { updateOneNwAlbum: { nwTracks: [{ name: 'shown' }] } } }, 'bypassRoles')
      // Detaching a row that its filter then hides: refused, as an update that hides it.
      await sql("INSERT INTO nw_artist (id, name, label_country, label_code) VALUES (6, 'Signed Six', 'UK', 'EMI')")
      const signed = async () => sql('SELECT label_country, label_code FROM nw_artist WHERE id = 6')
      for (const op of ['disconnect: [{ id: 6 }]', 'set: []']) {
        const res = await gql(`mutation { updateOneNwLabel(where: { country_code: { country: "UK", code: "EMI" } }, data: { nwArtists: { ${op} } }) { name } }`)
        t.same(codes(res), ['TRB_ERR_AUTH_FORBIDDEN'], `${op}: the detached row would be hidden`)
        t.same(await signed(), [{ label_country: 'UK', label_code: 'EMI' }], `${op}: SQL: nothing written`)
      }
      const detached = await gql('mutation { updateOneNwLabel(where: { country_code: { country: "UK", code: "EMI" } }, data: { nwArtists: { disconnect: [{ id: 6 }] } }) { nwArtists { name } } }', admin)
      t.same(detached, { data: { updateOneNwLabel: { nwArtists: [] } } }, 'bypassRoles')
      t.same(await signed(), [{ label_country: null, label_code: null }])
    })

    await t.test('attack: maxNestedWrites counts the rows set, updateMany and deleteMany change; depth', async (t) => {
      for (let i = 0; i < 14; i++) await sql('INSERT INTO nw_category (id, name, parent_id) VALUES (?, ?, 1)', [100 + i, `c${i}`])
      const before = await snapshot()
      const over = await gql('mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { updateMany: [{ where: {}, data: { name: { set: "x" } } }] } }) { id } }')
      t.same(codes(over), ['TRB_ERR_DB_INPUT'], 'updateMany of 16 rows, limit 12')
      t.match(over.errors?.[0]?.message, /more than 12 rows \(maxNestedWrites\)/)
      const del = await gql('mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { deleteMany: [{ name: { startsWith: "c" } }] } }) { id } }')
      t.same(codes(del), ['TRB_ERR_DB_INPUT'], 'deleteMany of 14 rows')
      const set = await gql('mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { set: [] } }) { id } }')
      t.same(codes(set), ['TRB_ERR_DB_INPUT'], 'set disconnecting 16 rows')
      const items = Array.from({ length: 13 }, (_, i) => `{ where: { id: ${i + 1000} } data: {} }`).join(' ')
      const count = await gql(`mutation { updateOneNwCategory(where: { id: 1 }, data: { nwCategories: { update: [${items}] } }) { id } }`)
      t.same(codes(count), ['TRB_ERR_DB_INPUT'], '13 update items, refused before any statement')
      let deep = '{ name: { set: "leaf" } }'
      for (let i = 0; i < 6; i++) deep = `{ nwCategories: { update: [{ where: { id: 2 }, data: ${deep} }] } }`
      const tooDeep = await gql(`mutation { updateOneNwCategory(where: { id: 1 }, data: ${deep}) { id } }`)
      t.same(codes(tooDeep), ['TRB_ERR_DB_INPUT'])
      t.match(tooDeep.errors?.[0]?.message, /deeper than 5 levels/)
      t.same(await snapshot(), before, 'SQL: nothing was written')
    })
  })
}
