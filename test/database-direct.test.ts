/**
 * Direct JSON plans of the database connector (gateway/connectors/database/direct.ts): every
 * database root query field carries `extensions.tributary.direct`, a compiler that turns the field's
 * selection into one SQL statement whose result is the field's final JSON text.
 *
 * For a broad list of queries on SQLite, PostgreSQL and MariaDB (Chinook through `composeSchema`, and
 * a purpose-built table with every type family through `applyNamespace`), `plan.run(coercedVariables)`
 * must be EXACTLY `JSON.stringify(data[key])` of graphql-js execution on the same composed
 * (namespaced) schema. Unsupported cases return null;
 * stored values GraphQL cannot serialise make `run` reject (the gateway then falls back to execution).
 * PostgreSQL and MariaDB parts skip when the server is unreachable.
 */
import t, { type Test } from 'tap'
import {
  Kind,
  execute,
  getVariableValues,
  parse,
  validate,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql'
import type { Knex } from 'knex'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { DirectPlanUnavailable, type DirectFieldExtension, type DirectJsonPlan } from '../gateway/connectors/database/direct.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { applyNamespace } from '../gateway/compose/namespace.js'
import { composeSchema } from '../gateway/compose/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { sqliteExactIsoDateTime } from '../gateway/connectors/database/compiler/direct-read.js'
import { EXACT_ISO } from '../gateway/scalars.js'
import Database from 'better-sqlite3'
import { chinook, freshDatabase } from './helpers/chinook.js'
import { testContext, type SqlLog } from './helpers/database-source.js'

const ENGINES: readonly Dialect[] = ['sqlite', 'postgres', 'mysql']

// ----- checking plans against graphql-js -----

interface RootPlan {
  key: string
  field: FieldNode
  plan: DirectJsonPlan | null
}

function planAll(schema: GraphQLSchema, query: string): { document: DocumentNode; operation: OperationDefinitionNode; roots: RootPlan[] } {
  const document = parse(query)
  const errors = validate(schema, document)
  if (errors.length) throw errors[0]
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!
  const fragments: Record<string, FragmentDefinitionNode> = {}
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d
  const roots: RootPlan[] = []
  for (const sel of operation.selectionSet.selections) {
    if (sel.kind !== Kind.FIELD) continue
    const def = schema.getQueryType()!.getFields()[sel.name.value]
    const ext = def?.extensions?.['tributary'] as DirectFieldExtension | undefined
    const plan = ext?.direct ? ext.direct({ schema, field: sel, fragments, variableDefinitions: operation.variableDefinitions ?? [] }) : null
    roots.push({ key: sel.alias?.value ?? sel.name.value, field: sel, plan })
  }
  return { document, operation, roots }
}

/** CoerceVariableValues, as the gateway does before calling `run`. */
function coerce(schema: GraphQLSchema, operation: OperationDefinitionNode, variables: Record<string, unknown> = {}): Record<string, unknown> {
  const r = getVariableValues(schema, operation.variableDefinitions ?? [], variables)
  if (r.errors) throw r.errors[0]
  return r.coerced
}

const label = (q: string): string => q.replace(/\s+/g, ' ').slice(0, 100)

/** Every root field has a plan whose output equals graphql-js' serialisation. */
async function assertSame(t: Test, schema: GraphQLSchema, query: string, variables?: Record<string, unknown>): Promise<void> {
  const { document, operation, roots } = planAll(schema, query)
  const result = await execute({ schema, document, ...(variables ? { variableValues: variables } : {}) })
  t.same(result.errors ?? [], [], `graphql: no errors: ${label(query)}`)
  const data = (result.data ?? {}) as Record<string, unknown>
  const coerced = coerce(schema, operation, variables)
  for (const r of roots) {
    if (!r.plan) {
      t.fail(`no direct plan for ${r.key}: ${label(query)}`)
      continue
    }
    try {
      t.equal(await r.plan.run(coerced, {}), JSON.stringify(data[r.key]), `${r.key}: ${label(query)}`)
    } catch (err) {
      t.fail(`plan rejected: ${(err as Error).message.slice(0, 300)}: ${label(query)}`)
    }
  }
}

/** The (first) root field gets no direct plan. */
function assertNoPlan(t: Test, schema: GraphQLSchema, query: string, why: string): void {
  const { roots } = planAll(schema, query)
  t.equal(roots[0]?.plan ?? null, null, `no plan: ${why}`)
}

/** How many times {@link sameOrRejects} saw `runNow` answer (an answer or a refusal, not undefined). */
let runNowAnswered = 0

/**
 * For stored values GraphQL may fail on: if GraphQL fails, `run` rejects; if GraphQL answers, `run`
 * answers the same text or rejects (a fallback, never a wrong answer).
 */
async function sameOrRejects(t: Test, schema: GraphQLSchema, query: string, variables?: Record<string, unknown>): Promise<'same' | 'rejected' | 'fallback'> {
  const { document, operation, roots } = planAll(schema, query)
  const r = roots[0]!
  if (!r.plan) {
    t.fail(`no direct plan: ${label(query)}`)
    return 'fallback'
  }
  const result = await execute({ schema, document, ...(variables ? { variableValues: variables } : {}) })
  let text: string | undefined
  let error: unknown
  try {
    text = await r.plan.run(coerce(schema, operation, variables), {})
  } catch (err) {
    error = err
  }
  // runNow (SQLite): when it answers, the same text or the same kind of refusal as run.
  if (r.plan.runNow) {
    let now: string | undefined
    let nowError: unknown
    try {
      now = r.plan.runNow(coerce(schema, operation, variables), {})
    } catch (err) {
      nowError = err
    }
    if (now !== undefined || nowError !== undefined) {
      runNowAnswered++
      t.equal(now, text, `runNow answers as run: ${label(query)}`, { diagnostic: false })
      t.equal(nowError instanceof DirectPlanUnavailable, error instanceof DirectPlanUnavailable, `runNow refuses as run: ${label(query)}`, { diagnostic: false })
      t.equal(nowError === undefined, error === undefined, `runNow fails as run: ${label(query)}`, { diagnostic: false })
    }
  }
  if (result.errors?.length) {
    t.ok(error, `GraphQL fails (${result.errors[0]!.message}), so run rejects: ${label(query)}`)
    return 'rejected'
  }
  if (error !== undefined) return 'fallback'
  t.equal(text, JSON.stringify((result.data as Record<string, unknown>)[r.key]), label(query))
  return 'same'
}

// ----- sources -----

interface Source {
  schema: GraphQLSchema
  log: SqlLog
  /** A second connection to the same database, for test writes. */
  knex?: Knex
}

async function chinookSource(t: Test, dialect: Dialect): Promise<Source | null> {
  const db = await chinook(dialect)
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const { ctx, log } = testContext('chinook')
  const source = await createDatabaseSource({ url: db.url }, ctx)
  t.teardown(() => source.close())
  // The gateway's own composition (namespace rename with mapSchema, then merged root fields).
  return { schema: composeSchema([{ namespace: 'chinook', name: 'chinook', subschema: source }]), log }
}

/** A table with every type family, a child table (relations both ways) and a table of odd values. */
function typesMigrations(dialect: Dialect): Record<string, { up(knex: Knex): Promise<void> }> {
  return {
    '001-kinds': {
      async up(knex) {
        if (dialect === 'postgres') await knex.raw(`create type mood as enum ('happy', 'sad', 'ok_then')`)
        await knex.schema.createTable('kind', (tb) => {
          tb.increments('id')
          tb.string('name').notNullable()
          tb.integer('num')
          tb.bigInteger('big')
          tb.double('ratio')
          tb.specificType('price', 'numeric(10,3)')
          tb.boolean('flag').notNullable().defaultTo(false)
          tb.boolean('maybe')
          tb.text('note')
          tb.datetime('at', { precision: 3 })
          tb.date('day')
          if (dialect === 'postgres') {
            tb.timestamp('at_tz', { useTz: true, precision: 3 })
            tb.specificType('mood', 'mood')
          } else if (dialect === 'mysql') {
            tb.timestamp('at_tz', { precision: 3 }).nullable()
            tb.enu('mood', ['happy', 'sad', 'ok_then'])
          } else {
            tb.timestamp('at_tz', { useTz: true })
          }
          if (dialect !== 'sqlite') tb.binary('blob')
        })
        await knex.schema.createTable('part', (tb) => {
          tb.increments('id')
          tb.integer('kind_id').unsigned().notNullable().references('id').inTable('kind')
          tb.integer('other_id').unsigned().references('id').inTable('kind')
          tb.string('label').notNullable()
          tb.integer('pos').notNullable()
        })
        await knex.schema.createTable('extra', (tb) => {
          tb.increments('id')
          tb.json('meta')
          tb.binary('raw')
        })
      },
    },
    '002-seed': {
      async up(knex) {
        const dt = (iso: string): unknown => (dialect === 'sqlite' ? iso : new Date(iso))
        await knex('kind').insert([
          {
            name: 'first "quoted" \\ back/slash\n\ttab é 😀 \u0001 \u007f \u2028', num: 2147483647, big: '9007199254740993', ratio: 0.1, price: '12.500', flag: true, maybe: null,
            note: null, at: dt('2026-11-20T09:00:00.123Z'), day: dialect === 'sqlite' ? '2026-11-20' : '2026-11-20', at_tz: dt('2026-11-20T23:59:59.999Z'),
            ...(dialect !== 'sqlite' ? { mood: 'happy', blob: Buffer.from([0, 1, 2, 250, 255]) } : {}),
          },
          {
            name: 'second', num: -2147483648, big: '-9223372036854775808', ratio: -1234.5678, price: '-0.001', flag: false, maybe: true,
            note: '', at: dt('1999-12-31T23:59:59.000Z'), day: '2000-02-29', at_tz: dt('2000-01-01T00:00:00.000Z'),
            ...(dialect !== 'sqlite' ? { mood: 'ok_then', blob: Buffer.alloc(100, 7) } : {}),
          },
          {
            name: 'third', num: 0, big: '0', ratio: 3, price: '0', flag: true, maybe: false, note: 'x'.repeat(3000), at: null, day: null, at_tz: null,
            ...(dialect !== 'sqlite' ? { mood: null, blob: null } : {}),
          },
          { name: 'fourth (no parts)', num: null, big: null, ratio: null, price: null, flag: false, maybe: null, note: 'n', at: dt('2026-01-01T00:00:00.000Z') },
        ])
        await knex('part').insert([
          { kind_id: 1, label: 'a', pos: 3 },
          { kind_id: 1, other_id: 2, label: 'b', pos: 1 },
          { kind_id: 1, label: 'c', pos: 2 },
          { kind_id: 2, other_id: 1, label: 'd', pos: 1 },
          { kind_id: 3, other_id: 3, label: 'e', pos: 9 },
        ])
        await knex('extra').insert([{ meta: JSON.stringify({ a: 1 }), raw: Buffer.from('hi') }])
      },
    },
  }
}

async function typesSource(t: Test, dialect: Dialect): Promise<Source | null> {
  const db = await freshDatabase(dialect, 'direct')
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const { ctx, log } = testContext('types')
  const source = await createDatabaseSource({ url: db.url, migrations: typesMigrations(dialect) }, ctx)
  t.teardown(() => source.close())
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  return { schema: applyNamespace(source.schema, 'types'), log, knex }
}

// ----- the queries -----

const CHINOOK_QUERIES: { query: string; variables?: Record<string, unknown> }[] = [
  {
    query: `{ chinook_findManyArtist(take: 20, orderBy: [{ artistId: asc }]) { artistId name albums { albumId title tracks { trackId name milliseconds unitPrice } } } }`,
  },
  {
    query: `{ chinook_findManyArtist(take: 5, orderBy: [{ artistId: asc }]) {
      artistId name
      albums(orderBy: [{ albumId: asc }]) { albumId title tracks(orderBy: [{ trackId: asc }], take: 3) { trackId name milliseconds unitPrice } }
    } }`,
  },
  { query: `{ chinook_findManyTrack(where: { trackId: { in: [1, 2, 3403, 3503] } }, orderBy: [{ trackId: asc }]) { trackId name composer album { title artist { name } } genre { name } mediaType { name } } }` },
  { query: `{ chinook_findUniqueArtist(where: { artistId: 1 }) { artistId name albums(orderBy: [{ title: asc }]) { title } } }` },
  { query: `{ chinook_findUniqueArtist(where: { artistId: 999999 }) { artistId } }` },
  { query: `{ chinook_findUniquePlaylistTrack(where: { playlistId_trackId: { playlistId: 1, trackId: 3402 } }) { playlistId trackId track { name } playlist { name } } }` },
  {
    query: `{ chinook_findManyEmployee(orderBy: [{ employeeId: asc }]) {
      employeeId firstName reportsTo birthDate hireDate employee { employeeId lastName } employees(orderBy: [{ employeeId: asc }]) { employeeId }
    } }`,
  },
  { query: `{ chinook_findManyInvoice(where: { invoiceDate: { gte: "2025-01-01T00:00:00.000Z", lt: "2025-02-01T00:00:00.000Z" } }, orderBy: [{ invoiceId: asc }]) { invoiceId invoiceDate total customer { firstName rep: supportRep { lastName } } } }` },
  {
    query: `query Aliases { a: chinook_findFirstArtist(orderBy: [{ name: desc }]) { id: artistId n: name, name __typename }
      b: chinook_findManyAlbum(where: { artistId: { equals: 1 } }) { __typename t: title title x: tracks(take: 1, orderBy: [{ trackId: desc }]) { trackId } y: tracks(take: 2, skip: 1) { name } } }`,
  },
  {
    query: `query F($id: Int!) { chinook_findUniqueAlbum(where: { albumId: $id }) { ...A artist { ... on chinook_Artist { name } ...Ar } } }
      fragment A on chinook_Album { albumId title tracks(orderBy: [{ name: asc }]) { ...T } }
      fragment Ar on chinook_Artist { artistId name }
      fragment T on chinook_Track { name trackId }`,
    variables: { id: 4 },
  },
  { query: `query($id: Int = 5) { chinook_findUniqueAlbum(where: { albumId: $id }) { title } }` },
  { query: `query($id: Int) { chinook_findUniqueAlbum(where: { albumId: $id }) { title } }`, variables: { id: null } },
  { query: `query($take: Int, $skip: Int) { chinook_findManyGenre(take: $take, skip: $skip, orderBy: [{ genreId: asc }]) { genreId name } }`, variables: { take: 3, skip: 2 } },
  { query: `query($take: Int) { chinook_findManyGenre(take: $take, orderBy: [{ genreId: asc }]) { genreId } }`, variables: { take: -3 } },
  { query: `query($dir: chinook_SortOrder!) { chinook_findManyMediaType(orderBy: [{ name: $dir }]) { name } }`, variables: { dir: 'desc' } },
  { query: `query($ids: [Int!]) { chinook_findManyGenre(where: { genreId: { in: $ids } }) { name } }`, variables: { ids: [3, 1, 2] } },
  { query: `query($w: chinook_TrackWhereInput) { chinook_findManyTrack(where: $w, take: 4, orderBy: [{ trackId: asc }]) { trackId name } }`, variables: { w: { name: { startsWith: 'B' }, milliseconds: { gt: 300000 } } } },
  { query: `{ chinook_findManyPlaylist(where: { playlistTracks: { none: {} } }, orderBy: [{ playlistId: asc }]) { playlistId name playlistTracks { trackId } } }` },
  { query: `{ chinook_findManyCustomer(where: { country: { equals: "Brazil" } }, orderBy: [{ customerId: asc }]) { customerId company fax state invoices(orderBy: [{ invoiceDate: desc }], take: 2) { total invoiceDate invoiceLines(take: 1) { unitPrice quantity } } } }` },
  { query: `{ chinook_findManyTrack(cursor: { trackId: 10 }, take: 3, orderBy: [{ trackId: asc }]) { trackId } }` },
  { query: `{ chinook_findManyTrack(distinct: [albumId], where: { albumId: { lte: 3 } }, orderBy: [{ albumId: asc }]) { albumId trackId } }` },
  { query: `{ chinook_findManyArtist(where: { name: { contains: "zzz-none" } }) { name albums { title } } }` },
  { query: `{ chinook_findManyTrack(where: { trackId: { in: [1, 2] } }) { name @include(if: true) composer @skip(if: true) trackId } }` },
  { query: `{ chinook_findManyAlbum(take: 3, orderBy: [{ albumId: asc }]) { title title tracks(take: 2) { name } artist { name } tracks(take: 2) { trackId } artist { artistId } } }` },
  { query: `query($w: chinook_ArtistWhereUniqueInput!) { chinook_findUniqueArtist(where: $w) { name } }`, variables: { w: { artistId: 3 } } },
]

for (const dialect of ENGINES) {
  t.test(`${dialect}: Chinook`, async (t) => {
    const s = await chinookSource(t, dialect)
    if (!s) return
    for (const { query, variables } of CHINOOK_QUERIES) await assertSame(t, s.schema, query, variables)

    // shapes: the same plan with variables of other shapes
    const q = 'query($take: Int, $dir: chinook_SortOrder!) { chinook_findManyGenre(take: $take, orderBy: [{ genreId: $dir }]) { genreId } }'
    const { operation, roots } = planAll(s.schema, q)
    const plan = roots[0]!.plan!
    t.ok(plan, 'plan with shape variables')
    for (const v of [{ take: 2, dir: 'asc' }, { take: -2, dir: 'asc' }, { take: null, dir: 'desc' }, { dir: 'desc' }, { take: 2, dir: 'asc' }]) {
      const r = await execute({ schema: s.schema, document: parse(q), variableValues: v })
      t.same(r.errors ?? [], [])
      t.equal(await plan.run(coerce(s.schema, operation, v), {}), JSON.stringify((r.data as Record<string, unknown>)['chinook_findManyGenre']), `shape ${JSON.stringify(v)}`)
    }

    // one statement per run, the debug `sql` line per statement
    const nested = planAll(s.schema, CHINOOK_QUERIES[0]!.query).roots[0]!.plan!
    s.log.clear()
    await nested.run({}, {})
    t.equal(s.log.statements.length, 1, 'one statement for a 3-level nested query')

    // null: unsupported
    assertNoPlan(t, s.schema, 'query($s: Boolean!) { chinook_findManyGenre { name @skip(if: $s) } }', '@skip with a variable')
    assertNoPlan(t, s.schema, 'query($s: Boolean!) { chinook_findManyGenre { ... @include(if: $s) { name } } }', '@include with a variable on a fragment')
    assertNoPlan(t, s.schema, '{ chinook_aggregateGenre { _count { _all } } }', 'aggregate has no plan')
    if (dialect === 'mysql') {
      assertNoPlan(t, s.schema, 'query($w: chinook_ArtistWhereUniqueInput!) { chinook_findUniqueArtist(where: $w) { albums { tracks(take: -1) { name } } } }', 'a lazily compiled shape whose selection is unsupported')
    }
    if (dialect === 'mysql') {
      assertNoPlan(t, s.schema, '{ chinook_findManyAlbum { tracks(take: -1) { name } } }', 'a negative take on a nested list on MariaDB')
    }
  })

  t.test(`${dialect}: every type family`, async (t) => {
    const s = await typesSource(t, dialect)
    if (!s) return
    const all = `id name num big ratio price flag maybe note at day atTz ${dialect !== 'sqlite' ? 'mood' : ''}`
    const scalars = dialect === 'mysql' ? all.replace('ratio', '') : all
    const withBlob = dialect !== 'sqlite' ? `${scalars} blob` : scalars
    await assertSame(t, s.schema, `{ types_findManyKind(orderBy: [{ id: asc }]) { ${withBlob} __typename } }`)
    await assertSame(t, s.schema, `{ types_findManyKind(orderBy: [{ id: desc }]) { ${scalars} partsByKind(orderBy: [{ pos: asc }]) { label pos kind { name } other { id name } } partsByOther { id } } }`)
    await assertSame(t, s.schema, `{ types_findUniqueKind(where: { id: 1 }) { name a: num b: num c: partsByKind(take: 1, orderBy: [{ pos: desc }]) { pos } c2: partsByKind(where: { label: { in: ["a", "c"] } }) { label } } }`)
    await assertSame(t, s.schema, `{ types_findUniqueKind(where: { id: 4 }) { partsByKind { id } other: partsByOther { id } } }`)
    await assertSame(t, s.schema, `{ types_findUniqueKind(where: { id: 42 }) { id } }`)
    await assertSame(t, s.schema, `{ types_findFirstKind(where: { name: { startsWith: "zzz" } }) { id } }`)
    await assertSame(t, s.schema, `{ types_findManyKind(where: { id: { gt: 100 } }) { id } }`)
    await assertSame(t, s.schema, `{ types_findManyPart(orderBy: [{ id: asc }]) { id label kind { id name flag maybe at } other { name other: partsByOther { label } } } }`)
    await assertSame(t, s.schema, `query($at: DateTime, $big: BigInt, $price: Decimal) { types_findManyKind(where: { OR: [{ at: { equals: $at } }, { big: { equals: $big } }, { price: { equals: $price } }] }, orderBy: [{ id: asc }]) { id } }`, {
      at: '2026-11-20T09:00:00.123Z',
      big: '0',
      price: '-0.001',
    })
    await assertSame(t, s.schema, `{ types_findManyKind(orderBy: [{ id: asc }]) { id name ...K __typename } } fragment K on types_Kind { num name flag }`)

    // unsupported column kinds
    assertNoPlan(t, s.schema, '{ types_findManyExtra { meta } }', 'JSON columns')
    if (dialect === 'sqlite') assertNoPlan(t, s.schema, '{ types_findManyExtra { raw } }', 'Bytes on SQLite')
    else await assertSame(t, s.schema, '{ types_findManyExtra { id raw } }')
    if (dialect === 'mysql') assertNoPlan(t, s.schema, '{ types_findManyKind { ratio } }', 'Float on MariaDB')
  })
}

// ----- stored values GraphQL may reject, and forms of DateTime / Float on SQLite -----

/** Every form a SQLite DateTime column may hold: GraphQL's answer (or its error) must be matched. */
const SQLITE_DATETIME_FORMS: unknown[] = [
  '2026-11-20T09:00:00.000Z', '2026-11-20T09:00:00.123Z', '2026-11-20 09:00:00', '2026-11-20 09:00:00.5', '2026-11-20 09:00:00.12',
  '2026-11-20 09:00:00.123', '2026-11-20 09:00:00.1234', '2026-11-20 09:00:00.123456', '2026-11-20 09:00:00.999999', '2026-11-20T09:00:00',
  '2026-11-20 09:00', '2026-11-20T09:00Z', '2026-11-20', '2026-11-20T09:00:00+02:00', '2026-11-20 09:00:00-05:30', '2026-11-20T09:00:00.250+01:00',
  '2026-11-20T09:00:00z', '2026-11-20t09:00:00Z', '2026-11-20 09:00:00 ', ' 2026-11-20 09:00:00', '2026-11-20 9:00:00', '2026-11-20 09:00:60',
  '2026-11-20 24:00:00', '2026-11-20T24:00:00.000Z', '2026-11-20 25:00:00', '2026-11-20 09:60:00', '2026-11-20 23:59:59.9995', '2026-02-29 10:00:00', '2024-02-29 10:00:00', '2026-02-30', '2026-13-01', '2026-00-10', '0000-01-01 00:00:00',
  '0999-12-31 23:59:59.999', '9999-12-31 23:59:59.999', '2026-11-20 09:00:00 junk', '2026-11-20T09:00:00.000+0200', '2026-11-20T09:00:00.000 UTC',
  '2026-11-20T09:00:00.000Z ', '20261120', '09:00:00', '09:00', 'now', '', 'not a date', '1700000000000',
  0, 1, 1700000000000, 1700000000123, -1, 253402300799999, 253402300800000, 1.5, 1700000000000.7,
  // The output form itself (printed as stored, as toIsoDateTime does, issue 30), days the calendar lacks among them,
  // and near misses of it: a NUL inside, lower-case letters, a full-width digit, months, days and hours out of range.
  '2026-02-31T09:00:00.000Z', '2026-04-31T23:59:59.999Z', '2026-02-29T00:00:00.000Z', '2024-02-29T00:00:00.000Z', '0000-01-01T00:00:00.000Z',
  '9999-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z', '2026-11-20T09:00:00.000Z\u0000junk', '2026-11-20T09:00:00.000z', '２026-11-20T09:00:00.000Z',
  '2026-00-10T09:00:00.000Z', '2026-13-10T09:00:00.000Z', '2026-19-10T09:00:00.000Z', '2026-11-00T09:00:00.000Z', '2026-11-32T09:00:00.000Z',
  '2026-11-39T09:00:00.000Z', '2026-11-20T24:00:00.000Z', '2026-11-20T29:00:00.000Z', '2026-11-20T09:60:00.000Z', '2026-11-20T09:00:60.000Z',
]

/** Floats on SQLite: exact in fixed notation up to 15 significant digits, a fallback beyond. */
function floatSamples(): number[] {
  const out = [0, -0, 1, -1, 0.1, 0.2 + 0.1, 1 / 3, 2.5, 1e-4, 1e-5, 1e-7, 123456789012345.6, 1e14, 1e15, 1e16, 1e20, 1e21, 5e-324, 1.7976931348623157e308, 9007199254740993, 3.0, 42.125]
  let seed = 42
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  for (let i = 0; i < 400; i++) {
    const digits = 1 + Math.floor(rnd() * 17)
    let v = Number(rnd().toPrecision(digits)) * 10 ** (Math.floor(rnd() * 24) - 8)
    if (rnd() < 0.5) v = -v
    out.push(v)
  }
  return out
}

t.test('sqlite: the output form of DateTime is recognised in SQL exactly as toIsoDateTime recognises it (issue 30)', async (t) => {
  // The direct plan prints a text matching sqliteExactIsoDateTime as stored, and toIsoDateTime returns a
  // text matching EXACT_ISO as it is: the two tests must agree on every text. Every field's boundaries
  // (years, months 00–19, days 00–39, hours 00–29, minutes and seconds 00/59/60), then every single
  // character of a valid value replaced, dropped or doubled, and texts with a NUL, a trailing space or
  // non-ASCII digits.
  const db = new Database(':memory:')
  t.teardown(() => db.close())
  const stmt = db.prepare(`SELECT ${sqliteExactIsoDateTime('v.s')} AS p FROM (SELECT ? AS s) AS v`).pluck()
  // The same condition over a column of a UTF-16 database (stored text, where byte counts double).
  const db16 = new Database(':memory:')
  t.teardown(() => db16.close())
  db16.pragma("encoding = 'UTF-16le'")
  db16.exec('CREATE TABLE d (s)')
  const put16 = db16.prepare('INSERT INTO d (s) VALUES (?)')
  const get16 = db16.prepare(`SELECT ${sqliteExactIsoDateTime('d.s')} AS p FROM d WHERE rowid = last_insert_rowid()`).pluck()
  let checked = 0
  let matched = 0
  const mismatches: string[] = []
  const check = (s: string | number | Buffer, utf16 = false): void => {
    let sql = stmt.get(s) === 1
    if (utf16) {
      put16.run(s)
      if ((get16.get() === 1) !== sql) mismatches.push(`${JSON.stringify(String(s))}: the UTF-16 database disagrees`)
      sql = get16.get() === 1
    }
    const js = typeof s === 'string' && EXACT_ISO.test(s)
    checked++
    if (sql) matched++
    if (sql !== js && mismatches.length < 10) mismatches.push(`${JSON.stringify(typeof s === 'string' ? s : String(s))}: SQL ${sql}, EXACT_ISO ${js}`)
  }
  const two = (n: number): string => String(n).padStart(2, '0')
  for (const y of ['0000', '1969', '2026', '9999']) {
    for (let mo = 0; mo < 20; mo++) {
      for (let d = 0; d < 40; d++) {
        for (let h = 0; h < 30; h++) {
          for (const [mi, se, ms] of [['00', '00', '000'], ['59', '59', '999'], ['60', '00', '000'], ['00', '60', '000']]) check(`${y}-${two(mo)}-${two(d)}T${two(h)}:${mi}:${se}.${ms}Z`)
        }
      }
    }
  }
  const valid = '2026-11-20T09:05:07.123Z'
  const chars = ['0', '1', '2', '3', '5', '9', '-', ':', '.', 'T', 't', 'Z', 'z', ' ', '/', '+', 'a', '\u0000', 'é', '٣', '０', '*', '?', '[']
  for (let i = 0; i < valid.length; i++) {
    for (const c of chars) check(valid.slice(0, i) + c + valid.slice(i + 1))
    check(valid.slice(0, i) + valid.slice(i + 1))
    check(valid.slice(0, i + 1) + valid.slice(i))
  }
  for (const s of [valid, `${valid} `, ` ${valid}`, `${valid}\u0000`, `${valid}\u0000junk`, `${valid.slice(0, 23)}\u0000`, '', '2026-11-20', '2026-11-20T09:05:07Z', '2026-11-20T09:05:07.1234Z', '2026-02-31T09:05:07.123Z']) {
    check(s)
    check(s, true)
  }
  check(20261120)
  check(Buffer.from(valid))
  t.same(mismatches, [], `SQL and EXACT_ISO agree on ${checked} texts (${matched} in the output form)`)
  t.ok(matched > 40_000, `the output form is recognised (${matched})`)
})

t.test('sqlite: stored forms GraphQL may reject; DateTime and Float formatting', async (t) => {
  const db = await freshDatabase('sqlite', 'direct-odd')
  t.teardown(db.cleanup)
  const { ctx } = testContext('odd')
  const migrations = {
    '001': {
      async up(knex: Knex) {
        await knex.raw(`create table odd (id integer primary key, i integer, b boolean, dt datetime, f double, s uuid, dec numeric(10,2), dn decimal, big bigint)`)
        await knex.raw(`create table parent (id integer primary key, name text not null)`)
        await knex.raw(`create table child (id integer primary key, parent_id integer not null references parent(id), name text not null)`)
        // SQLite lets NULL into a non-INTEGER PRIMARY KEY; the introspection reports it non-null.
        await knex.raw(`create table coded (code text primary key, n integer)`)
      },
    },
  }
  const source = await createDatabaseSource({ url: db.url, migrations }, ctx)
  t.teardown(() => source.close())
  const schema = applyNamespace(source.schema, 'odd')
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())

  const counts = { same: 0, rejected: 0, fallback: 0 }
  const check = async (column: string, values: unknown[]): Promise<typeof counts> => {
    const c = { same: 0, rejected: 0, fallback: 0 }
    await knex('odd').delete()
    await knex.transaction(async (tx) => {
      for (let i = 0; i < values.length; i++) await tx.raw(`insert into odd (id, ${column}) values (?, ?)`, [i + 1, values[i] as never])
    })
    const q = `query($id: Int!) { odd_findUniqueOdd(where: { id: $id }) { id ${column} } }`
    for (let i = 0; i < values.length; i++) {
      const r = await sameOrRejects(t, schema, q, { id: i + 1 })
      c[r]++
      counts[r]++
    }
    return c
  }
  const dt = await check('dt', SQLITE_DATETIME_FORMS)
  t.ok(dt.same >= 20, `DateTime forms answered directly: ${JSON.stringify(dt)}`)
  const fl = await check('f', floatSamples())
  t.ok(fl.same >= 200, `Floats answered directly: ${JSON.stringify(fl)}`)
  await check('i', [1, 0, -5, 2147483647, 2147483648, -2147483649, 1.0, 1.5, '12abc', 'x', Buffer.from('x')])
  await check('b', [0, 1, 2, -1, 1.0, 0.5, 't', 'true', 'false', 'f', 'yes', '', Buffer.from('x')])
  await check('s', ['abc', '', 123, 1.5, 'é "q"', Buffer.from('x')])
  await check('dec', [1, 1.5, -0.005, 12345678.9, 'abc', 1e300])
  await check('dn', [1, 1.5, -0.005, 12345678.9, 'abc', 1e20])
  await check('big', [0, -1, '9007199254740993', 9007199254740993n, 1.5, 'x'])
  t.ok(counts.rejected > 0, `some forms make GraphQL fail and the plan reject: ${JSON.stringify(counts)}`)
  t.ok(runNowAnswered > 200, `runNow answered the lookups by key without waiting (${runNowAnswered}), as run did`)

  // A dangling foreign key (written with foreign_keys off) on a non-null relation: GraphQL fails, so run rejects.
  await knex.raw('insert into parent (id, name) values (1, ?)', ['p'])
  await knex.raw('pragma foreign_keys = off')
  await knex.raw('insert into child (id, parent_id, name) values (1, 1, ?), (2, 99, ?)', ['ok', 'dangling'])
  t.equal(await sameOrRejects(t, schema, '{ odd_findManyChild(orderBy: [{ id: asc }]) { id parent { name } } }'), 'rejected', 'dangling FK: rejected')
  t.equal(await sameOrRejects(t, schema, '{ odd_findManyChild(where: { id: { equals: 1 } }) { id parent { name } } }'), 'same', 'intact FK: same')

  // A non-null field over a column that holds NULL (issue 30: SQLite keeps the NULL check).
  await knex.raw(`insert into coded (code, n) values ('a', 1), (null, 2)`)
  t.equal(await sameOrRejects(t, schema, '{ odd_findManyCoded(where: { n: { equals: 1 } }) { code n } }'), 'same', 'TEXT PRIMARY KEY, no NULL: same')
  t.equal(await sameOrRejects(t, schema, '{ odd_findManyCoded(orderBy: [{ n: asc }]) { code n } }'), 'rejected', 'TEXT PRIMARY KEY holding NULL: rejected')
})

