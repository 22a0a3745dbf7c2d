/**
 * One list of GraphQL queries, run against the Chinook database on SQLite, PostgreSQL and
 * MySQL/MariaDB through `createDatabaseSource` + graphql `execute`. For every query:
 * - each engine's answer equals the answer computed by direct SQL on that engine;
 * - all engines give the same answer.
 *
 * Chinook is loaded by test/helpers/chinook.ts (PostgreSQL: schema `chinook`; MySQL: database
 * `chinook_test`, collation utf8mb4_bin). PostgreSQL and MySQL parts skip when unreachable.
 *
 * - each root field sends exactly one SQL statement (counted from the source's debug `sql` log lines).
 *
 * Comparison with direct SQL: Decimal values (`total`, `unitPrice`, `_sum`/`_avg` of them) are compared
 * as numbers rounded to 6 decimals (SQLite stores NUMERIC(10,2) as REAL, drivers return strings or
 * numbers); DateTime values from direct SQL are read as UTC. Between engines the raw JSON must be
 * identical, except Float averages, compared to 12 significant digits.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { execute, parse, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql'
import pino from 'pino'
import type { Knex } from 'knex'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import type { ConnectorContext, ConnectorSubschema } from '../gateway/connectors/types.js'
import { chinook, repoRoot, type TestDatabase } from './helpers/chinook.js'

type Row = Record<string, unknown>
type Json = unknown

interface Engine {
  dialect: Dialect
  db: TestDatabase
  knex: Knex
  source: ConnectorSubschema
  /** SQL statements the source logged (`msg: "sql"` at debug level) since the last reset. */
  statements: string[]
}

// ----- direct SQL, written once for the three engines -----

const snake = (s: string): string => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase()

/**
 * `[Ident]` -> a quoted table/column name (PostgreSQL's Chinook is snake_case), `<alias>` -> a quoted
 * alias, `INSTR(a, b)` -> PostgreSQL `strpos(a, b)`, `CHARLEN(s)` -> the length in characters,
 * `cast(x as DOUBLE)` -> a double-precision cast.
 */
function sqlFor(dialect: Dialect, template: string): string {
  return template
    .replace(/\[([A-Za-z_]+)\]/g, (_, id: string) => (dialect === 'postgres' ? `"${snake(id)}"` : dialect === 'mysql' ? `\`${id}\`` : `"${id}"`))
    .replace(/<([A-Za-z_]+)>/g, (_, id: string) => (dialect === 'mysql' ? `\`${id}\`` : `"${id}"`))
    .replace(/\bINSTR\(/g, dialect === 'postgres' ? 'strpos(' : 'instr(')
    .replace(/\bCHARLEN\(/g, dialect === 'sqlite' ? 'length(' : 'char_length(')
    .replace(/\bas DOUBLE\)/g, dialect === 'postgres' ? 'as double precision)' : 'as double)')
}

async function rows(e: Engine, template: string): Promise<Row[]> {
  const sql = sqlFor(e.dialect, template)
  const res = (await e.knex.raw(sql)) as unknown
  if (e.dialect === 'postgres') return (res as { rows: Row[] }).rows
  if (e.dialect === 'mysql') return (res as [Row[]])[0]
  return res as Row[]
}

// ----- canonical form -----

const DATETIME_KEYS = new Set(['invoiceDate', 'birthDate', 'hireDate'])
const DECIMAL_KEYS = new Set(['total', 'unitPrice'])
const AGG_KEYS = new Set(['_sum', '_avg', '_min', '_max'])

function toIso(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString()
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(v)) return new Date(`${v.replace(' ', 'T')}Z`).toISOString()
  return v
}
const round6 = (v: unknown): unknown => (v === null || v === undefined ? v : Math.round(Number(v) * 1e6) / 1e6)

/** Canonical form of an answer: ISO DateTimes, Decimals and averages as rounded numbers, counts as numbers. */
function canon(v: Json, key = '', parent = ''): Json {
  if (Array.isArray(v)) return v.map((x) => canon(x, key, parent))
  if (v instanceof Date) return v.toISOString()
  if (v !== null && typeof v === 'object') {
    const out: Record<string, Json> = {}
    for (const [k, x] of Object.entries(v as Record<string, Json>)) out[k] = canon(x, k, key)
    return out
  }
  if (DATETIME_KEYS.has(key)) return toIso(v)
  if (DECIMAL_KEYS.has(key)) return round6(v)
  if (parent === '_count') return v === null ? v : Number(v)
  if (AGG_KEYS.has(parent) && (typeof v === 'number' || (typeof v === 'string' && /^-?\d+(\.\d+)?(e[-+]?\d+)?$/i.test(v)))) return round6(v)
  return v
}

