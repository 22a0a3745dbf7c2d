/**
 * Links on trees of three levels across three kinds of source (README "Links", cost rule): a
 * database (Chinook, SQLite), a Spotify-shaped REST API and a GraphQL API, all real on 127.0.0.1,
 * with every upstream call counted. A batched link below a non-batched one still makes one call per
 * level, and `batch.resultPath` reaches lists wrapped in an object (`{ artists: [...] }`, `{ items: [...] }`).
 */
import t from 'tap'
import { copyFileSync, mkdirSync, mkdtempSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { makeExecutableSchema } from '@graphql-tools/schema'
import { resolveConfig, type LinkDefinition } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { applyLinks } from '../gateway/compose/links.js'
import { startGraphQLUpstream } from './helpers/graphql-upstream.js'

const root = fileURLToPath(new URL('..', import.meta.url))

/** Spotify's shape: GET /artists/{id} and GET /artists?ids=a,b → { artists: [...] }; artist n of Chinook is `n` there too. */
const spotifyDocument = {
  openapi: '3.0.3',
  info: { title: 'Spotify (shape)', version: '1' },
  components: { schemas: { Artist: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, chinookId: { type: 'integer' } } } } },
  paths: {
    '/artists/{id}': { get: { operationId: 'getArtist', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Artist' } } } } } } },
    '/artists': { get: { operationId: 'getArtists', parameters: [{ name: 'ids', in: 'query', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { artists: { type: 'array', items: { $ref: '#/components/schemas/Artist' } } } } } } } } } },
  },
}

async function spotifyApi(t: { teardown(fn: () => unknown): void }) {
  const paths: string[] = []
  const artist = (n: number) => ({ id: String(n), name: `Artist ${n}`, chinookId: n })
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    res.setHeader('content-type', 'application/json')
    if (url.pathname === '/openapi.json') return res.end(JSON.stringify(spotifyDocument))
    paths.push(decodeURIComponent(req.url!))
    const one = /^\/artists\/(\d+)$/.exec(url.pathname)
    if (one) return res.end(JSON.stringify(artist(Number(one[1]))))
    if (url.pathname === '/artists') return res.end(JSON.stringify({ artists: (url.searchParams.get('ids') ?? '').split(',').map((id) => artist(Number(id))) }))
    res.statusCode = 404
    return res.end('{}')
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, paths }
}

const reviewsSchema = makeExecutableSchema({
  typeDefs: `
    type Review { artistId: Int! stars: Int! }
    type ReviewPage { items: [Review!]! total: Int! }
    type Query { reviewPage(artistIds: [Int!]!): ReviewPage! }`,
  resolvers: {
    Query: { reviewPage: (_: unknown, a: { artistIds: number[] }) => ({ items: a.artistIds.flatMap((id) => [{ artistId: id, stars: id % 5 }, { artistId: id, stars: 5 }]), total: a.artistIds.length * 2 }) },
  },
})

const links: LinkDefinition[] = [
  // not batched: one GET /artists/<n> per artist
  { on: 'chinook_Artist', field: 'spotify', target: 'spotify_getArtist', args: { id: '$parent.artistId' } },
  // batched below the non-batched link: one SQL statement for the level
  { on: 'spotify_Artist', field: 'chinook', target: 'chinook_findManyArtist', args: { where: { artistId: { in: '$keys' } } }, batch: { key: 'chinookId', match: 'artistId' } },
  // batched, list inside { items }: one GraphQL document for the level
  { on: 'chinook_Artist', field: 'reviews', target: 'reviews_reviewPage', args: { artistIds: '$keys' }, batch: { key: 'artistId', match: 'artistId', resultPath: 'items' }, many: true },
  // batched, list inside { artists }: one GET /artists?ids= for the level
  { on: 'spotify_Artist', field: 'related', target: 'spotify_getArtists', args: { ids: '$keys' }, batch: { key: 'id', match: 'id', resultPath: 'artists' } },
]

