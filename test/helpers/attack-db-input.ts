/**
 * Attack suite for the database input limits (README "Security and limits"), run on one engine by
 * attack-db-input-{sqlite,postgres,mysql}.test.ts: a gateway with one database source (authors and
 * posts, `maxTake: 5`) on a fresh database, listening on 127.0.0.1, driven with real HTTP requests.
 * Every hostile input must get its coded error (never `TRB_ERR_INTERNAL`), and a normal request
 * must still work afterwards.
 */
import t, { type Test } from 'tap'
import type { Knex } from 'knex'
import { database } from '../../gateway/config/index.js'
import { startDatabaseGateway } from './db-gateway.js'
import { MAX_BOUND_VALUES } from '../../gateway/connectors/database/compiler/input-limits.js'
import type { Dialect } from '../../gateway/connectors/database/model.js'
import { freshDatabase } from './chinook.js'

const MAX_TAKE = 5

const migrations = {
  '001': {
    async up(knex: Knex) {
      // Plain integer keys: Int on every engine (MySQL's increments would be BigInt).
      await knex.schema.createTable('author', (tb) => {
        tb.integer('id').primary()
        tb.string('name').notNullable()
      })
      await knex.schema.createTable('post', (tb) => {
        tb.integer('id').primary()
        tb.integer('author_id').notNullable().references('id').inTable('author')
        tb.string('title').notNullable()
      })
      await knex('author').insert(Array.from({ length: 8 }, (_, i) => ({ id: i + 1, name: `author ${i + 1}` })))
      await knex('post').insert(Array.from({ length: 8 }, (_, i) => ({ id: i + 1, author_id: 1, title: `post ${i + 1}` })))
    },
  },
}

