/**
 * The database connector's end-to-end suite, run on one engine by database-sqlite.test.ts,
 * database-postgres.test.ts and database-mysql.test.ts: createDatabaseSource (migrations,
 * introspection cache), every root field, relations, filters, writes and their errors, one statement
 * per root field, SQL injection, plan reuse. Every query runs through graphql-js `execute` AND
 * graphql-jit `compileQuery`. PostgreSQL and MySQL use a fresh schema / database and skip when the
 * server is unreachable.
 */
import type { Test } from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { printSchema } from 'graphql'
import type { Knex } from 'knex'
import { createDatabaseSource } from '../../gateway/connectors/database/index.js'
import type { LocalSubschema } from '../../gateway/connectors/types.js'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { EXEC_MODES, plain, run, testContext } from './database-source.js'
import { freshDatabase } from './chinook.js'

const migrations = {
  '001-authors-posts': {
    async up(knex: Knex) {
      await knex.schema.createTable('author', (tb) => {
        tb.increments('id')
        tb.string('name').notNullable().unique()
        tb.string('email')
        tb.boolean('active').notNullable().defaultTo(true)
        tb.specificType('rating', 'numeric(5,2)')
        tb.bigInteger('big_number')
        tb.json('meta')
        tb.binary('avatar')
        tb.datetime('created_at', { precision: 3 }).notNullable().defaultTo(knex.fn.now())
      })
      await knex.schema.createTable('post', (tb) => {
        tb.increments('id')
        tb.integer('author_id').unsigned().notNullable().references('id').inTable('author')
        tb.integer('editor_id').unsigned().references('id').inTable('author')
        tb.string('title').notNullable()
        tb.integer('views').notNullable().defaultTo(0)
        tb.boolean('published').notNullable().defaultTo(false)
        tb.datetime('published_at', { precision: 3 })
        tb.check('views >= 0', [], 'views_non_negative')
      })
      await knex.schema.createTable('post_tag', (tb) => {
        tb.integer('post_id').unsigned().notNullable().references('id').inTable('post')
        tb.string('tag').notNullable()
        tb.primary(['post_id', 'tag'])
      })
      await knex.schema.createTable('employee', (tb) => {
        tb.increments('id')
        tb.string('name').notNullable()
        tb.integer('manager_id').unsigned().references('id').inTable('employee')
      })
    },
  },
  '002-seed': {
    async up(knex: Knex) {
      await knex('author').insert([
        { name: 'Ada', email: 'ada@example.com', active: true, rating: '4.50', big_number: '9007199254740993', meta: JSON.stringify({ langs: ['en'] }), created_at: '2024-01-01 10:00:00' },
        { name: 'Brian', email: null, active: false, rating: '3.25', created_at: '2024-02-01 10:00:00' },
        { name: 'carol', email: 'carol@example.com', active: true, created_at: '2024-03-01 10:00:00' },
      ])
      await knex('post').insert([
        { author_id: 1, title: 'Hello', views: 10, published: true, published_at: '2024-01-02 00:00:00' },
        { author_id: 1, title: 'World', views: 5, published: false },
        { author_id: 1, editor_id: 3, title: 'Third', views: 7, published: true },
        { author_id: 2, title: 'Bee', views: 1, published: true },
      ])
      await knex('post_tag').insert([
        { post_id: 1, tag: 'intro' },
        { post_id: 1, tag: 'news' },
        { post_id: 2, tag: 'news' },
      ])
      await knex('employee').insert([{ name: 'Boss' }, { name: 'Mid', manager_id: 1 }, { name: 'Low', manager_id: 2 }])
    },
  },
}