t.test('links on three levels across a database, a REST API and a GraphQL API: one call per level per target', async (t) => {
  const spotify = await spotifyApi(t)
  const reviews = await startGraphQLUpstream(t, reviewsSchema)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-levels-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  mkdirSync(join(dir, 'ops'))
  const sql: string[] = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => void (JSON.parse(s).msg === 'sql' && sql.push(JSON.parse(s).sql)) })
  const config = resolveConfig({
    datasources: [
      { kind: 'database', namespace: 'chinook', url: `sqlite:${join(dir, 'chinook.sqlite')}` },
      { kind: 'rest', namespace: 'spotify', openapi: `${spotify.url}/openapi.json` },
      { kind: 'graphql', namespace: 'reviews', url: reviews.url },
    ],
    links,
    operations: { dir: join(dir, 'ops') },
    generatedDir: join(dir, 'generated'),
  })
  const gateway = await createGateway(config, { logger })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  const query = async (q: string) => {
    sql.length = 0
    spotify.paths.length = 0
    reviews.requests.length = 0
    const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: q } })
    return res.json() as { data?: any; errors?: unknown[] }
  }

  // The tree: a batched link below a non-batched one.
  const tree = await query('{ chinook_findManyArtist(take: 10, orderBy: { artistId: asc }) { artistId spotify { id chinook { artistId name reviews { stars } } related { name } } } }')
  t.same(tree.errors, undefined)
  const artists = tree.data.chinook_findManyArtist as { artistId: number; spotify: { id: string; chinook: { artistId: number; reviews: unknown[] }; related: unknown } }[]
  t.same(artists.map((a) => a.artistId), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  t.same(artists.map((a) => [a.spotify.id, a.spotify.chinook.artistId]), artists.map((a) => [String(a.artistId), a.artistId]), 'the batched link below the non-batched one matched each parent')
  t.same(artists.map((a) => a.spotify.chinook.reviews), artists.map((a) => [{ stars: a.artistId % 5 }, { stars: 5 }]), 'resultPath items: every review of each artist')
  t.same(artists.map((a) => a.spotify.related), artists.map((a) => ({ name: `Artist ${a.artistId}` })), 'resultPath artists')
  t.equal(spotify.paths.filter((p) => /^\/artists\/\d+$/.test(p)).length, 10, 'not batched: one GET per distinct artist')
  const batched = spotify.paths.filter((p) => p.startsWith('/artists?'))
  t.equal(batched.length, 1, 'level 2, REST: one request')
  t.same(batched[0]!.slice('/artists?ids='.length).split(',').map(Number).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'with every key of the level')
  t.equal(sql.length, 2, `level 1 and level 2, database: one statement each (${sql.join(' | ')})`)
  t.equal(reviews.dataRequests().length, 1, 'level 3, GraphQL: one document')
  t.match(reviews.dataRequests()[0]!.query, /reviewPage\([^)]*\)\s*\{\s*items\s*\{/, 'the selection travels inside items')

  // The same targets reached through other shapes: the database's own list, and a remote list on top.
  const flat = await query('{ chinook_findManyArtist(take: 3, orderBy: { artistId: asc }) { reviews { stars } } }')
  t.same(flat.data.chinook_findManyArtist.map((a: { reviews: unknown[] }) => a.reviews.length), [2, 2, 2])
  t.equal(reviews.dataRequests().length, 1)
})

t.test('batch.resultPath is checked at startup', async (t) => {
  const schema = makeExecutableSchema({ typeDefs: 'type A { id: Int! } type Page { items: [A!]! total: Int! } type Query { a: A page(ids: [Int!]): Page }' })
  const link = (resultPath: string): LinkDefinition => ({ on: 'A', field: 'x', target: 'page', args: { ids: '$keys' }, batch: { key: 'id', match: 'id', resultPath } })
  t.ok(applyLinks(schema, [link('items')]).getType('A'))
  t.throws(() => applyLinks(schema, [link('total')]), { code: 'TRB_ERR_CONFIG_INVALID', message: 'links[0].batch.resultPath: page.total must return a list of objects to be batched' })
  t.throws(() => applyLinks(schema, [link('nope.items')]), { code: 'TRB_ERR_CONFIG_INVALID', message: 'links[0].batch.resultPath: page has no object field nope' })
  t.throws(() => applyLinks(schema, [{ ...link('items'), batch: { key: 'id', match: 'id' } }]), { message: /page must return a list of objects to be batched \(or give batch\.resultPath/ })
  t.throws(() => resolveConfig({ datasources: [{ kind: 'schema', typeDefs: 'type Query { a: Int }' }], links: [link('a..b')] }), { code: 'TRB_ERR_CONFIG_INVALID', message: /links\[0\]\.batch\.resultPath/ })
})
