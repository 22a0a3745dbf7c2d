/**
 * Links (README "Links") through real HTTP against real upstreams on 127.0.0.1: the Chinook SQLite
 * database, the federation example's countries REST API, a local schema with a subscription, and a
 * PostgreSQL database. Covers config errors, deduplication and the concurrency cap (attack), failing
 * softly, subscriptions, live queries, the generated OpenAPI document and typed client, and links
 * between two databases on different engines in both directions.
 */
import t, { type Test } from 'tap'
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EventSource } from 'eventsource'
import WebSocket from 'ws'
import { createClient } from 'graphql-ws'
import pg from 'pg'
import mysql from 'mysql2/promise'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type LinkDefinition, type TributaryConfigInput, type DataSourceDefinition } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { buildOpenApiDocument } from '../gateway/codegen/openapi.js'
import { renderClient } from '../gateway/codegen/client.js'
import { createCountriesService } from '../examples/federation/services/countries.js'
import { freshDatabase, mysqlUrl, postgresUrl } from './helpers/chinook.js'
import { mysqlOptions } from '../examples/chinook/load.js'

const root = fileURLToPath(new URL('..', import.meta.url))

interface LogLine {
  msg: string
  source?: string
  url?: string
  sql?: string
}

/** The countries API on an ephemeral port, counting requests by path and the most in flight at once. */
async function countriesApi(t: Test, delayMs = 0, failWhen?: (path: string) => boolean) {
  const app: FastifyInstance = await createCountriesService({ delayMs })
  const stats = { inFlight: 0, maxInFlight: 0, paths: [] as string[] }
  app.addHook('onRequest', async (req, reply) => {
    if (req.url === '/openapi.json') return
    stats.paths.push(decodeURIComponent(req.url))
    stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight)
    // A 400 (never retried) for the calls `failWhen` picks.
    if (failWhen?.(decodeURIComponent(req.url))) return reply.code(400).send({ message: 'refused by the test' })
  })
  app.addHook('onResponse', async (req) => {
    if (req.url !== '/openapi.json') stats.inFlight--
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  return { app, url, stats }
}

const feed: DataSourceDefinition = {
  kind: 'schema',
  namespace: 'feed',
  typeDefs: `
    type Place { name: String! }
    type Tick { n: Int!  country: String! }
    type Query { places: [Place!]! }
    type Subscription { ticks: Tick! }`,
  resolvers: {
    Query: { places: () => ['Brazil', 'Atlantis', 'USA'].map((name) => ({ name })) },
    Subscription: {
      ticks: {
        subscribe: async function* () {
          for (const [n, country] of [[1, 'Brazil'], [2, 'Chile']] as const) yield { n, country }
        },
        resolve: (tick: unknown) => tick,
      },
    },
  },
}

const baseLinks: LinkDefinition[] = [
  { on: 'chinook_Customer', field: 'countryInfo', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name' } },
  { on: 'chinook_Customer', field: 'countryByName', target: 'geo_getCountry', args: { name: '$parent.country' }, concurrency: 3 },
  { on: 'chinook_Customer', field: 'countryChunked', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name', maxKeys: 10 }, concurrency: 2 },
  { on: 'chinook_Customer', field: 'countryDefaultCap', target: 'geo_getCountry', args: { name: '$parent.country' } },
  { on: 'feed_Place', field: 'country', target: 'geo_getCountry', args: { name: '$parent.name' } },
  { on: 'feed_Tick', field: 'countryInfo', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name' } },
]

/** A gateway over Chinook (SQLite copy), the countries API and `feed`, logging at debug; listening on 127.0.0.1. */
async function start(t: Test, options: { delayMs?: number; links?: LinkDefinition[]; sources?: DataSourceDefinition[]; operations?: Record<string, string>; failWhen?: (path: string) => boolean } = {}) {
  const api = await countriesApi(t, options.delayMs, options.failWhen)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-links-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  const ops = join(dir, 'operations')
  const { mkdirSync } = await import('node:fs')
  mkdirSync(ops)
  for (const [name, text] of Object.entries(options.operations ?? {})) writeFileSync(join(ops, `${name}.graphql`), text)
  const input: TributaryConfigInput = {
    datasources: [
      { kind: 'database', namespace: 'chinook', url: `sqlite:${join(dir, 'chinook.sqlite')}` },
      { kind: 'rest', namespace: 'geo', openapi: `${api.url}/openapi.json` },
      feed,
      ...(options.sources ?? []),
    ],
    links: options.links ?? baseLinks,
    operations: { dir: ops, liveIntervalMs: 50 },
    generatedDir: join(dir, 'generated'),
  }
  const lines: LogLine[] = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) })
  const gateway = await createGateway(resolveConfig(input), { logger })
  const app = await buildApp(gateway, { logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const query = async (q: string) => {
    lines.length = 0
    api.stats.paths.length = 0
    api.stats.maxInFlight = 0
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) })
    return { status: res.status, body: (await res.json()) as { data?: any; errors?: any[] } }
  }
  return { api, app, url, gateway, query, lines }
}

