/**
 * Nested writes (issue 10 item 12): the relation fields of `createOne`/`updateOne`/`upsertOne` data
 * create, connect and connectOrCreate related rows, in the request's transaction, on SQLite,
 * PostgreSQL and MariaDB/MySQL. The `nw_*` tables of test/fixtures/nested-writes/<engine>/ are
 * written over real HTTP (POST /graphql) and checked with direct SQL; also Chinook's PlaylistTrack
 * (a compound primary key of two foreign keys) on SQLite. PostgreSQL and MySQL skip when unreachable.
 */
import t, { type Test } from 'tap'
import { database } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { parse, type GraphQLInputObjectType, type OperationDefinitionNode } from 'graphql'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import type { LocalSubschema } from '../gateway/connectors/types.js'
import { variablesSchema, type JsonSchema } from '../gateway/operations/json-schema.js'
import { testContext } from './helpers/database-source.js'
import { chinookSqlite } from './helpers/chinook.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway, type Answer } from './helpers/db-gateway.js'

const DIALECTS: Dialect[] = ['sqlite', 'postgres', 'mysql']

interface Env {
  gql(query: string, variables?: Record<string, unknown>): Promise<Answer>
  sql(text: string, bindings?: unknown[]): Promise<Record<string, unknown>[]>
  /** `SELECT COUNT(*)` of each nw_* table, by table. */
  counts(): Promise<Record<string, number>>
}

const TABLES = ['nw_label', 'nw_artist', 'nw_profile', 'nw_album', 'nw_track', 'nw_category']

/** A private nw_* database on one engine behind a gateway on 127.0.0.1, and a direct connection; null when the engine is unreachable. */
async function setup(t: Test, dialect: Dialect, label: string, options: { maxNestedWrites?: number } = {}): Promise<Env | null> {
  const db = await realworldDatabase(dialect, `nested_${label}`, 'nested-writes')
  if (db.skipReason) {
    t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const server = await startDatabaseGateway(t, [database({ url: db.url, ...(dialect === 'postgres' ? { schema: db.schema! } : {}), ...options })])
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, dialect, text, bindings)
  return {
    gql: (query, variables) => server.gql(query, variables),
    sql,
    async counts() {
      const out: Record<string, number> = {}
      for (const table of TABLES) out[table] = Number((await sql(`SELECT COUNT(*) AS n FROM ${table}`))[0]!['n'])
      return out
    },
  }
}

const codes = (a: Answer): string[] => (a.body.errors ?? []).map((e) => e.extensions.code)

