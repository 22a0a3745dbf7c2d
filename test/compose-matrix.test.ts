/**
 * Composition matrix (issue 9 §1): every connector kind — database on SQLite, PostgreSQL and MariaDB,
 * rest (a real OpenAPI upstream on 127.0.0.1), graphql (a real GraphQL upstream on 127.0.0.1) and a
 * local schema() — uses every shared scalar (`DateTime JSON BigInt Decimal Bytes`). Every pair of
 * kinds (a kind with itself: two namespaces over one database, document or upstream) is composed into
 * one gateway, served over real HTTP, and values of every scalar are written through one source and
 * read back through the other, both ways: with variables one way, with literals in the document the
 * other. Then ten sources at once. PostgreSQL and MariaDB pairs skip with a message when the server
 * is unreachable.
 */
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import mercurius from 'mercurius'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { Knex } from 'knex'
import { pino } from 'pino'
import { resolveConfig, type DataSourceDefinition } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { freshDatabase, type TestDatabase } from './helpers/chinook.js'
import type { Dialect } from '../gateway/connectors/database/model.js'
import { bytesOf } from '../gateway/scalars.js'

/** One value of every shared scalar, in its wire form: what every source must give back exactly. */
const VALUES = {
  at: '2026-11-20T10:11:12.345Z',
  doc: { a: 1, nested: { list: [1, 'two', { three: true }], none: null, text: 'é ü "q"' } },
  big: '9007199254740993', // 2^53 + 1
  dec: '12345678901234.567891', // 20 significant digits
  bin: Buffer.from([0, 1, 2, 0x7f, 0x80, 0xfa, 0xfe, 0xff]).toString('base64'), // AAECf4D6/v8=
}
type Values = typeof VALUES
/**
 * SQLite keeps 15 significant digits of a value in a `decimal` column (NUMERIC affinity stores it as
 * a REAL, sqlite.org/datatype3.html §3): pairs with SQLite use a 15-digit Decimal.
 */
const V15 = { ...VALUES, dec: '123456789.123456' }
const SELECTION = '{ at doc big dec bin }'
const VAR_DEFS = '$id: Int!, $at: DateTime!, $doc: JSON!, $big: BigInt!, $dec: Decimal!, $bin: Bytes!'

/** GraphQL literal of a JSON value (object keys unquoted). */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`
  if (value !== null && typeof value === 'object') return `{ ${Object.entries(value).map(([k, v]) => `${k}: ${literal(v)}`).join(', ')} }`
  return JSON.stringify(value)
}

/** The arguments of a write: `$var` references, or literals of the values. */
function fields(values: Values | null): string {
  if (!values) return 'id: $id, at: $at, doc: $doc, big: $big, dec: $dec, bin: $bin'
  return Object.entries(values).map(([k, v]) => `${k}: ${literal(v)}`).join(', ')
}

/** One kind of source: its declaration and the root fields that write and read one item. */
interface Kind {
  name: string
  /** Set when the kind cannot run here (service down): the pairs with it are skipped with it. */
  skip?: string
  /** False when Decimals keep 15 significant digits only (SQLite). */
  exactDecimal?: boolean

  source(namespace: string): DataSourceDefinition
  /** A root field that stores an item and selects it back; `values` null → variables. */
  write(ns: string, id: number, values: Values | null): string
  read(ns: string, id: number): string
}

// ---------------------------------------------------------------- the REST upstream

const openapi = (baseUrl: string) => ({
  openapi: '3.0.3',
  info: { title: 'items', version: '1' },
  servers: [{ url: baseUrl }],
  paths: {
    '/items': {
      post: {
        operationId: 'createItem',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } },
        responses: { '201': { description: 'stored', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
      },
    },
    '/items/{id}': {
      get: {
        operationId: 'getItem',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', format: 'int32' } }],
        responses: { '200': { description: 'the item', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
      },
    },
  },
  components: {
    schemas: {
      Item: {
        type: 'object',
        required: ['id'],
        properties: {
          id: { type: 'integer', format: 'int32' },
          at: { type: 'string', format: 'date-time' },
          doc: { type: 'object', additionalProperties: true },
          big: { type: 'integer', format: 'int64' },
          dec: { type: 'string', format: 'decimal' },
          bin: { type: 'string', format: 'byte' },
        },
      },
    },
  },
})

/**
 * A REST upstream that keeps each item's JSON text as it came (like a server with exact int64
 * numbers) and serves it back; `seen` records every stored body.
 */
async function startRest(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const items = new Map<string, string>()
  const seen: string[] = []
  let url = ''
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const send = (status: number, body: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(body)
      if (req.method === 'GET' && req.url === '/openapi.json') return send(200, JSON.stringify(openapi(url)))
      if (req.method === 'POST' && req.url === '/items') {
        const text = Buffer.concat(chunks).toString('utf8')
        seen.push(text)
        const id = /"id"\s*:\s*(\d+)/.exec(text)?.[1] ?? ''
        items.set(id, text)
        return send(201, text)
      }
      const m = /^\/items\/(\d+)$/.exec(req.url ?? '')
      if (req.method === 'GET' && m && items.has(m[1]!)) return send(200, items.get(m[1]!)!)
      return send(404, '{"message":"not found"}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, seen, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

// ---------------------------------------------------------------- the GraphQL upstream

const ITEM_SDL = `
  scalar DateTime
  scalar JSON
  scalar BigInt
  scalar Decimal
  scalar Bytes
  type Item { id: Int! at: DateTime doc: JSON big: BigInt dec: Decimal bin: Bytes }
  input ItemInput { id: Int! at: DateTime doc: JSON big: BigInt dec: Decimal bin: Bytes }