t.test('a link declared wrong is refused at startup with the path of the fault', async (t) => {
  const check = (links: unknown, message: RegExp) =>
    t.throws(() => resolveConfig({ datasources: [feed], links }), { code: 'TRB_ERR_CONFIG_INVALID', message }, String(message))
  check([{ on: 'feed_Place', field: 'x' }], /links\[0\]\.target: is required/)
  check([{ on: 'feed_Place', field: 'x', target: 'y', batch: { key: 'a' } }], /links\[0\]\.batch\.match: is required/)
  check([{ on: 'feed_Place', field: 'x', target: 'y', concurrency: 100 }], /links\[0\]\.concurrency: must be <= 64/)
  check([{ on: 'feed_Place', field: '__x', target: 'y' }], /links\[0\]\.field: must not start with "__"/)
  check([{ on: 'feed_Place', field: 'x', target: 'y', batch: { key: 'a', match: 'b', maxKeys: 0 } }], /links\[0\]\.batch\.maxKeys: must be >= 1/)

  const compose = async (links: LinkDefinition[], message: RegExp) => {
    const config = resolveConfig({ datasources: [feed], links, operations: { dir: join(tmpdir(), 'tributary-no-ops') }, generatedDir: mkdtempSync(join(tmpdir(), 'tributary-links-bad-')) })
    await t.rejects(createGateway(config, { logger: pino({ level: 'silent' }) }), { code: 'TRB_ERR_CONFIG_INVALID', message }, String(message))
  }
  await compose([{ on: 'feed_Nope', field: 'x', target: 'feed_places' }], /links\[0\]\.on: feed_Nope is not an object type/)
  await compose([{ on: 'Query', field: 'x', target: 'feed_places' }], /links\[0\]\.on: Query is not an object type/)
  await compose([{ on: 'feed_Place', field: 'name', target: 'feed_places' }], /links\[0\]\.field: feed_Place already has a field name/)
  await compose([{ on: 'feed_Place', field: 'x', target: 'feed_nope' }], /links\[0\]\.target: no Query field named feed_nope/)
  await compose([{ on: 'feed_Place', field: 'x', target: 'feed_places', args: { a: 1 } }], /links\[0\]\.args\.a: feed_places has no argument a/)
  await compose([{ on: 'feed_Place', field: 'x', target: 'feed_places', batch: { key: 'name', match: 'name' } }], /links\[0\]\.args: a batched link passes its keys with '\$keys'/)
  await compose([{ on: 'feed_Place', field: 'x', target: 'feed_places', args: {}, batch: { key: 'nope', match: 'name' } }], /'\$keys'/)
  await compose([{ on: 'feed_Tick', field: 'x', target: 'feed_places', args: { q: '$parent.nope' } }], /feed_places has no argument q/)
})

t.test('without batch: one call per distinct key, at most `concurrency` at once (attack: every customer at once)', async (t) => {
  const { api, query } = await start(t, { delayMs: 30 })
  const res = await query('{ chinook_findManyCustomer { customerId countryByName { capital } } }')
  t.equal(res.status, 200)
  t.equal(res.body.data.chinook_findManyCustomer.length, 59)
  t.notOk(res.body.errors)
  t.equal(api.stats.paths.length, 24, '59 customers in 24 countries: 24 calls, each key once')
  t.equal(new Set(api.stats.paths).size, 24)
  t.ok(api.stats.maxInFlight <= 3, `at most 3 in flight (saw ${api.stats.maxInFlight})`)
  t.ok(api.stats.maxInFlight >= 2, 'the calls do run concurrently')
  t.equal(res.body.data.chinook_findManyCustomer[0].countryByName.capital, 'Brasília')

  const dflt = await query('{ chinook_findManyCustomer { countryDefaultCap { currency } } }')
  t.equal(dflt.status, 200)
  t.equal(api.stats.paths.length, 24)
  t.ok(api.stats.maxInFlight <= 8, `the default cap is 8 (saw ${api.stats.maxInFlight})`)

  const batched = await query('{ chinook_findManyCustomer { countryInfo { currency } } }')
  t.equal(batched.status, 200)
  t.same(api.stats.paths.length, 1, 'with batch: one call for 59 customers')
  t.match(api.stats.paths[0], /^\/countries\?names=Brazil,Germany,Canada,/)

  const chunked = await query('{ chinook_findManyCustomer { customerId countryChunked { name } } }')
  t.equal(chunked.status, 200)
  t.equal(api.stats.paths.length, 3, 'batch.maxKeys 10: 24 distinct keys in 3 calls')
  t.ok(api.stats.maxInFlight <= 2, 'chunks run under the concurrency cap')
  t.ok(chunked.body.data.chinook_findManyCustomer.every((c: any) => c.countryChunked?.name), 'every customer got its country')
})

