/**
 * Attack: a field or type protected by `permissions` is reached by every other path than its
 * selection (issue 22, items 3 and 4). A deployment shaped like `examples/auth` — a real SQLite
 * file, HS256 tokens signed by a secret made here — with `auth_Note.secret` (a unique string) and
 * `auth_Note.score` (an Int) limited to `admin`, a row filter by owner on notes, comments that
 * reference notes (`auth_Comment.moderation` also limited to `admin`), and folders that hold notes.
 *
 * For a caller without the role each path is refused with `TRB_ERR_AUTH_FORBIDDEN` at the field's
 * path (403 on a stored operation), and no secret appears anywhere in the body; an admin gets the
 * values. Paths: aggregates (`_min`, `_max`, `_count`, `_avg`, `_sum`), groupBy `by`/`having`/
 * selection, `where` (at depth, in AND/OR/NOT, through to-one and to-many relation filters), `orderBy`
 * (a relation's field, a relation's `_count`), `cursor`, `distinct`, `findUnique` by the field,
 * nested relation lists, variables, mutations (nothing written), stored operations (which would
 * take a direct SQL plan), and a type rule (`auth_Note: { roles }`) reached from other types.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { mint } from './helpers/auth.js'
import type { Knex } from 'knex'
import { database, resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { serveGateway } from './helpers/serve.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[] }

const jwtSecret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(jwtSecret)
const sign = (claims: Record<string, unknown>) => mint(key, claims, { expiresIn: '1h' })

/** The protected values: none of them may appear in a refused answer. */
const SECRETS = ['alpha-7Q', 'bravo-3K', 'charlie-9Z']
const SCORES = [1017, 2029, 3041]

const migrations = {
  '001-permission-paths': {
    async up(knex: Knex) {
      await knex.schema.createTable('folder', (tb) => {
        tb.integer('id').primary()
        tb.string('name', 50).notNullable()
      })
      await knex.schema.createTable('note', (tb) => {
        tb.integer('id').primary()
        tb.string('owner_id', 50).notNullable()
        tb.string('title', 100).notNullable()
        tb.string('secret', 100).notNullable().unique()
        tb.integer('score').notNullable()
        tb.integer('folder_id').notNullable().references('id').inTable('folder')
      })
      await knex.schema.createTable('comment', (tb) => {
        tb.integer('id').primary()
        tb.string('body', 100).notNullable()
        tb.string('moderation', 50).notNullable()
        tb.integer('note_id').notNullable().references('id').inTable('note')
      })
      await knex('folder').insert([{ id: 1, name: 'work' }, { id: 2, name: 'empty' }])
      await knex('note').insert([
        { id: 1, owner_id: 'alice', title: 'a1', secret: SECRETS[0], score: SCORES[0], folder_id: 1 },
        { id: 2, owner_id: 'alice', title: 'a2', secret: SECRETS[1], score: SCORES[1], folder_id: 1 },
        { id: 3, owner_id: 'bob', title: 'b1', secret: SECRETS[2], score: SCORES[2], folder_id: 1 },
      ])
      await knex('comment').insert([
        { id: 1, body: 'c1', moderation: 'spam', note_id: 1 },
        { id: 2, body: 'c2', moderation: 'ok', note_id: 2 },
        { id: 3, body: 'c3', moderation: 'ok', note_id: 3 },
      ])
    },
  },
}

/** The example's rules: field roles, a row filter by owner (admins see every row). */
const fieldRules: TributaryConfigInput['permissions'] = {
  auth_Note: { filter: { ownerId: { equals: { claim: 'sub' } } }, bypassRoles: ['admin'] },
  'auth_Note.secret': { roles: ['admin'] },
  'auth_Note.score': { roles: ['admin'] },
  'auth_Comment.moderation': { roles: ['admin'] },
}