/** The raw answer with every non-integer number rounded to 12 significant digits. */
function floatsRounded(v: Json): Json {
  if (Array.isArray(v)) return v.map(floatsRounded)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, Json>).map(([k, x]) => [k, floatsRounded(x)]))
  if (typeof v === 'number' && !Number.isInteger(v)) return Number(v.toPrecision(12))
  return v
}

// ----- the cases -----

interface Case {
  name: string
  /** The GraphQL document, without namespace. */
  query: string
  variables?: Record<string, unknown>
  /** Computes the expected `data` from direct SQL on one engine. */
  expected: (e: Engine) => Promise<Json>
}

/** A list field whose rows are exactly what `sql` selects (aliases = GraphQL field names, same order). */
const list = (field: string, sql: string) => async (e: Engine): Promise<Json> => ({ [field]: await rows(e, sql) })
/** A single-object field: the first row of `sql`, or null. */
const one = (field: string, sql: string) => async (e: Engine): Promise<Json> => ({ [field]: (await rows(e, sql))[0] ?? null })

/** Artist ids whose name matches an SQL condition on `[Name]`. */
const artistWhere = (name: string, graphqlWhere: string, sqlCondition: string): Case => ({
  name: `String filter: ${name}`,
  query: `{ findManyArtist(where: { name: ${graphqlWhere} }, orderBy: [{ artistId: asc }]) { artistId name } }`,
  expected: list('findManyArtist', `select [ArtistId] as <artistId>, [Name] as <name> from [Artist] where ${sqlCondition} order by [ArtistId]`),
})
const trackIds = (name: string, graphqlWhere: string, sqlCondition: string, extra = ''): Case => ({
  name,
  query: `{ findManyTrack(where: ${graphqlWhere}, orderBy: [{ trackId: asc }]${extra}) { trackId } }`,
  expected: list('findManyTrack', `select [TrackId] as <trackId> from [Track] where ${sqlCondition} order by [TrackId]`),
})

