/**
 * Attack (issue 22, item 7): a few cheap requests must not hold the SQLite worker processes.
 *
 * The Chinook example on a copy of its SQLite file, started as `npm start` starts it (the built CLI,
 * worker processes on). Relation filters are correlated subqueries: a 300-byte `where` six relation
 * levels deep ran for the whole 10 s statement timeout, priced like a plain list of 10; six of them
 * held both workers for 30 s, and any read needing a worker waited behind them.
 *
 * - The cost limit prices relation filters (README "Query cost"): the six-level filter is refused
 *   with 400 `TRB_ERR_GRAPHQL_LIMIT` before it runs, inline and in a variable (on /graphql and in a
 *   stored operation's variables).
 * - Filters under the limit can still be slow (three many-to-many levels: the whole statement
 *   timeout, 30 s here). Sent eight at once, they take the two heavy worker slots and the queue; those
 *   that wait past `maxWaitMs` (6 s here) get 503 `TRB_ERR_CAPACITY` with `Retry-After`, long before
 *   the statement timeout; a plain
 *   read and a read with a nested relation sent meanwhile answer at once, on the process kept for
 *   work without relation filters.
 * - One request's statements share a budget of worker time (`sqliteWorkers.requestBudgetMs`):
 *   three slow aliases under a 1.5 s budget answer `TRB_ERR_DB_TIMEOUT` in about 1.5 s (bounded at
 *   15 s here: half of one statement's 30 s timeout).
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { freePort, runCli } from './helpers/cli.js'
import { repoRoot } from './helpers/chinook.js'

t.setTimeout(120_000)

const dir = mkdtempSync(join(tmpdir(), 'trb-sqlite-workers-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
copyFileSync(join(repoRoot, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
/** A config of the Chinook file copy; `extra` goes into its database source's options. */
const config = (name: string, extra: string): string => {
  const file = join(dir, name)
  writeFileSync(
    file,
    `import { database, defineConfig } from ${JSON.stringify(join(repoRoot, 'dist/gateway/index.js'))}
export default defineConfig({
  datasources: [database({ namespace: 'chinook', url: ${JSON.stringify(`sqlite:${join(dir, 'chinook.sqlite')}`)}${extra} })],
  operations: { dir: ${JSON.stringify(join(dir, 'operations'))} },
  generatedDir: ${JSON.stringify(join(dir, 'generated'))},
})
`,
  )
  return file
}
const { mkdirSync } = await import('node:fs')
mkdirSync(join(dir, 'operations'))
writeFileSync(join(dir, 'operations/Artists.graphql'), 'query Artists($where: chinook_ArtistWhereInput) { chinook_findManyArtist(where: $where) { artistId } }\n')

/** Starts the CLI on `file` as npm start does; returns its base URL. */
async function start(file: string): Promise<string> {
  const port = await freePort()
  const cli = runCli(t, ['start', '--config', file], { PORT: String(port), LOG_LEVEL: 'warn', REDIS_URL: '' })
  await cli.waitFor('/health')
  return `http://127.0.0.1:${port}`
}
// Wide margins for a loaded machine: statements time out after 30 s and a queued request waits at most
// 6 s (defaults 10 s and 2 s), so that the plain read below answers long before any queued one is
// refused, and those are refused long before any statement times out.
const base = await start(config('config.mjs', ', statementTimeoutMs: 30000, sqliteWorkers: { maxWaitMs: 6000 }'))

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] }

async function graphql(query: string, variables?: Record<string, unknown>, signal?: AbortSignal, url = base) {
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }), ...(signal ? { signal } : {}) })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Body, at: performance.now() }
}

/** Six relation levels (five to-many, two to-one), 260 bytes: 10 s of SQLite before. */
const sixLevels =
  '{ albums: { some: { tracks: { some: { playlists: { some: { tracks: { some: { invoiceLines: { some: { invoice: { is: { customer: { is: { email: { contains: "zzz" } } } } } } } } } } } } } } } }'
/** Three many-to-many levels: under the default cost limit, still 10 s (the statement timeout) on Chinook. */
const slow = '{ chinook_findManyPlaylist(where: { tracks: { some: { playlists: { some: { tracks: { some: { name: { contains: "zzz" } } } } } } } }) { name } }'
/** A plain read of one table with a filter: not cheap enough for the event loop, so it needs a worker. */
const plain = '{ chinook_findManyArtist(take: 2, where: { name: { startsWith: "A" } }) { name } }'

