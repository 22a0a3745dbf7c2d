/**
 * Batched links inside a database's direct plan (gateway/operations/direct-links.ts; README "Links",
 * "Inside a database's one statement"), through real HTTP against real upstreams on 127.0.0.1: a copy
 * of the Chinook SQLite database, the federation example's countries REST API and a REST API that
 * answers values GraphQL must refuse. Every answer is compared with GraphQL execution of the same
 * document on the same schema (graphql-js, resolvers, link per parent): same JSON text, same errors
 * at the same paths, same number of upstream calls. Attacks: parent data that spells a marker, a
 * client alias that takes a marker's name, fragments that double a link's selection at every level.
 */
import t, { type Test } from 'tap'
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import { execute, parse, type OperationDefinitionNode } from 'graphql'
import { resolveConfig, type LinkDefinition } from '../gateway/config/index.js'
import { compileDirectOperation } from '../gateway/operations/direct-plan.js'
import { createCountriesService } from '../examples/federation/services/countries.js'
import { chinook } from './helpers/chinook.js'
import { serveGateway } from './helpers/serve.js'

const root = fileURLToPath(new URL('..', import.meta.url))

/** A REST API whose items GraphQL must partly refuse: `label` is required but null for Germany, `size` an Int but "big" for France. */
async function thingsApi(t: Test) {
  const app = Fastify()
  const calls: string[] = []
  app.get('/openapi.json', async (req) => ({
    openapi: '3.0.3',
    info: { title: 'things', version: '1' },
    servers: [{ url: `http://${req.headers.host}` }],
    paths: {
      '/things': {
        get: {
          operationId: 'listThings',
          parameters: [{ name: 'codes', in: 'query', required: true, schema: { type: 'string' } }],
          responses: {
            200: {
              description: 'the things',
              content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Thing' } } } },
            },
          },
        },
      },
    },
    components: {
      schemas: {
        // `left` and `right` (never sent): a recursive type, for the fragment attack.
        Thing: { type: 'object', required: ['code', 'label'], properties: { code: { type: 'string' }, label: { type: 'string' }, size: { type: 'integer' }, left: { $ref: '#/components/schemas/Thing' }, right: { $ref: '#/components/schemas/Thing' } } },
      },
    },
  }))
  app.get('/things', async (req) => {
    calls.push(req.url)
    const codes = String((req.query as { codes: string }).codes).split(',')
    return codes.map((code) => ({ code, label: code === 'Germany' ? null : code.toUpperCase(), size: code === 'France' ? 'big' : code.length }))
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, calls }
}

const links: LinkDefinition[] = [
  { on: 'chinook_Customer', field: 'countryInfo', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name' } },
  { on: 'chinook_Customer', field: 'countryMany', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name' }, many: true },
  { on: 'chinook_Customer', field: 'countryChunked', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'country', match: 'name', maxKeys: 5 }, concurrency: 2 },
  { on: 'chinook_Customer', field: 'stateAsCountry', target: 'geo_listCountries', args: { names: '$keys' }, batch: { key: 'state', match: 'name' } },
  { on: 'chinook_Customer', field: 'thing', target: 'things_listThings', args: { codes: '$keys' }, batch: { key: 'country', match: 'code' } },
  // Not served by the direct plan (not batched): the root field runs through GraphQL execution.
  { on: 'chinook_Customer', field: 'countryByName', target: 'geo_getCountry', args: { name: '$parent.country' } },
]

/** A stored operation whose link values partly fail. */
const CUSTOMER_THINGS = 'query CustomerThings { chinook_findManyCustomer(take: 45, orderBy: [{ customerId: asc }]) { customerId thing { code label size } } }'

/** The gateway: Chinook as a writable SQLite copy (with the attack's rows), or `databaseUrl` (a shared read-only copy on another engine). */
async function start(t: Test, databaseUrl?: string) {
  const countries = await createCountriesService({})
  const countryCalls: string[] = []
  countries.addHook('onRequest', async (req) => {
    if (req.url !== '/openapi.json') countryCalls.push(decodeURIComponent(req.url))
  })
  await countries.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => countries.close())
  const things = await thingsApi(t)
  const dir = mkdtempSync(join(tmpdir(), 'tributary-direct-links-'))
  const file = join(dir, 'chinook.sqlite')
  if (!databaseUrl) {
    copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), file)
    // Parent data that spells markers, in a column selected next to the link (attack).
    const db = new Database(file)
    db.prepare('UPDATE Customer SET FirstName = ? WHERE CustomerId = 1').run('","__trb_link0":"Brazil')
    db.prepare('UPDATE Customer SET LastName = ? WHERE CustomerId = 2').run('{"__trb_link0":1}')
    db.close()
  }
  mkdirSync(join(dir, 'operations'))
  writeFileSync(join(dir, 'operations', 'CustomersWithCountry.graphql'), 'query CustomersWithCountry($take: Int = 10) { chinook_findManyCustomer(take: $take, orderBy: [{ customerId: asc }]) { customerId countryInfo { capital currency } } }')
  writeFileSync(join(dir, 'operations', 'CustomerThings.graphql'), CUSTOMER_THINGS)
  const countriesUrl = `http://127.0.0.1:${(countries.server.address() as { port: number }).port}`
  const { gateway, url } = await serveGateway(
    t,
    resolveConfig({
      datasources: [
        { kind: 'database', namespace: 'chinook', url: databaseUrl ?? `sqlite:${file}` },
        { kind: 'rest', namespace: 'geo', openapi: `${countriesUrl}/openapi.json` },
        { kind: 'rest', namespace: 'things', openapi: `${things.url}/openapi.json`, retry: { retries: 0 } },
      ],
      links,
      operations: { dir: join(dir, 'operations') },
      generatedDir: join(dir, 'generated'),
    }),
  )
  /** The document's direct plan (null when it has none). */
  const plan = (query: string) => {
    const document = parse(query)
    return compileDirectOperation(gateway.schema, document, document.definitions.find((d) => d.kind === 'OperationDefinition') as OperationDefinitionNode)
  }
  /** `run`'s answer with the number of upstream calls made meanwhile. */
  const counted = async <T>(run: () => Promise<T>): Promise<T & { calls: number }> => {
    countryCalls.length = 0
    things.calls.length = 0
    const answer = await run()
    return { ...answer, calls: countryCalls.length + things.calls.length }
  }
  /** GraphQL execution of the document (graphql-js with the resolvers: links resolved per parent), as JSON text, and the calls it made. */
  const executed = (query: string) =>
    counted(async () => {
      const result = await execute({ schema: gateway.schema, document: parse(query), contextValue: { headers: {} } })
      return { result: JSON.parse(JSON.stringify(result)) as { data?: any; errors?: any[] }, text: JSON.stringify(result.data) }
    })
  /** POST /graphql, as JSON text of `data`, and the calls it made. */
  const served = (query: string) =>
    counted(async () => {
      const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })
      const body = (await res.json()) as { data?: any; errors?: any[] }
      return { status: res.status, body, text: JSON.stringify(body.data) }
    })
  return { url, plan, executed, served, countryCalls, things }
}

