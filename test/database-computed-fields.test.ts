/**
 * Issue 28: computed fields from PostgreSQL functions (PostGraphile's computed columns). A stable or
 * immutable function whose first argument is a table's row type (`film_title_upper(f film)`) is a
 * field of that model, compiled into the SAME statement as the rest of the selection (root lists,
 * nested relations, Relay connections, function root fields); `SETOF` a table gives a list field with
 * where/orderBy/take/skip, one row an object field. On a Chinook-like and a Sakila-like schema the
 * test creates in its own PostgreSQL schema, through a gateway on 127.0.0.1; every answer is compared
 * with the engine's own SQL calling the same functions, statements are counted from the debug `sql`
 * log. Row filters and field permissions apply; function errors and bad input are coded 400s.
 * Skipped when PostgreSQL is unreachable.
 */
import { Writable } from 'node:stream'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { pino } from 'pino'
import { SignJWT } from 'jose'
import { database, resolveConfig } from '../gateway/config/index.js'
import { createKnex } from '../gateway/connectors/database/connection.js'
import { createDatabaseSource } from '../gateway/connectors/database/index.js'
import { testContext } from './helpers/database-source.js'
import { freshDatabase } from './helpers/chinook.js'
import { rawRows } from './helpers/realworld.js'
import { serveGateway } from './helpers/serve.js'

type Body = { data?: Record<string, unknown> | null; errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[] }

const SCHEMA_SQL = `
CREATE TABLE artist (artist_id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE album (album_id int PRIMARY KEY, title text NOT NULL, artist_id int NOT NULL REFERENCES artist);
CREATE TABLE track (track_id int PRIMARY KEY, name text NOT NULL, album_id int REFERENCES album, milliseconds int NOT NULL, unit_price numeric(10,2) NOT NULL);
INSERT INTO artist SELECT i, 'Artist ' || i FROM generate_series(1, 20) i;
INSERT INTO artist VALUES (21, 'Lonely'), (22, 'Empty');
INSERT INTO album SELECT i, 'Album ' || i, 1 + (i % 20) FROM generate_series(1, 60) i;
INSERT INTO album VALUES (61, 'No tracks', 21);
INSERT INTO track SELECT i, 'Track ' || i, 1 + (i % 60), 100000 + (i * 7919) % 400000, 0.99 + (i % 3) FROM generate_series(1, 600) i;
CREATE TABLE film (film_id int PRIMARY KEY, title text NOT NULL, rental_rate numeric(4,2) NOT NULL, length int);
INSERT INTO film SELECT i, 'Film ' || chr(97 + i % 26) || i, 0.99 + (i % 3) * 2, CASE WHEN i % 10 = 0 THEN NULL ELSE 60 + i END FROM generate_series(1, 50) i;
CREATE TABLE customer (customer_id int PRIMARY KEY, first_name text NOT NULL, last_name text NOT NULL);
INSERT INTO customer SELECT i, 'First' || i, 'Last' || i FROM generate_series(1, 30) i;

CREATE FUNCTION film_title_upper(f film) RETURNS text STABLE LANGUAGE sql AS $$ SELECT upper(f.title) $$;
CREATE FUNCTION film_rental_cost(f film, days int DEFAULT 3) RETURNS numeric STABLE LANGUAGE sql AS $$ SELECT f.rental_rate * days $$;
CREATE FUNCTION film_minutes_per(f film, parts int) RETURNS int STABLE LANGUAGE sql AS $$ SELECT f.length / parts $$;
CREATE FUNCTION film_checked(f film, n int) RETURNS int STABLE LANGUAGE plpgsql AS $$ BEGIN IF n < 0 THEN RAISE EXCEPTION 'negative %', n; END IF; RETURN n + f.film_id; END $$;
CREATE FUNCTION film_secret(f film) RETURNS int STABLE LANGUAGE sql AS $$ SELECT f.film_id * 7 $$;
CREATE FUNCTION customer_full_name(c customer, sep text DEFAULT ' ') RETURNS text STABLE LANGUAGE sql AS $$ SELECT c.first_name || sep || c.last_name $$;
CREATE FUNCTION artist_album_count(a artist) RETURNS bigint STABLE LANGUAGE sql AS $$ SELECT count(*) FROM album WHERE artist_id = a.artist_id $$;
CREATE FUNCTION artist_top_tracks(a artist, n int) RETURNS SETOF track STABLE LANGUAGE sql AS $$
  SELECT t.* FROM track t JOIN album al ON al.album_id = t.album_id WHERE al.artist_id = a.artist_id ORDER BY t.milliseconds DESC, t.track_id LIMIT n $$;
CREATE FUNCTION album_longest_track(a album) RETURNS track STABLE LANGUAGE sql AS $$
  SELECT t.* FROM track t WHERE t.album_id = a.album_id ORDER BY t.milliseconds DESC, t.track_id LIMIT 1 $$;
CREATE FUNCTION artist_name(a artist) RETURNS text IMMUTABLE LANGUAGE sql AS $$ SELECT lower(a.name) $$;
CREATE FUNCTION track_tags(t track) RETURNS SETOF text STABLE LANGUAGE sql AS $$ SELECT unnest(ARRAY['t' || t.track_id, 'a' || t.album_id]) $$;
CREATE FUNCTION artist_touch(a artist) RETURNS int VOLATILE LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION film_x(f film) RETURNS int STABLE LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION film_x(f film, y int) RETURNS int STABLE LANGUAGE sql AS $$ SELECT y $$;
CREATE FUNCTION film_y(f film, int) RETURNS int STABLE LANGUAGE sql AS $$ SELECT $2 $$;
CREATE FUNCTION search_films(q text) RETURNS SETOF film STABLE LANGUAGE sql AS $$ SELECT * FROM film WHERE title ILIKE '%' || q || '%' $$;
`