for (const dialect of DIALECTS) {
  t.test(`${dialect}: nested create, connect and connectOrCreate in createOne`, async (t) => {
    const env = await setup(t, dialect, 'create')
    if (!env) return
    const created = await env.gql(`mutation {
      createOneNwArtist(data: {
        name: "Queen"
        nwLabel: { connectOrCreate: { where: { country_code: { country: "UK", code: "EMI" } }, create: { country: "UK", code: "EMI", name: "never used" } } }
        nwProfile: { create: { bio: "Rock band" } }
        nwAlbums: {
          create: [
            { title: "A Night at the Opera", nwTracks: { create: [{ name: "Bohemian Rhapsody" }, { name: "Love of My Life" }] } }
            { title: "Jazz" }
          ]
          connect: [{ id: 1 }]
        }
      }) { id name nwLabel { name } nwProfile { bio } nwAlbums(orderBy: { title: asc }) { title nwTracks(orderBy: { name: asc }) { name } } }
    }`)
    t.notOk(created.body.errors, 'no errors', { errors: created.body.errors })
    const artist = created.body.data?.['createOneNwArtist'] as { id: number }
    t.same(created.body.data, {
      createOneNwArtist: {
        id: artist.id,
        name: 'Queen',
        nwLabel: { name: 'EMI Records' },
        nwProfile: { bio: 'Rock band' },
        nwAlbums: [
          { title: 'A Night at the Opera', nwTracks: [{ name: 'Bohemian Rhapsody' }, { name: 'Love of My Life' }] },
          { title: 'Jazz', nwTracks: [] },
          { title: 'Loose', nwTracks: [] },
        ],
      },
    }, 'the selection reflects the nested rows')
    t.same(await env.sql('SELECT name, label_country, label_code FROM nw_artist WHERE id = ?', [artist.id]), [{ name: 'Queen', label_country: 'UK', label_code: 'EMI' }], 'SQL: connectOrCreate found the label by its compound key')
    t.same((await env.sql('SELECT title FROM nw_album WHERE artist_id = ? ORDER BY title', [artist.id])).map((r) => r['title']), ['A Night at the Opera', 'Jazz', 'Loose'], 'SQL: created albums and the connected one point to the artist')
    t.same((await env.sql('SELECT t.name FROM nw_track t JOIN nw_album a ON a.id = t.album_id WHERE a.artist_id = ? ORDER BY t.name', [artist.id])).map((r) => r['name']), ['Bohemian Rhapsody', 'Love of My Life'], 'SQL: tracks under their album')
    t.same((await env.sql('SELECT bio FROM nw_profile WHERE artist_id = ?', [artist.id])).map((r) => r['bio']), ['Rock band'], 'SQL: the one-to-one back side')
    t.same(await env.counts(), { nw_label: 1, nw_artist: 2, nw_profile: 1, nw_album: 3, nw_track: 2, nw_category: 0 }, 'SQL: exactly these rows')

    // To-one: connect, create, connectOrCreate that creates.
    const albums = await env.gql(`mutation {
      a: createOneNwAlbum(data: { title: "Innuendo", artist: { connect: { name: "Queen" } } }) { title artist { name } }
      b: createOneNwAlbum(data: { title: "Debut", artist: { create: { name: "Newcomer", nwLabel: { create: { country: "US", code: "SUB", name: "Sub Pop" } } } } }) { title artist { name nwLabel { name } } }
      c: createOneNwAlbum(data: { title: "Other", artist: { connectOrCreate: { where: { name: "Fresh" }, create: { name: "Fresh" } } } }) { artist { name } }
    }`)
    t.same(albums.body, { data: { a: { title: 'Innuendo', artist: { name: 'Queen' } }, b: { title: 'Debut', artist: { name: 'Newcomer', nwLabel: { name: 'Sub Pop' } } }, c: { artist: { name: 'Fresh' } } } })
    t.same(await env.sql("SELECT l.name FROM nw_album a JOIN nw_artist r ON r.id = a.artist_id JOIN nw_label l ON l.country = r.label_country AND l.code = r.label_code WHERE a.title = 'Debut'"), [{ name: 'Sub Pop' }], 'SQL: a create inside a create')
    t.same(await env.counts(), { nw_label: 2, nw_artist: 4, nw_profile: 1, nw_album: 6, nw_track: 2, nw_category: 0 })

    // A whole nested data object in a variable; the plan is reused for another value of the same shape.
    const doc = 'mutation($data: NwArtistCreateInput!) { createOneNwArtist(data: $data) { name nwAlbums { title } } }'
    for (const name of ['Var One', 'Var Two']) {
      const res = await env.gql(doc, { data: { name, nwAlbums: { create: [{ title: `${name} LP` }] } } })
      t.same(res.body, { data: { createOneNwArtist: { name, nwAlbums: [{ title: `${name} LP` }] } } }, `variables: ${name}`)
    }
    t.same((await env.sql("SELECT a.title FROM nw_album a JOIN nw_artist r ON r.id = a.artist_id WHERE r.name LIKE 'Var%' ORDER BY a.title")).map((r) => r['title']), ['Var One LP', 'Var Two LP'])

    // Self relation: a category tree.
    const tree = await env.gql(`mutation { createOneNwCategory(data: { name: "root", nwCategories: { create: [{ name: "a", nwCategories: { create: [{ name: "a1" }] } }, { name: "b" }] } }) { name nwCategories(orderBy: { name: asc }) { name nwCategories { name parent { parent { name } } } } } }`)
    t.same(tree.body, { data: { createOneNwCategory: { name: 'root', nwCategories: [{ name: 'a', nwCategories: [{ name: 'a1', parent: { parent: { name: 'root' } } }] }, { name: 'b', nwCategories: [] }] } } })
  })

  t.test(`${dialect}: any failure rolls the whole nested write back`, async (t) => {
    const env = await setup(t, dialect, 'atomic')
    if (!env) return
    const before = await env.counts()
    const cases: [string, string, string][] = [
      ['connect target not found', 'createOneNwArtist(data: { name: "Ghost", nwProfile: { create: { bio: "x" } }, nwAlbums: { create: [{ title: "T" }], connect: [{ id: 424242 }] } }) { id }', 'TRB_ERR_DB_NOT_FOUND'],
      ['to-one connect not found', 'createOneNwAlbum(data: { title: "T", artist: { connect: { name: "Nobody" } } }) { id }', 'TRB_ERR_DB_NOT_FOUND'],
      ['unique violation in a nested create', 'createOneNwArtist(data: { name: "Twice", nwAlbums: { create: [{ title: "Same" }, { title: "Same" }] } }) { id }', 'TRB_ERR_DB_UNIQUE'],
      ['unique violation of the to-one create', 'createOneNwAlbum(data: { title: "T", artist: { create: { name: "Existing" } } }) { id }', 'TRB_ERR_DB_UNIQUE'],
      ['CHECK violation two levels down', 'createOneNwArtist(data: { name: "Deep", nwAlbums: { create: [{ title: "ok", nwTracks: { create: [{ name: "fine" }, { name: "" }] } }] } }) { id }', 'TRB_ERR_DB_CHECK'],
      ['one-to-one connect not found after a connectOrCreate created', 'createOneNwArtist(data: { name: "Label-less", nwLabel: { connectOrCreate: { where: { country_code: { country: "XX", code: "NO" } }, create: { country: "XX", code: "NO", name: "New" } } }, nwProfile: { connect: { id: 999 } } }) { id }', 'TRB_ERR_DB_NOT_FOUND'],
      ['foreign key violation in a to-one create', 'createOneNwTrack(data: { name: "x", album: { create: { title: "new", artistId: 424242 } } }) { id }', 'TRB_ERR_DB_FOREIGN_KEY'],
    ]
    for (const [what, field, code] of cases) {
      const res = await env.gql(`mutation { first: createOneNwLabel(data: { country: "FR", code: "V", name: "Vogue" }) { name } ${field} }`)
      t.same(codes(res), ['TRB_ERR_DB_ROLLED_BACK', code], `${what}: ${code}, and the field before it is rolled back`, { errors: res.body.errors })
      t.notMatch(JSON.stringify(res.body), /TRB_ERR_INTERNAL|INSERT|SELECT/, `${what}: no SQL, nothing internal`)
      t.same(await env.counts(), before, `${what}: SQL: nothing was written`)
    }
    const notFound = await env.gql('mutation { createOneNwAlbum(data: { title: "T", artist: { connect: { name: "Nobody" } } }) { id } }')
    t.same(codes(notFound), ['TRB_ERR_DB_NOT_FOUND'])
    t.match(notFound.body.errors?.[0]?.message, /No NwArtist record found for NwAlbum\.artist: connect where \{ name \}/)

    // TRB_ERR_DB_INPUT (400) before anything runs.
    const bad: [string, string, RegExp][] = [
      ['the FK field and the relation', 'createOneNwAlbum(data: { title: "T", artistId: 1, artist: { connect: { id: 1 } } }) { id }', /`artistId` is set twice/],
      ['two operations on a to-one relation', 'createOneNwAlbum(data: { title: "T", artist: { connect: { id: 1 }, create: { name: "X" } } }) { id }', /give exactly one of create, connect, connectOrCreate/],
      ['no operation on a to-one relation', 'createOneNwAlbum(data: { title: "T", artist: {} }) { id }', /give exactly one/],
      ['neither the FK field nor the relation', 'createOneNwAlbum(data: { title: "T" }) { id }', /give `artistId` or the relation `artist`/],
      ['an update setting the FK twice', 'updateOneNwAlbum(where: { id: 1 }, data: { artistId: { set: 1 }, artist: { connect: { id: 1 } } }) { id }', /`artistId` is set twice/],
    ]
    for (const [what, field, message] of bad) {
      const res = await env.gql(`mutation { ${field} }`)
      t.same(codes(res), ['TRB_ERR_DB_INPUT'], `${what}: TRB_ERR_DB_INPUT`)
      t.match(res.body.errors?.[0]?.message, message)
    }
    t.same(await env.counts(), before, 'SQL: nothing was written')
  })

  t.test(`${dialect}: nested writes in updateOne and upsertOne`, async (t) => {
    const env = await setup(t, dialect, 'update')
    if (!env) return
    const res = await env.gql(`mutation {
      updateOneNwArtist(where: { id: 1 }, data: {
        name: { set: "Renamed" }
        nwLabel: { connect: { country_code: { country: "UK", code: "EMI" } } }
        nwAlbums: { create: [{ title: "Added", nwTracks: { create: [{ name: "t1" }] } }] }
        nwProfile: { connectOrCreate: { where: { id: 77 }, create: { bio: "made in update" } } }
      }) { name nwLabel { code } nwProfile { bio } nwAlbums(orderBy: { title: asc }) { title nwTracks { name } } }
    }`)
    t.same(res.body, { data: { updateOneNwArtist: { name: 'Renamed', nwLabel: { code: 'EMI' }, nwProfile: { bio: 'made in update' }, nwAlbums: [{ title: 'Added', nwTracks: [{ name: 't1' }] }, { title: 'Loose', nwTracks: [] }] } } })
    t.same(await env.sql('SELECT name, label_country, label_code FROM nw_artist WHERE id = 1'), [{ name: 'Renamed', label_country: 'UK', label_code: 'EMI' }], 'SQL: connect replaced the compound foreign key')

    // Move an album to another artist: from the album (to-one connect) and from the artist (to-many connect).
    const other = await env.gql('mutation { createOneNwArtist(data: { name: "Other" }) { id } }')
    const otherId = (other.body.data?.['createOneNwArtist'] as { id: number }).id
    const moved = await env.gql(`mutation { updateOneNwAlbum(where: { id: 1 }, data: { artist: { connect: { id: ${otherId} } } }) { artist { name } } }`)
    t.same(moved.body, { data: { updateOneNwAlbum: { artist: { name: 'Other' } } } })
    t.same(await env.sql('SELECT artist_id FROM nw_album WHERE id = 1'), [{ artist_id: otherId }], 'SQL: to-one connect set the FK')
    const back = await env.gql('mutation { updateOneNwArtist(where: { name: "Renamed" }, data: { nwAlbums: { connect: [{ id: 1 }] } }) { nwAlbums(orderBy: { title: asc }) { title } } }')
    t.same(back.body, { data: { updateOneNwArtist: { nwAlbums: [{ title: 'Added' }, { title: 'Loose' }] } } })
    t.same(await env.sql('SELECT artist_id FROM nw_album WHERE id = 1'), [{ artist_id: 1 }], 'SQL: to-many connect set the child FK')

    // A failing nested write in an update rolls back the update itself.
    const failing = await env.gql('mutation { updateOneNwArtist(where: { id: 1 }, data: { name: { set: "Lost" }, nwAlbums: { create: [{ title: "Added" }] } }) { name } }')
    t.same(codes(failing), ['TRB_ERR_DB_UNIQUE'])
    t.same((await env.sql('SELECT name FROM nw_artist WHERE id = 1')).map((r) => r['name']), ['Renamed'], 'SQL: the scalar update was rolled back')

    // upsertOne: the create branch and the update branch take nested writes.
    const up1 = await env.gql('mutation { upsertOneNwArtist(where: { name: "Up" }, create: { name: "Up", nwAlbums: { create: [{ title: "U1" }] } }, update: { nwAlbums: { create: [{ title: "U2" }] } }) { nwAlbums(orderBy: { title: asc }) { title } } }')
    t.same(up1.body, { data: { upsertOneNwArtist: { nwAlbums: [{ title: 'U1' }] } } }, 'upsert: create branch')
    const up2 = await env.gql('mutation { upsertOneNwArtist(where: { name: "Up" }, create: { name: "Up", nwAlbums: { create: [{ title: "U1" }] } }, update: { nwAlbums: { create: [{ title: "U2" }] } }) { nwAlbums(orderBy: { title: asc }) { title } } }')
    t.same(up2.body, { data: { upsertOneNwArtist: { nwAlbums: [{ title: 'U1' }, { title: 'U2' }] } } }, 'upsert: update branch')
    t.same((await env.sql("SELECT a.title FROM nw_album a JOIN nw_artist r ON r.id = a.artist_id WHERE r.name = 'Up' ORDER BY a.title")).map((r) => r['title']), ['U1', 'U2'])
  })

  t.test(`${dialect}: attack: nested writes are bounded in number and depth`, async (t) => {
    const env = await setup(t, dialect, 'limits', { maxNestedWrites: 5 })
    if (!env) return
    const before = await env.counts()
    const albums = (n: number, prefix: string): string => Array.from({ length: n }, (_, i) => `{ title: "${prefix}${i}" }`).join(' ')
    const over = await env.gql(`mutation { createOneNwArtist(data: { name: "Many", nwAlbums: { create: [${albums(6, 'a')}] } }) { id } }`)
    t.same(codes(over), ['TRB_ERR_DB_INPUT'])
    t.match(over.body.errors?.[0]?.message, /more than 5 rows \(maxNestedWrites\)/)
    const split = await env.gql(`mutation {
      a: createOneNwArtist(data: { name: "A", nwAlbums: { create: [${albums(3, 'a')}] } }) { id }
      b: createOneNwArtist(data: { name: "B", nwAlbums: { create: [${albums(3, 'b')}] } }) { id }
    }`)
    t.same(codes(split), ['TRB_ERR_DB_ROLLED_BACK', 'TRB_ERR_DB_INPUT'], 'the limit is per request: two fields of 3 pass 5 together')
    const ok = await env.gql(`mutation { createOneNwArtist(data: { name: "Five", nwAlbums: { create: [${albums(5, 'f')}] } }) { nwAlbums { title } } }`)
    t.equal((ok.body.data?.['createOneNwArtist'] as { nwAlbums: unknown[] }).nwAlbums.length, 5, 'exactly the limit passes')
    await env.sql("DELETE FROM nw_album WHERE title LIKE 'f%'")
    await env.sql("DELETE FROM nw_artist WHERE name = 'Five'")
    const huge = await env.gql('mutation($d: NwArtistCreateInput!) { createOneNwArtist(data: $d) { id } }', { d: { name: 'Huge', nwAlbums: { create: Array.from({ length: 5000 }, (_, i) => ({ title: `h${i}` })) } } })
    t.same(codes(huge), ['TRB_ERR_DB_INPUT'], 'a huge list in a variable is refused')
    let deep = '{ name: "leaf" }'
    for (let i = 0; i < 6; i++) deep = `{ name: "n${i}", nwCategories: { create: [${deep}] } }`
    const tooDeep = await env.gql(`mutation { createOneNwCategory(data: ${deep}) { id } }`)
    t.same(codes(tooDeep), ['TRB_ERR_DB_INPUT'])
    t.match(tooDeep.body.errors?.[0]?.message, /deeper than 5 levels/)
    t.same(await env.counts(), before, 'SQL: nothing was written')
  })
}