const cases: Case[] = [
  {
    name: 'nested: artists -> albums -> tracks',
    query: `{ findManyArtist(take: 5, orderBy: [{ artistId: asc }]) {
      artistId name
      albums(orderBy: [{ albumId: asc }]) { albumId title tracks(orderBy: [{ trackId: asc }], take: 3) { trackId name milliseconds unitPrice } }
    } }`,
    async expected(e) {
      const artists = await rows(e, `select [ArtistId] as <artistId>, [Name] as <name> from [Artist] order by [ArtistId] limit 5`)
      for (const a of artists) {
        const albums = await rows(e, `select [AlbumId] as <albumId>, [Title] as <title> from [Album] where [ArtistId] = ${Number(a.artistId)} order by [AlbumId]`)
        for (const al of albums) {
          al.tracks = await rows(e, `select [TrackId] as <trackId>, [Name] as <name>, [Milliseconds] as <milliseconds>, [UnitPrice] as <unitPrice>
            from [Track] where [AlbumId] = ${Number(al.albumId)} order by [TrackId] limit 3`)
        }
        a.albums = albums
      }
      return { findManyArtist: artists }
    },
  },
  {
    name: 'nested: track -> album -> artist (many-to-one chain) and genre, mediaType',
    query: `{ findManyTrack(where: { trackId: { in: [1, 2, 3403, 3503] } }, orderBy: [{ trackId: asc }]) {
      trackId name album { title artist { name } } genre { name } mediaType { name }
    } }`,
    async expected(e) {
      const list = await rows(e, `select t.[TrackId] as <trackId>, t.[Name] as <name>, al.[Title] as <albumTitle>, ar.[Name] as <artistName>, g.[Name] as <genre>, m.[Name] as <media>
        from [Track] t left join [Album] al on al.[AlbumId] = t.[AlbumId] left join [Artist] ar on ar.[ArtistId] = al.[ArtistId]
        left join [Genre] g on g.[GenreId] = t.[GenreId] join [MediaType] m on m.[MediaTypeId] = t.[MediaTypeId]
        where t.[TrackId] in (1, 2, 3403, 3503) order by t.[TrackId]`)
      return {
        findManyTrack: list.map((r) => ({
          trackId: r.trackId, name: r.name,
          album: r.albumTitle === null ? null : { title: r.albumTitle, artist: { name: r.artistName } },
          genre: r.genre === null ? null : { name: r.genre }, mediaType: { name: r.media },
        })),
      }
    },
  },
  {
    name: 'findUnique by primary key, with a relation list',
    query: `{ findUniqueArtist(where: { artistId: 1 }) { artistId name albums(orderBy: [{ title: asc }]) { title } } }`,
    async expected(e) {
      const [a] = await rows(e, `select [ArtistId] as <artistId>, [Name] as <name> from [Artist] where [ArtistId] = 1`)
      return { findUniqueArtist: { ...a, albums: await rows(e, `select [Title] as <title> from [Album] where [ArtistId] = 1 order by [Title]`) } }
    },
  },
  {
    name: 'findUnique: no such row -> null',
    query: `{ findUniqueArtist(where: { artistId: 999999 }) { artistId } }`,
    expected: async () => ({ findUniqueArtist: null }),
  },
  {
    name: 'findUnique on a compound primary key (PlaylistTrack)',
    query: `{ findUniquePlaylistTrack(where: { playlistId_trackId: { playlistId: 1, trackId: 3402 } }) { playlistId trackId track { name } playlist { name } } }`,
    async expected(e) {
      const [r] = await rows(e, `select pt.[PlaylistId] as <playlistId>, pt.[TrackId] as <trackId>, t.[Name] as <track>, p.[Name] as <playlist>
        from [PlaylistTrack] pt join [Track] t on t.[TrackId] = pt.[TrackId] join [Playlist] p on p.[PlaylistId] = pt.[PlaylistId]
        where pt.[PlaylistId] = 1 and pt.[TrackId] = 3402`)
      return { findUniquePlaylistTrack: r ? { playlistId: r.playlistId, trackId: r.trackId, track: { name: r.track }, playlist: { name: r.playlist } } : null }
    },
  },
  {
    name: 'self-reference: Employee.reportsTo both ways',
    query: `{ findManyEmployee(orderBy: [{ employeeId: asc }]) {
      employeeId firstName reportsTo employee { employeeId lastName } employees(orderBy: [{ employeeId: asc }]) { employeeId }
    } }`,
    async expected(e) {
      const emps = await rows(e, `select [EmployeeId] as <employeeId>, [FirstName] as <firstName>, [ReportsTo] as <reportsTo> from [Employee] order by [EmployeeId]`)
      const out = []
      for (const x of emps) {
        const [boss] = x.reportsTo === null ? [] : await rows(e, `select [EmployeeId] as <employeeId>, [LastName] as <lastName> from [Employee] where [EmployeeId] = ${Number(x.reportsTo)}`)
        const reports = await rows(e, `select [EmployeeId] as <employeeId> from [Employee] where [ReportsTo] = ${Number(x.employeeId)} order by [EmployeeId]`)
        out.push({ ...x, employee: boss ?? null, employees: reports })
      }
      return { findManyEmployee: out }
    },
  },
  {
    name: 'DateTime fields come back as ISO 8601 UTC',
    query: `{ findManyEmployee(where: { employeeId: { lte: 3 } }, orderBy: [{ employeeId: asc }]) { employeeId birthDate hireDate } }`,
    expected: list('findManyEmployee', `select [EmployeeId] as <employeeId>, [BirthDate] as <birthDate>, [HireDate] as <hireDate> from [Employee] where [EmployeeId] <= 3 order by [EmployeeId]`),
  },

  // string filters, every operator
  artistWhere('equals', `{ equals: "AC/DC" }`, `[Name] = 'AC/DC'`),
  artistWhere('in', `{ in: ["AC/DC", "Accept", "Nobody"] }`, `[Name] in ('AC/DC', 'Accept', 'Nobody')`),
  artistWhere('notIn', `{ notIn: ["AC/DC", "Accept"] }`, `[Name] not in ('AC/DC', 'Accept')`),
  artistWhere('lt', `{ lt: "Ad" }`, `[Name] < 'Ad'`),
  artistWhere('lte', `{ lte: "Accept" }`, `[Name] <= 'Accept'`),
  artistWhere('gt', `{ gt: "Y" }`, `[Name] > 'Y'`),
  artistWhere('gte', `{ gte: "Youssou N'Dour" }`, `[Name] >= 'Youssou N''Dour'`),
  artistWhere('contains', `{ contains: "Orchestra" }`, `INSTR([Name], 'Orchestra') > 0`),
  artistWhere('contains (case-sensitive by default)', `{ contains: "orchestra" }`, `INSTR([Name], 'orchestra') > 0`),
  artistWhere('contains mode: insensitive', `{ contains: "orchestra", mode: insensitive }`, `INSTR(lower([Name]), 'orchestra') > 0`),
  artistWhere('startsWith', `{ startsWith: "The " }`, `INSTR([Name], 'The ') = 1`),
  artistWhere('startsWith mode: insensitive', `{ startsWith: "the ", mode: insensitive }`, `INSTR(lower([Name]), 'the ') = 1`),
  artistWhere('endsWith', `{ endsWith: "Orchestra" }`, `substr([Name], CHARLEN([Name]) - 8) = 'Orchestra'`),
  artistWhere('equals mode: insensitive', `{ equals: "ac/dc", mode: insensitive }`, `lower([Name]) = 'ac/dc'`),
  artistWhere('not (nested filter)', `{ not: { startsWith: "A" } }`, `INSTR([Name], 'A') <> 1`),
  artistWhere('not equals (scalar)', `{ not: { equals: "AC/DC" } }`, `[Name] <> 'AC/DC'`),
  artistWhere('several operators together', `{ gte: "B", lt: "C", contains: "e" }`, `[Name] >= 'B' and [Name] < 'C' and INSTR([Name], 'e') > 0`),
  artistWhere('LIKE wildcards are literal: %', `{ contains: "%" }`, `INSTR([Name], '%') > 0`),
  artistWhere('LIKE wildcards are literal: _', `{ startsWith: "_" }`, `INSTR([Name], '_') = 1`),
  artistWhere('& in a value', `{ contains: " & " }`, `INSTR([Name], ' & ') > 0`),
  trackIds('String filter: contains % (a track is named "100% HardCore")', `{ name: { contains: "0%" } }`, `INSTR([Name], '0%') > 0`),

  // numbers, decimals, dates, nulls
  trackIds('Int filter: equals', `{ milliseconds: { equals: 343719 } }`, `[Milliseconds] = 343719`),
  trackIds('Int filter: lt / gt', `{ milliseconds: { lt: 10000 } }`, `[Milliseconds] < 10000`),
  trackIds('Int filter: lte / gte range', `{ milliseconds: { gte: 3000000, lte: 5000000 } }`, `[Milliseconds] >= 3000000 and [Milliseconds] <= 5000000`),
  trackIds('Int filter: in', `{ albumId: { in: [1, 4] } }`, `[AlbumId] in (1, 4)`),
  trackIds('Int filter: notIn + lt', `{ albumId: { notIn: [1, 2, 3], lt: 6 } }`, `[AlbumId] not in (1, 2, 3) and [AlbumId] < 6`),
  trackIds('Int filter: not', `{ genreId: { not: { gte: 2 } } }`, `not ([GenreId] >= 2)`),
  trackIds('Decimal filter: gt', `{ unitPrice: { gt: "0.99" } }`, `[UnitPrice] > 0.99`),
  trackIds('Decimal filter: equals', `{ unitPrice: { equals: "1.99" }, trackId: { lt: 2900 } }`, `[UnitPrice] = 1.99 and [TrackId] < 2900`),
  trackIds('null: equals null', `{ composer: { equals: null }, albumId: { lt: 20 } }`, `[Composer] is null and [AlbumId] < 20`),
  trackIds('null: not null', `{ composer: { not: { equals: null } }, albumId: { lt: 5 } }`, `[Composer] is not null and [AlbumId] < 5`),
  {
    name: 'DateTime filter: gte / lt',
    query: `{ findManyInvoice(where: { invoiceDate: { gte: "2025-01-01T00:00:00.000Z", lt: "2025-02-01T00:00:00.000Z" } }, orderBy: [{ invoiceId: asc }]) { invoiceId invoiceDate total } }`,
    expected: list('findManyInvoice', `select [InvoiceId] as <invoiceId>, [InvoiceDate] as <invoiceDate>, [Total] as <total> from [Invoice]
      where [InvoiceDate] >= '2025-01-01 00:00:00' and [InvoiceDate] < '2025-02-01 00:00:00' order by [InvoiceId]`),
  },
  {
    name: 'DateTime filter: equals / in',
    query: `{ findManyInvoice(where: { invoiceDate: { in: ["2021-01-01T00:00:00.000Z", "2021-01-02T00:00:00.000Z"] } }, orderBy: [{ invoiceId: asc }]) { invoiceId } }`,
    expected: list('findManyInvoice', `select [InvoiceId] as <invoiceId> from [Invoice] where [InvoiceDate] in ('2021-01-01 00:00:00', '2021-01-02 00:00:00') order by [InvoiceId]`),
  },

  // AND / OR / NOT
  trackIds('AND', `{ AND: [{ albumId: { equals: 1 } }, { milliseconds: { gt: 300000 } }] }`, `[AlbumId] = 1 and [Milliseconds] > 300000`),
  trackIds('OR', `{ OR: [{ albumId: { equals: 1 } }, { name: { startsWith: "Zu" } }] }`, `[AlbumId] = 1 or INSTR([Name], 'Zu') = 1`),
  trackIds('NOT', `{ albumId: { lte: 3 }, NOT: [{ milliseconds: { gt: 300000 } }] }`, `[AlbumId] <= 3 and not ([Milliseconds] > 300000)`),
  trackIds('nested AND / OR / NOT', `{ OR: [{ AND: [{ albumId: { equals: 2 } }, { NOT: { name: { contains: "x" } } }] }, { trackId: { in: [7, 8] } }] }`,
    `([AlbumId] = 2 and not (INSTR([Name], 'x') > 0)) or [TrackId] in (7, 8)`),

  // relation filters
  {
    name: 'relation filter: some',
    query: `{ findManyArtist(where: { albums: { some: { title: { contains: "Greatest" } } } }, orderBy: [{ artistId: asc }]) { artistId } }`,
    expected: list('findManyArtist', `select [ArtistId] as <artistId> from [Artist] a where exists (select 1 from [Album] b where b.[ArtistId] = a.[ArtistId] and INSTR(b.[Title], 'Greatest') > 0) order by [ArtistId]`),
  },
  {
    name: 'relation filter: every (vacuously true without albums)',
    query: `{ findManyArtist(where: { albums: { every: { title: { startsWith: "A" } } } }, orderBy: [{ artistId: asc }]) { artistId } }`,
    expected: list('findManyArtist', `select [ArtistId] as <artistId> from [Artist] a where not exists (select 1 from [Album] b where b.[ArtistId] = a.[ArtistId] and not (INSTR(b.[Title], 'A') = 1)) order by [ArtistId]`),
  },
  {
    name: 'relation filter: none',
    query: `{ findManyArtist(where: { albums: { none: {} } }, orderBy: [{ artistId: asc }]) { artistId } }`,
    expected: list('findManyArtist', `select [ArtistId] as <artistId> from [Artist] a where not exists (select 1 from [Album] b where b.[ArtistId] = a.[ArtistId]) order by [ArtistId]`),
  },
  {
    name: 'relation filter: is (many-to-one), two levels',
    query: `{ findManyTrack(where: { album: { is: { artist: { is: { name: { equals: "Aerosmith" } } } } } }, orderBy: [{ trackId: asc }]) { trackId } }`,
    expected: list('findManyTrack', `select t.[TrackId] as <trackId> from [Track] t join [Album] al on al.[AlbumId] = t.[AlbumId] join [Artist] ar on ar.[ArtistId] = al.[ArtistId] where ar.[Name] = 'Aerosmith' order by t.[TrackId]`),
  },
  {
    name: 'relation filter: isNot',
    query: `{ findManyTrack(where: { albumId: { lte: 10 }, genre: { isNot: { name: { equals: "Rock" } } } }, orderBy: [{ trackId: asc }]) { trackId } }`,
    expected: list('findManyTrack', `select t.[TrackId] as <trackId> from [Track] t where t.[AlbumId] <= 10 and not exists (select 1 from [Genre] g where g.[GenreId] = t.[GenreId] and g.[Name] = 'Rock') order by t.[TrackId]`),
  },
  {
    name: 'relation filter: some inside some (customers with an invoice line of a Jazz track)',
    query: `{ findManyCustomer(where: { invoices: { some: { invoiceLines: { some: { track: { is: { genre: { is: { name: { equals: "Jazz" } } } } } } } } } }, orderBy: [{ customerId: asc }]) { customerId } }`,
    expected: list('findManyCustomer', `select c.[CustomerId] as <customerId> from [Customer] c where exists (select 1 from [Invoice] i join [InvoiceLine] il on il.[InvoiceId] = i.[InvoiceId]
      join [Track] t on t.[TrackId] = il.[TrackId] join [Genre] g on g.[GenreId] = t.[GenreId] where i.[CustomerId] = c.[CustomerId] and g.[Name] = 'Jazz') order by c.[CustomerId]`),
  },
  {
    name: 'relation filter on a nested list argument',
    query: `{ findManyArtist(where: { artistId: { lte: 3 } }, orderBy: [{ artistId: asc }]) { artistId albums(where: { tracks: { some: { milliseconds: { gt: 400000 } } } }, orderBy: [{ albumId: asc }]) { albumId } } }`,
    async expected(e) {
      const artists = await rows(e, `select [ArtistId] as <artistId> from [Artist] where [ArtistId] <= 3 order by [ArtistId]`)
      for (const a of artists) {
        a.albums = await rows(e, `select b.[AlbumId] as <albumId> from [Album] b where b.[ArtistId] = ${Number(a.artistId)}
          and exists (select 1 from [Track] t where t.[AlbumId] = b.[AlbumId] and t.[Milliseconds] > 400000) order by b.[AlbumId]`)
      }
      return { findManyArtist: artists }
    },
  },

  // ordering and pagination
  {
    name: 'orderBy several fields',
    query: `{ findManyTrack(where: { albumId: { lte: 5 } }, orderBy: [{ albumId: desc }, { milliseconds: asc }]) { trackId albumId milliseconds } }`,
    expected: list('findManyTrack', `select [TrackId] as <trackId>, [AlbumId] as <albumId>, [Milliseconds] as <milliseconds> from [Track] where [AlbumId] <= 5 order by [AlbumId] desc, [Milliseconds] asc`),
  },
  {
    name: 'orderBy a relation scalar',
    query: `{ findManyTrack(where: { trackId: { lte: 60 } }, orderBy: [{ album: { title: asc } }, { trackId: desc }]) { trackId } }`,
    expected: list('findManyTrack', `select t.[TrackId] as <trackId> from [Track] t join [Album] al on al.[AlbumId] = t.[AlbumId] where t.[TrackId] <= 60 order by al.[Title] asc, t.[TrackId] desc`),
  },
  {
    name: 'orderBy a string (binary collation)',
    query: `{ findManyArtist(orderBy: [{ name: desc }], take: 15) { name } }`,
    expected: list('findManyArtist', `select [Name] as <name> from [Artist] order by [Name] desc limit 15`),
  },
  {
    name: 'take / skip',
    query: `{ findManyTrack(orderBy: [{ trackId: asc }], take: 5, skip: 100) { trackId name } }`,
    expected: list('findManyTrack', `select [TrackId] as <trackId>, [Name] as <name> from [Track] order by [TrackId] limit 5 offset 100`),
  },
  {
    name: 'cursor',
    query: `{ findManyTrack(cursor: { trackId: 200 }, orderBy: [{ trackId: asc }], take: 4) { trackId } }`,
    expected: list('findManyTrack', `select [TrackId] as <trackId> from [Track] where [TrackId] >= 200 order by [TrackId] limit 4`),
  },
  {
    name: 'cursor + skip 1 (the next page)',
    query: `{ findManyTrack(cursor: { trackId: 200 }, skip: 1, orderBy: [{ trackId: asc }], take: 4) { trackId } }`,
    expected: list('findManyTrack', `select [TrackId] as <trackId> from [Track] where [TrackId] > 200 order by [TrackId] limit 4`),
  },
  {
    name: 'cursor with a non-unique ordering (ties broken by the cursor row position)',
    query: `{ findManyTrack(cursor: { trackId: 3 }, where: { albumId: { lte: 3 } }, orderBy: [{ albumId: asc }, { trackId: asc }], take: 3) { trackId albumId } }`,
    expected: list('findManyTrack', `select [TrackId] as <trackId>, [AlbumId] as <albumId> from [Track] where [AlbumId] <= 3 and ([AlbumId] > 3 or ([AlbumId] = 3 and [TrackId] >= 3)) order by [AlbumId], [TrackId] limit 3`),
  },
  {
    name: 'distinct',
    query: `{ findManyInvoice(distinct: [billingCountry], orderBy: [{ billingCountry: asc }]) { billingCountry } }`,
    expected: list('findManyInvoice', `select distinct [BillingCountry] as <billingCountry> from [Invoice] order by [BillingCountry]`),
  },
  {
    name: 'findFirst',
    query: `{ findFirstTrack(where: { name: { startsWith: "B" } }, orderBy: [{ trackId: desc }]) { trackId name } }`,
    expected: one('findFirstTrack', `select [TrackId] as <trackId>, [Name] as <name> from [Track] where INSTR([Name], 'B') = 1 order by [TrackId] desc limit 1`),
  },
  {
    name: 'findFirst: nothing -> null',
    query: `{ findFirstTrack(where: { name: { equals: "no such track" } }) { trackId } }`,
    expected: async () => ({ findFirstTrack: null }),
  },
  {
    name: 'nested list with where, orderBy, take and skip',
    query: `{ findUniqueAlbum(where: { albumId: 1 }) { title tracks(where: { milliseconds: { gt: 200000 } }, orderBy: [{ milliseconds: desc }], take: 3, skip: 1) { trackId milliseconds } } }`,
    async expected(e) {
      const [a] = await rows(e, `select [Title] as <title> from [Album] where [AlbumId] = 1`)
      const tracks = await rows(e, `select [TrackId] as <trackId>, [Milliseconds] as <milliseconds> from [Track] where [AlbumId] = 1 and [Milliseconds] > 200000 order by [Milliseconds] desc limit 3 offset 1`)
      return { findUniqueAlbum: { ...a, tracks } }
    },
  },
  {
    name: 'variables',
    query: `query Q($id: Int!, $take: Int) { findUniqueArtist(where: { artistId: $id }) { name albums(take: $take, orderBy: [{ albumId: asc }]) { albumId } } }`,
    variables: { id: 90, take: 2 },
    async expected(e) {
      const [a] = await rows(e, `select [Name] as <name> from [Artist] where [ArtistId] = 90`)
      return { findUniqueArtist: { ...a, albums: await rows(e, `select [AlbumId] as <albumId> from [Album] where [ArtistId] = 90 order by [AlbumId] limit 2`) } }
    },
  },

  // aggregates and groupBy
  {
    name: 'aggregate: _count, _sum, _avg, _min, _max',
    query: `{ aggregateTrack { _count { _all composer } _sum { milliseconds } _avg { milliseconds } _min { milliseconds name } _max { milliseconds unitPrice } } }`,
    async expected(e) {
      const [r] = await rows(e, `select count(*) as <n>, count([Composer]) as <composers>, sum([Milliseconds]) as <sum>, avg(cast([Milliseconds] as DOUBLE)) as <avg>,
        min([Milliseconds]) as <minMs>, min([Name]) as <minName>, max([Milliseconds]) as <maxMs>, max([UnitPrice]) as <maxPrice> from [Track]`)
      return {
        aggregateTrack: {
          _count: { _all: r!.n, composer: r!.composers }, _sum: { milliseconds: r!.sum }, _avg: { milliseconds: r!.avg },
          _min: { milliseconds: r!.minMs, name: r!.minName }, _max: { milliseconds: r!.maxMs, unitPrice: r!.maxPrice },
        },
      }
    },
  },
  {
    name: 'aggregate with where, on Decimal and DateTime',
    query: `{ aggregateInvoice(where: { billingCountry: { equals: "USA" } }) { _count { _all } _sum { total } _avg { total } _min { invoiceDate total } _max { invoiceDate } } }`,
    async expected(e) {
      const [r] = await rows(e, `select count(*) as <n>, sum([Total]) as <sum>, avg([Total]) as <avg>, min([InvoiceDate]) as <minDate>, min([Total]) as <minTotal>, max([InvoiceDate]) as <maxDate>
        from [Invoice] where [BillingCountry] = 'USA'`)
      return {
        aggregateInvoice: {
          _count: { _all: r!.n }, _sum: { total: r!.sum }, _avg: { total: r!.avg },
          _min: { invoiceDate: toIso(r!.minDate), total: r!.minTotal }, _max: { invoiceDate: toIso(r!.maxDate) },
        },
      }
    },
  },
  {
    name: 'aggregate over an empty set',
    query: `{ aggregateTrack(where: { trackId: { lt: 0 } }) { _count { _all } _sum { milliseconds } _max { name } } }`,
    expected: async () => ({ aggregateTrack: { _count: { _all: 0 }, _sum: { milliseconds: null }, _max: { name: null } } }),
  },
  {
    name: 'groupBy with _count and _sum',
    query: `{ groupByInvoice(by: [billingCountry], orderBy: [{ billingCountry: asc }]) { billingCountry _count { _all } _sum { total } } }`,
    async expected(e) {
      const list = await rows(e, `select [BillingCountry] as <c>, count(*) as <n>, sum([Total]) as <s> from [Invoice] group by [BillingCountry] order by [BillingCountry]`)
      return { groupByInvoice: list.map((r) => ({ billingCountry: r.c, _count: { _all: r.n }, _sum: { total: r.s } })) }
    },
  },
  {
    name: 'groupBy with where, having, take and skip',
    query: `{ groupByInvoice(by: [billingCountry], where: { total: { gt: "1" } }, having: { total: { _sum: { gt: "100" } } }, orderBy: [{ billingCountry: asc }], take: 5, skip: 1) {
      billingCountry _count { _all } _avg { total } _max { total }
    } }`,
    async expected(e) {
      const list = await rows(e, `select [BillingCountry] as <c>, count(*) as <n>, avg([Total]) as <a>, max([Total]) as <m> from [Invoice] where [Total] > 1
        group by [BillingCountry] having sum([Total]) > 100 order by [BillingCountry] limit 5 offset 1`)
      return { groupByInvoice: list.map((r) => ({ billingCountry: r.c, _count: { _all: r.n }, _avg: { total: r.a }, _max: { total: r.m } })) }
    },
  },
  {
    name: 'groupBy two columns',
    query: `{ groupByTrack(by: [mediaTypeId, genreId], where: { genreId: { lte: 3 } }, orderBy: [{ mediaTypeId: asc }, { genreId: asc }]) { mediaTypeId genreId _count { _all } _sum { milliseconds } } }`,
    async expected(e) {
      const list = await rows(e, `select [MediaTypeId] as <m>, [GenreId] as <g>, count(*) as <n>, sum([Milliseconds]) as <s> from [Track] where [GenreId] <= 3
        group by [MediaTypeId], [GenreId] order by [MediaTypeId], [GenreId]`)
      return { groupByTrack: list.map((r) => ({ mediaTypeId: r.m, genreId: r.g, _count: { _all: r.n }, _sum: { milliseconds: r.s } })) }
    },
  },
]

