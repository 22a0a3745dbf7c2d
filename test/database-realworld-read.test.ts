/**
 * Issue 10, read side, on the real-world fixture (test/fixtures/realworld/<engine>/*.sql) on SQLite,
 * PostgreSQL and MariaDB: PostgreSQL arrays (item 5), one enum per column lineage on MySQL (8),
 * SQLite CHECK enums and view enums (9), many-to-many shortcuts (10), `_count` (11), views with
 * configured unique keys and relations (13) and PostgreSQL functions (14). Every answer is checked
 * against the engine's own SQL; every root field is one statement; direct JSON plans equal GraphQL
 * execution. PostgreSQL and MariaDB parts skip when the server is unreachable.
 */
import t, { type Test } from 'tap'
import { Kind, execute, getVariableValues, parse, validate, type FragmentDefinitionNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql'
import type { Knex } from 'knex'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { DirectFieldExtension } from '../gateway/connectors/database/direct.js'
import { createDatabaseSource, type DatabaseSourceOptions } from '../gateway/connectors/database/index.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { checkEnums } from '../gateway/connectors/database/introspect/sqlite.js'
import { resolveConfig } from '../gateway/config/index.js'
import { rawRows, realworldDatabase } from './helpers/realworld.js'
import { plain, run, testContext, type SqlLog } from './helpers/database-source.js'

const ENGINES: readonly Dialect[] = ['sqlite', 'postgres', 'mysql']

interface Env {
  schema: GraphQLSchema
  log: SqlLog
  knex: Knex
  dialect: Dialect
  /** Rows of a SQL query (knex raw, `?` placeholders). */
  sql(text: string, bindings?: unknown[]): Promise<Record<string, unknown>[]>
  /** Runs GraphQL, asserts no errors and exactly `statements` SQL statements; returns plain data. */
  q(t: Test, query: string, variables?: Record<string, unknown>, statements?: number): Promise<Record<string, unknown>>
}

async function setup(t: Test, dialect: Dialect, extra: Partial<DatabaseSourceOptions> = {}): Promise<Env | null> {
  const db = await realworldDatabase(dialect, 'dbread')
  if (db.skipReason) {
    t.skip(db.skipReason, async () => {})
    return null
  }
  t.teardown(db.cleanup)
  const { ctx, log } = testContext('rw')
  const source = await createDatabaseSource(
    {
      url: db.url,
      ...(db.schema && dialect === 'postgres' ? { schema: db.schema } : {}),
      uniqueKeys: { PostList: [['id']], AuthorStats: [['authorId']] },
      relations: [
        { from: 'PostList.authorId', to: 'Author.id' },
        { from: 'AuthorStats.authorId', to: 'Author.id' },
      ],
      ...extra,
    },
    ctx,
  )
  t.teardown(() => source.close!())
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, dialect, text, bindings, db.schema)
  const q = async (t: Test, query: string, variables?: Record<string, unknown>, statements = 1): Promise<Record<string, unknown>> => {
    log.clear()
    const res = await execute({ schema: source.schema, document: parse(query), ...(variables ? { variableValues: variables } : {}) })
    t.same(res.errors?.map((e) => e.message) ?? [], [], `no errors: ${query.replace(/\s+/g, ' ').slice(0, 90)}`)
    if (statements >= 0) t.equal(log.statements.length, statements, `${statements} statement(s)`)
    return plain(res.data) as Record<string, unknown>
  }
  return { schema: source.schema, log, knex, dialect, sql, q }
}

/** Every root field of `query` has a direct plan whose text equals graphql-js' serialisation. */
async function assertDirect(t: Test, schema: GraphQLSchema, query: string, variables: Record<string, unknown> = {}): Promise<void> {
  const document = parse(query)
  t.same(validate(schema, document).map((e) => e.message), [])
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!
  const fragments: Record<string, FragmentDefinitionNode> = {}
  const result = await execute({ schema, document, variableValues: variables })
  t.same(result.errors ?? [], [])
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables)
  for (const sel of operation.selectionSet.selections) {
    if (sel.kind !== Kind.FIELD) continue
    const ext = schema.getQueryType()!.getFields()[sel.name.value]!.extensions?.['tributary'] as DirectFieldExtension
    const plan = ext.direct!({ schema, field: sel, fragments, variableDefinitions: operation.variableDefinitions ?? [] })
    if (!plan) {
      t.fail(`no direct plan for ${sel.name.value}`)
      continue
    }
    t.equal(await plan.run(coerced.coerced!, {}), JSON.stringify((result.data as Record<string, unknown>)[sel.alias?.value ?? sel.name.value]), `direct = GraphQL: ${query.replace(/\s+/g, ' ').slice(0, 80)}`)
  }
}

