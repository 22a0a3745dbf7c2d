/**
 * Attack (issue 22, item 5): row filters apply to writes that set a relation by its scalar foreign
 * key, not only to nested `connect`. Over real HTTP with real JWTs, on a SQLite file, PostgreSQL and
 * MariaDB: notes are filtered by owner (`sub`), documents by organisation (`tenant.org`, a claim
 * path) with a compound primary key. A comment pointing at another user's note by `noteId`
 * (createOne, updateOne, updateMany, upsertOne, createMany, with literals or variables) is refused
 * with exactly the answer a note id that does not exist gets, and nothing is written (checked in the
 * tables); the caller's own note is accepted, and `bypassRoles` writes freely.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { mint } from './helpers/auth.js'
import type { Knex } from 'knex'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] }

const secret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(secret)
const sign = (claims: Record<string, unknown>) => mint(key, claims, { expiresIn: '1h' })

const migrations = {
  '001-row-filter-writes': {
    async up(knex: Knex) {
      await knex.schema.createTable('rfw_note', (tb) => {
        tb.integer('id').primary()
        tb.string('owner_id', 50).notNullable()
      })
      await knex.schema.createTable('rfw_author', (tb) => {
        tb.integer('id').primary()
      })
      await knex.schema.createTable('rfw_comment', (tb) => {
        tb.integer('id').primary()
        tb.string('body', 100).notNullable()
        tb.integer('note_id').nullable().references('id').inTable('rfw_note')
        tb.integer('author_id').nullable().references('id').inTable('rfw_author')
      })
      await knex.schema.createTable('rfw_doc', (tb) => {
        tb.string('org', 20).notNullable()
        tb.integer('num').notNullable()
        tb.string('title', 50).notNullable()
        tb.primary(['org', 'num'])
      })
      await knex.schema.createTable('rfw_link', (tb) => {
        tb.integer('id').primary()
        tb.string('doc_org', 20).nullable()
        tb.integer('doc_num').nullable()
        tb.foreign(['doc_org', 'doc_num']).references(['org', 'num']).inTable('rfw_doc')
      })
      await knex('rfw_note').insert([
        { id: 1, owner_id: 'alice' },
        { id: 2, owner_id: 'alice' },
        { id: 4, owner_id: 'bob' },
      ])
      await knex('rfw_author').insert([{ id: 1 }])
      await knex('rfw_comment').insert([{ id: 1, body: 'first', note_id: 1 }])
      await knex('rfw_doc').insert([
        { org: 'acme', num: 1, title: 'acme one' },
        { org: 'globex', num: 1, title: 'globex one' },
      ])
      await knex('rfw_link').insert([{ id: 1, doc_org: 'acme', doc_num: 1 }])
    },
  },
}

async function start(t: Test, url: string) {
  const dir = mkdtempSync(join(tmpdir(), 'trb-rfw-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources: [database({ namespace: 'rw', url, migrations })],
    generatedDir: join(dir, 'generated'),
    auth: { jwt: { secret }, graphql: 'public' },
    permissions: {
      rw_RfwNote: { filter: { ownerId: { equals: { claim: 'sub' } } }, bypassRoles: ['admin'] },
      rw_RfwDoc: { filter: { org: { claim: 'tenant.org' } } },
    },
  })
  const { url: base } = await serveGateway(t, config, { cwd: dir })
  return async (query: string, token: string, variables?: Record<string, unknown>) => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    })
    return { status: res.status, body: (await res.json()) as Body }
  }
}

/** What a refused write tells the client: status, codes and messages (the field name aside). */
const answer = (r: { status: number; body: Body }) => ({ status: r.status, data: r.body.data ? Object.values(r.body.data) : null, errors: (r.body.errors ?? []).map((e) => [e.extensions?.code, e.message]) })

