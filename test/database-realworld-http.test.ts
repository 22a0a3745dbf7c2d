/**
 * Issue 10 read side over real HTTP: the real-world fixture on SQLite and PostgreSQL behind the
 * gateway (namespace `rw`, production mode), so that namespacing, the direct JSON path and error
 * bodies apply: many-to-many fields, `_count`, array columns and filters, views with configured keys
 * and relations, function fields. PostgreSQL skips when unreachable.
 */
import t from 'tap'
import { database } from '../gateway/config/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { realworldDatabase } from './helpers/realworld.js'
import { startDatabaseGateway, type Answer } from './helpers/db-gateway.js'

for (const dialect of ['sqlite', 'postgres'] as Dialect[]) {
  const db = await realworldDatabase(dialect, 'dbread_http')
  t.teardown(() => db.cleanup())
  t.test(`real-world reads over HTTP on ${dialect}`, { skip: db.skipReason }, async (t) => {
    const server = await startDatabaseGateway(t, [
      database({
        namespace: 'rw',
        url: db.url,
        ...(dialect === 'postgres' ? { schema: db.schema!, functions: ['search_posts', 'create_tag'] } : {}),
        uniqueKeys: { PostList: [['id']] },
        relations: [{ from: 'PostList.authorId', to: 'Author.id' }],
      }),
    ])
    const gql = async (query: string, variables?: Record<string, unknown>): Promise<Answer['body']> => (await server.gql(query, variables)).body

    const m2m = await gql(`{ rw_findUniqueTag(where: { name: "code" }) { __typename name posts(orderBy: { id: desc }, take: 2) { id _count { comments } } _count { posts } } }`)
    t.same(m2m, { data: { rw_findUniqueTag: { __typename: 'rw_Tag', name: 'code', posts: [{ id: 5, _count: { comments: 1 } }, { id: 3, _count: { comments: 1 } }], _count: { posts: 3 } } } })
    const view = await gql(`{ rw_findUniquePostList(where: { id: 4 }) { title status author { name postLists { id } } } }`)
    t.same(view, { data: { rw_findUniquePostList: { title: 'Old news', status: 'archived', author: { name: 'Brian', postLists: [{ id: 3 }, { id: 4 }] } } } })
    const enumFilter = await gql(`query($s: rw_PostStatus) { rw_findManyPost(where: { status: { equals: $s } }) { id } }`, { s: 'draft' })
    t.same(enumFilter, { data: { rw_findManyPost: [{ id: 2 }] } }, 'the enum type is namespaced, on SQLite too (CHECK enum)')
    const badEnum = await gql(`{ rw_findManyPost(where: { status: { equals: deleted } }) { id } }`)
    t.equal(badEnum.errors?.[0]?.extensions.code, 'TRB_ERR_GRAPHQL_VALIDATION')

    if (dialect === 'postgres') {
      const arrays = await gql(`query($l: [String!]) { rw_findManyPost(where: { labels: { hasSome: $l } }, orderBy: { id: asc }) { id labels scores } }`, { l: ['code', 'history'] })
      t.same(arrays, { data: { rw_findManyPost: [{ id: 3, labels: ['tech', 'code'], scores: [5] }, { id: 4, labels: ['history'], scores: [] }] } })
      const fn = await gql(`{ rw_searchPosts(q: "o", orderBy: { id: asc }, where: { views: { gt: 10 } }) { title tags { name } } }`)
      t.same(fn, { data: { rw_searchPosts: [{ title: 'Compilers', tags: [{ name: 'code' }] }] } })
      const created = await gql(`mutation { rw_createTag(tagName: "fresh") { name } }`)
      t.same(created, { data: { rw_createTag: { name: 'fresh' } } })
      const dup = await gql(`mutation { rw_createTag(tagName: "fresh") { name } }`)
      t.equal(dup.errors?.[0]?.extensions.code, 'TRB_ERR_DB_UNIQUE')
      t.notMatch(JSON.stringify(dup), /insert|select|TRB_ERR_INTERNAL/i, 'no SQL, nothing internal')
      const bad = await gql(`{ rw_findManyPost(where: { labels: { has: "\\u0000" } }) { id } }`)
      t.equal(bad.errors?.[0]?.extensions.code, 'TRB_ERR_DB_INPUT')
    }
  })
}