const ids = (rows: Record<string, unknown>[], key = 'id'): number[] => rows.map((r) => Number(r[key]))

t.test('checkEnums parses column- and table-level CHECK (col IN (…)) only', async (t) => {
  const m = checkEnums(`CREATE TABLE x (a TEXT CHECK (a IN ('p', 'q''s')), "B c" TEXT, d TEXT CHECK (length(d) > 2), e TEXT CHECK (e NOT IN ('z')),
    CHECK ("B c" in ('1','2')), CHECK (a IN ('other')))`)
  t.same([...m.entries()], [['a', ['p', "q's"]], ['b c', ['1', '2']]])
})

for (const dialect of ENGINES) {
  t.test(`real-world reads on ${dialect}`, async (t) => {
    const env = await setup(t, dialect, dialect === 'postgres' ? { functions: true } : {})
    if (!env) return
    const { schema, q, sql } = env
    const type = (name: string) => schema.getType(name) as { getFields?(): Record<string, { type: unknown }>; getValues?(): { name: string }[] } | undefined

    t.test('enums: one type per column lineage, views included (items 8, 9)', async (t) => {
      const postStatus = (type('Post')!.getFields!()['status']!.type as object).toString()
      const listStatus = (type('PostList')!.getFields!()['status']!.type as object).toString()
      t.equal(postStatus, 'PostStatus!')
      // SQLite reports every view column nullable.
      t.equal(listStatus.replace(/!$/, ''), 'PostStatus', 'the view column has the base column\'s enum')
      const enumTypes = Object.values(schema.getTypeMap()).filter((x) => x.constructor.name === 'GraphQLEnumType' && /status/i.test(x.name)).map((x) => x.name)
      t.same(enumTypes, ['PostStatus'], 'a single status enum')
      if (dialect === 'mysql') {
        t.equal((type('PublishedPost')!.getFields!()['status']!.type as object).toString().replace(/!$/, ''), 'PostStatus')
      }
      const data = await q(t, `{ findManyPostList(where: { status: { equals: published } }, orderBy: { id: asc }) { id status } }`)
      const rows = await sql(`select id from post_list where status = 'published' order by id`)
      t.same(ids(data['findManyPostList'] as Record<string, unknown>[]), ids(rows))
      t.same((data['findManyPostList'] as { status: string }[]).map((r) => r.status), ['published', 'published', 'published'])
      if (dialect !== 'postgres') {
        // SQLite CHECK enum / MySQL inline enum on author.role.
        t.same(type('AuthorRole')?.getValues!().map((v) => v.name), ['writer', 'editor', 'admin'])
      }
    })

    t.test('many-to-many shortcuts (item 10)', async (t) => {
      const data = await q(t, `{ findManyPost(orderBy: { id: asc }) { id tags(orderBy: { name: desc }, where: { name: { not: { equals: "history" } } }, take: 1) { name } } findManyTag(orderBy: { id: asc }) { id posts(orderBy: { id: asc }, skip: 1) { id } } }`, undefined, 2)
      const posts = data['findManyPost'] as { id: number; tags: { name: string }[] }[]
      for (const p of posts) {
        const rows = await sql(`select t.name from tag t join post_tag pt on pt.tag_id = t.id where pt.post_id = ? and t.name <> 'history' order by t.name desc limit 1`, [p.id])
        t.same(p.tags.map((x) => x.name), rows.map((r) => r['name']), `post ${p.id} tags`)
      }
      for (const tag of data['findManyTag'] as { id: number; posts: { id: number }[] }[]) {
        const rows = await sql(`select post_id from post_tag where tag_id = ? order by post_id`, [tag.id])
        t.same(ids(tag.posts), ids(rows, 'post_id').slice(1), `tag ${tag.id} posts`)
      }
      const filtered = await q(t, `{ findManyPost(where: { tags: { some: { name: { equals: "code" } } } }, orderBy: { tags: { _count: desc } }) { id } }`)
      const expect = await sql(`select p.id from post p where exists (select 1 from post_tag pt join tag t on t.id = pt.tag_id where pt.post_id = p.id and t.name = 'code') order by (select count(*) from post_tag pt where pt.post_id = p.id) desc, p.id`)
      t.same(ids(filtered['findManyPost'] as Record<string, unknown>[]), ids(expect))
      const none = await q(t, `{ findManyTag(where: { posts: { none: {} } }) { name } }`)
      t.same(none['findManyTag'], [{ name: 'unused' }])
      t.ok(type('PostTag'), 'the join table keeps its own model')
      await assertDirect(t, schema, `{ findManyPost(orderBy: { id: asc }) { id tags(orderBy: { id: asc }) { __typename id name } } }`)
    })

    t.test('_count of relations (item 11)', async (t) => {
      const data = await q(t, `{ findManyPost(orderBy: { id: asc }) { id _count { comments tags n: comments(where: { body: { startsWith: "G" } }) } } }`)
      for (const p of data['findManyPost'] as { id: number; _count: { comments: number; tags: number; n: number } }[]) {
        const [c] = await sql(`select (select count(*) from comment where post_id = ?) as c, (select count(*) from post_tag where post_id = ?) as t, (select count(*) from comment where post_id = ? and body like 'G%') as n`, [p.id, p.id, p.id])
        t.same(p._count, { comments: Number(c!['c']), tags: Number(c!['t']), n: Number(c!['n']) }, `post ${p.id}`)
      }
      const authors = await q(t, `{ findUniqueAuthor(where: { id: 1 }) { _count { posts } posts { _count { comments } } } }`)
      t.same(authors['findUniqueAuthor'], { _count: { posts: 2 }, posts: [{ _count: { comments: 2 } }, { _count: { comments: 0 } }] })
      t.notOk(type('Comment')!.getFields!()['_count'], 'no _count on a model without list relations')
      const both = `{ findManyPost(take: 3) { id _count { c: comments tags } tags { name } } }`
      t.same(plain(await run(schema, 'jit', both)), plain(await run(schema, 'execute', both)), 'graphql-jit answers the same (aliases inside _count)')
      await assertDirect(t, schema, `{ findManyAuthor(orderBy: { id: asc }) { id _count { __typename posts } posts(orderBy: { id: asc }) { _count { comments tags } } } }`)
    })

    t.test('views: findUnique with a configured key, configured relations (item 13)', async (t) => {
      const one = await q(t, `{ findUniquePostList(where: { id: 3 }) { id title authorName author { name } } }`)
      t.same(one['findUniquePostList'], { id: 3, title: 'Compilers', authorName: 'Brian', author: { name: 'Brian' } })
      const back = await q(t, `{ findUniqueAuthor(where: { id: 1 }) { postLists(orderBy: { id: desc }) { id } authorStats { postCount } } }`)
      const rows = await sql(`select id from post_list where author_id = 1 order by id desc`)
      t.same(ids((back['findUniqueAuthor'] as { postLists: Record<string, unknown>[] }).postLists), ids(rows))
      t.equal(String((back['findUniqueAuthor'] as { authorStats: { postCount: unknown } }).authorStats.postCount), '2')
      const first = await q(t, `{ findFirstPostList(where: { author: { is: { name: { equals: "Chloé" } } } }) { title } }`)
      t.same(first['findFirstPostList'], { title: 'Editing' })
      t.notOk(schema.getMutationType()?.getFields()['createOnePostList'], 'views stay read-only')
      await assertDirect(t, schema, `{ findUniquePostList(where: { id: 1 }) { id author { name } } findManyPostList(orderBy: { id: asc }) { id status } }`)
    })
  })
}