for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  t.test(`scalar foreign keys to filtered rows on ${dialect}`, async (t) => {
    const db = await freshDatabase(dialect, 'row_filter_writes')
    if (db.skipReason) {
      t.comment(db.skipReason)
      t.pass('skipped: ' + db.skipReason)
      return
    }
    t.teardown(() => db.cleanup())
    const gql = await start(t, db.url)
    const { knex } = createKnex(db.url, { cwd: process.cwd() })
    t.teardown(() => knex.destroy())
    const comments = async () => (await knex('rfw_comment').orderBy('id').select('id', 'note_id')).map((r: { id: number; note_id: number | null }) => [Number(r.id), r.note_id === null ? null : Number(r.note_id)])
    const links = async () => (await knex('rfw_link').orderBy('id').select('id', 'doc_org', 'doc_num')).map((r: { id: number; doc_org: string | null; doc_num: number | null }) => [Number(r.id), r.doc_org, r.doc_num === null ? null : Number(r.doc_num)])

    const alice = await sign({ sub: 'alice', tenant: { org: 'acme' } })
    const admin = await sign({ sub: 'root', roles: ['admin'], tenant: { org: 'acme' } })
    const FK = 'TRB_ERR_DB_FOREIGN_KEY'

    /** Sends `query` with the hidden note 4 and the absent note 99: both refused alike, nothing written. */
    const refusedAlike = async (t: Test, what: string, query: (note: number) => string, vars?: (note: number) => Record<string, unknown>) => {
      const before = await comments()
      const hidden = await gql(query(4), alice, vars?.(4))
      const absent = await gql(query(99), alice, vars?.(99))
      const fk = hidden.body.errors?.find((e) => e.extensions?.code === FK)
      t.ok(fk, `${what}: a hidden note is refused with ${FK}`)
      t.same(answer(hidden), answer(absent), `${what}: the same answer as for a note that does not exist`)
      t.match(fk?.message ?? '', /RfwComment\.\w+ \(`noteId`\)/, 'names the relation, never the row')
      t.same(await comments(), before, `${what}: nothing written`)
    }

    await t.test('createOne', async (t) => {
      await refusedAlike(t, 'literal', (n) => `mutation { rw_createOneRfwComment(data: { id: 10, body: "x", noteId: ${n} }) { id } }`)
      await refusedAlike(t, 'variable', () => 'mutation($n: Int) { rw_createOneRfwComment(data: { id: 10, body: "x", noteId: $n }) { id } }', (n) => ({ n }))
      const own = await gql('mutation { rw_createOneRfwComment(data: { id: 10, body: "mine", noteId: 2 }) { id noteId } }', alice)
      t.same(own.body, { data: { rw_createOneRfwComment: { id: 10, noteId: 2 } } }, 'her own note')
      const none = await gql('mutation { rw_createOneRfwComment(data: { id: 11, body: "loose", noteId: null }) { id noteId } }', alice)
      t.same(none.body, { data: { rw_createOneRfwComment: { id: 11, noteId: null } } }, 'a null key references nothing')
      const asAdmin = await gql('mutation { rw_createOneRfwComment(data: { id: 12, body: "root", noteId: 4 }) { id noteId } }', admin)
      t.same(asAdmin.body, { data: { rw_createOneRfwComment: { id: 12, noteId: 4 } } }, 'bypassRoles writes freely')
    })

    await t.test('updateOne, updateMany, upsertOne', async (t) => {
      await refusedAlike(t, 'updateOne', (n) => `mutation { rw_updateOneRfwComment(where: { id: 1 }, data: { noteId: { set: ${n} } }) { id } }`)
      await refusedAlike(t, 'updateMany', (n) => `mutation { rw_updateManyRfwComment(where: { id: { in: [1, 10] } }, data: { noteId: { set: ${n} } }) { count } }`)
      await refusedAlike(t, 'upsertOne (update)', (n) => `mutation { rw_upsertOneRfwComment(where: { id: 1 }, create: { id: 1, body: "c" }, update: { noteId: { set: ${n} } }) { id } }`)
      await refusedAlike(t, 'upsertOne (create)', (n) => `mutation { rw_upsertOneRfwComment(where: { id: 20 }, create: { id: 20, body: "c", noteId: ${n} }, update: { body: { set: "u" } }) { id } }`)
      const arith = await gql('mutation { rw_updateOneRfwComment(where: { id: 1 }, data: { noteId: { increment: 3 } }) { id } }', alice)
      t.same(answer(arith).errors.map(([c]) => c), ['TRB_ERR_DB_INPUT'], 'arithmetic on the key is refused, whatever it reaches')
      const ownMove = await gql('mutation { rw_updateManyRfwComment(where: { id: { in: [1, 10] } }, data: { noteId: { set: 1 } }) { count } }', alice)
      t.same(ownMove.body, { data: { rw_updateManyRfwComment: { count: 2 } } }, 'moving comments to her own note')
      const adminMove = await gql('mutation { rw_updateOneRfwComment(where: { id: 11 }, data: { noteId: { increment: 4 } }) { id noteId } }', admin)
      t.same(adminMove.body, { data: { rw_updateOneRfwComment: { id: 11, noteId: null } } }, 'bypassRoles: arithmetic allowed')
    })

    await t.test('createMany and a request of several fields: all or nothing', async (t) => {
      await refusedAlike(t, 'createMany', (n) => `mutation { rw_createManyRfwComment(data: [{ id: 30, body: "a", noteId: 1 }, { id: 31, body: "b", noteId: ${n} }]) { count } }`)
      await refusedAlike(t, 'two fields', (n) => `mutation { a: rw_createOneRfwComment(data: { id: 32, body: "a", noteId: 1 }) { id } b: rw_updateOneRfwComment(where: { id: 1 }, data: { noteId: { set: ${n} } }) { id } }`)
      const many = await gql('mutation { rw_createManyRfwComment(data: [{ id: 30, body: "a", noteId: 1 }, { id: 31, body: "b", noteId: 2 }]) { count } }', alice)
      t.same(many.body, { data: { rw_createManyRfwComment: { count: 2 } } })
      // More distinct keys than one lookup takes (KEYS_PER_LOOKUP, 500): the hidden one in the second batch.
      await knex.batchInsert('rfw_note', Array.from({ length: 600 }, (_, i) => ({ id: 1000 + i, owner_id: 'alice' })), 100)
      const rows = (last: number) => Array.from({ length: 601 }, (_, i) => ({ id: 2000 + i, body: 'bulk', noteId: i < 600 ? 1000 + i : last }))
      const bulk = 'mutation($d: [rw_RfwCommentCreateManyInput!]!) { rw_createManyRfwComment(data: $d) { count } }'
      const before = await comments()
      const bulkHidden = await gql(bulk, alice, { d: rows(4) })
      t.same(answer(bulkHidden).errors.map(([c]) => c), [FK], '601 keys, one hidden')
      t.same(answer(bulkHidden), answer(await gql(bulk, alice, { d: rows(99) })), 'the same answer as an absent one')
      t.same(await comments(), before, 'nothing written')
      t.same((await gql(bulk, alice, { d: rows(1) })).body, { data: { rw_createManyRfwComment: { count: 601 } } }, '601 of her own notes')
    })

    await t.test('nested connect is refused alike for hidden and absent notes', async (t) => {
      const before = await comments()
      const q = (n: number) => `mutation { rw_createOneRfwComment(data: { id: 40, body: "x", note: { connect: { id: ${n} } } }) { id } }`
      const hidden = await gql(q(4), alice)
      const absent = await gql(q(99), alice)
      t.same(answer(hidden).errors.map(([c]) => c), ['TRB_ERR_AUTH_FORBIDDEN'])
      t.same(answer(hidden), answer(absent))
      // A nested row whose scalar key points at a filtered type: refused like a nested connect.
      const under = (n: number) => `mutation { rw_updateOneRfwAuthor(where: { id: 1 }, data: { rfwComments: { create: [{ id: 41, body: "x", noteId: ${n} }] } }) { id } }`
      const underHidden = await gql(under(4), alice)
      t.same(answer(underHidden).errors.map(([c]) => c), ['TRB_ERR_AUTH_FORBIDDEN'], 'a nested create carrying noteId')
      t.same(answer(underHidden), answer(await gql(under(99), alice)))
      t.same(await comments(), before)
    })

    await t.test('a compound key to a type filtered by a claim path', async (t) => {
      const before = await links()
      const hidden = await gql('mutation { rw_createOneRfwLink(data: { id: 2, docOrg: "globex", docNum: 1 }) { id } }', alice)
      const absent = await gql('mutation { rw_createOneRfwLink(data: { id: 2, docOrg: "nope", docNum: 1 }) { id } }', alice)
      t.same(answer(hidden).errors.map(([c]) => c), [FK])
      t.same(answer(hidden), answer(absent))
      // Only one field of the key changes: the other comes from the row (acme → globex, 1).
      const half = await gql('mutation { rw_updateOneRfwLink(where: { id: 1 }, data: { docOrg: { set: "globex" } }) { id } }', alice)
      const halfAbsent = await gql('mutation { rw_updateOneRfwLink(where: { id: 1 }, data: { docOrg: { set: "nope" } }) { id } }', alice)
      t.same(answer(half).errors.map(([c]) => c), [FK], 'half a key, completed by the row, to a hidden document')
      t.same(answer(half), answer(halfAbsent))
      const halfMany = await gql('mutation { rw_updateManyRfwLink(data: { docOrg: { set: "globex" } }) { count } }', alice)
      t.same(answer(halfMany).errors.map(([c]) => c), [FK], 'updateMany too')
      t.same(await links(), before, 'nothing written')
      const partial = await gql('mutation { rw_createOneRfwLink(data: { id: 3, docOrg: "globex" }) { id } }', alice)
      t.same(answer(partial).errors.map(([c]) => c), ['TRB_ERR_DB_INPUT'], 'a create with half of the key')
      const own = await gql('mutation { rw_createOneRfwLink(data: { id: 2, docOrg: "acme", docNum: 1 }) { id docOrg docNum } }', alice)
      t.same(own.body, { data: { rw_createOneRfwLink: { id: 2, docOrg: 'acme', docNum: 1 } } })
      const ownHalf = await gql('mutation { rw_updateOneRfwLink(where: { id: 2 }, data: { docNum: { set: 1 } }) { id } }', alice)
      t.same(ownHalf.body, { data: { rw_updateOneRfwLink: { id: 2 } } })
    })
  })
}
