/**
 * Row filters derived from claims (config `permissions: { Type: { filter } }`, issue 12), over real
 * HTTP on SQLite, PostgreSQL and MariaDB, with tokens signed by a key this test generates.
 *
 * Notes are owned by a user (`ownerId`, filtered by the `sub` claim); accounts belong to an
 * organisation (`org`, filtered by the nested claim `tenant.org`). Every answer is compared with
 * the rows a direct SQL query returns for the same owner. The filter is ANDed into the SAME single
 * statement as the client's where (counted from the debug `sql` log lines), for root reads, nested
 * lists, to-one relations, `_count`, relation filters, aggregates and every mutation; a client where
 * or OR can only narrow; forged or unsigned tokens are 401; a missing claim or a claim of the wrong
 * type is 403, never an internal error; `bypassRoles` reads everything; a written row must pass the
 * filter (create/update "check") or the transaction is rolled back. Stored operations (which would
 * otherwise take a direct SQL plan), the shared response cache of `# @cache` operations and live
 * queries serve each caller its own rows.
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { SignJWT, UnsecuredJWT } from 'jose'
import { EventSource } from 'eventsource'
import type { Knex } from 'knex'
import { pino } from 'pino'
import { database, resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { freshDatabase } from './helpers/chinook.js'
import { sqlLog } from './helpers/sql-log.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[] }

/** The test's own signing secret (HS256), made here. */
const secret = randomBytes(32).toString('base64url')
const key = new TextEncoder().encode(secret)
const sign = (claims: Record<string, unknown>, k: Uint8Array = key) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(k)

const migrations = {
  '001-row-filters': {
    async up(knex: Knex) {
      await knex.schema.createTable('rowfilter_account', (tb) => {
        tb.integer('id').primary()
        tb.string('name', 50).notNullable()
        tb.string('org', 50).notNullable()
      })
      await knex.schema.createTable('rowfilter_note', (tb) => {
        tb.integer('id').primary()
        tb.string('title', 100).notNullable()
        tb.string('owner_id', 50).notNullable()
        tb.integer('priority').notNullable().defaultTo(0)
        tb.integer('account_id').nullable().references('id').inTable('rowfilter_account')
      })
      await knex.schema.createTable('rowfilter_tag', (tb) => {
        tb.integer('id').primary()
        tb.string('label', 50).notNullable()
        tb.integer('note_id').notNullable().references('id').inTable('rowfilter_note')
      })
      await knex('rowfilter_account').insert([
        { id: 1, name: 'Acme HQ', org: 'acme' },
        { id: 2, name: 'Globex', org: 'globex' },
      ])
      await knex('rowfilter_note').insert([
        { id: 1, title: 'alice one', owner_id: 'alice', priority: 1, account_id: 1 },
        { id: 2, title: 'alice two', owner_id: 'alice', priority: 2, account_id: 1 },
        { id: 3, title: 'alice three', owner_id: 'alice', priority: 3, account_id: 2 },
        { id: 4, title: 'bob one', owner_id: 'bob', priority: 4, account_id: 2 },
        { id: 5, title: 'bob two', owner_id: 'bob', priority: 5, account_id: 1 },
      ])
      await knex('rowfilter_tag').insert([
        { id: 1, label: 'on alice one', note_id: 1 },
        { id: 2, label: 'on bob one', note_id: 4 },
      ])
    },
  },
}

const permissions: TributaryConfigInput['permissions'] = {
  rf_RowfilterNote: { filter: { ownerId: { equals: { claim: 'sub' } } }, bypassRoles: ['admin'] },
  rf_RowfilterAccount: { roles: ['user', 'admin'], filter: { org: { claim: 'tenant.org' } } },
}