t.test('PostgreSQL arrays and functions (items 5, 14)', async (t) => {
  const env = await setup(t, 'postgres', { functions: true })
  if (!env) return
  const { schema, q, sql } = env

  t.test('arrays are lists of their element type', async (t) => {
    const fields = (schema.getType('Post') as { getFields(): Record<string, { type: object }> }).getFields()
    t.equal(fields['labels']!.type.toString(), '[String!]!')
    t.equal(fields['scores']!.type.toString(), '[Int!]')
    t.equal(fields['ratios']!.type.toString(), '[Decimal!]')
    const data = await q(t, `{ findManyPost(orderBy: { id: asc }) { id labels scores ratios } }`)
    const rows = await sql(`select id, labels, scores, ratios::text[] as ratios from post order by id`)
    t.same(data['findManyPost'], rows.map((r) => ({ id: r['id'], labels: r['labels'], scores: r['scores'], ratios: r['ratios'] })))
    await assertDirect(t, schema, `{ findManyPost(orderBy: { id: asc }) { id labels scores ratios } }`)
  })

  t.test('list filters: has, hasEvery, hasSome, isEmpty, equals', async (t) => {
    const cases: [string, string, unknown[]][] = [
      ['{ labels: { has: "tech" } }', `? = any(labels)`, ['tech']],
      ['{ labels: { hasEvery: ["tech", "code"] } }', `labels @> ?::text[]`, ['{tech,code}']],
      ['{ labels: { hasSome: ["history", "craft"] } }', `labels && ?::text[]`, ['{history,craft}']],
      ['{ labels: { isEmpty: true } }', `cardinality(labels) = 0`, []],
      ['{ labels: { isEmpty: false } }', `cardinality(labels) > 0`, []],
      ['{ scores: { equals: [1, 2, 3] } }', `scores = ?::int[]`, ['{1,2,3}']],
      ['{ scores: { equals: null } }', `scores is null`, []],
      ['{ scores: { has: 5 }, labels: { has: "code" } }', `5 = any(scores) and 'code' = any(labels)`, []],
      ['{ ratios: { has: "2.25" } }', `2.25 = any(ratios)`, []],
    ]
    for (const [where, cond, b] of cases) {
      const data = await q(t, `{ findManyPost(where: ${where}, orderBy: { id: asc }) { id } }`)
      t.same(ids(data['findManyPost'] as Record<string, unknown>[]), ids(await sql(`select id from post where ${cond} order by id`, b)), where)
    }
    // The same plan with variables of other values (the SQL depends on the shape only).
    for (const [e, expect] of [[true, 'cardinality(labels) = 0'], [false, 'cardinality(labels) > 0']] as const) {
      const data = await q(t, `query($e: Boolean, $l: [String!]) { findManyPost(where: { labels: { isEmpty: $e, hasSome: $l } }, orderBy: { id: asc }) { id } }`, { e, l: ['tech', 'history'] })
      t.same(ids(data['findManyPost'] as Record<string, unknown>[]), ids(await sql(`select id from post where ${expect} and labels && '{tech,history}' order by id`)))
    }
  })

  t.test('list updates: set and push', async (t) => {
    const set = await q(t, `mutation { updateOnePost(where: { id: 2 }, data: { labels: { set: ["a", "b"] }, scores: { push: [4] } }) { labels scores } }`, undefined, -1)
    t.same(set['updateOnePost'], { labels: ['a', 'b'], scores: [4] }, 'push onto NULL gives the pushed items (array_cat)')
    const push = await q(t, `mutation($p: [String!]) { updateOnePost(where: { id: 2 }, data: { labels: { push: $p } }) { labels } }`, { p: 'c' }, -1)
    t.same(push['updateOnePost'], { labels: ['a', 'b', 'c'] }, 'one value is a one-item list')
    const [row] = await sql(`select labels, scores from post where id = 2`)
    t.same(row, { labels: ['a', 'b', 'c'], scores: [4] }, 'stored')
    const created = await q(t, `mutation { createOnePost(data: { authorId: 1, title: "Arrays", status: draft, labels: ["x"], scores: [1, 2], ratios: ["0.5"] }) { id labels scores ratios } }`, undefined, -1)
    const c = created['createOnePost'] as { id: number }
    t.same(created['createOnePost'], { id: c.id, labels: ['x'], scores: [1, 2], ratios: ['0.50'] })
    const many = await q(t, `mutation { updateManyPost(where: { labels: { has: "x" } }, data: { scores: { set: [] } }) { count } }`, undefined, -1)
    t.same(many['updateManyPost'], { count: 1 })
    t.same((await sql(`select scores from post where id = ?`, [c.id]))[0], { scores: [] })
  })

  t.test('functions: stable/immutable as Query, volatile as Mutation (item 14)', async (t) => {
    const qf = schema.getQueryType()!.getFields()
    t.ok(qf['searchPosts'] && qf['authorPostCount'] && qf['addNumbers'], 'Query fields')
    t.notOk(qf['createTag'], 'volatile is not a Query field')
    t.ok(schema.getMutationType()!.getFields()['createTag'], 'volatile is a Mutation field')
    t.notOk(qf['internalTriggerFn'], 'trigger functions are left out')
    const data = await q(t, `{ searchPosts(q: "e", where: { status: { equals: published } }, orderBy: { views: desc }, take: 2) { id title author { name } _count { comments } } authorPostCount(author: 2) addNumbers(a: 1) two: addNumbers(a: 1, b: 1) }`, undefined, 4)
    const rows = await sql(`select id from search_posts('e') where status = 'published' order by views desc limit 2`)
    t.same(ids(data['searchPosts'] as Record<string, unknown>[]), ids(rows))
    t.equal(data['authorPostCount'], 2)
    t.equal(data['addNumbers'], 11)
    t.equal(data['two'], 2)
    // BEGIN, the call, COMMIT: a volatile function runs in the request's transaction.
    const created = await q(t, `mutation { createTag(tagName: "new") { id name posts { id } } }`, undefined, 3)
    const [row] = await sql(`select id from tag where name = 'new'`)
    t.same(created['createTag'], { id: Number(row!['id']), name: 'new', posts: [] })
    const dup = await execute({ schema, document: parse(`mutation { createTag(tagName: "new") { id } }`) })
    t.equal((dup.errors?.[0]?.extensions as { code?: string } | undefined)?.code ?? (dup.errors?.[0]?.originalError as { code?: string })?.code, 'TRB_ERR_DB_UNIQUE')
    // A volatile function joins the request's transaction on its database: it sees the rows the
    // fields before it wrote, and a failure rolls them back.
    const codes = (res: { errors?: readonly { path?: readonly (string | number)[]; originalError?: unknown }[] }): Record<string, unknown> =>
      Object.fromEntries((res.errors ?? []).map((e) => [String(e.path?.[0]), (e.originalError as { code?: string } | undefined)?.code]))
    const tx = await execute({ schema, document: parse(`mutation { createOneTag(data: { name: "in-tx" }) { id } createTag(tagName: "in-tx") { id } }`) })
    t.same(plain(tx.data), { createOneTag: null, createTag: null }, 'both fields are null')
    t.same(codes(tx), { createOneTag: 'TRB_ERR_DB_ROLLED_BACK', createTag: 'TRB_ERR_DB_UNIQUE' }, 'the function saw the row written before it in the same transaction')
    t.same(await sql(`select id from tag where name = 'in-tx'`), [], 'nothing written')
    const both = await execute({ schema, document: parse(`mutation { a: createTag(tagName: "tx-a") { name } b: createOneTag(data: { name: "tx-b" }) { name } }`) })
    t.same(plain(both.data), { a: { name: 'tx-a' }, b: { name: 'tx-b' } })
    t.equal((await sql(`select name from tag where name in ('tx-a', 'tx-b')`)).length, 2, 'both committed')
  })
})