const STORED: Record<string, string> = {
  // Comments have no row filter: without the fix these run as direct SQL plans, which skip resolvers.
  CommentsByModeration: 'query CommentsByModeration($m: String!) { auth_findManyComment(where: { moderation: { equals: $m } }, orderBy: [{ id: asc }]) { id } }\n',
  CommentsWhere: 'query CommentsWhere($where: auth_CommentWhereInput) { auth_findManyComment(where: $where, orderBy: [{ id: asc }]) { id } }\n',
  CommentsOrdered: 'query CommentsOrdered { auth_findManyComment(orderBy: [{ moderation: asc }, { id: asc }]) { id } }\n',
  CommentsByNoteSecret: 'query CommentsByNoteSecret($p: String!) { auth_findManyComment(where: { note: { is: { secret: { startsWith: $p } } } }) { id } }\n',
  MaxSecret: 'query MaxSecret { auth_aggregateNote { _max { secret } } }\n',
  CommentsPlain: 'query CommentsPlain { auth_findManyComment(orderBy: [{ id: asc }]) { id body } }\n',
  GroupNotes: 'query GroupNotes($by: [auth_NoteScalarFieldEnum!]!) { auth_groupByNote(by: $by) { _count { _all } } }\n',
  DistinctComments: 'query DistinctComments($d: [auth_CommentScalarFieldEnum!]) { auth_findManyComment(distinct: $d, orderBy: [{ id: asc }]) { id } }\n',
}

async function deploy(t: Test, url: string, permissions: TributaryConfigInput['permissions']) {
  const dir = mkdtempSync(join(tmpdir(), 'trb-permission-paths-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  for (const [name, text] of Object.entries(STORED)) writeFileSync(join(dir, 'operations', `${name}.graphql`), text)
  const config = resolveConfig({
    datasources: [database({ namespace: 'auth', url, migrations })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    auth: { jwt: { secret: jwtSecret }, graphql: 'public' },
    permissions,
  })
  const { url: base, gateway } = await serveGateway(t, config, { cwd: dir })
  const gql = async (query: string, token: string, variables?: Record<string, unknown>) => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    })
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) as Body }
  }
  const op = async (name: string, token: string, query = '') => {
    const res = await fetch(`${base}/operations/${name}${query}`, { headers: { authorization: `Bearer ${token}` } })
    const text = await res.text()
    return { status: res.status, text, body: JSON.parse(text) as Body }
  }
  /** True when the stored operation runs as a direct SQL plan (which skips resolvers). */
  const direct = (name: string) => gateway.operations.get(name)!.direct !== null
  return { gql, op, direct }
}

const forbidden = (b: Body) => (b.errors ?? []).map((e) => [e.path, e.extensions?.code])

/** The answer refuses `root` (null, TRB_ERR_AUTH_FORBIDDEN at `path`) and holds no protected value. */
function refused(t: Test, r: { text: string; body: Body }, path: (string | number)[], what: string) {
  const errors = forbidden(r.body)
  t.ok(errors.length > 0 && errors.every(([, code]) => code === 'TRB_ERR_AUTH_FORBIDDEN'), `${what}: only TRB_ERR_AUTH_FORBIDDEN`)
  t.ok(errors.some(([p]) => JSON.stringify(p) === JSON.stringify(path)), `${what}: refused at ${path.join('.')}`)
  for (const s of SECRETS) t.notOk(r.text.includes(s), `${what}: ${s} is not in the answer`)
  for (const n of SCORES) t.notOk(r.text.includes(String(n)), `${what}: ${n} is not in the answer`)
  if (path.length === 1) t.equal(r.body.data?.[path[0] as string] ?? null, null, `${what}: no data for the field`)
}