async function start(t: Test, url: string, extra: Partial<TributaryConfigInput> = {}) {
  const { stream, statements } = sqlLog()
  const dir = mkdtempSync(join(tmpdir(), 'trb-row-filters-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'Notes.graphql'), 'query Notes { rf_findManyRowfilterNote(orderBy: [{ id: asc }]) { id ownerId } }\n')
  writeFileSync(join(dir, 'operations', 'LiveNotes.graphql'), '# @live interval=100\nquery LiveNotes { rf_findManyRowfilterNote(orderBy: [{ id: asc }]) { id } }\n')
  writeFileSync(join(dir, 'operations', 'CachedNotes.graphql'), '# @cache maxAge=60\nquery CachedNotes { rf_findManyRowfilterNote(orderBy: [{ id: asc }]) { id ownerId } }\n')
  const config = resolveConfig({
    datasources: [database({ namespace: 'rf', url, migrations })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    server: { logLevel: 'debug' },
    auth: { jwt: { secret }, graphql: 'public' },
    permissions,
    ...extra,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'debug' }, stream), cwd: dir })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const a = app.server.address()
  const base = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`
  const gql = async (query: string, token?: string, variables?: Record<string, unknown>) => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    })
    return { status: res.status, body: (await res.json()) as Body }
  }
  const op = async (name: string, token?: string) => {
    const res = await fetch(`${base}/operations/${name}`, { headers: token ? { authorization: `Bearer ${token}` } : {} })
    return { status: res.status, cache: res.headers.get('x-tributary-cache'), body: (await res.json()) as Body }
  }
  /** Opens a live query (SSE) with a token; `events` fills with its results. */
  const live = (name: string, token: string) => {
    const es = new EventSource(`${base}/operations/${name}?live=true`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` } }),
    })
    const events: Body[] = []
    es.onmessage = (event) => events.push(JSON.parse(event.data) as Body)
    t.teardown(() => es.close())
    return { es, events }
  }
  return { gql, op, live, app, statements }
}

const codes = (b: Body) => (b.errors ?? []).map((e) => e.extensions?.code)
const ids = (rows: unknown) => (rows as { id: number }[]).map((r) => Number(r.id))