t.test('bad input to arrays and functions: coded errors, never TRB_ERR_INTERNAL', async (t) => {
  const env = await setup(t, 'postgres', { functions: ['add_numbers', 'search_posts'] })
  if (!env) return
  const { schema } = env
  t.same(Object.keys(schema.getQueryType()!.getFields()).filter((n) => !/^(find|aggregate|groupBy)/.test(n) && !/Connection$/.test(n)).sort(), ['addNumbers', 'searchPosts'], 'only the listed functions')
  const codeOf = async (query: string, variables?: Record<string, unknown>): Promise<string | undefined> => {
    const res = await execute({ schema, document: parse(query), ...(variables ? { variableValues: variables } : {}) })
    const err = res.errors?.[0]
    return (err?.originalError as { code?: string } | undefined)?.code ?? (err ? 'GRAPHQL' : undefined)
  }
  t.equal(await codeOf(`{ addNumbers(a: 2147483647, b: 1) }`), 'TRB_ERR_DB_VALUE', 'integer overflow inside the function')
  t.equal(await codeOf(`{ findManyPost(where: { labels: { has: "a\\u0000b" } }) { id } }`), 'TRB_ERR_DB_INPUT', 'NUL in a list filter value')
  t.equal(await codeOf(`query($l: [String!]) { findManyPost(where: { labels: { equals: $l } }) { id } }`, { l: ['x\u0000'] }), 'TRB_ERR_DB_INPUT', 'NUL in a list item')
  t.equal(await codeOf(`{ findManyPost(where: { labels: { has: null, hasEvery: null, hasSome: null, equals: null } }) { id } }`), undefined, 'nulls are accepted')
  t.equal(await codeOf(`{ searchPosts(q: null) { id } }`), 'GRAPHQL', 'arguments without a default are non-null')
  t.equal(await codeOf(`query($t: Int) { searchPosts(q: "e", take: $t) { id } }`, { t: 100000 }), 'TRB_ERR_DB_INPUT', 'take is limited on function lists too')
  const { ctx } = testContext('bad')
  const db = await realworldDatabase('postgres', 'dbread_fn')
  t.teardown(db.cleanup)
  await t.rejects(createDatabaseSource({ url: db.url, schema: db.schema!, functions: ['nope', 'internal_trigger_fn'] }, ctx), { code: 'TRB_ERR_CONFIG_INVALID', message: /functions: nope, internal_trigger_fn cannot be exposed/ })
})