t.test('sqlite: the default maxNestedWrites is 100', async (t) => {
  const env = await setup(t, 'sqlite', 'default')
  if (!env) return
  const data = (n: number) => ({ name: `N${n}`, nwAlbums: { create: Array.from({ length: n }, (_, i) => ({ title: `t${i}` })) } })
  const doc = 'mutation($d: NwArtistCreateInput!) { createOneNwArtist(data: $d) { id } }'
  t.same(codes(await env.gql(doc, { d: data(101) })), ['TRB_ERR_DB_INPUT'])
  t.notOk((await env.gql(doc, { d: data(100) })).body.errors, '100 pass')
  t.equal(Number((await env.sql('SELECT COUNT(*) AS n FROM nw_album'))[0]!['n']), 101, 'SQL: the 100 albums and the fixture\'s one')
})

t.test('schema: nested-write input types', async (t) => {
  const db = await realworldDatabase('sqlite', 'nested_schema', 'nested-writes')
  t.teardown(db.cleanup)
  const source = (await createDatabaseSource({ url: db.url }, testContext('nw').ctx)) as LocalSubschema
  t.teardown(() => source.close())
  const fields = (name: string): Record<string, string> =>
    Object.fromEntries(Object.values((source.schema.getType(name) as GraphQLInputObjectType).getFields()).map((f) => [f.name, String(f.type)]))
  t.same(fields('NwAlbumCreateInput'), {
    id: 'Int',
    title: 'String!',
    artistId: 'Int',
    artist: 'NwArtistCreateNestedOneWithoutNwAlbumsInput',
    nwAlbumTags: 'NwAlbumTagCreateNestedManyWithoutAlbumInput',
    nwTracks: 'NwTrackCreateNestedManyWithoutAlbumInput',
    nwTags: 'NwTagCreateNestedManyWithoutNwAlbumsInput',
  }, 'the FK field is optional: the relation may fill it; the many-to-many shortcut takes nested writes')
  t.same(fields('NwArtistCreateNestedOneWithoutNwAlbumsInput'), { create: 'NwArtistCreateWithoutNwAlbumsInput', connect: 'NwArtistWhereUniqueInput', connectOrCreate: 'NwArtistCreateOrConnectWithoutNwAlbumsInput' })
  t.same(fields('NwAlbumCreateNestedManyWithoutArtistInput'), { create: '[NwAlbumCreateWithoutArtistInput!]', connect: '[NwAlbumWhereUniqueInput!]', connectOrCreate: '[NwAlbumCreateOrConnectWithoutArtistInput!]' })
  t.same(Object.keys(fields('NwAlbumCreateWithoutArtistInput')), ['id', 'title', 'nwAlbumTags', 'nwTracks', 'nwTags'], 'a row created under its parent has neither the FK field nor the back relation')
  t.same(Object.keys(fields('NwArtistCreateWithoutNwAlbumsInput')), ['id', 'name', 'labelCountry', 'labelCode', 'nwLabel', 'nwProfile'])
  t.same(fields('NwProfileCreateNestedOneWithoutArtistInput')['create'], 'NwProfileCreateWithoutArtistInput', 'a one-to-one back side takes a single object')
  t.same(Object.keys(fields('NwAlbumCreateManyInput')), ['id', 'title', 'artistId'], 'createMany takes no nested writes')
  t.same(fields('NwAlbumUpdateInput'), {
    id: 'IntFieldUpdateOperationsInput',
    title: 'StringFieldUpdateOperationsInput',
    artistId: 'IntFieldUpdateOperationsInput',
    artist: 'NwArtistUpdateOneRequiredWithoutNwAlbumsNestedInput',
    nwAlbumTags: 'NwAlbumTagUpdateManyWithoutAlbumNestedInput',
    nwTracks: 'NwTrackUpdateManyWithoutAlbumNestedInput',
    nwTags: 'NwTagUpdateManyWithoutNwAlbumsNestedInput',
  }, "Prisma's update inputs")
  t.same(fields('NwTrackUpdateManyWithoutAlbumNestedInput'), {
    create: '[NwTrackCreateWithoutAlbumInput!]',
    connectOrCreate: '[NwTrackCreateOrConnectWithoutAlbumInput!]',
    connect: '[NwTrackWhereUniqueInput!]',
    set: '[NwTrackWhereUniqueInput!]',
    disconnect: '[NwTrackWhereUniqueInput!]',
    delete: '[NwTrackWhereUniqueInput!]',
    update: '[NwTrackUpdateWithWhereUniqueWithoutAlbumInput!]',
    upsert: '[NwTrackUpsertWithWhereUniqueWithoutAlbumInput!]',
    updateMany: '[NwTrackUpdateManyWithWhereWithoutAlbumInput!]',
    deleteMany: '[NwTrackScalarWhereInput!]',
  })
  t.same(fields('NwTrackUpdateWithWhereUniqueWithoutAlbumInput'), { where: 'NwTrackWhereUniqueInput!', data: 'NwTrackUpdateWithoutAlbumInput!' })
  t.same(fields('NwTrackUpsertWithWhereUniqueWithoutAlbumInput'), { where: 'NwTrackWhereUniqueInput!', update: 'NwTrackUpdateWithoutAlbumInput!', create: 'NwTrackCreateWithoutAlbumInput!' })
  t.same(fields('NwTrackUpdateManyWithWhereWithoutAlbumInput'), { where: 'NwTrackScalarWhereInput!', data: 'NwTrackUncheckedUpdateManyWithoutAlbumInput!' })
  t.same(Object.keys(fields('NwTrackUpdateWithoutAlbumInput')), ['id', 'name'], 'a row updated under its parent has neither the FK field nor the back relation')
  t.same(Object.keys(fields('NwTrackScalarWhereInput')), ['AND', 'OR', 'NOT', 'id', 'name', 'albumId'], 'scalar fields only')
  t.same(Object.keys(fields('NwTagUpdateManyWithoutNwAlbumsNestedInput')), ['create', 'connectOrCreate', 'connect', 'set', 'disconnect', 'delete', 'update', 'upsert', 'updateMany', 'deleteMany'], 'a many-to-many shortcut: every to-many operation')
  t.same(fields('NwTagUpdateWithWhereUniqueWithoutNwAlbumsInput'), { where: 'NwTagWhereUniqueInput!', data: 'NwTagUpdateWithoutNwAlbumsInput!' })
  t.same(fields('NwLabelUpdateOneWithoutNwArtistsNestedInput'), {
    create: 'NwLabelCreateWithoutNwArtistsInput',
    connectOrCreate: 'NwLabelCreateOrConnectWithoutNwArtistsInput',
    connect: 'NwLabelWhereUniqueInput',
    update: 'NwLabelUpdateWithoutNwArtistsInput',
    upsert: 'NwLabelUpsertWithoutNwArtistsInput',
    disconnect: 'Boolean',
    delete: 'Boolean',
  }, 'an optional to-one relation')
  t.notOk('disconnect' in fields('NwArtistUpdateOneRequiredWithoutNwAlbumsNestedInput'), 'a required one cannot be disconnected')
  t.same(Object.keys(fields('NwAlbumUpdateManyMutationInput')), ['id', 'title', 'artistId'], 'updateMany takes no nested writes')
  const mutation = parse('mutation M($data: NwArtistCreateInput!) { __typename }').definitions[0] as OperationDefinitionNode
  const json = variablesSchema(source.schema, mutation)
  t.same(json.properties!['data'], { $ref: '#/$defs/NwArtistCreateInput', type: 'object' })
  t.same((json.$defs as Record<string, JsonSchema>)['NwArtistCreateInput']!.properties!['nwAlbums'], { type: ['object', 'null'] }, 'a stored operation\'s JSON Schema leaves nested-write inputs open (expanded, they nest every related model)')
  t.ok(JSON.stringify(json).length < 2000, 'and stays small')
  const update = variablesSchema(source.schema, parse('mutation M($data: NwArtistUpdateInput!) { __typename }').definitions[0] as OperationDefinitionNode)
  t.same((update.$defs as Record<string, JsonSchema>)['NwArtistUpdateInput']!.properties!['nwAlbums'], { type: ['object', 'null'] }, 'so are the update inputs')
  t.ok(JSON.stringify(update).length < 4000, 'and it stays small')
})