/** Errors as sorted `{ message, path, locations }`, to compare two lists whatever their order. */
const errorSet = (errors: any[] | undefined) =>
  (errors ?? []).map((e) => JSON.stringify({ message: e.message, path: e.path, locations: e.locations })).sort()

t.test('the direct plan serves batched REST links: the same JSON text and the same calls as GraphQL execution', async (t) => {
  const { plan, executed, served } = await start(t)
  const queries: Record<string, string> = {
    'a link between two columns, __typename in it': '{ chinook_findManyCustomer(take: 59, orderBy: [{ customerId: asc }]) { customerId countryInfo { name capital __typename } firstName lastName } }',
    'two aliases of one link: one call each': '{ a: chinook_findManyCustomer(take: 7, orderBy: [{ customerId: desc }]) { c: countryInfo { cap: capital } d: countryInfo { currency } } }',
    'many: the list of every match': '{ chinook_findManyCustomer(take: 12) { customerId countryMany { name callingCode } } }',
    'more keys than maxKeys: one call per 5 keys': '{ chinook_findManyCustomer(take: 59, orderBy: [{ customerId: asc }]) { customerId countryChunked { name } } }',
    'null keys and keys that match nothing': '{ chinook_findManyCustomer(take: 59) { customerId state stateAsCountry { name } } }',
    'a link below a relation': '{ chinook_findManyInvoice(take: 15, orderBy: [{ invoiceId: asc }]) { invoiceId customer { customerId countryInfo { capital } } } }',
    'a findUnique root and an inline fragment': '{ chinook_findUniqueCustomer(where: { customerId: 5 }) { ... on chinook_Customer { countryInfo { name } } email } }',
    'fragments inside the link selection': '{ chinook_findManyCustomer(take: 4) { countryInfo { ...F ... on geo_Country { currency } } } } fragment F on geo_Country { capital }',
    'two root fields, one without links': '{ chinook_findManyCustomer(take: 3) { countryInfo { name } } chinook_findManyArtist(take: 2) { name } }',
  }
  for (const [name, query] of Object.entries(queries)) {
    const direct = plan(query)
    t.ok(direct?.upstream, `${name}: a direct plan that calls upstream`)
    const expected = await executed(query)
    t.notOk(expected.result.errors, `${name}: execution has no errors`)
    const got = await served(query)
    t.equal(got.status, 200, name)
    t.notOk(got.body.errors, `${name}: no errors`)
    t.equal(got.text, expected.text, `${name}: the same JSON text`)
    t.equal(got.calls, expected.calls, `${name}: the same number of upstream calls (${expected.calls})`)
  }
  t.equal((await served(queries['more keys than maxKeys: one call per 5 keys']!)).calls, 5, '24 countries in calls of 5')
  t.equal((await served(queries['two aliases of one link: one call each']!)).calls, 2)
})

