/**
 * Introspection on real SQLite, PostgreSQL and MariaDB/MySQL: the Chinook database, and a
 * purpose-built schema per engine (view, compound PK / unique / FK, self FK, enums, every type family,
 * defaults, auto-increment, an unknown type). PostgreSQL and MySQL parts skip when unreachable.
 */
import t, { type Test } from 'tap'
import { createKnex, parseDatabaseUrl } from '../gateway/connectors/database/connection.js'
import { introspect } from '../gateway/connectors/database/introspect.js'
import type { ColumnInfo, DatabaseIntrospection, Dialect, TableInfo } from '../gateway/connectors/database/model.js'
import { chinook, freshDatabase, type TestDatabase } from './helpers/chinook.js'

type Tap = Test

/** Gets the database first, then runs the test, or skips it with the helper's reason. */
async function dbTest(name: string, get: () => Promise<TestDatabase>, fn: (t: Tap, db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await get()
  if (db.skipReason) {
    t.test(name, { skip: db.skipReason }, async () => {})
    await db.cleanup()
    return
  }
  t.test(name, async (t) => {
    t.teardown(db.cleanup)
    await fn(t, db)
  })
}

const dialects: Dialect[] = ['sqlite', 'postgres', 'mysql']

function table(doc: DatabaseIntrospection, name: string): TableInfo {
  const found = doc.tables.find((x) => x.name === name)
  if (!found) throw new Error(`table ${name} not in ${doc.tables.map((x) => x.name).join(', ')}`)
  return found
}
function column(tbl: TableInfo, name: string): ColumnInfo {
  const found = tbl.columns.find((c) => c.name === name)
  if (!found) throw new Error(`column ${tbl.name}.${name} not in ${tbl.columns.map((c) => c.name).join(', ')}`)
  return found
}

/** Chinook's table and column names per engine (the PostgreSQL script uses snake_case). */
const N = {
  sqlite: { artist: 'Artist', album: 'Album', employee: 'Employee', invoice: 'Invoice', playlistTrack: 'PlaylistTrack', track: 'Track', employeeId: 'EmployeeId', reportsTo: 'ReportsTo', playlistId: 'PlaylistId', trackId: 'TrackId', total: 'Total', invoiceDate: 'InvoiceDate', name: 'Name', milliseconds: 'Milliseconds', albumId: 'AlbumId', artistId: 'ArtistId' },
  postgres: { artist: 'artist', album: 'album', employee: 'employee', invoice: 'invoice', playlistTrack: 'playlist_track', track: 'track', employeeId: 'employee_id', reportsTo: 'reports_to', playlistId: 'playlist_id', trackId: 'track_id', total: 'total', invoiceDate: 'invoice_date', name: 'name', milliseconds: 'milliseconds', albumId: 'album_id', artistId: 'artist_id' },
  mysql: { artist: 'Artist', album: 'Album', employee: 'Employee', invoice: 'Invoice', playlistTrack: 'PlaylistTrack', track: 'Track', employeeId: 'EmployeeId', reportsTo: 'ReportsTo', playlistId: 'PlaylistId', trackId: 'TrackId', total: 'Total', invoiceDate: 'InvoiceDate', name: 'Name', milliseconds: 'Milliseconds', albumId: 'AlbumId', artistId: 'ArtistId' },
} as const

for (const dialect of dialects) {
  await dbTest(`Chinook on ${dialect}`, () => chinook(dialect), async (t, db) => {
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    const doc = await introspect(knex, dialect, db.schema !== undefined ? { schema: db.schema } : {})
    const n = N[dialect]

    t.equal(doc.version, 1)
    t.equal(doc.dialect, dialect)
    if (dialect === 'postgres') t.equal(doc.schema, 'chinook')
    else t.notOk('schema' in doc, 'schema only for PostgreSQL')
    t.equal(doc.tables.length, 11, '11 tables')
    t.same(doc.tables.map((x) => x.name), [...doc.tables.map((x) => x.name)].sort(), 'sorted by name')
    t.ok(doc.tables.every((x) => x.kind === 'table'))
    t.same(JSON.parse(JSON.stringify(doc)), doc, 'plain JSON')
    t.same(await introspect(knex, dialect, db.schema !== undefined ? { schema: db.schema } : {}), doc, 'stable output')

    const employee = table(doc, n.employee)
    t.same(employee.primaryKey, [n.employeeId])
    const selfFk = employee.foreignKeys.find((fk) => fk.referencedTable === n.employee)
    t.ok(selfFk, 'Employee.ReportsTo self-reference')
    t.same(selfFk?.columns, [n.reportsTo])
    t.same(selfFk?.referencedColumns, [n.employeeId])
    t.equal(selfFk?.onDelete, 'NO ACTION')
    t.equal(column(employee, n.reportsTo).nullable, true)
    if (dialect === 'sqlite') t.equal(selfFk?.name, 'Employee_ReportsTo_fkey', 'synthesised FK name')
    if (dialect === 'postgres') t.equal(selfFk?.name, 'employee_reports_to_fkey')
    if (dialect === 'mysql') t.equal(selfFk?.name, 'FK_EmployeeReportsTo')

    t.same(table(doc, n.playlistTrack).primaryKey, [n.playlistId, n.trackId], 'compound primary key')
    t.same(table(doc, n.playlistTrack).foreignKeys.map((fk) => fk.referencedTable).sort(), [dialect === 'postgres' ? 'playlist' : 'Playlist', n.track].sort())

    const track = table(doc, n.track)
    t.same(track.foreignKeys.map((fk) => fk.columns[0]).sort(), dialect === 'postgres' ? ['album_id', 'genre_id', 'media_type_id'] : ['AlbumId', 'GenreId', 'MediaTypeId'])
    t.equal(table(doc, n.album).foreignKeys[0]?.referencedTable, n.artist)

    const invoice = table(doc, n.invoice)
    t.equal(column(invoice, n.total).scalar, 'Decimal')
    t.equal(column(invoice, n.invoiceDate).scalar, 'DateTime')
    t.equal(column(invoice, n.invoiceDate).nullable, false)
    t.equal(column(track, n.name).scalar, 'String')
    t.equal(column(track, n.milliseconds).scalar, 'Int')
    t.equal(column(table(doc, n.artist), n.name).nullable, true)
    t.equal(column(table(doc, n.artist), n.artistId).nullable, false)
    // Chinook's keys are plain INT on PostgreSQL and MySQL, but INTEGER PRIMARY KEY (a rowid alias) on SQLite.
    t.equal(column(table(doc, n.artist), n.artistId).autoIncrement, dialect === 'sqlite')
    for (const tbl of doc.tables) for (const c of tbl.columns) t.notOk(c.unknownType, `${tbl.name}.${c.name} has a known type`)
    t.same(doc.enums, [])
  })
}

// ----- purpose-built schemas -----

const DDL: Record<Dialect, string[]> = {
  sqlite: [
    `create table author (
      id integer primary key autoincrement,
      name text not null,
      email varchar(100) unique,
      mentor_id integer references author(id) on delete set null,
      created_at datetime not null default current_timestamp,
      active boolean not null default 1,
      nickname nvarchar(20) default 'anon'
    )`,
    `create table book (
      id integer primary key,
      isbn char(13) not null,
      title nvarchar(200) not null,
      author_id integer not null references author(id) on delete cascade on update cascade,
      price decimal(10,2),
      list_price numeric,
      rating real,
      score double,
      pages int,
      sales bigint,
      published date,
      printed_at timestamp,
      meta json,
      cover blob,
      summary clob,
      odd weird_type,
      untyped,
      unique (title, author_id)
    )`,
    `create unique index book_isbn_unique on book(isbn)`,
    `create index book_title_idx on book(title)`,
    `create unique index book_partial on book(sales) where sales > 0`,
    `create table edition (
      book_id integer not null references book(id),
      edition_no integer not null,
      printed_on date,
      primary key (book_id, edition_no)
    )`,
    `create table edition_note (
      id integer primary key,
      book_id integer not null,
      edition_no integer not null,
      note text default 'n/a',
      foreign key (book_id, edition_no) references edition(book_id, edition_no)
    )`,
    `create table tag (code text primary key, label text) without rowid`,
    `create table "Mixed Case" ("Some Id" bigint primary key, "Value" text)`,
    `create view author_books as select a.id as author_id, a.name as name, count(b.id) as book_count from author a left join book b on b.author_id = a.id group by a.id, a.name`,
    `create table knex_migrations (id integer primary key, name text)`,
    `create table knex_migrations_lock (idx integer primary key, is_locked integer)`,
  ],
  postgres: [
    `create type mood as enum ('happy', 'sad', 'it''s ok')`,
    `create table author (
      id serial primary key,
      name text not null,
      email varchar(100) unique,
      mentor_id integer references author(id) on delete set null,
      created_at timestamptz not null default now(),
      active boolean not null default true,
      nickname varchar(20) default 'anon',
      mood mood
    )`,
    `create table book (
      id integer generated always as identity primary key,
      isbn char(13) not null,
      title varchar(200) not null,
      author_id integer not null references author(id) on delete cascade on update cascade,
      price numeric(10,2),
      list_price numeric,
      rating real,
      score double precision,
      pages smallint,
      sales bigint,
      big bigserial,
      published date,
      at_time time,
      printed_at timestamp,
      meta jsonb,
      extra json,
      cover bytea,
      uid uuid,
      location point,
      doc tsvector,
      tags text[],
      unique (title, author_id)
    )`,
    `create unique index book_isbn_unique on book(isbn)`,
    `create index book_title_idx on book(title)`,
    `create unique index book_partial on book(sales) where sales > 0`,
    `create unique index book_lower_title on book(lower(title))`,
    `create table edition (
      book_id integer not null references book(id),
      edition_no integer not null,
      printed_on date,
      primary key (book_id, edition_no)
    )`,
    `create table edition_note (
      id serial primary key,
      book_id integer not null,
      edition_no integer not null,
      note text default 'n/a',
      foreign key (book_id, edition_no) references edition(book_id, edition_no)
    )`,
    `create table tag (code text primary key, label text)`,
    `create table "Mixed Case" ("Some Id" bigint primary key, "Value" text)`,
    `create view author_books as select a.id as author_id, a.name as name, count(b.id) as book_count from author a left join book b on b.author_id = a.id group by a.id, a.name`,
    `create table knex_migrations (id serial primary key, name text)`,
    `create table knex_migrations_lock (idx serial primary key, is_locked integer)`,
  ],
  mysql: [
    `create table author (
      id int auto_increment primary key,
      name varchar(100) not null,
      email varchar(100) unique,
      mentor_id int,
      created_at datetime not null default current_timestamp,
      active tinyint(1) not null default 1,
      nickname varchar(20) default 'anon',
      mood enum('happy', 'sad', 'it''s ok'),
      constraint author_mentor_fk foreign key (mentor_id) references author(id) on delete set null
    )`,
    `create table book (
      id int auto_increment primary key,
      isbn char(13) not null,
      title varchar(200) not null,
      author_id int not null,
      price decimal(10,2),
      list_price numeric(12,4),
      rating float,
      score double,
      pages smallint,
      sales bigint,
      published date,
      at_time time,
      printed_at timestamp null,
      meta json,
      cover blob,
      bin varbinary(16),
      shape geometry,
      unique key book_title_author_key (title, author_id),
      unique key book_isbn_unique (isbn),
      key book_title_idx (title),
      constraint book_author_fk foreign key (author_id) references author(id) on delete cascade on update cascade
    )`,
    `create table edition (
      book_id int not null,
      edition_no int not null,
      printed_on date,
      primary key (book_id, edition_no),
      constraint edition_book_fk foreign key (book_id) references book(id)
    )`,
    `create table edition_note (
      id int auto_increment primary key,
      book_id int not null,
      edition_no int not null,
      note varchar(50) default 'n/a',
      constraint edition_note_edition_fk foreign key (book_id, edition_no) references edition(book_id, edition_no)
    )`,
    `create table tag (code varchar(20) primary key, label text)`,
    'create table `Mixed Case` (`Some Id` bigint primary key, `Value` text)',
    `create view author_books as select a.id as author_id, a.name as name, count(b.id) as book_count from author a left join book b on b.author_id = a.id group by a.id, a.name`,
    `create table knex_migrations (id int auto_increment primary key, name varchar(100))`,
    `create table knex_migrations_lock (idx int auto_increment primary key, is_locked int)`,
  ],
}

for (const dialect of dialects) {
  await dbTest(`purpose-built schema on ${dialect}`, () => freshDatabase(dialect, 'introspect'), async (t, db) => {
    const { knex } = createKnex(db.url)
    t.teardown(() => knex.destroy())
    for (const sql of DDL[dialect]) await knex.raw(sql)
    const doc = await introspect(knex, dialect, db.schema !== undefined ? { schema: db.schema } : {})

    t.same(doc.tables.map((x) => x.name), ['Mixed Case', 'author', 'author_books', 'book', 'edition', 'edition_note', 'tag'],
      'sorted by code point; knex_migrations* skipped')
    t.same(JSON.parse(JSON.stringify(doc)), doc, 'plain JSON')

    // view
    const view = table(doc, 'author_books')
    t.equal(view.kind, 'view')
    t.same(view.columns.map((c) => c.name), ['author_id', 'name', 'book_count'])
    t.same(view.primaryKey, [])
    t.same(view.foreignKeys, [])
    t.equal(table(doc, 'author').kind, 'table')

    // author: auto-increment, unique, self FK, defaults
    const author = table(doc, 'author')
    t.same(author.columns.map((c) => c.name), ['id', 'name', 'email', 'mentor_id', 'created_at', 'active', 'nickname', ...(dialect === 'sqlite' ? [] : ['mood'])], 'columns in order')
    t.same(author.primaryKey, ['id'])
    t.equal(column(author, 'id').autoIncrement, true, 'auto-increment primary key')
    t.equal(column(author, 'id').nullable, false)
    t.equal(column(author, 'name').autoIncrement, false)
    t.equal(column(author, 'name').nullable, false)
    t.equal(column(author, 'email').nullable, true)
    t.same(author.uniqueConstraints.map((u) => u.columns), [['email']], 'single-column unique')
    const mentor = author.foreignKeys[0]
    t.equal(author.foreignKeys.length, 1)
    t.same({ columns: mentor?.columns, referencedTable: mentor?.referencedTable, referencedColumns: mentor?.referencedColumns, onDelete: mentor?.onDelete },
      { columns: ['mentor_id'], referencedTable: 'author', referencedColumns: ['id'], onDelete: 'SET NULL' }, 'self-referencing FK')
    if (dialect === 'sqlite') t.equal(mentor?.name, 'author_mentor_id_fkey')
    t.equal(column(author, 'name').default, null, 'no default')
    t.match(column(author, 'nickname').default, /anon/, 'string default')
    t.match(column(author, 'created_at').default, /current_timestamp|now\(\)/i, 'expression default')
    t.match(column(author, 'active').default, /^(1|true)$/, 'boolean default')
    t.equal(column(author, 'active').scalar, 'Boolean')
    t.equal(column(author, 'created_at').scalar, 'DateTime')

    // book: every type family, compound unique, unique index, FK actions
    const book = table(doc, 'book')
    const scalar = (name: string): string => column(book, name).scalar
    t.equal(column(book, 'id').autoIncrement, true, dialect === 'postgres' ? 'identity column' : 'INTEGER PRIMARY KEY / auto_increment')
    t.equal(scalar('id'), 'Int')
    t.equal(scalar('pages'), 'Int')
    t.equal(scalar('sales'), 'BigInt')
    t.equal(scalar('rating'), 'Float')
    t.equal(scalar('score'), 'Float')
    t.equal(scalar('price'), 'Decimal')
    t.equal(scalar('list_price'), 'Decimal')
    t.equal(scalar('isbn'), 'String')
    t.equal(scalar('title'), 'String')
    t.equal(scalar('published'), 'DateTime')
    t.equal(scalar('printed_at'), 'DateTime')
    t.equal(scalar('meta'), 'JSON')
    t.equal(scalar('cover'), 'Bytes')
    t.equal(column(book, 'isbn').nullable, false)
    t.equal(column(book, 'price').nullable, true)
    const uniques = Object.fromEntries(book.uniqueConstraints.map((u) => [u.name, u.columns]))
    t.same(Object.values(uniques).sort(), [['isbn'], ['title', 'author_id']].sort(), 'compound unique + unique index; plain, partial and expression indexes left out')
    t.same(uniques.book_isbn_unique, ['isbn'], 'unique index keeps its name')
    const bookFk = book.foreignKeys[0]
    t.equal(book.foreignKeys.length, 1)
    t.same([bookFk?.columns, bookFk?.referencedTable, bookFk?.onDelete, bookFk?.onUpdate], [['author_id'], 'author', 'CASCADE', 'CASCADE'])

    // compound PK and compound FK
    const edition = table(doc, 'edition')
    t.same(edition.primaryKey, ['book_id', 'edition_no'], 'compound primary key')
    t.equal(column(edition, 'book_id').autoIncrement, false, 'compound INTEGER key is not a rowid alias')
    const note = table(doc, 'edition_note')
    t.same(note.foreignKeys.map((fk) => [fk.columns, fk.referencedTable, fk.referencedColumns]), [[['book_id', 'edition_no'], 'edition', ['book_id', 'edition_no']]], 'compound FK')
    if (dialect === 'sqlite') t.equal(note.foreignKeys[0]?.name, 'edition_note_book_id_edition_no_fkey')
    t.match(column(note, 'note').default, /n\/a/)

    // text primary key, WITHOUT ROWID on SQLite
    const tag = table(doc, 'tag')
    t.same(tag.primaryKey, ['code'])
    t.equal(column(tag, 'code').autoIncrement, false)
    t.equal(column(tag, 'code').nullable, false)
    const mixed = table(doc, 'Mixed Case')
    t.same(mixed.primaryKey, ['Some Id'])
    t.equal(column(mixed, 'Some Id').scalar, 'BigInt')
    t.equal(column(mixed, 'Some Id').autoIncrement, false, 'BIGINT PRIMARY KEY is not a rowid alias')

    // engine specifics
    if (dialect === 'sqlite') {
      t.equal(column(book, 'odd').dataType, 'weird_type')
      t.same([column(book, 'odd').scalar, column(book, 'odd').unknownType], ['String', true], 'unknown type -> String')
      t.same([column(book, 'untyped').dataType, column(book, 'untyped').unknownType], ['', true], 'no declared type')
      t.equal(column(book, 'summary').scalar, 'String')
      t.equal(column(book, 'title').dataType, 'nvarchar(200)', 'raw dataType, lower-cased')
      t.same(doc.enums, [])
    }
    if (dialect === 'postgres') {
      t.equal(doc.schema, db.schema, 'non-public schema')
      t.equal(column(author, 'id').default?.startsWith('nextval('), true, 'serial default')
      t.same([column(author, 'mood').scalar, column(author, 'mood').enumName, column(author, 'mood').dataType], ['Enum', 'mood', 'mood'])
      t.same(doc.enums, [{ name: 'mood', values: ['happy', 'sad', "it's ok"] }], 'enum values in order')
      t.equal(column(book, 'id').default, null, 'identity has no default expression')
      t.equal(scalar('big'), 'BigInt')
      t.equal(column(book, 'big').autoIncrement, true, 'bigserial')
      t.equal(scalar('extra'), 'JSON')
      t.equal(scalar('uid'), 'String')
      t.equal(scalar('at_time'), 'DateTime')
      t.equal(column(book, 'printed_at').dataType, 'timestamp without time zone')
      t.equal(column(author, 'created_at').dataType, 'timestamp with time zone')
      t.equal(column(book, 'price').dataType, 'numeric(10,2)')
      for (const name of ['location', 'doc']) t.same([scalar(name), column(book, name).unknownType], ['String', true], `${name} is unknown`)
      t.same([scalar('tags'), column(book, 'tags').isList, column(book, 'tags').unknownType], ['String', true, undefined], 'text[] is a list of String (issue 10)')
      // the same database's public schema does not see these tables
      t.equal((await introspect(knex, 'postgres')).schema, db.schema, 'default: the URL\'s ?schema=')
      const pub = await introspect(knex, 'postgres', { schema: 'public' })
      t.equal(pub.schema, 'public')
      t.notOk(pub.tables.some((x) => x.name === 'edition_note' && x.columns.some((c) => c.name === 'edition_no')), 'public schema is separate')
    }
    if (dialect === 'mysql') {
      t.same([column(author, 'mood').scalar, column(author, 'mood').enumName], ['Enum', 'author_mood'])
      t.same(doc.enums, [{ name: 'author_mood', values: ['happy', 'sad', "it's ok"] }], 'inline enum -> <table>_<column>')
      t.equal(column(author, 'active').dataType, 'tinyint(1)')
      t.equal(column(book, 'bin').scalar, 'Bytes')
      t.same([scalar('shape'), column(book, 'shape').unknownType], ['String', true], 'geometry is unknown')
      t.equal(column(author, 'email').default, null, 'MariaDB NULL default reads as null')
      t.equal(author.foreignKeys[0]?.name, 'author_mentor_fk')
      t.equal(uniques.book_title_author_key !== undefined, true)
    }
  })
}

t.test('parseDatabaseUrl', async (t) => {
  t.match(parseDatabaseUrl('sqlite:data/x.sqlite', '/srv'), { dialect: 'sqlite', filename: '/srv/data/x.sqlite' })
  t.match(parseDatabaseUrl('sqlite:///abs/x.sqlite'), { dialect: 'sqlite', filename: '/abs/x.sqlite' })
  t.match(parseDatabaseUrl('sqlite::memory:'), { dialect: 'sqlite', filename: ':memory:' })
  const pg = parseDatabaseUrl('postgresql://u:s%40cret@db.example:6543/app?schema=chinook&sslmode=require')
  t.match(pg, { dialect: 'postgres', host: 'db.example', port: 6543, user: 'u', password: 's@cret', database: 'app', schema: 'chinook' })
  t.notMatch(pg.redacted, /cret/, 'redacted form hides the password')
  t.match(parseDatabaseUrl('mariadb://root@127.0.0.1/test'), { dialect: 'mysql', port: 3306, database: 'test' })
  t.match(parseDatabaseUrl('mysql://root@h:3307/db'), { dialect: 'mysql', port: 3307 })
  for (const bad of ['', 'mongodb://u:topsecret@h/db', 'oracle:x', 'sqlite:', 'postgres://']) {
    t.throws(() => parseDatabaseUrl(bad), { code: 'TRB_ERR_CONFIG_INVALID' }, `rejects ${JSON.stringify(bad)}`)
  }
  try {
    parseDatabaseUrl('mongodb://u:topsecret@h/db')
  } catch (err) {
    t.notMatch((err as Error).message, /topsecret/, 'error message never shows the password')
    t.match((err as Error).message, /sqlite:/, 'error message lists the supported schemes')
  }
})

await dbTest('createKnex: SQLite connection settings', () => freshDatabase('sqlite', 'conn'), async (t, db) => {
  const { knex, dialect } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  t.equal(dialect, 'sqlite')
  const rows = (await knex.raw('select (select foreign_keys from pragma_foreign_keys) as fk, (select journal_mode from pragma_journal_mode) as jm, (select timeout from pragma_busy_timeout) as bt')) as { fk: number; jm: string; bt: number }[]
  t.same(rows[0], { fk: 1, jm: 'wal', bt: 5000 })
  const mem = createKnex('sqlite::memory:')
  t.teardown(() => mem.knex.destroy())
  await mem.knex.raw('create table x (id integer primary key)')
  t.same(await mem.knex('x').count({ n: '*' }), [{ n: 0 }], 'one shared in-memory connection')
})

await dbTest('createKnex: PostgreSQL values', () => freshDatabase('postgres', 'conn'), async (t, db) => {
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  await knex.raw(`create table v (id int primary key, big bigint, dec numeric(30,10), ts timestamp, tstz timestamptz, d date, p point, i interval)`)
  const when = new Date('2026-11-20T10:00:00.123Z')
  await knex('v').insert({ id: 1, big: '9223372036854775807', dec: '12345678901234567890.0123456789', ts: when, tstz: when, d: '2026-11-20', p: '(1,2)', i: '1 day' })
  const [row] = await knex('v').select('*')
  t.same(row, {
    id: 1, big: '9223372036854775807', dec: '12345678901234567890.0123456789',
    ts: when, tstz: when, d: new Date('2026-11-20T00:00:00.000Z'), p: '(1,2)', i: '1 day',
  }, 'int8/numeric as strings, timestamps as UTC, geometric/interval as text')
  const tz = (await knex.raw('show timezone')) as { rows: { TimeZone: string }[] }
  t.equal(tz.rows[0]?.TimeZone, 'UTC')
  const sp = (await knex.raw('select current_schema() as s')) as { rows: { s: string }[] }
  t.equal(sp.rows[0]?.s, db.schema, '?schema= sets the search path')
})

await dbTest('createKnex: MySQL values', () => freshDatabase('mysql', 'conn'), async (t, db) => {
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  await knex.raw(`create table v (id int primary key, big bigint, ubig bigint unsigned, dec_ decimal(30,10), dt datetime(3), ts timestamp(3) null, d date)`)
  const when = new Date('2026-11-20T10:00:00.123Z')
  await knex('v').insert({ id: 1, big: '9223372036854775807', ubig: '18446744073709551615', dec_: '12345678901234567890.0123456789', dt: when, ts: when, d: '2026-11-20' })
  const [row] = await knex('v').select('*')
  t.same(row, { id: 1, big: '9223372036854775807', ubig: '18446744073709551615', dec_: '12345678901234567890.0123456789', dt: when, ts: when, d: new Date('2026-11-20T00:00:00.000Z') },
    'bigint/decimal as strings, DATETIME and TIMESTAMP as UTC')
  const [[tz]] = (await knex.raw('select @@session.time_zone as z')) as unknown as [[{ z: string }]]
  t.equal(tz?.z, '+00:00')
})