// ----- run -----

async function openEngine(dialect: Dialect): Promise<Engine | string> {
  const db = await chinook(dialect)
  if (db.skipReason) return db.skipReason
  const statements: string[] = []
  const logger = pino({ level: 'debug' }, {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; sql?: string }
      if (entry.msg === 'sql' && typeof entry.sql === 'string') statements.push(entry.sql)
    },
  })
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-chinook-cache-'))
  process.once('exit', () => fs.rmSync(cacheDir, { recursive: true, force: true }))
  const context: ConnectorContext = {
    namespace: 'chinook', sourceName: `chinook-${dialect}`, logger, mode: 'development', cacheDir, cwd: repoRoot,
  }
  // Results are compared whole with hand-written SQL (up to 3503 tracks): above the default maxTake of 1000.
  const source = await createDatabaseSource({ url: db.url, maxTake: 5000, ...(db.dialect === 'postgres' && db.schema ? { schema: db.schema } : {}) }, context)
  const { knex } = createKnex(db.url)
  return { dialect, db, knex, source, statements }
}

async function run(schema: GraphQLSchema, c: Case): Promise<ExecutionResult> {
  return (await execute({ schema, document: parse(c.query), variableValues: c.variables ?? {} })) as ExecutionResult
}

const engines: Engine[] = []
for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  const e = await openEngine(dialect)
  if (typeof e === 'string') t.test(`Chinook on ${dialect}`, { skip: e }, async () => {})
  else engines.push(e)
}
t.teardown(async () => {
  for (const e of engines) {
    await e.source.close()
    await e.knex.destroy()
    await e.db.cleanup()
  }
})