t.test('postgres and mysql: stored values GraphQL rejects or the SQL cannot print', async (t) => {
  for (const dialect of ['postgres', 'mysql'] as const) {
    await t.test(dialect, async (t) => {
      const s = await typesSource(t, dialect)
      if (!s) return
      const knex = s.knex!
      await knex('kind').insert({ id: 10, name: 'ctl \u001f \u000b end', ratio: 1e20, flag: true })
      await knex('kind').insert({ id: 11, name: 'eleven', ratio: 0.30000000000000004, flag: true })
      const name = await sameOrRejects(t, s.schema, '{ types_findUniqueKind(where: { id: 10 }) { name } }')
      t.equal(name, dialect === 'mysql' ? 'fallback' : 'same', 'control characters JSON_QUOTE escapes in upper case: a fallback on MariaDB')
      if (dialect === 'postgres') {
        t.equal(await sameOrRejects(t, s.schema, '{ types_findUniqueKind(where: { id: 10 }) { ratio } }'), 'fallback', '1e20: PostgreSQL prints 1e+20')
        t.equal(await sameOrRejects(t, s.schema, '{ types_findUniqueKind(where: { id: 11 }) { ratio } }'), 'same', '17 significant digits: shortest form on both')
        await knex.raw(`update kind set price = 'NaN' where id = 11`)
        t.equal(await sameOrRejects(t, s.schema, '{ types_findUniqueKind(where: { id: 11 }) { price } }'), 'rejected', 'numeric NaN: GraphQL fails, run rejects')
        await knex.raw(`update kind set at = 'infinity' where id = 11`)
        t.equal(await sameOrRejects(t, s.schema, '{ types_findUniqueKind(where: { id: 11 }) { at } }'), 'rejected', 'timestamp infinity: GraphQL fails, run rejects')
      }
    })
  }
})