t.test('relation filters count in the cost limit', async (t) => {
  const inline = await graphql(`{ chinook_findManyArtist(where: ${sixLevels}) { artistId } }`)
  t.equal(inline.body.errors?.[0]?.extensions?.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(inline.body.errors?.[0]?.message, /costs \d+, more than the maximum of 20000/)
  const where = JSON.parse(sixLevels.replace(/(\w+):/g, '"$1":')) as Record<string, unknown>
  const variable = await graphql('query ($w: chinook_ArtistWhereInput) { chinook_findManyArtist(where: $w) { artistId } }', { w: where })
  t.equal(variable.body.errors?.[0]?.extensions?.code, 'TRB_ERR_GRAPHQL_LIMIT', 'the same filter in a variable')
  const stored = await fetch(`${base}/operations/Artists?where=${encodeURIComponent(JSON.stringify(where))}`)
  t.equal(stored.status, 400, 'the same filter in a stored operation variable')
  t.match(await stored.text(), /relation filters that cost \d+, more than the maximum of 20000/)
  const one = await graphql('{ chinook_findManyArtist(take: 2, where: { albums: { some: { title: { contains: "Rock" } } } }) { artistId } }')
  t.same(one.body, { data: { chinook_findManyArtist: [{ artistId: 1 }, { artistId: 58 }] } }, 'one level is well under the limit')
})

t.test('slow filters cannot hold the workers: the queued get 503, a plain read answers', async (t) => {
  const controllers = Array.from({ length: 8 }, () => new AbortController())
  const settled: Awaited<ReturnType<typeof graphql>>[] = []
  const t0 = performance.now()
  const heavy = controllers.map((c) =>
    graphql(slow, undefined, c.signal).then(
      (r) => void settled.push(r),
      () => undefined,
    ),
  )
  await new Promise((r) => setTimeout(r, 300))
  const read = await graphql(plain)
  t.equal(read.status, 200)
  t.equal((read.body.data?.['chinook_findManyArtist'] as unknown[] | undefined)?.length, 2, 'the plain read answers')
  const readMs = read.at - t0
  t.ok(readMs < 5000, `the plain read answered ${Math.round(readMs)} ms after the slow ones were sent (it waited for the slow ones before)`)
  t.equal(settled.length, 0, 'before any slow one')
  const nested = await graphql('{ chinook_findManyArtist(take: 1) { name albums { title } } }')
  t.same(nested.body, { data: { chinook_findManyArtist: [{ name: 'AC/DC', albums: [{ title: 'For Those About To Rock We Salute You' }, { title: 'Let There Be Rock' }] }] } }, 'a read with a nested relation (no relation filter) answers too')
  t.equal(settled.length, 0, 'before any slow one')
  // Two heavy slots run two slow filters (30 s each); the six queued ones are refused after maxWaitMs (6 s).
  const deadline = t0 + 20_000
  while (settled.length < 6 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  t.equal(settled.length, 6, 'six answered within 20 s, before any statement timeout (30 s)')
  for (const r of settled) {
    t.equal(r.status, 503, '503')
    t.equal(r.body.errors?.[0]?.extensions?.code, 'TRB_ERR_CAPACITY')
    t.match(r.retryAfter, /^\d+$/, 'Retry-After')
  }
  // The two running ones are cancelled (their workers killed), so the test ends now.
  for (const c of controllers) c.abort()
  await Promise.all(heavy)
  const after = await graphql(plain)
  t.equal(after.status, 200, 'the workers serve again')
})

t.test('one request cannot use more worker time than its budget', async (t) => {
  // 1.5 s of worker time per request: three slow aliases (30 s each, the statement timeout, without it) share it.
  const url = await start(config('budget.mjs', ', statementTimeoutMs: 30000, sqliteWorkers: { requestBudgetMs: 1500 }'))
  const t0 = performance.now()
  // take: 1 keeps the three under the cost limit (1,111 each); with no match, each still runs until the statement timeout.
  const aliases = [0, 1, 2].map((i) => `a${i}: ${slow.slice(2, -2).replace('(where', '(take: 1, where')}`).join(' ')
  const r = await graphql(`{ ${aliases} }`, undefined, undefined, url)
  const ms = r.at - t0
  t.equal(r.body.data, null)
  const codes = r.body.errors?.map((e) => e.extensions?.code) ?? []
  t.ok(codes.length >= 1 && codes.every((c) => c === 'TRB_ERR_DB_TIMEOUT'), `TRB_ERR_DB_TIMEOUT: ${codes.join(', ')}`)
  t.ok(ms < 15_000, `answered in ${Math.round(ms)} ms (three 30 s statements without the budget)`)
  const plainAfter = await graphql(plain, undefined, undefined, url)
  t.equal(plainAfter.status, 200, 'the next request has a budget of its own')
})