for (const c of cases) {
  t.test(c.name, async (t) => {
    const answers: { dialect: Dialect; data: Json; raw: Json }[] = []
    const rootFields = (parse(c.query).definitions[0] as OperationDefinitionNode).selectionSet.selections.length
    for (const e of engines) {
      e.statements.length = 0
      const result = await run(e.source.schema, c)
      t.same(result.errors?.map((x) => x.message) ?? [], [], `${e.dialect}: no errors`)
      t.equal(e.statements.length, rootFields, `${e.dialect}: one SQL statement per root field`)
      const expected = canon(await c.expected(e))
      t.same(canon(JSON.parse(JSON.stringify(result.data ?? null)) as Json), expected, `${e.dialect}: equals direct SQL`)
      answers.push({ dialect: e.dialect, data: canon(JSON.parse(JSON.stringify(result.data ?? null)) as Json), raw: JSON.parse(JSON.stringify(result.data ?? null)) as Json })
    }
    for (const a of answers.slice(1)) {
      t.same(a.data, answers[0]!.data, `${a.dialect} answers as ${answers[0]!.dialect} does`)
      // Exact answers, Decimal strings and DateTimes included; only Float averages may differ in their last digits.
      t.same(floatsRounded(a.raw), floatsRounded(answers[0]!.raw), `${a.dialect} gives exactly the same JSON as ${answers[0]!.dialect} (Float _avg to 12 digits)`)
    }
  })
}