t.test('postgres: NOT NULL columns of tables print without the NULL check; columns that may read NULL keep it (issue 30)', async (t) => {
  const s = await typesSource(t, 'postgres')
  if (!s) return
  const check = (col: string): RegExp => new RegExp(`\\(t\\d+\\."${col}" IS NULL\\)`)
  s.log.clear()
  await assertSame(t, s.schema, `{ types_findManyPart(orderBy: [{ id: asc }]) { id label pos other { id name num } kind { name flag } } }`)
  const text = s.log.statements.map((x) => x.sql).join('\n')
  for (const col of ['id', 'label', 'pos', 'name', 'flag']) t.notMatch(text, check(col), `NOT NULL column ${col}: no NULL check`)
  t.match(text, /t\d+\."label"\)::text\)? \|\|/, 'label: to_json(c)::text alone')
  t.match(text, /COALESCE\(t\d+\."num"::text, 'null'\)/, 'a nullable column under a nullable field: null on NULL')

  // LIMITs known at compile time are literals (a bound LIMIT makes PostgreSQL plan the named statement
  // on every call); ordered, limited derived tables are aggregated without a second ORDER BY, except
  // for a negative take (read in reverse, turned back by the aggregate's order).
  s.log.clear()
  await assertSame(t, s.schema, `{ types_findManyKind(take: 3, orderBy: [{ id: asc }]) { id partsByKind(orderBy: [{ pos: asc }]) { pos } last: partsByKind(take: -2, orderBy: [{ pos: asc }]) { pos } } }`)
  const limits = s.log.statements.at(-1)!
  t.same(limits.bindings, [], 'no bound values: every LIMIT is a literal')
  t.match(limits.sql, /LIMIT 3$/, 'the root take')
  t.match(limits.sql, /string_agg\(\(t\d+\."pos"::text\), '\},\{"pos":'\) \|\| '\}\]'/, 'a list aggregated in its subquery\'s order (the first key and the brace in the separator)')
  t.match(limits.sql, /'\},\{"pos":' ORDER BY t\d+\."pos" ASC, t\d+\.__o1 ASC\)/, 'the negative take keeps the aggregate\'s ORDER BY (on the projected column, and on a copy of the unprojected one)')
  await assertSame(t, s.schema, `query($n: Int) { types_findManyKind(take: $n, orderBy: [{ id: asc }]) { id } }`, { n: 2 })
  t.match(s.log.statements.at(-1)!.sql, /LIMIT \$1$/, 'a take from a variable stays bound')

  // A foreign table declares NOT NULL without enforcing it: its non-null fields keep the check, and
  // a NULL there makes run reject (GraphQL fails too), never a wrong answer. postgres_fdw loopback.
  const knex = s.knex!
  const schema = (await knex.raw<{ rows: { s: string }[] }>('select current_schema() as s')).rows[0]!.s
  const ext = await knex.raw(`create extension if not exists postgres_fdw`).then(() => true, (err: Error) => err.message)
  if (ext !== true) {
    t.skip(`postgres_fdw unavailable: ${ext}`, async () => {})
    return
  }
  const server = `trb_fdw_${process.pid}_${Math.floor(Math.random() * 1e6)}`
  const url = new URL(process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test')
  const opts = (o: Record<string, string>): string => Object.entries(o).map(([k, v]) => `${k} '${v.replace(/'/g, "''")}'`).join(', ')
  await knex.raw(`create server ${server} foreign data wrapper postgres_fdw options (${opts({ host: url.hostname, port: url.port || '5432', dbname: decodeURIComponent(url.pathname.slice(1)) })})`)
  t.teardown(() => knex.raw(`drop server if exists ${server} cascade`).then(() => undefined, () => undefined))
  await knex.raw(`create user mapping for current_user server ${server} options (${opts({ user: decodeURIComponent(url.username || 'postgres'), ...(url.password ? { password: decodeURIComponent(url.password) } : {}) })})`)
  await knex.raw(`create table "${schema}".far_rows (id int primary key, label text)`)
  await knex.raw(`insert into "${schema}".far_rows values (1, 'one'), (2, null)`)
  await knex.raw(`create foreign table "${schema}".far (id int not null, label text not null) server ${server} options (${opts({ schema_name: schema, table_name: 'far_rows' })})`)
  const { ctx, log } = testContext('far')
  const db = new URL(url.href)
  db.searchParams.set('schema', schema)
  const source = await createDatabaseSource({ url: db.href }, ctx)
  t.teardown(() => source.close())
  const far = applyNamespace(source.schema, 'types')
  t.equal(await sameOrRejects(t, far, '{ types_findManyFar(where: { id: { equals: 1 } }) { id label } }'), 'same', 'foreign table, no NULL: the same answer')
  t.equal(await sameOrRejects(t, far, '{ types_findManyFar(orderBy: [{ id: asc }]) { id label } }'), 'rejected', 'foreign table, a NULL under a non-null field: run rejects')
  t.match(log.statements.map((x) => x.sql).join('\n'), check('label'), 'the foreign table\'s NOT NULL column keeps the NULL check')
})