t.test('fails softly: null and an error at the path, siblings intact', async (t) => {
  const { query, api } = await start(t)
  const res = await query('{ feed_places { name country { capital } } }')
  t.equal(res.status, 200)
  t.same(res.body.data, {
    feed_places: [
      { name: 'Brazil', country: { capital: 'Brasília' } },
      { name: 'Atlantis', country: null },
      { name: 'USA', country: { capital: 'Washington, D.C.' } },
    ],
  })
  t.equal(res.body.errors!.length, 1)
  t.same(res.body.errors![0].path, ['feed_places', 1, 'country'])
  t.equal(res.body.errors![0].extensions.code, 'TRB_ERR_UPSTREAM')

  // A batched target that is down: every parent it served gets null and its own error.
  await api.app.close()
  const down = await query('{ chinook_findManyCustomer(take: 2) { firstName countryInfo { capital } } }')
  t.equal(down.status, 200)
  t.same(down.body.data, { chinook_findManyCustomer: [{ firstName: 'Luís', countryInfo: null }, { firstName: 'Leonie', countryInfo: null }] })
  t.same(down.body.errors!.map((e) => e.path), [['chinook_findManyCustomer', 0, 'countryInfo'], ['chinook_findManyCustomer', 1, 'countryInfo']])
})

t.test('a batched level: errors per item at their paths, null and duplicate keys, more keys than maxKeys, fragments and aliases', async (t) => {
  const links: LinkDefinition[] = [
    ...baseLinks,
    // `state` is null for most customers: a null key gets null without a call.
    { on: 'chinook_Customer', field: 'stateAsCountry', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'state', match: 'name' } },
  ]
  // The chunk of `countryChunked` (maxKeys 10) that holds Germany fails; the other chunks answer.
  let failing = true
  const { query, api } = await start(t, { links, failWhen: (path) => failing && path.startsWith('/countries?names=') && path.split('=')[1]!.split(',').length <= 10 && path.includes('Germany') })
  const all = await query('{ chinook_findManyCustomer(take: 59, orderBy: [{ customerId: asc }]) { customerId country state countryChunked { name currency } } }')
  t.equal(all.status, 200)
  const customers = all.body.data.chinook_findManyCustomer as Array<{ customerId: number; country: string; state: string | null; countryChunked: { name: string } | null }>
  t.equal(customers.length, 59)
  const countries = [...new Set(customers.map((c) => c.country))]
  t.equal(countries.length, 24, '59 customers, 24 distinct countries (duplicate keys)')
  t.equal(api.stats.paths.length, 3, 'one call per 10 distinct keys, the level bigger than maxKeys')
  const failed = api.stats.paths.find((p) => p.includes('Germany'))!.split('=')[1]!.replace(/\+/g, ' ').split(',')
  const errorPaths = (all.body.errors ?? []).map((e) => JSON.stringify(e.path))
  customers.forEach((c, i) => {
    if (failed.includes(c.country)) {
      t.equal(c.countryChunked, null, `customer ${c.customerId} (${c.country}): null, its chunk failed`)
      t.ok(errorPaths.includes(JSON.stringify(['chinook_findManyCustomer', i, 'countryChunked'])), `customer ${c.customerId}: an error at its own path`)
    } else t.equal(c.countryChunked?.name, c.country, `customer ${c.customerId} (${c.country}): served by its chunk`)
  })
  t.equal(errorPaths.length, customers.filter((c) => failed.includes(c.country)).length, 'one error per parent of the failed chunk, no more')
  t.ok(all.body.errors!.every((e) => e.extensions.code === 'TRB_ERR_UPSTREAM'))
  failing = false

  // Null keys: no call for them, null for their parents; keys that match nothing: null, no error.
  const states = await query('{ chinook_findManyCustomer(take: 59, orderBy: [{ customerId: asc }]) { customerId state stateAsCountry { name } } }')
  t.equal(states.status, 200)
  t.notOk(states.body.errors)
  const rows = states.body.data.chinook_findManyCustomer as Array<{ state: string | null; stateAsCountry: unknown }>
  t.ok(rows.some((r) => r.state === null) && rows.some((r) => r.state !== null), 'null and non-null keys in the level')
  t.ok(rows.every((r) => r.stateAsCountry === null))
  t.equal(api.stats.paths.length, 1, 'one call for the level')
  t.notOk(api.stats.paths[0]!.split('=')[1]!.split(',').includes('null'), 'null keys are not sent')

  // The same level through a fragment (the one-parent-at-a-time path) and with an alias next to the field: same answers, same calls.
  const direct = await query('{ chinook_findManyCustomer(take: 30, orderBy: [{ customerId: asc }]) { customerId countryInfo { name capital } other: countryInfo { currency } } }')
  const directCalls = api.stats.paths.length
  const viaFragment = await query('{ chinook_findManyCustomer(take: 30, orderBy: [{ customerId: asc }]) { ...C } } fragment C on chinook_Customer { customerId countryInfo { name capital } other: countryInfo { currency } }')
  t.same(viaFragment.body, direct.body)
  t.equal(api.stats.paths.length, directCalls)
  t.equal(directCalls, 2, 'one call per response key')
  t.notOk(direct.body.errors)
  t.ok((direct.body.data.chinook_findManyCustomer as Array<{ countryInfo: unknown; other: unknown }>).every((c) => c.countryInfo && c.other))
})