t.test('sqlite Chinook: a join row with a compound key made of two foreign keys', async (t) => {
  const db = await chinookSqlite()
  if (db.skipReason) {
    t.test('Chinook missing', { skip: db.skipReason }, async () => {})
    return
  }
  t.teardown(db.cleanup)
  const server = await startDatabaseGateway(t, [database({ url: db.url })])
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const res = await server.gql(`mutation {
    createOnePlaylist(data: { name: "Nested", playlistTracks: { create: [{ track: { connect: { trackId: 1 } } }, { track: { connect: { trackId: 2 } } }] } }) {
      playlistId name tracks(orderBy: { trackId: asc }) { trackId name } playlistTracks { track { album { title } } }
    }
  }`)
  t.notOk(res.body.errors, 'no errors', { errors: res.body.errors })
  const created = res.body.data?.['createOnePlaylist'] as { playlistId: number; tracks: unknown[]; playlistTracks: unknown[] }
  t.same(created.tracks, [{ trackId: 1, name: 'For Those About To Rock (We Salute You)' }, { trackId: 2, name: 'Balls to the Wall' }], 'the many-to-many shortcut reads the join rows written under the playlist')
  t.same(created.playlistTracks.length, 2)
  t.same(await knex.raw('SELECT TrackId FROM PlaylistTrack WHERE PlaylistId = ? ORDER BY TrackId', [created.playlistId]), [{ TrackId: 1 }, { TrackId: 2 }], 'SQL: the join rows')
  const dup = await server.gql(`mutation { updateOnePlaylist(where: { playlistId: ${created.playlistId} }, data: { name: { set: "Renamed" }, playlistTracks: { create: [{ track: { connect: { trackId: 1 } } }] } }) { name } }`)
  t.same(dup.body.errors?.map((e) => e.extensions.code), ['TRB_ERR_DB_UNIQUE'], 'the same join row twice: its compound primary key')
  t.same(await knex.raw('SELECT Name FROM Playlist WHERE PlaylistId = ?', [created.playlistId]), [{ Name: 'Nested' }], 'SQL: the rename was rolled back')
  const set = await server.gql(`mutation { updateOnePlaylist(where: { playlistId: ${created.playlistId} }, data: { tracks: { set: [{ trackId: 3 }], connect: [{ trackId: 2 }] } }) { tracks(orderBy: { trackId: asc }) { trackId } } }`)
  t.same(set.body, { data: { updateOnePlaylist: { tracks: [{ trackId: 2 }, { trackId: 3 }] } } }, 'the many-to-many shortcut: set, then connect')
  t.same(await knex.raw('SELECT TrackId FROM PlaylistTrack WHERE PlaylistId = ? ORDER BY TrackId', [created.playlistId]), [{ TrackId: 2 }, { TrackId: 3 }], 'SQL: the join rows replaced')
  const off = await server.gql(`mutation { updateOnePlaylist(where: { playlistId: ${created.playlistId} }, data: { tracks: { disconnect: [{ trackId: 3 }, { trackId: 4 }] } }) { tracks { trackId } } }`)
  t.same(off.body, { data: { updateOnePlaylist: { tracks: [{ trackId: 2 }] } } }, 'disconnect deletes the join row (a row not connected: nothing)')
  t.same(await knex.raw('SELECT COUNT(*) AS n FROM Track WHERE TrackId = 3'), [{ n: 1 }], 'SQL: the track itself stays')
})