t.test('attack: parent data and client aliases that spell a marker change nothing', async (t) => {
  const { plan, executed, served } = await start(t)
  // Customers 1 and 2 hold marker text in their names (see start): escaped in the JSON, never read as markers.
  const names = '{ chinook_findManyCustomer(take: 3, orderBy: [{ customerId: asc }]) { firstName countryInfo { name } lastName } }'
  t.ok(plan(names)?.upstream)
  const expected = await executed(names)
  const got = await served(names)
  t.equal(got.text, expected.text)
  t.equal(got.body.data.chinook_findManyCustomer[0].firstName, '","__trb_link0":"Brazil')
  t.equal(got.body.data.chinook_findManyCustomer[0].countryInfo.name, 'Brazil')
  // An alias with a marker's name: no direct plan, the answer of GraphQL execution.
  const alias = '{ chinook_findManyCustomer(take: 3) { __trb_link0: country countryInfo { name } } }'
  t.equal(plan(alias), null, 'no direct plan for a document using the marker prefix')
  t.equal((await served(alias)).text, (await executed(alias)).text)
})

t.test('attack: fragments that spread the next one twice per level compile once per field node', async (t) => {
  const { plan, executed, served } = await start(t)
  // 30 levels, each spreading the next under `left` and `right`: 2^30 completions if each spread were compiled apart.
  const levels = 30
  const fragments = Array.from({ length: levels }, (_, i) =>
    i < levels - 1 ? `fragment F${i} on things_Thing { code left { ...F${i + 1} } right { ...F${i + 1} } }` : `fragment F${i} on things_Thing { code label }`,
  )
  const deep = `{ chinook_findManyCustomer(take: 3, orderBy: [{ customerId: asc }]) { customerId thing { ...F0 } } } ${fragments.join(' ')}`
  t.ok(plan(deep)?.upstream, 'a direct plan, compiled at once (the test would time out otherwise)')
  // Over HTTP the expanded document is over graphql.maxSelections: refused with its code, before anything runs.
  const refused = await served(deep)
  t.equal(refused.body.errors?.[0]?.extensions?.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(refused.body.errors?.[0]?.message, /maxSelections/)
  t.notOk(refused.body.data, 'no data')
  t.equal(refused.calls, 0)
  // Within the depth limit, the same shape answers as execution does.
  const shallow = `{ chinook_findManyCustomer(take: 3, orderBy: [{ customerId: asc }]) { customerId thing { ...G0 } } } fragment G0 on things_Thing { code left { ...G1 } right { ...G1 } } fragment G1 on things_Thing { code label }`
  const expected = await executed(shallow)
  const got = await served(shallow)
  t.equal(got.status, 200)
  t.equal(got.text, expected.text)
})

t.test('what the direct plan does not serve runs through GraphQL execution, with the same answers', async (t) => {
  const { plan, executed, served } = await start(t)
  const cases: Record<string, string> = {
    'a link without batch': '{ chinook_findManyCustomer(take: 3) { countryByName { name } } }',
    'a link field in a named fragment': '{ chinook_findManyCustomer(take: 3) { ...C } } fragment C on chinook_Customer { countryInfo { name } }',
    'a link field under @include': '{ chinook_findManyCustomer(take: 3) { countryInfo @include(if: true) { name } } }',
    'a response key selected twice': '{ chinook_findManyCustomer(take: 3) { countryInfo { name } countryInfo { capital } } }',
  }
  for (const [name, query] of Object.entries(cases)) {
    t.equal(plan(query), null, `${name}: no direct plan`)
    const got = await served(query)
    t.equal(got.status, 200, name)
    t.equal(got.text, (await executed(query)).text, `${name}: the answer of execution`)
  }
})

t.test('values GraphQL refuses: null up to the nearest nullable field and an error at its path, as execution gives them', async (t) => {
  const { plan, executed, served, url, things } = await start(t)
  const query = '{ chinook_findManyCustomer(take: 45, orderBy: [{ customerId: asc }]) { customerId country thing { code label size } } }'
  t.ok(plan(query)?.upstream)
  const expected = await executed(query)
  const got = await served(query)
  t.equal(got.status, 200)
  t.equal(got.text, expected.text, 'the same data, nulls included')
  t.same(errorSet(got.body.errors), errorSet(expected.result.errors), 'the same errors at the same paths')
  const rows = got.body.data.chinook_findManyCustomer as Array<{ country: string; thing: { size: number | null } | null }>
  const i = rows.findIndex((r) => r.country === 'Germany')
  const f = rows.findIndex((r) => r.country === 'France')
  t.ok(i >= 0 && f >= 0)
  t.equal(rows[i]!.thing, null, 'a null label (non-null): the thing is null')
  t.equal(rows[f]!.thing!.size, null, 'an Int that does not serialise (nullable): only size is null')
  t.ok(got.body.errors!.some((e) => JSON.stringify(e.path) === JSON.stringify(['chinook_findManyCustomer', i, 'thing', 'label'])))
  t.ok(got.body.errors!.some((e) => JSON.stringify(e.path) === JSON.stringify(['chinook_findManyCustomer', f, 'thing', 'size'])))
  t.equal(things.calls.length, 1, 'one call')

  // A stored operation takes the same path (/operations), with the same data and errors.
  const stored = await executed(CUSTOMER_THINGS)
  things.calls.length = 0
  const res = await fetch(`${url}/operations/CustomerThings`)
  const body = (await res.json()) as { data: any; errors: any[] }
  t.same(body.data, stored.result.data)
  t.same(errorSet(body.errors), errorSet(stored.result.errors))
  t.ok(body.errors.length >= 2)
  t.equal(things.calls.length, 1)

  // The stored operation without errors: the data object, the same as execution's.
  const op = await fetch(`${url}/operations/CustomersWithCountry?take=30`)
  t.equal(op.status, 200)
  t.equal(await op.text(), (await executed('{ chinook_findManyCustomer(take: 30, orderBy: [{ customerId: asc }]) { customerId countryInfo { capital currency } } }')).text)
})

t.test('a target that is down: every parent it served gets null and its own error, the other link and the columns intact', async (t) => {
  const { plan, executed, served, things } = await start(t)
  const query = '{ chinook_findManyCustomer(take: 6, orderBy: [{ customerId: asc }]) { customerId thing { code } countryInfo { name } } }'
  t.ok(plan(query)?.upstream)
  await things.app.close()
  const expected = await executed(query)
  const got = await served(query)
  t.equal(got.status, 200)
  t.equal(got.text, expected.text, 'the same data')
  t.same(errorSet(got.body.errors), errorSet(expected.result.errors), 'the same errors at the same paths')
  t.equal(got.body.errors!.length, 6, 'one error per parent')
  t.ok(got.body.errors!.every((e) => e.extensions.code === 'TRB_ERR_UPSTREAM'))
  const rows = got.body.data.chinook_findManyCustomer as Array<{ thing: unknown; countryInfo: { name: string } | null }>
  t.ok(rows.every((r) => r.thing === null && r.countryInfo !== null))
})

for (const dialect of ['postgres', 'mysql'] as const) t.test(`on ${dialect}: the same JSON text and errors as GraphQL execution`, async (t) => {
  const db = await chinook(dialect)
  if (db.skipReason) {
    t.comment(`skipped: ${db.skipReason}`)
    return
  }
  const { plan, executed, served } = await start(t, db.url)
  for (const query of [
    '{ chinook_findManyCustomer(take: 59, orderBy: [{ customerId: asc }]) { customerId countryInfo { name capital __typename } firstName } }',
    '{ chinook_findManyInvoice(take: 15, orderBy: [{ invoiceId: asc }]) { invoiceId customer { customerId countryMany { name } } } }',
    '{ chinook_findManyCustomer(take: 45, orderBy: [{ customerId: asc }]) { customerId thing { code label size } stateAsCountry { name } } }',
  ]) {
    t.ok(plan(query)?.upstream, `a direct plan: ${query.slice(0, 50)}`)
    const expected = await executed(query)
    const got = await served(query)
    t.equal(got.text, expected.text, `the same JSON text: ${query.slice(0, 50)}`)
    t.same(errorSet(got.body.errors), errorSet(expected.result.errors), 'the same errors')
    t.equal(got.calls, expected.calls, 'the same calls')
  }
})