t.test('sqlite: reads skip the pool only when no connection is in use', async (t) => {
  const db = await freshDatabase('sqlite', 'direct-pool')
  t.teardown(db.cleanup)
  const { Db } = await import('../gateway/connectors/database/compiler/db.js')
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  await knex.schema.createTable('x', (tb) => tb.integer('v'))
  const store = new Db(knex, 'sqlite')
  const sql: string[] = []
  store.onQuery((s) => sql.push(s))
  let acquired = 0
  const client = knex.client as { acquireConnection(): Promise<unknown> }
  const acquire = client.acquireConnection.bind(client)
  client.acquireConnection = () => {
    acquired++
    return acquire()
  }
  t.same(await store.values('select count(*) from x', []), [0])
  t.equal(acquired, 0, 'an idle pool: the read runs without acquiring')
  t.same(sql, ['select count(*) from x'], 'the statement is still reported (debug sql log)')

  let inside!: () => void
  const insideTx = new Promise<void>((r) => (inside = r))
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const tx = store.transaction(async (conn) => {
    await store.exec(conn, 'insert into x (v) values (1)', [])
    inside()
    await gate
  })
  await insideTx
  const reported = sql.length
  t.equal(store.valuesNow('select count(*) from x', []), undefined, 'valuesNow runs nothing while a transaction holds the connection')
  t.equal(sql.length, reported, 'and reports no statement')
  const order: string[] = []
  const read = store.values('select count(*) from x', []).then((rows) => {
    order.push('read')
    return rows
  })
  await new Promise((r) => setTimeout(r, 30))
  order.push('commit')
  release()
  await tx
  t.same(await read, [1], 'a read issued during another transaction sees its committed result only')
  t.same(order, ['commit', 'read'], 'and waits for the connection, as before')
  t.ok(acquired >= 2, 'the transaction and the waiting read went through the pool')
})