function events(url: string) {
  const received: any[] = []
  const es = new EventSource(url)
  es.onmessage = (e) => received.push(JSON.parse(e.data))
  return { es, received }
}

async function until(check: () => boolean, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  return check()
}

t.test('stored operations, subscriptions, live queries, the OpenAPI document and the typed client', async (t) => {
  const { url, gateway, api } = await start(t, {
    operations: {
      Customers: 'query Customers($take: Int! = 3) { chinook_findManyCustomer(take: $take, orderBy: [{ customerId: asc }]) { firstName countryInfo { capital currency } } }',
      Ticks: 'subscription Ticks { feed_ticks { n countryInfo { capital } } }',
    },
  })
  const stored = await fetch(`${url}/operations/Customers?take=2`)
  t.equal(stored.status, 200)
  t.same(await stored.json(), { chinook_findManyCustomer: [{ firstName: 'Luís', countryInfo: { capital: 'Brasília', currency: 'BRL' } }, { firstName: 'Leonie', countryInfo: { capital: 'Berlin', currency: 'EUR' } }] })
  t.equal(api.stats.paths.filter((p) => p.startsWith('/countries')).length, 1)

  const sub = events(`${url}/operations/Ticks`)
  t.teardown(() => sub.es.close())
  t.ok(await until(() => sub.received.length >= 2), 'two events')
  t.same(sub.received.slice(0, 2), [{ data: { feed_ticks: { n: 1, countryInfo: { capital: 'Brasília' } } } }, { data: { feed_ticks: { n: 2, countryInfo: { capital: 'Santiago' } } } }])
  sub.es.close()

  // The same subscription over graphql-transport-ws on /graphql: the linked field of each event.
  const ws = createClient({ url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true })
  t.teardown(() => ws.dispose())
  const overWs: unknown[] = []
  await new Promise<void>((resolve, reject) => {
    ws.subscribe({ query: 'subscription { feed_ticks { n countryInfo { capital } } }' }, { next: (m) => void overWs.push(m), error: reject, complete: resolve })
  })
  t.same(overWs, [{ data: { feed_ticks: { n: 1, countryInfo: { capital: 'Brasília' } } } }, { data: { feed_ticks: { n: 2, countryInfo: { capital: 'Santiago' } } } }], 'over WebSocket, each event carries its linked field')

  const live = events(`${url}/operations/Customers?take=1&live=true`)
  t.teardown(() => live.es.close())
  t.ok(await until(() => live.received.length >= 1), 'a live result')
  t.same(live.received[0], { data: { chinook_findManyCustomer: [{ firstName: 'Luís', countryInfo: { capital: 'Brasília', currency: 'BRL' } }] } })
  live.es.close()

  const doc = buildOpenApiDocument(gateway) as any
  const schema = JSON.stringify(doc.paths['/operations/Customers'].get.responses['200'])
  t.match(schema, /"countryInfo":\{[^]*"capital"/, 'the OpenAPI response schema describes the linked field')
  const client = renderClient(gateway)
  t.match(client, /countryInfo: \{[^}]*capital/, 'the typed client types the linked field')
})

/** Creates and fills the `AlbumNote` table of the second database. */
async function createNotes(dialect: 'postgres' | 'mysql', schema: string): Promise<void> {
  const insert = `("AlbumId", "Note") values (1, 'loud'), (1, 'classic'), (2, 'debut'), (5, 'big')`
  if (dialect === 'postgres') {
    const client = new pg.Client({ connectionString: postgresUrl() })
    await client.connect()
    await client.query(`create table "${schema}"."AlbumNote" ("AlbumNoteId" serial primary key, "AlbumId" integer not null, "Note" text not null, "Secret" text not null default 's')`)
    await client.query(`insert into "${schema}"."AlbumNote" ${insert}`)
    await client.end()
    return
  }
  const conn = await mysql.createConnection({ ...mysqlOptions(mysqlUrl()), database: schema })
  await conn.query('create table AlbumNote (AlbumNoteId integer auto_increment primary key, AlbumId integer not null, Note varchar(100) not null, Secret varchar(10) not null default \'s\')')
  await conn.query(`insert into AlbumNote ${insert.replace(/"/g, '`')}`)
  await conn.end()
}

for (const dialect of ['postgres', 'mysql'] as const) t.test(`SQLite and ${dialect}, linked in both directions, reading only the selected columns`, async (t) => {
  const db = await freshDatabase(dialect, 'links')
  if (db.skipReason) {
    t.comment(`skipped: ${db.skipReason}`)
    return
  }
  t.teardown(db.cleanup)
  await createNotes(dialect, db.schema!)
  const { query, lines } = await start(t, {
    sources: [{ kind: 'database', namespace: 'notes', url: db.url }],
    links: [
      { on: 'chinook_Album', field: 'notes', target: 'notes_findManyAlbumNote', args: { where: { albumId: { in: '$keys' } } }, batch: { key: 'albumId', match: 'albumId' }, many: true },
      { on: 'notes_AlbumNote', field: 'album', target: 'chinook_findManyAlbum', args: { where: { albumId: { in: '$keys' } } }, batch: { key: 'albumId', match: 'albumId' } },
    ],
  })
  const sqlite = await query('{ chinook_findManyAlbum(take: 3, orderBy: [{ albumId: asc }]) { title notes { note } } }')
  t.same(sqlite.body, {
    data: {
      chinook_findManyAlbum: [
        { title: 'For Those About To Rock We Salute You', notes: [{ note: 'loud' }, { note: 'classic' }] },
        { title: 'Balls to the Wall', notes: [{ note: 'debut' }] },
        { title: 'Restless and Wild', notes: [] },
      ],
    },
  })
  const sql = lines.filter((l) => l.msg === 'sql').map((l) => l.sql!)
  t.equal(sql.length, 2, 'one statement per source')
  t.match(sql[1], /["`]AlbumNote["`]/)
  const selected = (text: string) => text.slice(0, text.indexOf(' FROM '))
  t.match(selected(sql[1]), /^SELECT json_(build_)?object\('note', t0.["`]Note["`], 'albumId', t0.["`]AlbumId["`]\) AS j$/i, `${dialect} reads only the selected column and the match key`)
  t.notMatch(sql[1], /Secret/)
  t.notMatch(selected(sql[0]), /ArtistId/, 'SQLite reads only the selected column and the link key')

  const pgSide = await query('{ notes_findManyAlbumNote(orderBy: [{ albumNoteId: asc }]) { note album { title artist { name } } } }')
  t.same(pgSide.body.data.notes_findManyAlbumNote.map((n: any) => [n.note, n.album.title, n.album.artist.name]), [
    ['loud', 'For Those About To Rock We Salute You', 'AC/DC'],
    ['classic', 'For Those About To Rock We Salute You', 'AC/DC'],
    ['debut', 'Balls to the Wall', 'Accept'],
    ['big', 'Big Ones', 'Aerosmith'],
  ])
  t.equal(lines.filter((l) => l.msg === 'sql').length, 2, 'one statement per source in this direction too')
  t.same(Object.keys(pgSide.body.data.notes_findManyAlbumNote[0]).sort(), ['album', 'note'], 'the key read for the link is not shown')
})