t.test('the config schema checks functions, uniqueKeys and relations', async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ functions: 'yes' }, /datasources\[0\]\.functions: must be boolean/],
    [{ functions: [''] }, /datasources\[0\]\.functions\[0\]: must NOT have fewer than 1 characters/],
    [{ uniqueKeys: { PostList: [[]] } }, /datasources\[0\]\.uniqueKeys\.PostList\[0\]: must NOT have fewer than 1 items/],
    [{ uniqueKeys: { PostList: [['a-b']] } }, /datasources\[0\]\.uniqueKeys\.PostList\[0\]\[0\]: must match pattern/],
    [{ relations: [{ from: 'A.b' }] }, /datasources\[0\]\.relations\[0\]\.to: is required/],
    [{ relations: [{ from: 'A', to: 'B.c' }] }, /datasources\[0\]\.relations\[0\]\.from: must match pattern/],
    [{ relations: [{ from: 'A.b', to: 'B.c', kind: 'x' }] }, /datasources\[0\]\.relations\[0\]\.kind: is not a known option/],
  ]
  for (const [extra, message] of cases) {
    t.throws(() => resolveConfig({ datasources: [{ kind: 'database', url: 'sqlite:x', ...(extra as object) }] }, {}), { code: 'TRB_ERR_CONFIG_INVALID', message }, JSON.stringify(extra))
  }
  t.doesNotThrow(() => resolveConfig({ datasources: [{ kind: 'database', url: 'postgres://h/d', functions: ['f'], uniqueKeys: { A: [['b', 'c']] }, relations: [{ from: 'A.b', to: 'B.c' }] }] }, {}))
})

t.test('configured relations and keys are validated', async (t) => {
  for (const [relations, message] of [
    [[{ from: 'Nope.id', to: 'Author.id' }], /relations\[0\]\.from: no model Nope \(models: .*Author/],
    [[{ from: 'PostList.nope', to: 'Author.id' }], /relations\[0\]\.from: no field PostList\.nope \(fields: id, title/],
    [[{ from: 'PostList.authorId', to: 'Author.x' }], /relations\[0\]\.to: no field Author\.x/],
  ] as const) {
    const db = await realworldDatabase('sqlite', 'dbread_bad')
    t.teardown(db.cleanup)
    const { ctx } = testContext('bad')
    await t.rejects(createDatabaseSource({ url: db.url, relations: [...relations] }, ctx), { code: 'TRB_ERR_CONFIG_INVALID', message })
  }
  const db = await realworldDatabase('sqlite', 'dbread_bad2')
  t.teardown(db.cleanup)
  await t.rejects(createDatabaseSource({ url: db.url, uniqueKeys: { PostList: [['idx']] } }, testContext('bad').ctx), { code: 'TRB_ERR_CONFIG_INVALID', message: /uniqueKeys\.PostList: no field PostList\.idx/ })
})