t.test('postgres: lists carry their first key and closing brace in the separator, quotes go into the key literals (issue 30)', async (t) => {
  const db = await freshDatabase('postgres', 'pgstmt')
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return
  }
  t.teardown(db.cleanup)
  const migrations = {
    '001': {
      async up(knex: Knex) {
        await knex.raw(`create table pgstmt_holder (id int primary key, name text not null)`)
        await knex.raw(`create table pgstmt_item (id int primary key, holder_id int not null references pgstmt_holder(id), amount numeric not null,
          exact numeric(8,2) not null, at timestamptz not null, big bigint not null, note text, maybe numeric(8,2))`)
        await knex.raw(`insert into pgstmt_holder values (1, 'one'), (2, 'none'), (3, 'three')`)
        await knex.raw(`insert into pgstmt_item values
          (1, 1, 1.5, 2.25, '2026-11-27 10:00:00.123+00', 9007199254740993, 'a "q" \\ b' || chr(1) || ' é 😀', null),
          (2, 1, -0.001, 0, '1999-12-31 23:59:59+00', -1, null, 3.5),
          (3, 3, 1e20, 999999.99, '2000-01-01 00:00:00+00', 0, '', null)`)
      },
    },
  }
  const { ctx, log } = testContext('pgstmt')
  const source = await createDatabaseSource({ url: db.url, migrations }, ctx)
  t.teardown(() => source.close())
  const schema = applyNamespace(source.schema, 'p')
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())

  // Quoted values (Decimal, DateTime, BigInt) first, in a row and last; a nullable string and a
  // nullable Decimal (no folding: NULL prints null); __typename alone; an empty list (holder 2).
  const queries = [
    `{ p_findManyPgstmtHolder(orderBy: [{ id: asc }]) { id name pgstmtItems { amount exact at big } } }`,
    `{ p_findManyPgstmtHolder(orderBy: [{ id: desc }]) { pgstmtItems(orderBy: [{ big: desc }]) { id note maybe } name } }`,
    `{ p_findManyPgstmtHolder(orderBy: [{ id: asc }]) { pgstmtItems { __typename } x: pgstmtItems(take: 1) { at } } }`,
    `{ p_findManyPgstmtHolder(orderBy: [{ id: asc }]) { pgstmtItems(take: -1, orderBy: [{ exact: asc }]) { exact note } } }`,
    `{ p_findManyPgstmtItem(orderBy: [{ id: asc }]) { exact amount holder { name } at } }`,
  ]
  const names = Object.keys(schema.getQueryType()!.getFields()).filter((n) => n.startsWith('p_findManyPgstmt'))
  t.same(names.sort(), ['p_findManyPgstmtHolder', 'p_findManyPgstmtItem'], 'the test tables\' list fields')
  log.clear()
  for (const q of queries) await assertSame(t, schema, q)
  const text = log.statements.map((x) => x.sql).join('\n')
  t.match(text, /string_agg\([^]*, '"\},\{"amount":"'\) \|\| '"\}\]'/, 'a quoted last value: its quotes in the separator and the closing literal')
  t.match(text, /'","at":"' \|\| \(CASE WHEN/, 'quoted values in a row share one literal')
  t.match(text, /t\d+\."exact" <> 'NaN'/, 'numeric(8,2) of a table: only NaN is checked')
  t.match(text, /t\d+\."amount" > '-Infinity' AND t\d+\."amount" < 'Infinity'/, 'unconstrained numeric: infinities are checked too')
  t.match(text, /WHEN t\d+\."maybe" IS NULL THEN 'null'/, 'a nullable Decimal keeps its quotes inside the CASE')
  t.match(text, /t\d+\."big" AS __o0 FROM [^]* ORDER BY __o0 DESC, "id" ASC LIMIT 1000\) AS t\d+/, 'an order key that is a projected column is not copied, another one is')

  // Values GraphQL rejects still make run reject inside nested lists.
  await knex.raw(`update pgstmt_item set amount = 'Infinity' where id = 2`)
  t.equal(await sameOrRejects(t, schema, queries[0]!), 'rejected', 'Infinity in an unconstrained numeric of a nested row: rejected')
  await knex.raw(`update pgstmt_item set amount = 1, exact = 'NaN' where id = 2`)
  t.equal(await sameOrRejects(t, schema, queries[0]!), 'rejected', 'NaN in a numeric(8,2) of a nested row: rejected')
  await knex.raw(`update pgstmt_item set exact = 1 where id = 2`)
  t.equal(await sameOrRejects(t, schema, queries[0]!), 'same', 'and the same answer once the values are finite')
})