`

/**
 * A GraphQL upstream whose scalars are declared in SDL only (values stored and served as they come
 * over the wire: ISO strings, base64, digit strings). `seen` records every stored input.
 */
async function startGraphQL(): Promise<{ url: string; seen: unknown[]; close(): Promise<void> }> {
  const items = new Map<number, Record<string, unknown>>()
  const seen: unknown[] = []
  const app = Fastify()
  await app.register(mercurius, {
    schema: `${ITEM_SDL} type Query { item(id: Int!): Item } type Mutation { createItem(input: ItemInput!): Item }`,
    resolvers: {
      Query: { item: (_: unknown, a: { id: number }) => items.get(a.id) ?? null },
      Mutation: {
        createItem: (_: unknown, a: { input: Record<string, unknown> }) => {
          seen.push(a.input)
          items.set(a.input.id as number, a.input)
          return a.input
        },
      },
    },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, seen, close: () => app.close() }
}

// ---------------------------------------------------------------- the kinds

const migrations = (dialect: Dialect) => ({
  '001-item': {
    async up(knex: Knex) {
      await knex.schema.createTable('item', (tb) => {
        tb.integer('id').primary()
        tb.datetime('at', { precision: 3 })
        tb.json('doc')
        tb.bigInteger('big')
        tb.specificType('dec', 'decimal(30,6)')
        tb.specificType('bin', dialect === 'postgres' ? 'bytea' : dialect === 'mysql' ? 'varbinary(64)' : 'blob')
      })
    },
  },
})

function databaseKind(name: string, db: TestDatabase): Kind {
  return {
    name,
    skip: db.skipReason,
    exactDecimal: db.dialect !== 'sqlite',
    source: (namespace) => ({ kind: 'database', namespace, url: db.url, migrations: migrations(db.dialect) }),
    write: (ns, id, values) => `${ns}_createOneItem(data: { ${values ? `id: ${id}, ${fields(values)}` : fields(null)} }) ${SELECTION}`,
    read: (ns, id) => `${ns}_findUniqueItem(where: { id: ${id} }) ${SELECTION}`,
  }
}

function restKind(openapiUrl: string): Kind {
  return {
    name: 'rest',
    source: (namespace) => ({ kind: 'rest', namespace, openapi: openapiUrl }),
    write: (ns, id, values) => `${ns}_createItem(input: { ${values ? `id: ${id}, ${fields(values)}` : fields(null)} }) ${SELECTION}`,
    read: (ns, id) => `${ns}_getItem(id: ${id}) ${SELECTION}`,
  }
}

function graphqlKind(url: string): Kind {
  return {
    name: 'graphql',
    source: (namespace) => ({ kind: 'graphql', namespace, url }),
    write: (ns, id, values) => `${ns}_createItem(input: { ${values ? `id: ${id}, ${fields(values)}` : fields(null)} }) ${SELECTION}`,
    read: (ns, id) => `${ns}_item(id: ${id}) ${SELECTION}`,
  }
}

/** A local schema() source over one in-memory store (shared by its namespaces, like one database). */
function schemaKind(): Kind {
  const items = new Map<number, Record<string, unknown>>()
  return {
    name: 'schema',
    source: (namespace) => ({
      kind: 'schema',
      namespace,
      typeDefs: `${ITEM_SDL} type Query { item(id: Int!): Item } type Mutation { createItem(input: ItemInput!): Item }`,
      resolvers: {
        Query: { item: (_: unknown, a: { id: number }) => items.get(a.id) ?? null },
        Mutation: {
          createItem: (_: unknown, a: { input: Record<string, unknown> }) => {
            // The shared scalars' parsed forms: a Date, a JSON value, digit strings, a Buffer (graphql-jit
            // inlines the literals of a document as JSON: a Bytes literal arrives as a Buffer's JSON form).
            const { at, bin, big, dec } = a.input
            if (!(at instanceof Date) || !bytesOf(bin) || typeof big !== 'string' || typeof dec !== 'string') throw new Error('not the shared scalars')
            items.set(a.input.id as number, a.input)
            return a.input
          },
        },
      },
    }),
    write: (ns, id, values) => `${ns}_createItem(input: { ${values ? `id: ${id}, ${fields(values)}` : fields(null)} }) ${SELECTION}`,
    read: (ns, id) => `${ns}_item(id: ${id}) ${SELECTION}`,
  }
}

// ---------------------------------------------------------------- the gateway

interface Served {
  post(query: string, variables?: Record<string, unknown>): Promise<{ data?: Record<string, unknown>; errors?: unknown[] }>
  close(): Promise<void>
}

async function serve(datasources: DataSourceDefinition[]): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-matrix-'))
  const config = resolveConfig({ datasources, operations: { dir: join(dir, 'none') }, generatedDir: dir })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`
  return {
    async post(query, variables) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      return (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] }
    },
    async close() {
      await app.close()
      await gateway.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

let nextId = 1


/**
 * Writes `V` through `from` (variables or literals), reads it back there, writes what was read
 * through `to` the other way, and reads it back through `to`: every value must be `V` exactly.
 */
async function roundTrip(t: Test, gw: Served, from: [Kind, string], to: [Kind, string], mode: 'variables' | 'literals'): Promise<void> {
  const [a, nsA] = from
  const [b, nsB] = to
  const V = a.exactDecimal === false || b.exactDecimal === false ? V15 : VALUES
  const idA = nextId++
  const idB = nextId++
  const write = async (k: Kind, ns: string, id: number, values: Values) =>
    mode === 'variables'
      ? gw.post(`mutation(${VAR_DEFS}) { w: ${k.write(ns, id, null)} }`, { id, ...values })
      : gw.post(`mutation { w: ${k.write(ns, id, values)} }`)
  const label = `${a.name}(${nsA}) → ${b.name}(${nsB}), ${mode}`
  const wroteA = await write(a, nsA, idA, V)
  t.same(wroteA, { data: { w: V } }, `${label}: written through ${nsA}`)
  const readA = await gw.post(`{ r: ${a.read(nsA, idA)} }`)
  t.same(readA, { data: { r: V } }, `${label}: read back through ${nsA}`)
  const fromA = (readA.data?.r ?? V) as Values
  const wroteB = await write(b, nsB, idB, fromA)
  t.same(wroteB, { data: { w: V } }, `${label}: written through ${nsB}`)
  const both = await gw.post(`{ a: ${a.read(nsA, idA)} b: ${b.read(nsB, idB)} }`)
  t.same(both, { data: { a: V, b: V } }, `${label}: read back through both in one request`)
}

// ---------------------------------------------------------------- the matrix

t.test('composition matrix: every pair of kinds, every shared scalar, over HTTP', async (t) => {
  const rest = await startRest()
  const gql = await startGraphQL()
  const dbs = await Promise.all((['sqlite', 'postgres', 'mysql'] as const).map((d) => freshDatabase(d, `matrix_${d}`)))
  t.teardown(async () => {
    await rest.close()
    await gql.close()
    for (const db of dbs) await db.cleanup()
  })
  const kinds: Kind[] = [
    databaseKind('sqlite', dbs[0]!),
    databaseKind('postgres', dbs[1]!),
    databaseKind('mariadb', dbs[2]!),
    restKind(`${rest.url}/openapi.json`),
    graphqlKind(gql.url),
    schemaKind(),
  ]
  const started = performance.now()
  for (let i = 0; i < kinds.length; i++) {
    for (let j = i; j < kinds.length; j++) {
      const a = kinds[i]!
      const b = kinds[j]!
      // The same kind twice: two namespaces over one database, document or upstream.
      const [nsA, nsB] = i === j ? [`${a.name}_one`, `${a.name}_two`] : [a.name, b.name]
      await t.test(`${a.name} + ${b.name}`, { skip: a.skip ?? b.skip ?? false }, async (t) => {
        const gw = await serve([a.source(nsA), b.source(nsB)])
        t.teardown(() => gw.close())
        await roundTrip(t, gw, [a, nsA], [b, nsB], 'variables')
        await roundTrip(t, gw, [b, nsB], [a, nsA], 'literals')
      })
    }
  }
  t.comment(`${kinds.length * (kinds.length + 1) / 2} pairs in ${Math.round(performance.now() - started)} ms`)

  t.test('the upstreams received the wire forms', async (t) => {
    const V = VALUES
    const body = rest.seen.find((s) => s.includes(V.dec))
    t.match(body, `"big":${V.big}`, 'REST: the int64 went out as an exact JSON number')
    t.match(body, `"at":"${V.at}"`)
    t.match(body, `"bin":"${V.bin}"`)
    t.match(body, `"dec":"${V.dec}"`)
    t.same(JSON.parse(body!.replace(`"big":${V.big}`, '"big":0')).doc, V.doc)
    const got = gql.seen.find((s) => (s as Values).dec === V.dec)
    t.same({ ...(got as Values), id: 0 }, { ...V, id: 0 }, 'GraphQL: ISO string, digit strings, base64, the JSON object')
  })

  await t.test('ten sources at once', { skip: dbs.find((d) => d.skipReason)?.skipReason ?? false }, async (t) => {
    const pick = (name: string) => kinds.find((k) => k.name === name)!
    const ten: [Kind, string][] = [
      [pick('sqlite'), 'ten_sqlite_a'], [pick('sqlite'), 'ten_sqlite_b'],
      [pick('postgres'), 'ten_pg'], [pick('mariadb'), 'ten_maria'],
      [pick('rest'), 'ten_rest_a'], [pick('rest'), 'ten_rest_b'],
      [pick('graphql'), 'ten_gql_a'], [pick('graphql'), 'ten_gql_b'],
      [pick('schema'), 'ten_schema_a'], [pick('schema'), 'ten_schema_b'],
    ]
    // Two sources over one SQLite file: only the first runs the (already applied) migrations, as two
    // migrating sources on one file at once can fail with SQLITE_BUSY on knex's lock table.
    const gw = await serve(ten.map(([k, ns]) => (ns === 'ten_sqlite_b' ? { ...k.source(ns), migrations: undefined } : k.source(ns))))
    t.teardown(() => gw.close())
    const V = V15
    const ids = ten.map(() => nextId++)
    const wrote = await gw.post(`mutation { ${ten.map(([k, ns], i) => `w${i}: ${k.write(ns, ids[i]!, V)}`).join(' ')} }`)
    t.same(wrote, { data: Object.fromEntries(ten.map((_, i) => [`w${i}`, V])) }, 'ten writes in one request')
    const read = await gw.post(`{ ${ten.map(([k, ns], i) => `r${i}: ${k.read(ns, ids[i]!)}`).join(' ')} }`)
    t.same(read, { data: Object.fromEntries(ten.map((_, i) => [`r${i}`, V])) }, 'ten reads in one request')
  })
})