t.test('a field limited to a role is not reached by any other path', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trb-permission-paths-db-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const dbUrl = `sqlite:${join(dir, 'notes.sqlite')}`
  const { gql, op, direct } = await deploy(t, dbUrl, fieldRules)
  const { knex } = createKnex(dbUrl, { cwd: dir })
  t.teardown(() => knex.destroy())
  const alice = await sign({ sub: 'alice', roles: ['user'] })
  const admin = await sign({ sub: 'root', roles: ['admin'] })

  /** One path: refused for alice at `path`, and the admin's answer (no error) checked by `ok`. */
  const path = async (name: string, query: string, at: (string | number)[], ok: (t: Test, data: Record<string, unknown>) => void, variables?: Record<string, unknown>) => {
    await t.test(name, async (t) => {
      refused(t, await gql(query, alice, variables), at, 'alice')
      const a = await gql(query, admin, variables)
      t.same(a.body.errors, undefined, 'admin: no error')
      ok(t, a.body.data ?? {})
    })
  }
  const ids = (v: unknown) => (v as { id: number }[]).map((r) => Number(r.id))

  await path('aggregate _min and _max', '{ auth_aggregateNote { _min { secret } _max { secret } } }', ['auth_aggregateNote', '_min', 'secret'], (t, d) =>
    t.same(d, { auth_aggregateNote: { _min: { secret: SECRETS[0] }, _max: { secret: SECRETS[2] } } }))
  await path('aggregate _count of the field', '{ auth_aggregateNote { _count { secret } } }', ['auth_aggregateNote', '_count', 'secret'], (t, d) =>
    t.same(d, { auth_aggregateNote: { _count: { secret: 3 } } }))
  await path('aggregate _avg and _sum of a numeric field', '{ auth_aggregateNote { _sum { score } } }', ['auth_aggregateNote', '_sum', 'score'], (t, d) =>
    t.same(d, { auth_aggregateNote: { _sum: { score: SCORES[0]! + SCORES[1]! + SCORES[2]! } } }))
  await path('aggregate _avg', '{ auth_aggregateNote { _avg { score } } }', ['auth_aggregateNote', '_avg', 'score'], (t, d) =>
    t.same(d, { auth_aggregateNote: { _avg: { score: (SCORES[0]! + SCORES[1]! + SCORES[2]!) / 3 } } }))
  await path('groupBy by the field', '{ auth_groupByNote(by: [secret]) { _count { _all } } }', ['auth_groupByNote'], (t, d) =>
    t.equal((d.auth_groupByNote as unknown[]).length, 3))
  await path('groupBy selecting the field', '{ auth_groupByNote(by: [ownerId], orderBy: [{ ownerId: asc }]) { ownerId _min { secret } } }', ['auth_groupByNote', 0, '_min', 'secret'], (t, d) =>
    t.same(d.auth_groupByNote, [{ ownerId: 'alice', _min: { secret: SECRETS[0] } }, { ownerId: 'bob', _min: { secret: SECRETS[2] } }]))
  await path('groupBy having on the field', '{ auth_groupByNote(by: [ownerId], having: { secret: { startsWith: "a" } }) { ownerId } }', ['auth_groupByNote'], (t, d) =>
    t.same(d.auth_groupByNote, [{ ownerId: 'alice' }]))
  await path('groupBy orderBy an aggregate of the field', '{ auth_groupByNote(by: [ownerId], orderBy: [{ _max: { secret: desc } }]) { ownerId } }', ['auth_groupByNote'], (t, d) =>
    t.same(d.auth_groupByNote, [{ ownerId: 'bob' }, { ownerId: 'alice' }]))
  await path('where startsWith (the oracle)', '{ auth_findManyNote(where: { secret: { startsWith: "a" } }) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1]))
  await path('where deep in AND/OR/NOT', '{ auth_findManyNote(where: { AND: [{ OR: [{ NOT: [{ secret: { gte: "b" } }] }] }] }) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1]))
  await path('where in an aggregate', '{ auth_aggregateNote(where: { score: { gt: 2000 } }) { _count { _all } } }', ['auth_aggregateNote'], (t, d) =>
    t.same(d, { auth_aggregateNote: { _count: { _all: 2 } } }))
  await path('orderBy the field', '{ auth_findManyNote(orderBy: [{ secret: desc }]) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [3, 2, 1]))
  await path('cursor on the (unique) field', `{ auth_findManyNote(cursor: { secret: "${SECRETS[1]}" }, orderBy: [{ id: asc }]) { id } }`, ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [2, 3]))
  await path('findUnique by the field', '{ auth_findUniqueNote(where: { secret: "bravo-3K" }) { id } }', ['auth_findUniqueNote'], (t, d) =>
    t.same(d, { auth_findUniqueNote: { id: 2 } }))
  await path('distinct on the field', '{ auth_findManyNote(distinct: [secret], orderBy: [{ id: asc }]) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1, 2, 3]))
  await path('a to-one relation filter (Comment → Note)', '{ auth_findManyComment(where: { note: { is: { secret: { startsWith: "b" } } } }) { id } }', ['auth_findManyComment'], (t, d) =>
    t.same(ids(d.auth_findManyComment), [2]))
  for (const q of ['some', 'every', 'none'] as const) {
    await path(`a to-many relation filter (${q})`, `{ auth_findManyFolder(where: { notes: { ${q}: { secret: { startsWith: "c" } } } }, orderBy: [{ id: asc }]) { id } }`, ['auth_findManyFolder'], (t, d) =>
      t.same(ids(d.auth_findManyFolder), q === 'some' ? [1] : q === 'every' ? [2] : [2]))
  }
  await path('orderBy a related field', '{ auth_findManyComment(orderBy: [{ note: { secret: desc } }]) { id } }', ['auth_findManyComment'], (t, d) =>
    t.same(ids(d.auth_findManyComment), [3, 2, 1]))
  await path('a nested relation list: where', '{ auth_findManyFolder(where: { id: { equals: 1 } }) { id notes(where: { secret: { startsWith: "a" } }) { id } } }', ['auth_findManyFolder', 0, 'notes'], (t, d) =>
    t.same(d, { auth_findManyFolder: [{ id: 1, notes: [{ id: 1 }] }] }))
  await path('a nested relation list: orderBy', '{ auth_findManyFolder(where: { id: { equals: 1 } }) { id notes(orderBy: [{ score: desc }]) { id } } }', ['auth_findManyFolder', 0, 'notes'], (t, d) =>
    t.same(d, { auth_findManyFolder: [{ id: 1, notes: [{ id: 3 }, { id: 2 }, { id: 1 }] }] }))
  await path('a nested _count with a where', '{ auth_findManyFolder(where: { id: { equals: 1 } }) { _count { notes(where: { secret: { startsWith: "a" } }) } } }', ['auth_findManyFolder', 0, '_count', 'notes'], (t, d) =>
    t.same(d, { auth_findManyFolder: [{ _count: { notes: 1 } }] }))
  await path('a where in a variable', 'query($w: auth_NoteWhereInput) { auth_findManyNote(where: $w) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1]), { w: { OR: [{ title: { equals: 'nope' } }, { secret: { startsWith: 'a' } }] } })
  await path('an orderBy in a variable', 'query($o: [auth_NoteOrderByWithRelationInput!]) { auth_findManyNote(orderBy: $o) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [3, 2, 1]), { o: { secret: 'desc' } })
  await path('groupBy by in a variable', 'query($by: [auth_NoteScalarFieldEnum!]!) { auth_groupByNote(by: $by) { _count { _all } } }', ['auth_groupByNote'], (t, d) =>
    t.equal((d.auth_groupByNote as unknown[]).length, 3), { by: ['secret'] })
  await path('the field last in a large where variable', 'query($w: auth_NoteWhereInput) { auth_findManyNote(where: $w) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1]), { w: { OR: [...Array.from({ length: 5000 }, (_, i) => ({ title: { equals: `t${i}` } })), { AND: [{ NOT: [{ secret: { gt: 'b' } }] }] }] } })
  await path('a variable inside a literal', 'query($inner: auth_NoteWhereInput!) { auth_findManyNote(where: { AND: [{ id: { gt: 0 } }, $inner] }) { id } }', ['auth_findManyNote'], (t, d) =>
    t.same(ids(d.auth_findManyNote), [1]), { inner: { secret: { startsWith: 'a' } } })

  // Comments have no row filter: on /graphql too, these would otherwise run as direct SQL plans.
  await path('/graphql, a direct SQL plan otherwise: where', '{ auth_findManyComment(where: { moderation: { equals: "spam" } }) { id } }', ['auth_findManyComment'], (t, d) =>
    t.same(ids(d.auth_findManyComment), [1]))
  await path('/graphql, a direct SQL plan otherwise: a where variable', 'query($w: auth_CommentWhereInput) { auth_findManyComment(where: $w) { id } }', ['auth_findManyComment'], (t, d) =>
    t.same(ids(d.auth_findManyComment), [1]), { w: { moderation: { equals: 'spam' } } })

  await t.test('mutations: a where or a connect by the field is refused, nothing is written', async (t) => {
    const update = 'mutation { auth_updateManyNote(where: { secret: { startsWith: "a" } }, data: { title: { set: "pwned" } }) { count } }'
    refused(t, await gql(update, alice), ['auth_updateManyNote'], 'updateMany')
    t.same(await knex('note').where('title', 'pwned').select('id'), [], 'no row written')
    const connect = `mutation { auth_createOneComment(data: { id: 9, body: "x", moderation: "ok", note: { connect: { secret: "${SECRETS[0]}" } } }) { id } }`
    refused(t, await gql(connect, alice), ['auth_createOneComment'], 'connect by the field')
    t.same(await knex('comment').where('id', 9).select('id'), [], 'no comment created')
    const a = await gql('mutation { auth_updateManyNote(where: { secret: { startsWith: "zz" } }, data: { title: { set: "none" } }) { count } }', admin)
    t.same(a.body, { data: { auth_updateManyNote: { count: 0 } } }, 'admin: runs')
  })

  await t.test('stored operations: refused although they would run as direct SQL plans', async (t) => {
    t.same(['CommentsByModeration', 'CommentsWhere', 'CommentsOrdered', 'DistinctComments'].filter(direct), [], 'operations that may reach a protected field run through resolvers')
    t.ok(direct('CommentsPlain'), 'the others keep their direct SQL plan')
    const byMod = await op('CommentsByModeration', alice, '?m=spam')
    t.equal(byMod.status, 403)
    t.same(forbidden(byMod.body), [[['auth_findManyComment'], 'TRB_ERR_AUTH_FORBIDDEN']])
    t.same((await op('CommentsByModeration', admin, '?m=spam')).body, { auth_findManyComment: [{ id: 1 }] })
    const where = await op('CommentsWhere', alice, `?variables=${encodeURIComponent(JSON.stringify({ where: { moderation: { equals: "spam" } } }))}`)
    t.equal(where.status, 403, 'a where in a variable')
    const plainWhere = await op('CommentsWhere', alice, `?variables=${encodeURIComponent(JSON.stringify({ where: { body: { equals: "c1" } } }))}`)
    t.same(plainWhere.body, { auth_findManyComment: [{ id: 1 }] }, 'the same operation without the field works')
    t.equal((await op('CommentsOrdered', alice)).status, 403, 'orderBy the field')
    t.same((await op('CommentsOrdered', admin)).body, { auth_findManyComment: [{ id: 2 }, { id: 3 }, { id: 1 }] })
    const bySecret = await op('CommentsByNoteSecret', alice, '?p=a')
    t.equal(bySecret.status, 403, 'a relation filter to the field')
    t.same((await op('CommentsByNoteSecret', admin, '?p=a')).body, { auth_findManyComment: [{ id: 1 }] })
    const max = await op('MaxSecret', alice)
    t.equal(max.status, 403, 'an aggregate of the field')
    t.notOk(max.text.includes(SECRETS[2]!))
    t.same((await op('MaxSecret', admin)).body, { auth_aggregateNote: { _max: { secret: SECRETS[2] } } })
    t.equal((await op('GroupNotes', alice, '?by=secret')).status, 403, 'groupBy by an enum variable')
    t.same((await op('GroupNotes', alice, '?by=ownerId')).body, { auth_groupByNote: [{ _count: { _all: 2 } }] }, 'by another field: works')
    t.equal((await op('GroupNotes', admin, '?by=secret')).status, 200)
    t.equal((await op('DistinctComments', alice, '?d=moderation')).status, 403, 'distinct by an enum variable (a direct plan otherwise)')
    t.same((await op('DistinctComments', admin, '?d=moderation')).body, { auth_findManyComment: [{ id: 1 }, { id: 2 }] })
    t.same((await op('DistinctComments', alice, '?d=body')).body, { auth_findManyComment: [{ id: 1 }, { id: 2 }, { id: 3 }] })
    t.same((await op('CommentsPlain', alice)).body, { auth_findManyComment: [{ id: 1, body: 'c1' }, { id: 2, body: 'c2' }, { id: 3, body: 'c3' }] }, 'other operations are unaffected')
  })

  await t.test('callers without the role keep every other path', async (t) => {
    const r = await gql('{ auth_aggregateNote { _count { _all } _max { id title } } auth_groupByNote(by: [ownerId]) { ownerId _count { _all } } auth_findManyNote(where: { title: { startsWith: "a" } }, orderBy: [{ title: desc }], distinct: [title]) { id title } }', alice)
    t.same(r.body, {
      data: {
        auth_aggregateNote: { _count: { _all: 2 }, _max: { id: 2, title: 'a2' } },
        auth_groupByNote: [{ ownerId: 'alice', _count: { _all: 2 } }],
        auth_findManyNote: [{ id: 2, title: 'a2' }, { id: 1, title: 'a1' }],
      },
    })
  })
})

t.test('a type limited to a role is not reached through other types', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trb-permission-paths-db-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { gql } = await deploy(t, `sqlite:${join(dir, 'notes.sqlite')}`, { auth_Note: { roles: ['admin'] } })
  const user = await sign({ sub: 'alice', roles: ['user'] })
  const admin = await sign({ sub: 'root', roles: ['admin'] })
  const ids = (v: unknown) => (v as { id: number }[]).map((r) => Number(r.id))
  const cases: [string, string, (string | number)[], (t: Test, d: Record<string, unknown>) => void][] = [
    ['a to-one relation filter', '{ auth_findManyComment(where: { note: { is: { title: { equals: "a1" } } } }) { id } }', ['auth_findManyComment'], (t, d) => t.same(ids(d.auth_findManyComment), [1])],
    ['orderBy a related field', '{ auth_findManyComment(orderBy: [{ note: { title: desc } }]) { id } }', ['auth_findManyComment'], (t, d) => t.same(ids(d.auth_findManyComment), [3, 2, 1])],
    ['a to-many relation filter', '{ auth_findManyFolder(where: { notes: { some: { score: { gt: 3000 } } } }) { id } }', ['auth_findManyFolder'], (t, d) => t.same(ids(d.auth_findManyFolder), [1])],
    ['orderBy a relation _count', '{ auth_findManyFolder(orderBy: [{ notes: { _count: desc } }]) { id } }', ['auth_findManyFolder'], (t, d) => t.same(ids(d.auth_findManyFolder), [1, 2])],
    ['a relation _count', '{ auth_findManyFolder(where: { id: { equals: 1 } }) { _count { notes } } }', ['auth_findManyFolder', 0, '_count', 'notes'], (t, d) => t.same(d, { auth_findManyFolder: [{ _count: { notes: 3 } }] })],
    ['aggregate', '{ auth_aggregateNote { _count { _all } _max { score } } }', ['auth_aggregateNote'], (t, d) => t.same(d, { auth_aggregateNote: { _count: { _all: 3 }, _max: { score: SCORES[2] } } })],
    ['groupBy', '{ auth_groupByNote(by: [ownerId], orderBy: [{ ownerId: asc }]) { ownerId } }', ['auth_groupByNote'], (t, d) => t.same(d, { auth_groupByNote: [{ ownerId: 'alice' }, { ownerId: 'bob' }] })],
  ]
  for (const [name, query, at, ok] of cases) {
    await t.test(name, async (t) => {
      refused(t, await gql(query, user), at, 'user')
      const a = await gql(query, admin)
      t.same(a.body.errors, undefined, 'admin: no error')
      ok(t, a.body.data ?? {})
    })
  }
  const plain = await gql('{ auth_findManyComment(orderBy: [{ id: asc }]) { id body } }', user)
  t.same(plain.body, { data: { auth_findManyComment: [{ id: 1, body: 'c1' }, { id: 2, body: 'c2' }, { id: 3, body: 'c3' }] } }, 'the other types stay readable')
})