async function setup(t: Test, dialect: Dialect): Promise<{ source: LocalSubschema; log: ReturnType<typeof testContext>['log']; dir: string } | null> {
  const { ctx, log, dir } = testContext('blog')
  let url = 'sqlite:data/blog.sqlite'
  if (dialect !== 'sqlite') {
    const db = await freshDatabase(dialect, 'blog')
    if (db.skipReason) {
      t.test(`${dialect} unreachable`, { skip: db.skipReason }, async () => {})
      return null
    }
    t.teardown(db.cleanup)
    url = db.url
  }
  const source = await createDatabaseSource({ url, migrations, rawSql: true }, ctx)
  t.teardown(() => source.close())
  return { source, log, dir }
}

/** Registers the whole suite on `t` for one engine. */
export function databaseSuite(t: Test, dialect: Dialect): void {

  t.test('createDatabaseSource: migrations, introspection cache, schema', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, dir } = s
    const cache = join(dir, 'blog.introspection.json')
    t.ok(existsSync(cache), 'introspection cached')
    const doc = JSON.parse(readFileSync(cache, 'utf8')) as { tables: { name: string }[] }
    t.same(doc.tables.map((x) => x.name).filter((n) => !n.startsWith('knex_')), ['author', 'employee', 'post', 'post_tag'])
    const sdl = printSchema(source.schema)
    for (const f of ['findUniqueAuthor', 'findFirstAuthor', 'findManyAuthor', 'aggregateAuthor', 'groupByAuthor', 'queryRaw']) t.match(sdl, new RegExp(`\\b${f}\\(`), f)
    for (const f of ['createOnePost', 'createManyPost', 'updateOnePost', 'updateManyPost', 'upsertOnePost', 'deleteOnePost', 'deleteManyPost', 'executeRaw']) t.match(sdl, new RegExp(`\\b${f}\\(`), f)
    t.match(sdl, /type Post \{[^}]*authorId: (Big)?Int![^}]*author: Author![^}]*editor: Author/s, 'many-to-one relations named after the FK column')
    t.match(sdl, /type Author \{[^}]*postsByAuthor\([^}]*postsByEditor\(/s, 'two FKs to one table: disambiguated one-to-many names')
    t.match(sdl, /type Employee \{[^}]*manager: Employee[^}]*employees\(/s, 'self relation both ways')
    t.match(sdl, /input PostTagWhereUniqueInput \{\s*postId_tag: PostTagPostIdTagCompoundUniqueInput/, 'compound key')
    t.equal((await source.health()).status, 'up')

    if (dialect !== 'sqlite') return
    // A second start with an unreachable database uses the cache.
    const again = testContext('blog')
    const { writeFileSync, mkdirSync } = await import('node:fs')
    mkdirSync(again.ctx.cacheDir, { recursive: true })
    writeFileSync(join(again.ctx.cacheDir, 'blog.introspection.json'), readFileSync(cache))
    mkdirSync(join(again.dir, 'dir.sqlite'), { recursive: true })
    const fallback = await createDatabaseSource({ url: 'sqlite:dir.sqlite' }, again.ctx)
    t.match(printSchema(fallback.schema), /findManyAuthor/, 'schema built from the cached introspection')
    await fallback.close()
    const none = testContext('blog')
    mkdirSync(join(none.dir, 'dir.sqlite'), { recursive: true })
    await t.rejects(createDatabaseSource({ url: 'sqlite:dir.sqlite' }, none.ctx), { code: 'TRB_ERR_SOURCE_LOAD' })
  })

  t.test('queries', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, log } = s
    const schema = source.schema
    for (const mode of EXEC_MODES) {
      t.test(mode, async (t) => {
        const q = async (query: string, variables?: Record<string, unknown>): Promise<unknown> => {
          const r = await run(schema, mode, query, variables)
          t.same(r.errors ?? [], [], `no errors: ${query.slice(0, 60)}`)
          return plain(r.data)
        }

        log.clear()
        t.same(await q('{ findUniqueAuthor(where: { id: 1 }) { id name active rating bigNumber meta createdAt } }'), {
          findUniqueAuthor: { id: 1, name: 'Ada', active: true, rating: '4.50', bigNumber: '9007199254740993', meta: { langs: ['en'] }, createdAt: '2024-01-01T10:00:00.000Z' },
        }, 'findUnique with typed values')
        t.equal(log.statements.length, 1, 'one statement')
        t.notMatch(log.statements[0]!.sql, /email|avatar/, 'only the selected columns')
        t.same(await q('{ findUniqueAuthor(where: { name: "Brian" }) { id } }'), { findUniqueAuthor: { id: 2 } }, 'findUnique on a unique column')
        t.same(await q('{ findUniqueAuthor(where: { id: 99 }) { id } }'), { findUniqueAuthor: null }, 'no row: null')
        t.same(await q('{ findUniquePostTag(where: { postId_tag: { postId: 1, tag: "news" } }) { postId tag } }'), { findUniquePostTag: { postId: 1, tag: 'news' } }, 'compound key')

        t.same(await q('{ findManyPost(where: { views: { gte: 5 } }, orderBy: [{ views: desc }]) { title } }'), { findManyPost: [{ title: 'Hello' }, { title: 'Third' }, { title: 'World' }] })
        t.same(await q('{ findManyPost(orderBy: [{ id: asc }], take: 2, skip: 1) { id } }'), { findManyPost: [{ id: 2 }, { id: 3 }] }, 'take/skip')
        t.same(await q('{ findManyPost(orderBy: [{ id: asc }], take: -2) { id } }'), { findManyPost: [{ id: 3 }, { id: 4 }] }, 'negative take')
        t.same(await q('{ findFirstPost(where: { published: { equals: true } }, orderBy: [{ views: asc }]) { id title published } }'), { findFirstPost: { id: 4, title: 'Bee', published: true } }, 'findFirst')
        t.same(await q('{ findManyAuthor(where: { OR: [{ name: { equals: "Ada" } }, { email: { equals: null } }] }) { name } }'), { findManyAuthor: [{ name: 'Ada' }, { name: 'Brian' }] }, 'OR + equals null')
        t.same(await q('{ findManyAuthor(where: { NOT: [{ name: { startsWith: "A" } }], AND: [{ active: { equals: true } }] }) { name } }'), { findManyAuthor: [{ name: 'carol' }] }, 'NOT/AND')
        t.same(await q('{ findManyAuthor(where: { name: { in: ["Ada", "carol"], notIn: ["Ada"] } }) { name } }'), { findManyAuthor: [{ name: 'carol' }] }, 'in/notIn')
        t.same(await q('{ findManyAuthor(where: { name: { in: [] } }) { name } }'), { findManyAuthor: [] }, 'in: [] matches nothing')
        t.same(await q('{ findManyAuthor(where: { name: { contains: "A" } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }] }, 'contains is case-sensitive')
        t.same(await q('{ findManyAuthor(where: { name: { contains: "A", mode: insensitive } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }, { name: 'Brian' }, { name: 'carol' }] }, 'mode insensitive')
        t.same(await q('{ findManyAuthor(where: { name: { equals: "ADA", mode: insensitive } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }] }, 'equals insensitive')
        t.same(await q('{ findManyAuthor(where: { email: { not: null } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }, { name: 'carol' }] }, 'not: null')
        t.same(await q('{ findManyAuthor(where: { rating: { gt: "3.5" } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }] }, 'Decimal filter')
        t.same(await q('{ findManyAuthor(where: { createdAt: { gte: "2024-02-01T10:00:00Z", lt: "2024-03-01T10:00:00.000Z" } }) { name } }'), { findManyAuthor: [{ name: 'Brian' }] }, 'DateTime filter')
        t.same(await q('query($d: DateTime) { findManyAuthor(where: { createdAt: { equals: $d } }) { name } }', { d: '2024-03-01T10:00:00.000Z' }), { findManyAuthor: [{ name: 'carol' }] }, 'DateTime equals from a variable')

        // relations
        log.clear()
        t.same(
          await q(`{ findManyAuthor(where: { id: { lte: 2 } }) {
            name
            first: postsByAuthor(orderBy: [{ views: desc }], take: 1) { title }
            all: postsByAuthor(where: { published: { equals: true } }) { title author { name } tags: postTags { tag } }
            __typename
          } }`),
          {
            findManyAuthor: [
              { name: 'Ada', first: [{ title: 'Hello' }], all: [{ title: 'Hello', author: { name: 'Ada' }, tags: [{ tag: 'intro' }, { tag: 'news' }] }, { title: 'Third', author: { name: 'Ada' }, tags: [] }], __typename: 'Author' },
              { name: 'Brian', first: [{ title: 'Bee' }], all: [{ title: 'Bee', author: { name: 'Brian' }, tags: [] }], __typename: 'Author' },
            ],
          },
          'aliases of one relation with different arguments, nested both ways',
        )
        t.equal(log.statements.length, 1, 'nested query: one statement')
        t.same(
          await q(`query { findManyEmployee(orderBy: [{ id: asc }]) { ...E manager { ... on Employee { name } } } } fragment E on Employee { name employees { name } }`),
          { findManyEmployee: [{ name: 'Boss', employees: [{ name: 'Mid' }], manager: null }, { name: 'Mid', employees: [{ name: 'Low' }], manager: { name: 'Boss' } }, { name: 'Low', employees: [], manager: { name: 'Mid' } }] },
          'self relation, named and inline fragments',
        )
        t.same(await q('{ findManyAuthor(where: { postsByAuthor: { some: { views: { gt: 6 } } } }) { name } }'), { findManyAuthor: [{ name: 'Ada' }] }, 'some')
        t.same(await q('{ findManyAuthor(where: { postsByAuthor: { every: { published: { equals: true } } } }) { name } }'), { findManyAuthor: [{ name: 'Brian' }, { name: 'carol' }] }, 'every')
        t.same(await q('{ findManyAuthor(where: { postsByAuthor: { none: {} } }) { name } }'), { findManyAuthor: [{ name: 'carol' }] }, 'none')
        t.same(await q('{ findManyPost(where: { editor: { is: { name: { equals: "carol" } } } }) { title } }'), { findManyPost: [{ title: 'Third' }] }, 'is')
        t.same(await q('{ findManyPost(where: { editor: { is: null } }, orderBy: [{ id: asc }]) { id } }'), { findManyPost: [{ id: 1 }, { id: 2 }, { id: 4 }] }, 'is: null')
        t.same(await q('{ findManyPost(where: { author: { isNot: { name: { equals: "Ada" } } } }) { title } }'), { findManyPost: [{ title: 'Bee' }] }, 'isNot')
        t.same(await q('{ findManyPost(orderBy: [{ author: { name: desc } }, { id: asc }]) { id } }'), { findManyPost: [{ id: 4 }, { id: 1 }, { id: 2 }, { id: 3 }] }, 'orderBy a relation field')
        t.same(await q('{ findManyAuthor(orderBy: [{ postsByAuthor: { _count: desc } }]) { name } }'), { findManyAuthor: [{ name: 'Ada' }, { name: 'Brian' }, { name: 'carol' }] }, 'orderBy a relation count')
        t.same(await q('{ findManyPost(cursor: { id: 2 }, orderBy: [{ id: asc }], take: 2) { id } }'), { findManyPost: [{ id: 2 }, { id: 3 }] }, 'cursor')
        t.same(await q('{ findManyPost(cursor: { id: 3 }, orderBy: [{ views: desc }]) { id } }'), { findManyPost: [{ id: 3 }, { id: 2 }, { id: 4 }] }, 'cursor on another order')
        t.same(await q('{ findManyPost(distinct: [authorId], orderBy: [{ views: asc }]) { authorId views } }'), { findManyPost: [{ authorId: 2, views: 1 }, { authorId: 1, views: 5 }] }, 'distinct')
        if (dialect !== 'mysql') {
          // MariaDB: derived tables cannot reference the outer row (see compiler/read.ts).
          t.same(await q('{ findManyAuthor(where: { id: { equals: 1 } }) { postsByAuthor(distinct: [published], orderBy: [{ id: desc }]) { id } } }'), { findManyAuthor: [{ postsByAuthor: [{ id: 3 }, { id: 2 }] }] }, 'distinct on a nested list')
        }

        // aggregates
        t.same(
          await q('{ aggregatePost { _count { _all editorId } _sum { views } _avg { views } _min { title views } _max { views publishedAt } } }'),
          { aggregatePost: { _count: { _all: 4, editorId: 1 }, _sum: { views: 23 }, _avg: { views: 5.75 }, _min: { title: 'Bee', views: 1 }, _max: { views: 10, publishedAt: '2024-01-02T00:00:00.000Z' } } },
          'aggregate',
        )
        t.same(await q('{ aggregatePost(where: { authorId: { equals: 1 } }, orderBy: [{ views: desc }], take: 2) { _sum { views } } }'), { aggregatePost: { _sum: { views: 17 } } }, 'aggregate over take')
        t.same(await q('{ aggregateAuthor { _sum { rating bigNumber } } }'), { aggregateAuthor: { _sum: { rating: '7.75', bigNumber: '9007199254740993' } } }, 'exact Decimal/BigInt sums')
        t.same(
          await q('{ groupByPost(by: [authorId], orderBy: [{ _sum: { views: desc } }]) { authorId _count { _all } _sum { views } } }'),
          { groupByPost: [{ authorId: 1, _count: { _all: 3 }, _sum: { views: 22 } }, { authorId: 2, _count: { _all: 1 }, _sum: { views: 1 } }] },
          'groupBy',
        )
        t.same(await q('{ groupByPost(by: [authorId, published], having: { views: { _sum: { gt: 5 } } }, orderBy: [{ authorId: asc }, { published: asc }]) { authorId published } }'), {
          groupByPost: [{ authorId: 1, published: true }],
        }, 'groupBy having')

        // variables
        const byVar = 'query($w: PostWhereInput, $take: Int, $dir: SortOrder) { findManyPost(where: $w, take: $take, orderBy: [{ views: $dir }]) { id } }'
        t.same(await q(byVar, { w: { views: { gt: 4 } }, take: 2, dir: 'asc' }), { findManyPost: [{ id: 2 }, { id: 3 }] }, 'whole where from a variable')
        t.same(await q(byVar, { w: { title: { in: ['Bee', 'Hello'] } }, take: 5, dir: 'desc' }), { findManyPost: [{ id: 1 }, { id: 4 }] }, 'another shape, another direction')
        t.same(await q(byVar, { w: { views: { gt: 0 } }, take: 1, dir: 'asc' }), { findManyPost: [{ id: 4 }] }, 'first shape again')
        t.same(await q('query($id: Int = 2) { findUniquePost(where: { id: $id }) { id } }'), { findUniquePost: { id: 2 } }, 'default value of a variable')
        t.same(await q('query($id: Int) { findUniquePost(where: { id: $id }) { id } }', { id: 3 }), { findUniquePost: { id: 3 } })
        t.same(await q('query($s: Boolean!) { findUniquePost(where: { id: 1 }) { id title @skip(if: $s) } }', { s: true }), { findUniquePost: { id: 1 } }, '@skip with a variable')

        t.same(await q('{ queryRaw(query: "select name from author where id = ? or name = ?", parameters: [2, "x"]) }'), { queryRaw: [{ name: 'Brian' }] }, 'queryRaw')
      })
    }
  })

  t.test('SQL injection: values stay bound', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, log } = s
    const evil = `' OR 1=1; DROP TABLE author; --`
    for (const mode of EXEC_MODES) {
      const cases = [
        `{ findManyAuthor(where: { name: { equals: ${JSON.stringify(evil)} } }) { id } }`,
        `{ findManyAuthor(where: { name: { contains: ${JSON.stringify(evil)} } }) { id } }`,
        `{ findManyAuthor(where: { name: { startsWith: ${JSON.stringify(evil)}, mode: insensitive } }) { id } }`,
        `{ findManyAuthor(where: { name: { endsWith: ${JSON.stringify(evil)} } }) { id } }`,
        `{ findManyAuthor(where: { name: { in: [${JSON.stringify(evil)}] } }) { id } }`,
        `{ findManyAuthor(where: { name: { gt: ${JSON.stringify(evil)}, lt: "A" } }) { id } }`,
        `{ findManyAuthor(where: { email: { equals: ${JSON.stringify(evil)} } }) { id } }`,
        `{ findManyAuthor(where: { postsByAuthor: { some: { title: { equals: ${JSON.stringify(evil)} } } } }) { id } }`,
        `{ findManyAuthor(where: { name: { equals: "%" } }) { id } }`,
        `{ findManyAuthor(where: { name: { contains: "%" } }) { id } }`,
        `{ findManyAuthor(where: { name: { contains: "*" } }) { id } }`,
        `{ queryRaw(query: "select id from author where name = ?", parameters: [${JSON.stringify(evil)}]) }`,
      ]
      for (const c of cases) {
        log.clear()
        const r = await run(source.schema, mode, c)
        t.same(r.errors ?? [], [], `${mode}: no error`)
        const data = plain(r.data) as Record<string, unknown[]>
        t.same(Object.values(data)[0], [], `${mode}: no rows for ${c.slice(0, 70)}`)
        for (const s of log.statements) t.notMatch(s.sql, /DROP TABLE/, 'value not in the SQL text')
      }
    }
    const r = await run(source.schema, 'execute', '{ aggregateAuthor { _count { _all } } }')
    t.same(plain(r.data), { aggregateAuthor: { _count: { _all: 3 } } }, 'table intact')
  })

  t.test('mutations', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, log } = s
    const schema = source.schema
    for (const mode of EXEC_MODES) {
      t.test(mode, async (t) => {
        const m = async (query: string, variables?: Record<string, unknown>): Promise<unknown> => {
          const r = await run(schema, mode, query, variables)
          t.same(r.errors ?? [], [], `no errors: ${query.slice(0, 60)}`)
          return plain(r.data)
        }
        const fails = async (query: string, code: string, message: RegExp, variables?: Record<string, unknown>): Promise<void> => {
          const r = await run(schema, mode, query, variables)
          const err = r.errors?.[0]
          t.equal((err?.originalError as { code?: string } | undefined)?.code, code, `${code}: ${query.slice(0, 50)}`)
          t.match(err?.message ?? '', message)
          t.notMatch(err?.message ?? '', /insert|update|delete|select/i, 'no SQL in the message')
        }
        const name = `Dora-${mode}`
        const created = (await m(
          'mutation($name: String!, $at: DateTime) { createOneAuthor(data: { name: $name, rating: "1.10", createdAt: $at, avatar: "AAEC", meta: { a: [1, 2] } }) { id name active rating createdAt avatar meta postsByAuthor { id } } }',
          { name, at: '2025-06-07T08:09:10.123Z' },
        )) as { createOneAuthor: { id: number } }
        t.match(created, { createOneAuthor: { name, active: true, rating: '1.10', createdAt: '2025-06-07T08:09:10.123Z', avatar: 'AAEC', meta: { a: [1, 2] }, postsByAuthor: [] } }, 'createOne reads back the selection (DateTime round trip)')
        const id = created.createOneAuthor.id
        log.clear()
        t.same(await m(`mutation { createOnePost(data: { authorId: ${id}, title: "New" }) { title views published author { name } } }`), { createOnePost: { title: 'New', views: 0, published: false, author: { name } } }, 'scalar FK accepted')
        t.same(
          log.statements.filter((s) => !s.sql.startsWith('SET ')).map((s) => s.sql.split(' ')[0]!.replace('START', 'BEGIN')),
          ['BEGIN', 'INSERT', 'SELECT', 'COMMIT'],
          'one transaction: insert and read-back',
        )
        t.same(
          await m(`mutation { updateOneAuthor(where: { id: ${id} }, data: { email: { set: "d@x.org" }, rating: { increment: "2" }, active: { set: false } }) { email rating active } }`),
          { updateOneAuthor: { email: 'd@x.org', rating: '3.10', active: false } },
          'updateOne with set/increment',
        )
        t.same(
          await m(`mutation { updateManyPost(where: { authorId: { equals: ${id} } }, data: { views: { increment: 10 } }) { count } }`),
          { updateManyPost: { count: 1 } },
          'updateMany',
        )
        t.same(await m(`mutation { updateManyPost(where: { authorId: { equals: ${id} } }, data: { views: { multiply: 3 } }) { count } }`), { updateManyPost: { count: 1 } })
        t.same(await m(`mutation { updateManyPost(where: { authorId: { equals: ${id} } }, data: { views: { divide: 4 } }) { count } }`), { updateManyPost: { count: 1 } })
        t.same(await m(`mutation { updateManyPost(where: { authorId: { equals: ${id} } }, data: { views: { decrement: 1 } }) { count } }`), { updateManyPost: { count: 1 } })
        t.same(await m(`{ findManyPost(where: { authorId: { equals: ${id} } }) { views } }`), { findManyPost: [{ views: 6 }] }, '((0+10)*3)/4-1 = 6 (integer division)')
        t.same(
          await m(`mutation { a: upsertOneAuthor(where: { name: "${name}" }, create: { name: "x" }, update: { email: { set: null } }) { name email } b: upsertOneAuthor(where: { name: "${name}-2" }, create: { name: "${name}-2" }, update: {}) { name } }`),
          { a: { name, email: null }, b: { name: `${name}-2` } },
          'upsert: update then create',
        )
        t.same(await m(`mutation { createManyPostTag(data: [{ postId: 1, tag: "${mode}" }, { postId: 1, tag: "news" }], skipDuplicates: true) { count } }`), { createManyPostTag: { count: 1 } }, 'createMany skipDuplicates')
        t.same(await m(`mutation { createManyPostTag(data: [{ postId: 2, tag: "${mode}a" }, { postId: 2, tag: "${mode}b" }]) { count } }`), { createManyPostTag: { count: 2 } }, 'createMany')
        t.same(await m(`mutation { deleteOnePostTag(where: { postId_tag: { postId: 2, tag: "${mode}a" } }) { tag post { title } } }`), { deleteOnePostTag: { tag: `${mode}a`, post: { title: 'World' } } }, 'deleteOne returns the row')
        t.same(await m(`mutation { deleteManyPostTag(where: { tag: { startsWith: "${mode}" } }) { count } }`), { deleteManyPostTag: { count: 2 } }, 'deleteMany')

        await fails(`mutation { createOneAuthor(data: { name: "Ada" }) { id } }`, 'TRB_ERR_DB_UNIQUE', /Author \(`name`\)/)
        await fails(`mutation { createOnePost(data: { authorId: 999, title: "x" }) { id } }`, 'TRB_ERR_DB_FOREIGN_KEY', /Post/)
        await fails(`mutation { updateOneAuthor(where: { id: 1 }, data: { name: { set: null } }) { id } }`, 'TRB_ERR_DB_NOT_NULL', /Author \(`name`\)/)
        await fails(`mutation { createOnePost(data: { authorId: 1, title: "x", views: -1 }) { id } }`, 'TRB_ERR_DB_CHECK', /views_non_negative/)
        await fails(`mutation { updateOneAuthor(where: { id: 999 }, data: { email: { set: "x" } }) { id } }`, 'TRB_ERR_DB_NOT_FOUND', /No Author record found/)
        await fails(`mutation { deleteOneAuthor(where: { id: 999 }) { id } }`, 'TRB_ERR_DB_NOT_FOUND', /No Author record found/)
        await fails(`mutation { deleteOneAuthor(where: { id: 1 }) { id } }`, 'TRB_ERR_DB_FOREIGN_KEY', /./)
        const count = (await m('{ aggregatePost(where: { title: { equals: "x" } }) { _count { _all } } }')) as { aggregatePost: { _count: { _all: number } } }
        t.equal(count.aggregatePost._count._all, 0, 'failed writes wrote nothing')

        t.same(await m(`mutation { executeRaw(query: "update author set email = ? where name = ?", parameters: ["raw@x", "${name}-2"]) }`), { executeRaw: 1 }, 'executeRaw')
        const bad = await run(schema, mode, 'mutation { executeRaw(query: "update nope set x = 1") }')
        t.equal((bad.errors?.[0]?.originalError as { code?: string })?.code, 'TRB_ERR_DB_RAW', 'raw error code')
      })
    }
  })

  t.test('order terms: NULLs first ascending and last descending; NOT NULL columns in plain index order on PostgreSQL', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, log } = s
    log.clear()
    const byEditor = await run(source.schema, 'execute', '{ asc: findManyPost(orderBy: [{ editorId: asc }]) { id } desc: findManyPost(orderBy: [{ editorId: desc }]) { id } }')
    t.same(byEditor.data, { asc: [{ id: 1 }, { id: 2 }, { id: 4 }, { id: 3 }], desc: [{ id: 3 }, { id: 1 }, { id: 2 }, { id: 4 }] }, 'a nullable column: NULLs first ascending, last descending (ties by id)')
    const byViews = await run(source.schema, 'execute', '{ findManyPost(orderBy: [{ views: desc }], take: 2) { id } }')
    t.same(byViews.data, { findManyPost: [{ id: 1 }, { id: 3 }] }, 'a NOT NULL column')
    // The two root fields run at once, each on its own pooled connection: their statements are logged
    // in the order their connections came, so each is told by its direction, not by its place.
    const statements = log.statements.map((x) => x.sql)
    const editorSql = statements.slice(0, 2).find((q) => /"editor_id" ASC/.test(q))
    const editorDescSql = statements.slice(0, 2).find((q) => /"editor_id" DESC/.test(q))
    const viewsSql = statements[2]
    if (dialect === 'postgres') {
      t.match(editorSql, /"editor_id" ASC NULLS FIRST, t0\."id" ASC\b(?! NULLS)/, 'PostgreSQL: NULLS FIRST on the nullable column only, the primary-key tie-break in plain order')
      t.match(editorDescSql, /"editor_id" DESC NULLS LAST/)
      t.notMatch(viewsSql, /NULLS/, 'PostgreSQL: NOT NULL columns without NULLS FIRST/LAST (a default b-tree index serves the order)')
    } else t.notMatch(statements.slice(0, 3).join('\n'), /NULLS/, 'no NULLS FIRST/LAST in any of the three statements')
  })

  t.test('plans are compiled once per operation', async (t) => {
    const s = await setup(t, dialect)
    if (!s) return
    const { source, log } = s
    const query = 'query($id: Int!) { findUniqueAuthor(where: { id: $id }) { name postsByAuthor(take: 1) { title } } }'
    for (const mode of EXEC_MODES) {
      log.clear()
      for (const id of [1, 2, 3]) await run(source.schema, mode, query, { id })
      const texts = new Set(log.statements.map((s) => s.sql))
      t.equal(log.statements.length, 3, `${mode}: one statement per request`)
      t.equal(texts.size, 1, `${mode}: the same SQL text, variables bound`)
      t.same(log.statements.map((s) => s.bindings.at(-1)), [1, 2, 3], `${mode}: bindings follow the variables`)
    }
  })
}
