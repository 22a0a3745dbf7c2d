/**
 * `@export` + `_join` into a database (README "Operation directives"): one statement per joined root
 * field for a whole level, not one per parent — a `findMany` filtered by `{ equals: $var }` and a
 * `findUnique` by `{ column: $var }` become one `IN (…)` read each, counted from the debug SQL log, on
 * SQLite and PostgreSQL. A source's `maxTake` that could cut the batched answer falls back to one read
 * per value (still right answers); a REST target on 127.0.0.1 gets one request per distinct value,
 * counted, as documented.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ServerResponse } from 'node:http'
import t, { type Test } from 'tap'
import { pino } from 'pino'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { freshDatabase } from './helpers/chinook.js'
import { sqlLog } from './helpers/sql-log.js'
import { serveGateway } from './helpers/serve.js'
import { startUpstream } from './helpers/rest-upstream.js'

const AUTHORS = 60

const bioDocument = {
  openapi: '3.0.3',
  info: { title: 'bio', version: '1' },
  paths: {
    '/bios/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
      get: { operationId: 'getBio', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { text: { type: 'string' } } } } } } } },
    },
  },
}

const operations: Record<string, string> = {
  Authors: `query Authors($aid: Int! @internal, $prefix: String = "b") {
  lib_findManyAuthor(orderBy: { id: asc }) {
    id @export(as: "aid")
    name
    _join {
      lib_findManyBook(where: { authorId: { equals: $aid }, title: { startsWith: $prefix } }, orderBy: { id: desc }) { id title }
      self: lib_findUniqueAuthor(where: { id: $aid }) { name }
    }
  }
}`,
  // A book's author: many parents share one value (distinct values are read once).
  BookAuthors: `query BookAuthors($aid: Int! @internal) {
  lib_findManyBook(orderBy: { id: asc }) {
    id
    authorId @export(as: "aid")
    author: _join @transform(get: "lib_findUniqueAuthor.name") { lib_findUniqueAuthor(where: { id: $aid }) { name } }
  }
}`,
  // take makes the rows per value a limit of their own: not batched, one read per value.
  FirstBooks: `query FirstBooks($aid: Int! @internal) {
  lib_findManyAuthor(take: 3, orderBy: { id: asc }) {
    id @export(as: "aid")
    _join { lib_findManyBook(where: { authorId: { equals: $aid } }, take: 1, orderBy: { id: asc }) { title } }
  }
}`,
  Bios: `query Bios($aid: Int! @internal) {
  lib_findManyAuthor(take: 5, orderBy: { id: asc }) {
    id @export(as: "aid")
    bio: _join @transform(get: "bio_getBio.text") { bio_getBio(id: $aid) { text } }
  }
}`,
}

type Book = { id: number; title: string }
/** Books of author `a`: `a % 4` of them (author 4, 8… have none), titles `b<a>-<n>`. */
const booksOf = (a: number): { authorId: number; title: string }[] => Array.from({ length: a % 4 }, (_, n) => ({ authorId: a, title: `b${a}-${n}` }))

async function prepare(url: string): Promise<void> {
  const { knex } = createKnex(url)
  try {
    await knex.schema.createTable('author', (tb) => {
      tb.integer('id').primary()
      tb.string('name', 50).notNullable()
    })
    await knex.schema.createTable('book', (tb) => {
      tb.increments('id').primary()
      tb.integer('authorId').notNullable()
      tb.string('title', 50).notNullable()
    })
    const authors = Array.from({ length: AUTHORS }, (_, i) => ({ id: i + 1, name: `author ${i + 1}` }))
    await knex('author').insert(authors)
    await knex('book').insert(authors.flatMap((a) => booksOf(a.id)))
  } finally {
    await knex.destroy()
  }
}

