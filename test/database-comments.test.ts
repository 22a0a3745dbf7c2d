/**
 * Database comments become GraphQL descriptions (README "Database sources", "Admin console"):
 * PostgreSQL `COMMENT ON TABLE/VIEW/COLUMN` and MySQL/MariaDB `COMMENT` clauses are read by the
 * introspection and shown by GraphQL introspection and the console's `/console/api/schema`; a table
 * or column without one keeps the description it had; comments are cut at MAX_COMMENT_LENGTH.
 * One gateway (the demo plus a PostgreSQL and a MySQL source, each in a fresh schema/database);
 * each engine's part skips with a message when its server is down.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import mysql from 'mysql2/promise'
import type { TributaryConfigInput } from '../gateway/config/index.js'
import { MAX_COMMENT_LENGTH } from '../gateway/connectors/database/model.js'
import { normalizeComment } from '../gateway/connectors/database/introspect/common.js'
import { startDemo } from './helpers/demo.js'
import { freshDatabase, postgresUrl } from './helpers/chinook.js'

const LONG = 'x'.repeat(1500)

t.test('normalizeComment: trimmed, empty is none, cut at MAX_COMMENT_LENGTH', async (t) => {
  t.equal(normalizeComment(null), undefined)
  t.equal(normalizeComment('   '), undefined)
  t.equal(normalizeComment('  A person.\n'), 'A person.')
  const cut = normalizeComment(LONG)!
  t.equal(cut.length, MAX_COMMENT_LENGTH)
  t.ok(cut.endsWith('…'))
})

interface TypeInfo { description: string | null; fields: { name: string; description: string | null }[] }

t.test('comments on PostgreSQL and MySQL become descriptions', async (t) => {
  const sources: { kind: 'database'; namespace: string; url: string }[] = []
  const pgDb = await freshDatabase('postgres', 'comments')
  t.teardown(pgDb.cleanup)
  if (pgDb.skipReason) t.comment(`PostgreSQL part skipped: ${pgDb.skipReason}`)
  else {
    const client = new pg.Client({ connectionString: postgresUrl() })
    await client.connect()
    const s = `"${pgDb.schema}"`
    try {
      await client.query(`create table ${s}.person (id serial primary key, name text not null, nick text);
        comment on table ${s}.person is 'People who use the app.';
        comment on column ${s}.person.name is 'The "full" name, as shown.';
        create table ${s}.plain (id int primary key, label text);
        create view ${s}.person_name as select id, name from ${s}.person;
        comment on view ${s}.person_name is 'Names only.';
        comment on column ${s}.person_name.name is 'The name.';
        create table ${s}.wordy (id int primary key);
        comment on table ${s}.wordy is '${LONG}';`)
    } finally {
      await client.end()
    }
    sources.push({ kind: 'database', namespace: 'pgc', url: pgDb.url })
  }
  const myDb = await freshDatabase('mysql', 'comments')
  t.teardown(myDb.cleanup)
  if (myDb.skipReason) t.comment(`MySQL part skipped: ${myDb.skipReason}`)
  else {
    const conn = await mysql.createConnection(myDb.url)
    try {
      await conn.query(`create table person (id int primary key auto_increment comment 'The key.', name varchar(100) not null comment 'Shown name.', nick varchar(20)) comment = 'People who use the app.'`)
      await conn.query('create table plain (id int primary key, label varchar(20))')
      await conn.query('create view person_name as select id, name from person')
      await conn.query(`create table wordy (id int primary key) comment = '${'y'.repeat(1200)}'`)
    } finally {
      await conn.end()
    }
    sources.push({ kind: 'database', namespace: 'myc', url: myDb.url })
  }
  if (sources.length === 0) {
    t.pass('skipped: neither PostgreSQL nor MySQL is reachable')
    return
  }
  const [todo, system, demo] = await Promise.all(['todo', 'system', 'demo'].map(async (n) => (await import(`../datasources/${n}/index.js`)).default))
  const { app } = await startDemo(t, { override: { datasources: [todo, system, demo, ...sources] } as Partial<TributaryConfigInput> })

  const introspected = async (t: Test, name: string): Promise<TypeInfo> => {
    const res = await app.inject({
      method: 'POST',
      url: '/graphql',
      payload: { query: `query($n: String!) { __type(name: $n) { description fields { name description } } }`, variables: { n: name } },
    })
    t.equal(res.statusCode, 200)
    return res.json().data.__type as TypeInfo
  }
  const field = (type: TypeInfo, name: string): string | null | undefined => type.fields.find((f) => f.name === name)?.description

  for (const { namespace } of sources) {
    const isPg = namespace === 'pgc'
    t.test(isPg ? 'PostgreSQL' : 'MySQL/MariaDB', async (t) => {
      const person = await introspected(t, `${namespace}_Person`)
      t.equal(person.description, 'People who use the app.\n\nTable `person`.', 'the table comment leads the type description')
      t.equal(field(person, 'name'), isPg ? 'The "full" name, as shown.' : 'Shown name.', 'a column comment is the field description')
      t.equal(field(person, 'nick'), null, 'no comment: no description')
      t.equal(field(person, 'id'), isPg ? null : 'The key.')
      const plain = await introspected(t, `${namespace}_Plain`)
      t.equal(plain.description, 'Table `plain`.', 'a table without a comment keeps its description')
      t.ok(plain.fields.every((f) => f.description === null || f.name === '_count'))
      const view = await introspected(t, `${namespace}_PersonName`)
      if (isPg) {
        t.equal(view.description, 'Names only.\n\nView `person_name`.', 'a view comment')
        t.equal(field(view, 'name'), 'The name.', 'a view column comment')
      } else {
        t.equal(view.description, 'View `person_name`.', 'MySQL reports `VIEW` as a view\'s comment: not shown')
        t.equal(field(view, 'name'), 'Shown name.', 'a view column shows its base column\'s comment (MySQL reports it)')
      }
      const wordy = await introspected(t, `${namespace}_Wordy`)
      const comment = wordy.description!.split('\n\n')[0]!
      t.equal(comment.length, MAX_COMMENT_LENGTH, 'a long comment is cut')
      t.ok(comment.endsWith('…'))

      const res = await app.inject({ method: 'GET', url: `/console/api/schema?namespace=${namespace}` })
      t.equal(res.statusCode, 200)
      const types = res.json().types as { name: string; description: string | null; fields: { name: string; description: string | null; column?: string }[] }[]
      const consolePerson = types.find((x) => x.name === `${namespace}_Person`)!
      t.match(consolePerson.description, /^People who use the app\./, 'the console shows the table comment')
      const name = consolePerson.fields.find((f) => f.name === 'name')!
      t.equal(name.description, isPg ? 'The "full" name, as shown.' : 'Shown name.', 'and the column comment')
      t.equal(name.column, 'name', 'next to the column')
    })
  }
})