const secret = randomBytes(32).toString('base64url')
const sign = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(secret))

const db = await freshDatabase('postgres', 'computed')
if (db.skipReason) {
  t.test('postgres unreachable', { skip: db.skipReason }, async () => {})
} else {
  t.teardown(db.cleanup)
  const { knex } = createKnex(db.url)
  t.teardown(() => knex.destroy())
  const sql = (text: string, bindings: unknown[] = []) => rawRows(knex, 'postgres', text, bindings, db.schema)
  await knex.raw(`set search_path to "${db.schema}"`)
  await knex.raw(SCHEMA_SQL)

  // One gateway: production mode (no engine messages), a row filter on Track (short tracks only)
  // and a role on the computed field Film.secret.
  const statements: string[] = []
  const warnings: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue
        const o = JSON.parse(line) as { msg?: string; sql?: string; level?: number }
        if (o.msg === 'sql' && o.sql) statements.push(o.sql)
        else if (o.level === 40 && o.msg) warnings.push(o.msg)
      }
      cb()
    },
  })
  const dir = mkdtempSync(join(tmpdir(), 'trb-computed-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'operations'))
  // A stored operation: its root field would take a direct-JSON plan, which has no computed fields (it falls back to the normal compiler).
  writeFileSync(join(dir, 'operations', 'Films.graphql'), 'query Films { findManyFilm(take: 3, orderBy: [{ filmId: asc }]) { filmId titleUpper cost: rentalCost(days: 4) } }\n')
  const MAX_MS = 400000
  const config = resolveConfig({
    datasources: [database({ url: db.url, functions: true })],
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    mode: 'production',
    graphql: { allowArbitraryOperationsInProduction: true, introspection: true },
    server: { logLevel: 'debug' },
    auth: { jwt: { secret }, graphql: 'public' },
    permissions: { Track: { filter: { milliseconds: { lt: MAX_MS } } }, 'Film.secret': { roles: ['admin'] }, 'Customer.lastName': { roles: ['admin'] } },
  })
  const { url } = await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream) })
  const gql = async (query: string, variables?: Record<string, unknown>, token?: string) => {
    statements.length = 0
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    })
    return { status: res.status, body: (await res.json()) as Body, statements: [...statements] }
  }
  const codes = (b: Body) => (b.errors ?? []).map((e) => e.extensions?.code)

  t.test('schema: computed fields named as PostGraphile, with their arguments; skipped functions warned', async (t) => {
    const res = await gql(`{ film: __type(name: "Film") { fields { name args { name type { kind name ofType { name } } } type { kind name ofType { kind name } } } }
      artist: __type(name: "Artist") { fields { name args { name } type { kind ofType { kind ofType { name } } } } }
      album: __type(name: "Album") { fields { name type { name } } }
      track: __type(name: "Track") { fields { name type { kind ofType { name } } } }
      customer: __type(name: "Customer") { fields { name args { name type { name } } } }
      query: __type(name: "Query") { fields { name } } mutation: __type(name: "Mutation") { fields { name } } }`)
    t.same(res.body.errors ?? [], [])
    type F = { name: string; args: { name: string; type: { kind: string; name: string | null; ofType: { name: string } | null } }[]; type: { kind: string; name?: string; ofType: unknown } }
    const fields = (k: string) => new Map(((res.body.data![k] as { fields: F[] }).fields).map((f) => [f.name, f]))
    const film = fields('film')
    t.ok(film.has('titleUpper') && film.has('secret') && film.has('minutesPer') && film.has('checked'), 'film_title_upper → Film.titleUpper')
    t.same(film.get('rentalCost')!.args.map((a) => [a.name, a.type.kind]), [['days', 'SCALAR']], 'a defaulted argument is optional')
    t.same(film.get('minutesPer')!.args.map((a) => [a.name, a.type.kind]), [['parts', 'NON_NULL']], 'an argument without default is required')
    t.same(film.get('rentalCost')!.type, { kind: 'SCALAR', name: 'Decimal', ofType: null }, 'numeric → Decimal, nullable')
    t.notOk(film.has('x') || film.has('filmX') || film.has('y') || film.has('filmY'), 'overloaded and unnamed-argument functions are left out')
    const artist = fields('artist')
    t.ok(artist.has('albumCount'), 'artist_album_count → Artist.albumCount')
    t.ok(artist.has('artistName') && artist.has('name'), 'artist_name collides with the column name: the whole name, artistName')
    t.notOk(artist.has('touch') || artist.has('artistTouch'), 'a volatile row function is not a field')
    t.same(artist.get('topTracks')!.args.map((a) => a.name).sort(), ['distinct', 'n', 'orderBy', 'skip', 'take', 'where'], 'SETOF track: the function argument and list arguments')
    t.same(fields('album').get('longestTrack')!.type.name, 'Track', 'one row of track: a nullable object field')
    t.same(fields('track').get('tags')!.type, { kind: 'LIST', ofType: { name: 'String' } }, 'SETOF text: a list of strings')
    t.same(fields('customer').get('fullName')!.args.map((a) => a.name), ['sep'])
    const roots = ((res.body.data!['query'] as { fields: { name: string }[] }).fields).map((f) => f.name)
    t.notOk(roots.some((n) => /titleUpper|filmTitleUpper|artistTopTracks|customerFullName/.test(n)), 'computed functions are not root fields')
    t.ok(roots.includes('searchFilms'), 'a SETOF function of a plain argument is still a root field')
    const muts = ((res.body.data!['mutation'] as { fields: { name: string }[] } | null)?.fields ?? []).map((f) => f.name)
    t.notOk(muts.includes('artistTouch'), 'nor a Mutation field')
    for (const [name, why] of [['artist_touch', /volatile/], ['film_x', /overloaded/], ['film_y', /unnamed/]] as const) {
      t.ok(warnings.some((w) => w.includes(name) && why.test(w)), `startup warning for ${name}`)
    }
  })

  t.test('scalar computed fields on a root list: one statement, the values of SELECT fn(row)', async (t) => {
    const res = await gql(`{ findManyFilm(orderBy: [{ filmId: asc }]) { filmId titleUpper cost2: rentalCost(days: 2) cost: rentalCost minutesPer(parts: 2) } findManyCustomer(take: 5, orderBy: [{ customerId: desc }]) { fullName dash: fullName(sep: "-") } }`)
    t.same(res.body.errors ?? [], [])
    const films = await sql(`select film_id, film_title_upper(f) as u, film_rental_cost(f, 2)::text as c2, film_rental_cost(f)::text as c, film_minutes_per(f, 2) as m from film f order by film_id`)
    t.same(res.body.data!['findManyFilm'], films.map((r) => ({ filmId: r['film_id'], titleUpper: r['u'], cost2: r['c2'], cost: r['c'], minutesPer: r['m'] })))
    const customers = await sql(`select customer_full_name(c) as a, customer_full_name(c, '-') as b from customer c order by customer_id desc limit 5`)
    t.same(res.body.data!['findManyCustomer'], customers.map((r) => ({ fullName: r['a'], dash: r['b'] })))
    t.equal(res.statements.length, 2, 'one statement per root field')
    t.match(res.statements[0], /"film_title_upper"\(t0\.\*\)/, 'the function is in the select list of the same statement')
  })

  t.test('SETOF and single-row computed fields, nested, with where/orderBy/take/skip and relations below', async (t) => {
    const q = `query($n: Int!) { findManyArtist(orderBy: [{ artistId: asc }]) { artistId albumCount artistName
      topTracks(n: $n, where: { milliseconds: { gt: 200000 } }, orderBy: [{ name: asc }], take: 3, skip: 1) { trackId name unitPrice album { title } tags }
      albums(orderBy: [{ albumId: asc }]) { albumId longestTrack { trackId milliseconds } } } }`
    const res = await gql(q, { n: 8 })
    t.same(res.body.errors ?? [], [])
    t.equal(res.statements.length, 1, 'the whole selection is one statement')
    const artists = await sql(`select a.artist_id, artist_album_count(a)::text as c, artist_name(a) as n from artist a order by artist_id`)
    const top = await sql(`select a.artist_id, t.track_id, t.name, t.unit_price::text as p, al.title, (select json_agg(x) from track_tags(t) x) as tags
      from artist a cross join lateral (select * from artist_top_tracks(a, 8) t where t.milliseconds > 200000 and t.milliseconds < ${MAX_MS} order by t.name, t.track_id limit 3 offset 1) t
      left join album al on al.album_id = t.album_id order by a.artist_id, t.name, t.track_id`)
    const longest = await sql(`select al.album_id, t.track_id, t.milliseconds from album al left join lateral album_longest_track(al) t on t.milliseconds < ${MAX_MS} order by al.album_id`)
    const albums = await sql(`select album_id, artist_id from album order by album_id`)
    const expected = artists.map((a) => ({
      artistId: a['artist_id'],
      albumCount: a['c'],
      artistName: a['n'],
      topTracks: top.filter((r) => r['artist_id'] === a['artist_id']).map((r) => ({ trackId: r['track_id'], name: r['name'], unitPrice: r['p'], album: { title: r['title'] }, tags: r['tags'] })),
      albums: albums.filter((al) => al['artist_id'] === a['artist_id']).map((al) => {
        const l = longest.find((x) => x['album_id'] === al['album_id'])!
        return { albumId: al['album_id'], longestTrack: l['track_id'] === null ? null : { trackId: l['track_id'], milliseconds: l['milliseconds'] } }
      }),
    }))
    t.same(res.body.data!['findManyArtist'], expected)
    t.ok(expected.some((a) => a.topTracks.length > 0) && expected.some((a) => a.albums.some((al) => al.longestTrack === null)), 'the data exercises both the rows and the row filter')
    const data = res.body.data!['findManyArtist'] as { artistId: number; albumCount: string; albums: { albumId: number; longestTrack: unknown }[] }[]
    t.same(data.find((a) => a.artistId === 22)?.albumCount, '0')
    t.same(data.find((a) => a.artistId === 21)?.albums, [{ albumId: 61, longestTrack: null }], 'a function returning no row (a row of NULLs): null')
  })

  t.test('Relay connections, findUnique, negative take and distinct, and a SETOF root function: still one statement', async (t) => {
    const res = await gql(`{ artistConnection(first: 4, orderBy: [{ artistId: asc }]) { edges { node { artistId albumCount topTracks(n: 3, take: -2) { trackId } } } }
      findUniqueFilm(where: { filmId: 7 }) { titleUpper }
      searchFilms(q: "a", orderBy: [{ filmId: desc }], take: 3, distinct: [rentalRate]) { filmId titleUpper rentalCost(days: 10) } }`)
    t.same(res.body.errors ?? [], [])
    t.equal(res.statements.length, 3, 'one statement per root field')
    const conn = await sql(`select a.artist_id, artist_album_count(a)::text as c,
      (select json_agg(track_id order by rn) from (select track_id, row_number() over () as rn from (select * from (select * from artist_top_tracks(a, 3) t where t.milliseconds < ${MAX_MS} order by track_id desc limit 2) x order by track_id) y) z) as ids
      from artist a order by artist_id limit 4`)
    t.same(res.body.data!['artistConnection'], { edges: conn.map((r) => ({ node: { artistId: r['artist_id'], albumCount: r['c'], topTracks: ((r['ids'] as number[] | null) ?? []).map((id) => ({ trackId: id })) } })) })
    const [u] = await sql(`select film_title_upper(f) as u from film f where film_id = 7`)
    t.same(res.body.data!['findUniqueFilm'], { titleUpper: u!['u'] })
    const search = await sql(`select film_id, film_title_upper(f) as u, film_rental_cost(f, 10)::text as c from (select distinct on (rental_rate) * from search_films('a') order by rental_rate, film_id desc) f order by film_id desc limit 3`)
    t.same(res.body.data!['searchFilms'], search.map((r) => ({ filmId: r['film_id'], titleUpper: r['u'], rentalCost: r['c'] })))
  })

  t.test('where and orderBy on computed scalar fields whose other arguments have defaults', async (t) => {
    const res = await gql(`{ findManyFilm(where: { titleUpper: { startsWith: "FILM A" }, rentalCost: { gt: "5" } }, orderBy: [{ rentalCost: desc }, { titleUpper: asc }], take: 5) { filmId }
      findManyArtist(orderBy: [{ albumCount: desc }, { artistName: desc }], take: 6, where: { albumCount: { gte: "1" } }) { artistId } }`)
    t.same(res.body.errors ?? [], [])
    t.equal(res.statements.length, 2, 'one statement per root field')
    const films = await sql(`select film_id from film f where film_title_upper(f) like 'FILM A%' and film_rental_cost(f) > 5 order by film_rental_cost(f) desc, film_title_upper(f), film_id limit 5`)
    t.same(res.body.data!['findManyFilm'], films.map((r) => ({ filmId: r['film_id'] })))
    t.ok(films.length > 0)
    const artists = await sql(`select artist_id from artist a where artist_album_count(a) >= 1 order by artist_album_count(a) desc, artist_name(a) desc, artist_id limit 6`)
    t.same((res.body.data!['findManyArtist'] as { artistId: number }[]).map((a) => a.artistId), artists.map((r) => r['artist_id']))
    const schema = await gql(`{ w: __type(name: "FilmWhereInput") { inputFields { name } } o: __type(name: "ArtistOrderByWithRelationInput") { inputFields { name } } }`)
    const names = (k: string) => ((schema.body.data![k] as { inputFields: { name: string }[] }).inputFields).map((f) => f.name)
    t.ok(names('w').includes('titleUpper') && names('w').includes('rentalCost'), 'FilmWhereInput has the computed scalars')
    t.notOk(names('w').includes('minutesPer') || names('w').includes('checked'), 'not those with a required argument')
    t.notOk(names('o').includes('topTracks'), 'nor SETOF ones')
    const relay = await gql(`{ artistConnection(first: 2, orderBy: [{ albumCount: desc }]) { edges { node { artistId } } } }`)
    t.same(codes(relay.body), ['TRB_ERR_DB_INPUT'], 'a Relay connection orders by columns only')
    const col = await gql(`{ findManyCustomer(where: { lastName: { equals: "x" } }) { customerId } }`)
    t.ok(codes(col.body).some((c) => c === 'TRB_ERR_AUTH_FORBIDDEN' || c === 'TRB_ERR_AUTH_REQUIRED'), `as a protected column in where is (${codes(col.body).join(', ')})`)
    const hidden = await gql(`{ findManyFilm(where: { secret: { gt: 1 } }) { filmId } }`)
    t.ok(codes(hidden.body).some((c) => c === 'TRB_ERR_AUTH_FORBIDDEN' || c === 'TRB_ERR_AUTH_REQUIRED'), `a protected computed field in where is refused (${codes(hidden.body).join(', ')})`)
  })

  t.test('_entities (this gateway as a Federation subgraph) selects computed fields in its one statement per type', async (t) => {
    // A second gateway, serving /graphql as a subgraph (no permissions).
    const sub = await serveGateway(t, resolveConfig({
      datasources: [database({ url: db.url, functions: ['film_title_upper', 'film_rental_cost'] })],
      operations: { dir: join(dir, 'none') },
      generatedDir: join(dir, 'generated-sub'),
      mode: 'production',
      graphql: { allowArbitraryOperationsInProduction: true },
      server: { logLevel: 'debug', federation: true },
    }), { logger: pino({ level: 'debug' }, stream) })
    statements.length = 0
    const post = await fetch(`${sub.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `query($r: [_Any!]!) { _entities(representations: $r) { ... on Film { filmId titleUpper rentalCost(days: 2) } } }`, variables: { r: [{ __typename: 'Film', filmId: 5 }, { __typename: 'Film', filmId: 9 }] } }),
    })
    const res = { body: (await post.json()) as Body, statements: [...statements] }
    t.same(res.body.errors ?? [], [])
    const rows = await sql(`select film_id, film_title_upper(f) as u, film_rental_cost(f, 2)::text as c from film f where film_id in (5, 9) order by film_id`)
    t.same(res.body.data, { _entities: rows.map((r) => ({ filmId: r['film_id'], titleUpper: r['u'], rentalCost: r['c'] })) })
    t.equal(res.statements.length, 1, 'one statement')
  })

  t.test('a stored operation selecting computed fields', async (t) => {
    statements.length = 0
    const res = await fetch(`${url}/operations/Films`)
    const body = (await res.json()) as Body
    t.same(body.errors ?? [], [])
    const rows = await sql(`select film_id, film_title_upper(f) as u, film_rental_cost(f, 4)::text as c from film f order by film_id limit 3`)
    t.equal(res.status, 200)
    t.same(body, { findManyFilm: rows.map((r) => ({ filmId: r['film_id'], titleUpper: r['u'], cost: r['c'] })) }, 'the body is the data object')
    t.equal(statements.length, 1, 'one statement')
  })

  t.test('a mutation result selects computed fields in its read-back statement', async (t) => {
    const res = await gql(`mutation { updateOneFilm(where: { filmId: 3 }, data: { title: { set: "Renamed three" } }) { filmId titleUpper rentalCost(days: 1) } }`)
    t.same(res.body.errors ?? [], [])
    const [r] = await sql(`select film_title_upper(f) as u, film_rental_cost(f, 1)::text as c from film f where film_id = 3`)
    t.same(res.body.data, { updateOneFilm: { filmId: 3, titleUpper: 'RENAMED THREE', rentalCost: r!['c'] } })
    t.equal(r!['u'], 'RENAMED THREE')
    const many = await gql(`mutation { updateManyFilm(where: { titleUpper: { equals: "RENAMED THREE" } }, data: { length: { set: 99 } }) { count } deleteManyFilm(where: { titleUpper: { equals: "NO SUCH" } }) { count } }`)
    t.same(many.body, { data: { updateManyFilm: { count: 1 }, deleteManyFilm: { count: 0 } } }, 'updateMany/deleteMany filter on a computed field')
    t.same(await sql(`select length from film where film_id = 3`), [{ length: 99 }])
  })

  t.test('a list of function names exposes only those, computed fields included', async (t) => {
    const { ctx } = testContext('cf')
    const source = await createDatabaseSource({ url: db.url, schema: db.schema!, functions: ['film_title_upper', 'artist_top_tracks', 'search_films'] }, ctx)
    t.teardown(() => source.close!())
    const fields = (type: string) => Object.keys((source.schema.getType(type) as unknown as { getFields(): Record<string, unknown> }).getFields())
    t.ok(fields('Film').includes('titleUpper') && !fields('Film').includes('rentalCost'), 'Film.titleUpper only')
    t.ok(fields('Artist').includes('topTracks') && !fields('Artist').includes('albumCount'), 'Artist.topTracks only')
    t.notOk(fields('Customer').includes('fullName'))
    t.ok(fields('Query').includes('searchFilms'))
    await t.rejects(createDatabaseSource({ url: db.url, schema: db.schema!, functions: ['artist_touch'] }, testContext('cf2').ctx), { code: 'TRB_ERR_CONFIG_INVALID', message: /artist_touch cannot be exposed/ }, 'a listed volatile row function stops the start')
  })

  t.test('field permissions: a computed field with a role is refused like a column', async (t) => {
    const anon = await gql(`{ findManyFilm(take: 2, orderBy: [{ filmId: asc }]) { filmId secret } }`)
    t.ok(codes(anon.body).some((c) => c === 'TRB_ERR_AUTH_FORBIDDEN' || c === 'TRB_ERR_AUTH_REQUIRED'), `refused without the role (${codes(anon.body).join(', ')})`)
    t.notOk(JSON.stringify(anon.body.data ?? {}).includes('"secret":7'), 'the value is never sent')
    const admin = await gql(`{ findManyFilm(take: 2, orderBy: [{ filmId: asc }]) { filmId secret } }`, undefined, await sign({ sub: 'root', roles: ['admin'] }))
    t.same(admin.body.errors ?? [], [])
    t.same(admin.body.data!['findManyFilm'], [{ filmId: 1, secret: 7 }, { filmId: 2, secret: 14 }])
  })

  t.test('errors raised by the function and bad input are coded, never internal', async (t) => {
    const zero = await gql(`{ findManyFilm(take: 3) { filmId minutesPer(parts: 0) } }`)
    t.same(codes(zero.body), ['TRB_ERR_DB_VALUE'], 'division by zero in the function: TRB_ERR_DB_VALUE')
    t.notOk(JSON.stringify(zero.body).includes('division'), 'no engine message in production')
    const raised = await gql(`query($n: Int!) { findManyFilm(take: 1) { checked(n: $n) } }`, { n: -1 })
    t.same(codes(raised.body), ['TRB_ERR_DB_VALUE'], 'RAISE EXCEPTION: TRB_ERR_DB_VALUE')
    const ok = await gql(`query($n: Int!) { findManyFilm(take: 1, orderBy: [{ filmId: asc }]) { checked(n: $n) } }`, { n: 5 })
    t.same(ok.body.data, { findManyFilm: [{ checked: 6 }] }, 'the same plan with a good value')
    const nested = await gql(`{ findManyArtist(take: 1) { albums { longestTrack { trackId } } topTracks(n: 2) { trackId } } findManyFilm(take: 1) { checked(n: -3) } }`)
    t.same(codes(nested.body), ['TRB_ERR_DB_VALUE'], 'only the failing root field fails')
    t.same(nested.body.errors?.[0]?.path, ['findManyFilm'], 'at the failing root field')
    const inMutation = await gql(`mutation { updateOneFilm(where: { filmId: 4 }, data: { title: { set: "Never" } }) { checked(n: -1) } }`)
    t.same(codes(inMutation.body), ['TRB_ERR_DB_VALUE'], 'in a mutation result: TRB_ERR_DB_VALUE')
    t.same(await sql(`select title from film where film_id = 4`), [{ title: 'Film e4' }], 'and the update is rolled back')
    for (const [query, vars] of [
      [`{ findManyArtist { topTracks(n: "x") { trackId } } }`, undefined],
      [`{ findManyArtist { topTracks { trackId } } }`, undefined],
      [`query($n: Int!) { findManyArtist { topTracks(n: $n) { trackId } } }`, { n: 2 ** 40 }],
      [`{ findManyFilm { rentalCost(days: 1.5) } }`, undefined],
      [`{ findManyFilm { titleUpper(x: 1) } }`, undefined],
    ] as const) {
      const res = await gql(query, vars)
      // GraphQL over HTTP here: status 200 with coded errors (TRB_ERR_GRAPHQL_VALIDATION is a 400 class error).
      t.equal(res.status, 200, `${query}: a GraphQL answer`)
      t.same(codes(res.body), ['TRB_ERR_GRAPHQL_VALIDATION'], `${query}: refused by validation, no data`)
      t.equal(res.statements.length, 0, `${query}: no statement`)
    }
    const huge = await gql(`{ findManyArtist(take: 1) { topTracks(n: 5, take: 1000000) { trackId } } }`)
    t.ok(codes(huge.body).some((c) => c === 'TRB_ERR_DB_INPUT' || c === 'TRB_ERR_GRAPHQL_LIMIT'), `a take above maxTake is refused (${codes(huge.body).join(', ')})`)
    t.equal(huge.statements.length, 0, 'before any statement')
    const args = await gql(`query($s: String) { findManyCustomer(take: 1, orderBy: [{ customerId: asc }]) { fullName(sep: $s) } }`, { s: "'); drop table film; --" })
    t.same(args.body.data, { findManyCustomer: [{ fullName: "First1'); drop table film; --Last1" }] }, 'arguments are bound, never spliced')
    t.same(await sql(`select count(*)::int as n from film`), [{ n: 50 }])
  })
}