async function suite(t: Test, dialect: 'sqlite' | 'postgres') {
  const db = await freshDatabase(dialect, 'ops-join-batched')
  if (db.skipReason) {
    t.comment(`skipped: ${db.skipReason}`)
    return
  }
  t.teardown(db.cleanup)
  await prepare(db.url)
  const requests: string[] = []
  const upstream = await startUpstream(t, (req, res: ServerResponse) => {
    requests.push(req.url ?? '')
    const id = Number(/\/bios\/(\d+)/.exec(req.url ?? '')?.[1])
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: `bio ${id}` }))
  })
  const dir = mkdtempSync(join(tmpdir(), 'trb-join-batched-'))
  const opsDir = join(dir, 'operations')
  mkdirSync(opsDir)
  for (const [name, text] of Object.entries(operations)) writeFileSync(join(opsDir, `${name}.graphql`), text)
  writeFileSync(join(dir, 'bio.json'), JSON.stringify(bioDocument))
  const statements: string[] = []
  const { stream } = sqlLog((s) => statements.push(s.sql))
  const config = resolveConfig({
    mode: 'development',
    datasources: [database({ namespace: 'lib', url: db.url }), { kind: 'rest', namespace: 'bio', openapi: join(dir, 'bio.json'), baseUrl: upstream.url }],
    operations: { dir: opsDir },
    generatedDir: join(dir, 'generated'),
    server: { logLevel: 'debug' },
  })
  const { url } = await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream), cwd: dir })
  const get = async (path: string) => {
    const before = statements.length
    const res = await fetch(`${url}${path}`)
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, sql: statements.slice(before) }
  }

  t.test('a level of 60 parents: one statement per joined root field, not 120', async (t) => {
    const res = await get('/operations/Authors')
    t.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500))
    const authors = res.body.lib_findManyAuthor as { id: number; name: string; _join: { lib_findManyBook: Book[]; self: { name: string } | null } }[]
    t.equal(authors.length, AUTHORS)
    const wrong = authors.filter((a) => {
      const titles = a._join.lib_findManyBook.map((b) => b.title)
      const expected = booksOf(a.id).map((b) => b.title).reverse()
      return JSON.stringify(titles) !== JSON.stringify(expected) || a._join.self?.name !== a.name
    })
    t.same(wrong.map((a) => a.id), [], 'each parent gets its own rows (orderBy kept, [] when none) and its own row')
    t.same(authors[3]!._join, { lib_findManyBook: [], self: { name: 'author 4' } })
    t.equal(res.sql.length, 3, `3 statements: the parents, the books IN (…), the authors IN (…):\n${res.sql.join('\n')}`)
    t.match(res.sql[1], /\bin\s*\(/i, 'the joined read is one IN (…) over the level\'s values')
    t.notMatch(JSON.stringify(res.body), /_trb_key/, 'the matching column the gateway added is not in the answer')
  })

  t.test('distinct values are read once; @transform still applies', async (t) => {
    const res = await get('/operations/BookAuthors')
    t.equal(res.status, 200)
    const books = res.body.lib_findManyBook as { authorId: number; author: string }[]
    t.ok(books.length > AUTHORS, `${books.length} parents`)
    t.ok(books.every((b) => b.author === `author ${b.authorId}`), 'each book gets its author')
    t.equal(res.sql.length, 2, 'one statement for the parents, one for all their authors')
  })

  t.test('a joined read with take is not batched: one statement per value (documented)', async (t) => {
    const res = await get('/operations/FirstBooks')
    t.same(res.body, { lib_findManyAuthor: [{ id: 1, _join: { lib_findManyBook: [{ title: 'b1-0' }] } }, { id: 2, _join: { lib_findManyBook: [{ title: 'b2-0' }] } }, { id: 3, _join: { lib_findManyBook: [{ title: 'b3-0' }] } }] })
    t.equal(res.sql.length, 4, 'the parents, then one read per author')
  })

  t.test('a REST target: one request per distinct value, all in one document (documented)', async (t) => {
    const before = requests.length
    const res = await get('/operations/Bios')
    t.same(res.body, { lib_findManyAuthor: [1, 2, 3, 4, 5].map((id) => ({ id, bio: `bio ${id}` })) })
    t.same(requests.slice(before).sort(), [1, 2, 3, 4, 5].map((id) => `/bios/${id}`).sort())
  })
}

t.test('sqlite', (t) => suite(t, 'sqlite'))
t.test('postgres', (t) => suite(t, 'postgres'))

t.test('maxTake could cut a batched answer: that level is read value by value instead', async (t) => {
  const db = await freshDatabase('sqlite', 'ops-join-maxtake')
  t.teardown(db.cleanup)
  await prepare(db.url)
  const dir = mkdtempSync(join(tmpdir(), 'trb-join-maxtake-'))
  writeFileSync(join(dir, 'Authors.graphql'), operations.Authors!)
  const statements: string[] = []
  const { stream } = sqlLog((s) => statements.push(s.sql))
  const config = resolveConfig({ mode: 'development', datasources: [database({ namespace: 'lib', url: db.url, maxTake: 40 })], operations: { dir }, generatedDir: join(dir, 'generated'), server: { logLevel: 'debug' } })
  const { url } = await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream), cwd: dir })
  const before = statements.length
  const body = (await (await fetch(`${url}/operations/Authors`)).json()) as { lib_findManyAuthor: { id: number; _join: { lib_findManyBook: Book[]; self: { name: string } } }[] }
  const authors = body.lib_findManyAuthor
  t.equal(authors.length, 40, 'the parents are cut at maxTake, as any findMany')
  t.ok(authors.every((a) => JSON.stringify(a._join.lib_findManyBook.map((b) => b.title)) === JSON.stringify(booksOf(a.id).map((b) => b.title).reverse())), 'every author still gets all its books')
  const sql = statements.slice(before)
  // parents (1) + the batched books read, cut at 40 rows (1) + one books read per author (40) + the authors IN (…) (1)
  t.equal(sql.length, 43, 'the cut read is redone value by value; the uncut one stays one statement')
})