for (const dialect of ['sqlite', 'postgres', 'mysql'] as Dialect[]) {
  t.test(`row filters on ${dialect}`, async (t) => {
    const db = await freshDatabase(dialect, 'row_filters')
    if (db.skipReason) {
      t.comment(db.skipReason); t.pass('skipped: ' + db.skipReason)
      return
    }
    t.teardown(() => db.cleanup())
    const { gql, op, live, app, statements } = await start(t, db.url)
    const { knex } = createKnex(db.url, { cwd: process.cwd() })
    t.teardown(() => knex.destroy())
    const direct = async (owner: string) => (await knex('rowfilter_note').where('owner_id', owner).orderBy('id').select('id')).map((r: { id: number }) => Number(r.id))

    const alice = await sign({ sub: 'alice', tenant: { org: 'acme' }, roles: ['user'] })
    const bob = await sign({ sub: 'bob', tenant: { org: 'globex' }, roles: ['user'] })
    const admin = await sign({ sub: 'root', tenant: { org: 'acme' }, roles: ['admin'] })
    const list = '{ rf_findManyRowfilterNote(orderBy: [{ id: asc }]) { id ownerId } }'

    await t.test('root reads see only the caller\'s rows, in one statement', async (t) => {
      statements.length = 0
      const a = await gql(list, alice)
      t.same(codes(a.body), [])
      t.same(ids(a.body.data!.rf_findManyRowfilterNote), await direct('alice'))
      t.equal(statements.length, 1, 'one statement')
      t.match(statements[0], /owner_id/, 'the filter is in that statement')
      t.same(ids((await gql(list, bob)).body.data!.rf_findManyRowfilterNote), await direct('bob'))
      t.same(ids((await gql(list, admin)).body.data!.rf_findManyRowfilterNote), [1, 2, 3, 4, 5], 'bypassRoles: every row')
      const unique = await gql('{ rf_findUniqueRowfilterNote(where: { id: 4 }) { id } }', alice)
      t.same(unique.body.data, { rf_findUniqueRowfilterNote: null }, "bob's row is not found for alice")
      const first = await gql('{ rf_findFirstRowfilterNote(orderBy: [{ priority: desc }]) { id } }', alice)
      t.same(first.body.data, { rf_findFirstRowfilterNote: { id: 3 } })
      const agg = await gql('{ rf_aggregateRowfilterNote { _count { _all } _max { priority } } }', alice)
      t.same(agg.body.data, { rf_aggregateRowfilterNote: { _count: { _all: 3 }, _max: { priority: 3 } } })
      const windowed = await gql('{ rf_aggregateRowfilterNote(take: 10, orderBy: [{ id: asc }]) { _count { _all } } }', bob)
      t.same(windowed.body.data, { rf_aggregateRowfilterNote: { _count: { _all: 2 } } })
      const groups = await gql('{ rf_groupByRowfilterNote(by: [ownerId]) { ownerId _count { _all } } }', alice)
      t.same(groups.body.data, { rf_groupByRowfilterNote: [{ ownerId: 'alice', _count: { _all: 3 } }] })
    })

    await t.test('claim injection: the client where narrows, never widens', async (t) => {
      const other = await gql('{ rf_findManyRowfilterNote(where: { ownerId: { equals: "bob" } }) { id } }', alice)
      t.same(other.body.data, { rf_findManyRowfilterNote: [] })
      const escape = await gql('{ rf_findManyRowfilterNote(where: { OR: [{ ownerId: { equals: "bob" } }, { id: { gt: 0 } }] }, orderBy: [{ id: asc }]) { id } }', alice)
      t.same(ids(escape.body.data!.rf_findManyRowfilterNote), await direct('alice'))
      const notFilter = await gql('{ rf_findManyRowfilterNote(where: { NOT: [{ ownerId: { equals: "alice" } }] }) { id } }', alice)
      t.same(notFilter.body.data, { rf_findManyRowfilterNote: [] })
      const viaVars = await gql('query($w: RowfilterNoteWhereInput) { rf_findManyRowfilterNote(where: $w) { id } }', alice, { w: { OR: [{ ownerId: { equals: 'bob' } }] } })
      t.same(codes(viaVars.body).length > 0 || (viaVars.body.data?.rf_findManyRowfilterNote as unknown[]).length === 0, true, 'a variable where cannot widen either')
      const claimShaped = await gql('{ rf_findManyRowfilterNote(where: { ownerId: { equals: { claim: "sub" } } }) { id } }', bob)
      t.ok(codes(claimShaped.body).length > 0, 'a client cannot write { claim } (not a String)')
      t.notOk(JSON.stringify(claimShaped.body).includes('alice'))
    })

    await t.test('nested lists, to-one relations, _count and relation filters', async (t) => {
      statements.length = 0
      const q = '{ rf_findManyRowfilterAccount(orderBy: [{ id: asc }]) { id rowfilterNotes(orderBy: [{ id: asc }]) { id ownerId } _count { rowfilterNotes } } }'
      const a = await gql(q, alice)
      t.same(codes(a.body), [])
      // Alice sees account 1 only (org acme), and only her notes in it (note 5 is bob's).
      t.same(a.body.data, { rf_findManyRowfilterAccount: [{ id: 1, rowfilterNotes: [{ id: 1, ownerId: 'alice' }, { id: 2, ownerId: 'alice' }], _count: { rowfilterNotes: 2 } }] })
      t.equal(statements.length, 1, 'one statement for the nested read')
      const toOne = await gql('{ rf_findManyRowfilterNote(orderBy: [{ id: asc }]) { id account { id org } } }', alice)
      t.same(toOne.body.data, { rf_findManyRowfilterNote: [{ id: 1, account: { id: 1, org: 'acme' } }, { id: 2, account: { id: 1, org: 'acme' } }, { id: 3, account: null }] }, "the globex account is filtered for alice's note 3")
      // A to-one relation with a NOT NULL key to a filtered type is nullable in the schema: hidden rows read as null.
      const tags = await gql('{ rf_findManyRowfilterTag(orderBy: [{ id: asc }]) { id note { id } } }', alice)
      t.same(tags.body, { data: { rf_findManyRowfilterTag: [{ id: 1, note: { id: 1 } }, { id: 2, note: null }] } })
      const rel = await gql('{ rf_findManyRowfilterAccount(where: { rowfilterNotes: { some: { ownerId: { equals: "bob" } } } }) { id } }', alice)
      t.same(rel.body.data, { rf_findManyRowfilterAccount: [] }, "a relation filter does not see bob's note 5")
      const none = await gql('{ rf_findManyRowfilterAccount(where: { rowfilterNotes: { every: { ownerId: { equals: "alice" } } } }) { id } }', alice)
      t.same(none.body.data, { rf_findManyRowfilterAccount: [{ id: 1 }] }, 'every: only the rows alice sees')
      const noRole = await gql('{ rf_findManyRowfilterAccount { id } }', await sign({ sub: 'carol', tenant: { org: 'acme' } }))
      t.same(codes(noRole.body), ['TRB_ERR_AUTH_FORBIDDEN'], 'roles and filter in one rule: both apply')
      const ordered = await gql('{ rf_findManyRowfilterAccount(orderBy: [{ rowfilterNotes: { _count: desc } }]) { id } }', bob)
      t.same(ordered.body.data, { rf_findManyRowfilterAccount: [{ id: 2 }] })
    })

    await t.test('missing token, missing claim, wrong claim type, forged tokens', async (t) => {
      const anon = await gql(list)
      t.same(codes(anon.body), ['TRB_ERR_AUTH_REQUIRED'])
      t.notOk(JSON.stringify(anon.body).includes('alice'))
      const noSub = await gql(list, await sign({ tenant: { org: 'acme' } }))
      t.same(codes(noSub.body), ['TRB_ERR_AUTH_FORBIDDEN'])
      const numeric = await gql(list, await sign({ sub: 42 }))
      t.same(codes(numeric.body), ['TRB_ERR_AUTH_FORBIDDEN'], 'a number where the column is a String')
      const object = await gql(list, await sign({ sub: { $ne: null } }))
      t.same(codes(object.body), ['TRB_ERR_AUTH_FORBIDDEN'], 'an object claim')
      const orgList = await gql('{ rf_findManyRowfilterAccount { id } }', await sign({ sub: 'alice', roles: ['user'], tenant: { org: ['acme', 'globex'] } }))
      t.same(codes(orgList.body), ['TRB_ERR_AUTH_FORBIDDEN'], 'a list claim')
      const forged = await gql(list, await sign({ sub: 'bob' }, new TextEncoder().encode(randomBytes(32).toString('hex'))))
      t.equal(forged.status, 401)
      t.same(codes(forged.body), ['TRB_ERR_AUTH_INVALID'])
      const unsigned = await gql(list, new UnsecuredJWT({ sub: 'bob' }).setIssuedAt().encode())
      t.equal(unsigned.status, 401)
      t.same(codes(unsigned.body), ['TRB_ERR_AUTH_INVALID'])
    })

    await t.test('stored operations do not bypass the filter (no direct SQL plan)', async (t) => {
      const a = await op('Notes', alice)
      t.equal(a.status, 200)
      t.same(ids((a.body as Record<string, unknown>).rf_findManyRowfilterNote), await direct('alice'), 'the body is the data object')
      const b = await op('Notes', bob)
      t.same(ids((b.body as Record<string, unknown>).rf_findManyRowfilterNote), await direct('bob'))
      const anon = await op('Notes')
      t.equal(anon.status, 401)
      t.same(codes(anon.body), ['TRB_ERR_AUTH_REQUIRED'])
    })

    await t.test('the shared response cache (# @cache) never serves one caller\'s rows to another', async (t) => {
      const rows = (r: { body: Body }) => ids((r.body as Record<string, unknown>).rf_findManyRowfilterNote)
      const a1 = await op('CachedNotes', alice)
      const a2 = await op('CachedNotes', alice)
      t.same([a1.cache, a2.cache], ['miss', 'hit'], 'cached per credentials')
      t.same(rows(a2), await direct('alice'))
      const b1 = await op('CachedNotes', bob)
      t.equal(b1.cache, 'miss', "bob's token is another key")
      t.same(rows(b1), await direct('bob'))
      const anon = await op('CachedNotes')
      t.equal(anon.status, 401, 'nothing cached is served without a token')
    })

    await t.test('live queries: one poller per credentials, each caller sees its own rows', async (t) => {
      const a = live('LiveNotes', alice)
      const b = live('LiveNotes', bob)
      const until = Date.now() + 5000
      while ((a.events.length === 0 || b.events.length === 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
      t.same(ids((a.events[0]?.data as Record<string, unknown> | undefined)?.rf_findManyRowfilterNote ?? []), await direct('alice'))
      t.same(ids((b.events[0]?.data as Record<string, unknown> | undefined)?.rf_findManyRowfilterNote ?? []), await direct('bob'))
      t.equal(app.livePollers.size, 2, 'two tokens, two pollers')
      a.es.close()
      b.es.close()
    })

    await t.test('writes: updates and deletes of filtered rows behave as not found; written rows must pass', async (t) => {
      statements.length = 0
      const upd = await gql('mutation { rf_updateManyRowfilterNote(data: { priority: { increment: 10 } }) { count } }', alice)
      t.same(upd.body.data, { rf_updateManyRowfilterNote: { count: 3 } })
      t.equal(statements.filter((s) => /^update/i.test(s.trim())).length, 1, 'one UPDATE statement')
      t.same((await knex('rowfilter_note').where('owner_id', 'bob').orderBy('id').select('priority')).map((r: { priority: number }) => Number(r.priority)), [4, 5], "bob's rows untouched")
      const one = await gql('mutation { rf_updateOneRowfilterNote(where: { id: 4 }, data: { title: { set: "hacked" } }) { id } }', alice)
      t.same(codes(one.body), ['TRB_ERR_DB_NOT_FOUND'])
      const del = await gql('mutation { rf_deleteOneRowfilterNote(where: { id: 5 }) { id } }', alice)
      t.same(codes(del.body), ['TRB_ERR_DB_NOT_FOUND'])
      const delMany = await gql('mutation { rf_deleteManyRowfilterNote(where: { title: { contains: "two" } }) { count } }', bob)
      t.same(delMany.body.data, { rf_deleteManyRowfilterNote: { count: 1 } }, "only bob's 'two'")
      t.same(await direct('alice'), [1, 2, 3])
      t.same(await direct('bob'), [4])
      // Giving a row away (update check), creating a row for another owner (insert check): rolled back.
      const giveAway = await gql('mutation { rf_updateOneRowfilterNote(where: { id: 1 }, data: { ownerId: { set: "bob" } }) { id } }', alice)
      t.same(codes(giveAway.body), ['TRB_ERR_AUTH_FORBIDDEN'])
      t.same(await direct('alice'), [1, 2, 3], 'rolled back')
      const plant = await gql('mutation { rf_createOneRowfilterNote(data: { id: 20, title: "planted", ownerId: "bob" }) { id } }', alice)
      t.same(codes(plant.body), ['TRB_ERR_AUTH_FORBIDDEN'])
      t.same(await direct('bob'), [4], 'not inserted')
      const own = await gql('mutation { rf_createOneRowfilterNote(data: { id: 21, title: "mine", ownerId: "alice" }) { id ownerId } }', alice)
      t.same(own.body.data, { rf_createOneRowfilterNote: { id: 21, ownerId: 'alice' } })
      const upsertOther = await gql('mutation { rf_upsertOneRowfilterNote(where: { id: 4 }, create: { id: 4, title: "x", ownerId: "alice" }, update: { title: { set: "y" } }) { id } }', alice)
      t.ok(codes(upsertOther.body).length === 1 && codes(upsertOther.body)[0] !== 'TRB_ERR_INTERNAL', "an upsert of bob's row is a create for alice, which conflicts")
      t.equal((await knex('rowfilter_note').where('id', 4).first())?.title, 'bob one')
      const many = await gql('mutation { rf_createManyRowfilterNote(data: [{ id: 30, title: "a", ownerId: "alice" }]) { count } }', alice)
      t.same(codes(many.body), ['TRB_ERR_AUTH_FORBIDDEN'], 'createMany cannot check the filter: refused')
      const manyAdmin = await gql('mutation { rf_createManyRowfilterNote(data: [{ id: 31, title: "a", ownerId: "carol" }]) { count } }', admin)
      t.same(manyAdmin.body.data, { rf_createManyRowfilterNote: { count: 1 } }, 'admin bypasses')
      // Nested writes into a filtered type cannot be checked row by row: refused (403), rolled back.
      const nested = await gql('mutation { rf_createOneRowfilterAccount(data: { id: 9, name: "Acme 2", org: "acme", rowfilterNotes: { create: [{ id: 40, title: "n", ownerId: "bob" }] } }) { id } }', alice)
      t.same(codes(nested.body), ['TRB_ERR_AUTH_FORBIDDEN'])
      t.notOk(await knex('rowfilter_account').where('id', 9).first(), 'nothing written')
      const connect = await gql('mutation { rf_updateOneRowfilterAccount(where: { id: 1 }, data: { rowfilterNotes: { connect: [{ id: 4 }] } }) { id } }', alice)
      t.same(codes(connect.body), ['TRB_ERR_AUTH_FORBIDDEN'])
      t.equal(Number((await knex('rowfilter_note').where('id', 4).first())?.account_id), 2, "bob's note 4 not moved")
      const anonWrite = await gql('mutation { rf_deleteManyRowfilterNote { count } }')
      t.same(codes(anonWrite.body), ['TRB_ERR_AUTH_REQUIRED'])
      t.equal(Number((await knex('rowfilter_note').count({ n: '*' }))[0]!.n), 6)
    })
  })
}

t.test('filters are validated at startup', async (t) => {
  const db = await freshDatabase('sqlite', 'row_filters_config')
  t.teardown(() => db.cleanup())
  const fails = async (p: TributaryConfigInput['permissions'], re: RegExp) => {
    const err = await start(t, db.url, { permissions: p }).then(() => null, (e: unknown) => e as { code?: string; message: string })
    t.equal(err?.code, 'TRB_ERR_CONFIG_INVALID', re.source)
    t.match(err?.message ?? '', re)
  }
  await fails({ rf_RowfilterNote: { filter: { owner: { equals: { claim: 'sub' } } } } }, /permissions\.rf_RowfilterNote\.filter\.owner: RowfilterNoteWhereInput has no field owner/)
  await fails({ rf_RowfilterNote: { filter: { ownerId: { like: 'x' } } } }, /permissions\.rf_RowfilterNote\.filter\.ownerId\.like: StringFilter has no field like/)
  await fails({ rf_RowfilterNote: { filter: { priority: { equals: 'high' } } } }, /filter\.priority\.equals: not a Int/)
  await fails({ rf_RowfilterNote: { filter: { ownerId: { in: { claim: 'groups' } } } } }, /filter\.ownerId\.in: a claim stands for one value/)
  await fails({ rf_Nope: { filter: { id: { equals: 1 } } } }, /permissions\.rf_Nope\.filter: rf_Nope is not a table or view of a database source/)
  await fails({ 'rf_RowfilterNote.title': { filter: { id: { equals: 1 } } } }, /a row filter applies to a type/)
  await fails({ rf_RowfilterNote: { roles: ['a'], bypassRoles: ['admin'] } }, /bypassRoles: only a rule with a filter/)
})

t.test('a filter with a relation filter, OR and a claim inside a list (SQLite)', async (t) => {
  const db = await freshDatabase('sqlite', 'row_filters_relation')
  t.teardown(() => db.cleanup())
  const { gql, statements } = await start(t, db.url, {
    permissions: {
      // A tag is visible when its note is the caller's, or when its label is public.
      rf_RowfilterTag: { filter: { OR: [{ note: { is: { ownerId: { in: [{ claim: 'sub' }, 'nobody'] } } } }, { label: { startsWith: 'public' } }] } },
    },
  })
  const { knex } = createKnex(db.url, { cwd: process.cwd() })
  t.teardown(() => knex.destroy())
  await knex('rowfilter_tag').insert({ id: 3, label: 'public tag', note_id: 5 })
  const expected = async (owner: string) =>
    (await knex('rowfilter_tag as g').join('rowfilter_note as n', 'n.id', 'g.note_id').where('n.owner_id', owner).orWhere('g.label', 'like', 'public%').orderBy('g.id').select('g.id')).map((r: { id: number }) => Number(r.id))
  const q = '{ rf_findManyRowfilterTag(orderBy: [{ id: asc }]) { id } }'
  statements.length = 0
  const a = await gql(q, await sign({ sub: 'alice' }))
  t.same(ids(a.body.data!.rf_findManyRowfilterTag), await expected('alice'))
  t.same(await expected('alice'), [1, 3])
  t.equal(statements.length, 1, 'one statement')
  const b = await gql(q, await sign({ sub: 'bob' }))
  t.same(ids(b.body.data!.rf_findManyRowfilterTag), await expected('bob'))
  // Notes are not row-filtered in this config: bob reads alice's note 1, but not its tag.
  const viaNote = await gql('{ rf_findManyRowfilterNote(where: { id: { equals: 1 } }) { id rowfilterTags { id } } }', await sign({ sub: 'bob' }))
  t.same(viaNote.body.data, { rf_findManyRowfilterNote: [{ id: 1, rowfilterTags: [] }] }, "alice's tag on note 1 is hidden from bob in a nested list")
})