/** Registers the suite for one engine; it skips, saying why, when the engine is unreachable. */
export async function attackDatabaseInputOn(dialect: Dialect): Promise<void> {
  const db = await freshDatabase(dialect, 'attack-input')
  t.teardown(() => db.cleanup())

  t.test(`database input limits on ${dialect}, over real HTTP`, { skip: db.skipReason }, async (t) => {
    const { gql } = await startDatabaseGateway(t, [database({ namespace: 'blog', url: db.url, migrations, maxTake: MAX_TAKE })])
    const refused = async (t: Test, name: string, code: string, pattern: RegExp, query: string, variables?: Record<string, unknown>) => {
      const res = await gql(query, variables)
      t.equal(res.status, 200, `${name}: status`)
      t.equal(res.body.errors?.[0]?.extensions.code, code, `${name}: ${code}`)
      t.match(res.body.errors?.[0]?.message, pattern, `${name}: the message names the limit`)
      t.notMatch(JSON.stringify(res.body), /select |TRB_ERR_INTERNAL/i, `${name}: no SQL, nothing internal`)
    }
    const stillWorks = async (t: Test) => {
      const res = await gql('{ blog_findManyAuthor(take: 2, orderBy: [{ id: asc }]) { id posts(take: 1) { id } } }')
      t.same(res.body, { data: { blog_findManyAuthor: [{ id: 1, posts: [{ id: 1 }] }, { id: 2, posts: [] }] } }, 'a normal request still works')
    }

    t.test('take above maxTake is refused, nested lists included', async (t) => {
      const max = /maximum of 5 \(maxTake\)/
      await refused(t, 'root literal', 'TRB_ERR_DB_INPUT', max, '{ blog_findManyAuthor(take: 6) { id } }')
      await refused(t, 'root negative', 'TRB_ERR_DB_INPUT', max, '{ blog_findManyAuthor(take: -6) { id } }')
      await refused(t, 'root 1000', 'TRB_ERR_DB_INPUT', max, '{ blog_findManyAuthor(take: 1000) { id } }')
      await refused(t, 'nested literal', 'TRB_ERR_DB_INPUT', max, '{ blog_findManyAuthor(take: 1) { posts(take: 6) { id } } }')
      await refused(t, 'variable', 'TRB_ERR_DB_INPUT', max, 'query($n: Int) { blog_findManyAuthor(take: $n) { id } }', { n: 6 })
      await refused(t, 'nested variable', 'TRB_ERR_DB_INPUT', max, 'query($n: Int) { blog_findFirstAuthor { posts(take: $n) { id } } }', { n: 6 })
      await refused(t, 'groupBy', 'TRB_ERR_DB_INPUT', max, '{ blog_groupByPost(by: [authorId], take: 6) { authorId } }')
      await refused(t, 'aggregate', 'TRB_ERR_DB_INPUT', max, '{ blog_aggregatePost(take: 6) { _count { _all } } }')
      const ok = await gql('query($n: Int) { blog_findManyAuthor(take: $n) { id } }', { n: 5 })
      t.equal((ok.body.data?.blog_findManyAuthor as unknown[]).length, 5, 'take = maxTake works')
      await stillWorks(t)
    })

    t.test('a list without take returns at most maxTake rows, nested lists included', async (t) => {
      const res = await gql('{ blog_findManyAuthor { id } blog_findFirstAuthor(orderBy: [{ id: asc }]) { posts { id } } blog_groupByPost(by: [id]) { id } }')
      t.equal((res.body.data?.blog_findManyAuthor as unknown[]).length, MAX_TAKE, 'root: 5 of 8 rows')
      t.same((res.body.data?.blog_findFirstAuthor as { posts: unknown[] }).posts, [1, 2, 3, 4, 5].map((id) => ({ id })), 'nested: the first 5 of 8, in key order')
      t.equal((res.body.data?.blog_groupByPost as unknown[]).length, MAX_TAKE, 'groupBy: 5 of 8 groups')
      const count = await gql('{ blog_aggregatePost { _count { _all } } }')
      t.same(count.body.data, { blog_aggregatePost: { _count: { _all: 8 } } }, 'aggregates still count every row')
    })

    t.test('negative skip is refused', async (t) => {
      const neg = /skip must not be negative/
      await refused(t, 'root', 'TRB_ERR_DB_INPUT', neg, '{ blog_findManyAuthor(skip: -1) { id } }')
      await refused(t, 'nested', 'TRB_ERR_DB_INPUT', neg, '{ blog_findFirstAuthor { posts(skip: -1) { id } } }')
      await refused(t, 'variable', 'TRB_ERR_DB_INPUT', neg, 'query($s: Int) { blog_findManyAuthor(skip: $s) { id } }', { s: -2147483648 })
      await refused(t, 'groupBy', 'TRB_ERR_DB_INPUT', neg, '{ blog_groupByPost(by: [authorId], skip: -1) { authorId } }')
      await stillWorks(t)
    })

    t.test('in lists beyond the engine\'s bound-value limit are refused; long ones below it work', async (t) => {
      const max = MAX_BOUND_VALUES[dialect]
      const query = 'query($ids: [Int!]) { blog_findManyAuthor(where: { id: { in: $ids } }) { id } }'
      await refused(t, `${max + 1} values`, 'TRB_ERR_DB_INPUT', new RegExp(`at most ${max}`), query, { ids: Array.from({ length: max + 1 }, (_, i) => i) })
      await refused(t, 'notIn', 'TRB_ERR_DB_INPUT', new RegExp(`at most ${max}`), query.replace('in:', 'notIn:'), { ids: Array.from({ length: max + 1 }, (_, i) => i) })
      const ok = await gql(query, { ids: Array.from({ length: 10_000 }, (_, i) => i) })
      t.same(ok.body, { data: { blog_findManyAuthor: [1, 2, 3, 4, 5].map((id) => ({ id })) } }, '10,000 values work')
      await stillWorks(t)
    })

    t.test('a wide OR runs (grouped, not one deep expression)', async (t) => {
      const res = await gql('query($w: blog_AuthorWhereInput) { blog_findManyAuthor(where: $w) { id } }', {
        w: { OR: Array.from({ length: 5000 }, (_, i) => ({ id: { equals: i } })) },
      })
      t.same(res.body, { data: { blog_findManyAuthor: [1, 2, 3, 4, 5].map((id) => ({ id })) } })
    })

    t.test('input nested deeper than maxInputDepth is refused before it runs', async (t) => {
      const nest = (n: number) => {
        let w = '{ id: { equals: 1 } }'
        for (let i = 0; i < n; i++) w = `{ NOT: ${w} }`
        return w
      }
      const nestVar = (n: number) => {
        let w: unknown = { id: { equals: 1 } }
        for (let i = 0; i < n; i++) w = { NOT: w }
        return w as Record<string, unknown>
      }
      await refused(t, 'literal, 1000 NOTs', 'TRB_ERR_GRAPHQL_LIMIT', /maximum of 32 \(maxInputDepth\)/, `{ blog_findManyAuthor(where: ${nest(1000)}) { id } }`)
      await refused(t, 'variable, 1000 NOTs', 'TRB_ERR_GRAPHQL_LIMIT', /more than 32 levels/, 'query($w: blog_AuthorWhereInput) { blog_findManyAuthor(where: $w) { id } }', { w: nestVar(1000) })
      // 30 NOTs (an even number) run on the engine and mean `id = 1`.
      const deep = await gql('query($w: blog_AuthorWhereInput) { blog_findManyAuthor(where: $w) { id } }', { w: nestVar(30) })
      t.same(deep.body, { data: { blog_findManyAuthor: [{ id: 1 }] } }, 'nesting within the limit runs on the engine')
      const lit = await gql(`{ blog_findManyAuthor(where: ${nest(29)}) { id } }`)
      t.same(lit.body, { data: { blog_findManyAuthor: [2, 3, 4, 5, 6].map((id) => ({ id })) } }, 'a literal within the limit runs too')
      await stillWorks(t)
    })

    t.test('NUL characters in strings', async (t) => {
      const query = 'query($s: String) { blog_findManyAuthor(where: { name: { equals: $s } }) { id } }'
      const like = 'query($s: String) { blog_findManyAuthor(where: { name: { contains: $s } }) { id } }'
      const create = 'mutation($s: String!) { blog_createOneAuthor(data: { id: 100, name: $s }) { id } }'
      if (dialect === 'postgres') {
        const nul = /NUL character/
        await refused(t, 'equals', 'TRB_ERR_DB_INPUT', nul, query, { s: 'a\u0000b' })
        await refused(t, 'contains', 'TRB_ERR_DB_INPUT', nul, like, { s: '\u0000' })
        await refused(t, 'create', 'TRB_ERR_DB_INPUT', nul, create, { s: 'x\u0000' })
      } else {
        for (const [name, q] of [['equals', query], ['contains', like]] as const) {
          const res = await gql(q, { s: 'a\u0000b' })
          t.same(res.body, { data: { blog_findManyAuthor: [] } }, `${name}: ${dialect} compares NUL like any character`)
        }
      }
      await stillWorks(t)
    })
  })
}
