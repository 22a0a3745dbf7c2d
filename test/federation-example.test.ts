/**
 * examples/federation: the Chinook database, the countries REST API and the reviews GraphQL API,
 * linked to each other (README "Links"). Checks the stored operations against their expected
 * responses (CrossSource.expected.json among them), counts the upstream calls of one request from the
 * debug log lines (msg "upstream" / "sql") to prove batching, and runs the example as a user does
 * (`tributary start --config examples/federation/config.ts`), side services included.
 */
import t, { type Test } from 'tap'
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { createCountriesService } from '../examples/federation/services/countries.js'
import { createReviewsService } from '../examples/federation/services/reviews.js'
import { checkExpectedResponses } from './helpers/expected-responses.js'
import { freePort, runCli } from './helpers/cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const opsDir = join(root, 'examples/federation/operations')

interface LogLine {
  msg: string
  source?: string
  method?: string
  url?: string
  sql?: string
}

const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

/** Starts both side services on ephemeral ports and a gateway on the example's config, logging at debug into `lines`. */
async function startExample(t: Test) {
  const countries = await createCountriesService()
  await countries.listen({ host: '127.0.0.1', port: 0 })
  const documents: string[] = []
  const reviews = await createReviewsService({ onRequest: (q) => documents.push(q) })
  await reviews.listen({ host: '127.0.0.1', port: 0 })
  const dir = mkdtempSync(join(tmpdir(), 'tributary-federation-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  const input = (await import('../examples/federation/config.js')).default as TributaryConfigInput
  // The example's sources, pointed at this test's copies and ports.
  const datasources = input.datasources.map((d) =>
    d.kind === 'database' ? { ...d, url: `sqlite:${join(dir, 'chinook.sqlite')}` }
      : d.kind === 'rest' ? { ...d, openapi: `${urlOf(countries)}/openapi.json` }
        : d.kind === 'graphql' ? { ...d, url: `${urlOf(reviews)}/graphql` } : d,
  )
  const config = resolveConfig({ ...input, datasources, services: [], operations: { dir: opsDir }, generatedDir: join(dir, 'generated') })
  const lines: LogLine[] = []
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) })
  const gateway = await createGateway(config, { logger })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
    await countries.close()
    await reviews.close()
  })
  /** The upstream and SQL lines logged while `run` runs. */
  const calls = async (run: () => Promise<unknown>) => {
    lines.length = 0
    await run()
    return lines.filter((l) => l.msg === 'upstream' || l.msg === 'sql')
  }
  return { app, calls, documents }
}

t.test('stored operations answer their expected responses', async (t) => {
  const { app } = await startExample(t)
  await checkExpectedResponses(t, app, opsDir)
})

t.test('one request costs one upstream call per link and level, whatever the number of parents', async (t) => {
  const { app, calls, documents } = await startExample(t)
  const count = (ls: LogLine[]) => {
    const out: Record<string, number> = {}
    for (const l of ls) {
      const k = l.msg === 'sql' ? 'sql' : `${l.source} ${l.method}`
      out[k] = (out[k] ?? 0) + 1
    }
    return out
  }

  for (const take of [5, 50]) {
    const ls = await calls(async () => t.equal((await app.inject({ url: `/operations/CustomersWithCountry?take=${take}` })).statusCode, 200))
    t.same(count(ls), { sql: 1, 'geo GET': 1 }, `${take} customers: one statement and one REST call`)
    const rest = ls.find((l) => l.msg === 'upstream')!
    t.match(rest.url, /\/countries$/, 'the batched list endpoint, logged without its query string')
  }

  const ls = await calls(async () => t.equal((await app.inject({ url: '/operations/CrossSource?artistId=1' })).statusCode, 200))
  // Level 1: the artist statement and GET /countries/Norway. Level 2: one reviews document for every album.
  // Level 3: one statement for every author, one findUniqueAlbum per distinct album (not batched: 2 albums),
  // one statement for Norway's customers. Level 4: one GET /countries for every author's country.
  t.same(count(ls), { sql: 5, 'geo GET': 2, 'reviews POST': 1 }, JSON.stringify(ls.map((l) => l.url ?? l.sql)))
  for (const l of ls.filter((x) => x.msg === 'upstream')) t.ok(l.source && l.method && l.url, 'an upstream line has source, method and url')

  // Projection: the GraphQL API receives the selected fields plus the keys the links read, nothing else.
  const doc = documents.at(-1)!
  t.match(doc, /reviews\(albumIds: \$__link\d+_albumIds\)/)
  const fields = doc.slice(doc.indexOf('{', doc.indexOf('reviews(')) + 1, doc.lastIndexOf('}', doc.lastIndexOf('}') - 1)).match(/\w+/g)!.sort()
  t.same(fields, ['albumId', 'customerId', 'rating', 'text'])
  // The keys it fetched are not shown to the client.
  const body = (await app.inject({ url: '/operations/CrossSource?artistId=1' })).json()
  const review = body.chinook_findUniqueArtist.albums[0].reviews[0]
  t.same(Object.keys(review).sort(), ['album', 'author', 'rating', 'text'])
  t.notOk('country' in review.author, 'the database key column read for countryInfo is not in the response')
})

t.test('npm start -- --config examples/federation/config.ts starts its side services and serves CrossSource', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-federation-cli-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  const [port, countriesPort, reviewsPort] = [await freePort(), await freePort(), await freePort()]
  const cli = runCli(t, ['start', '--config', 'examples/federation/config.ts'], {
    PORT: String(port),
    COUNTRIES_PORT: String(countriesPort),
    REVIEWS_PORT: String(reviewsPort),
    COUNTRIES_API_URL: '',
    REVIEWS_API_URL: '',
    CHINOOK_DATABASE_URL: `sqlite:${join(dir, 'chinook.sqlite')}`,
    LOG_LEVEL: 'warn',
  })
  await cli.waitFor('Health', 90_000)
  t.match(cli.out, /Tributary is up/, cli.out)
  const res = await fetch(`http://127.0.0.1:${port}/operations/CrossSource?artistId=1`)
  t.equal(res.status, 200)
  const expected = (await import('../examples/federation/operations/CrossSource.expected.json', { with: { type: 'json' } })).default
  t.same(await res.json(), expected.response)
  cli.child.kill('SIGTERM')
  t.equal(await cli.exited, 0, 'exits cleanly on SIGTERM')
  for (const p of [countriesPort, reviewsPort]) {
    t.equal(await fetch(`http://127.0.0.1:${p}/`).then(() => 'up', () => 'down'), 'down', `the side service on ${p} stopped with the gateway`)
  }
})
