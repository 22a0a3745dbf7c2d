/**
 * Introspection is not refused for size (issue 29.5): with many large REST sources the schema's
 * introspection answer is larger than `server.maxResponseBytes`, and a `/graphql` document that
 * selects introspection fields only is bounded by `server.maxIntrospectionBytes` instead. Data stays
 * under `maxResponseBytes` (a document mixing introspection and data is data), and the introspection
 * bound is a bound too: aliasing `__schema` past it is a 400 `TRB_ERR_GRAPHQL_LIMIT`. The limits are
 * scaled down (128 KiB / 1 MiB) so the file stays fast; the defaults are 16 MiB / 128 MiB.
 */
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery } from 'graphql'
import { resolveConfig, schema } from '../gateway/config/index.js'
import { serveGateway } from './helpers/serve.js'
import { largeOpenApi } from './helpers/large-openapi.js'

const MAX_RESPONSE = 128 * 1024
const MAX_INTROSPECTION = 1024 * 1024
const SOURCES = ['billing', 'repos', 'music', 'chat', 'voice', 'tasks']

const dir = mkdtempSync(join(tmpdir(), 'tributary-introspection-size-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const datasources = SOURCES.map((name) => {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(largeOpenApi({ name, resources: 5, properties: 6 })))
  return { kind: 'rest' as const, namespace: name, openapi: file }
})
const config = resolveConfig({
  mode: 'development',
  datasources: [...datasources, schema({ typeDefs: 'type Query { pad(n: Int!): String }', resolvers: { Query: { pad: (_: unknown, a: { n: number }) => 'x'.repeat(a.n) } } })],
  generatedDir: join(dir, 'generated'),
  server: { maxResponseBytes: MAX_RESPONSE, maxIntrospectionBytes: MAX_INTROSPECTION },
})
const { url } = await serveGateway(t, config, { cwd: dir })

async function post(query: string) {
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query }) })
  const text = await res.text()
  return { status: res.status, size: Buffer.byteLength(text), body: JSON.parse(text) as { data?: Record<string, unknown>; errors?: Array<{ message: string; extensions: { code: string } }> } }
}

t.test('the full introspection of six large sources is answered past maxResponseBytes', async (t) => {
  const full = await post(getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }))
  t.equal(full.status, 200, JSON.stringify(full.body).slice(0, 300))
  t.equal(full.body.errors, undefined)
  t.ok(full.size > MAX_RESPONSE, `the answer (${full.size} bytes) is larger than maxResponseBytes (${MAX_RESPONSE})`)
  const client = buildClientSchema(full.body.data as unknown as IntrospectionQuery)
  for (const name of SOURCES) t.ok(client.getQueryType()!.getFields()[`${name}_${name}_list_resource_4`], `${name}'s fields are in it`)

  // Through a fragment spread at the root, and __type: introspection all the same.
  const spread = await post('query { ...All __typename } fragment All on Query { __schema { types { name description fields { name description args { name } } } } }')
  t.equal(spread.status, 200)
  t.ok(spread.size > MAX_RESPONSE, 'a root fragment of introspection fields is introspection')
})

t.test('data is still bounded by maxResponseBytes, introspection by maxIntrospectionBytes', async (t) => {
  const data = await post(`{ pad(n: ${MAX_RESPONSE + 10}) }`)
  t.equal(data.status, 400)
  t.equal(data.body.errors?.[0]?.extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(data.body.errors?.[0]?.message, /\(maxResponseBytes\)/)

  const mixed = await post('{ pad(n: 1) __schema { types { name description fields { name description } } } }')
  t.equal(mixed.status, 400, 'a document that also selects data is measured as data')
  t.match(mixed.body.errors?.[0]?.message, /\(maxResponseBytes\)/)

  // Many aliases of the whole schema: the introspection bound holds.
  const aliases = Array.from({ length: 8 }, (_, i) => `s${i}: __schema { types { name description fields { name description args { name description } } } }`).join(' ')
  const bomb = await post(`{ ${aliases} }`)
  t.equal(bomb.status, 400, JSON.stringify(bomb.body).slice(0, 300))
  t.equal(bomb.body.errors?.[0]?.extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  t.match(bomb.body.errors?.[0]?.message, /more than the maximum of 1048576 \(maxIntrospectionBytes\)/)
})

t.test('maxIntrospectionBytes defaults to 128 MiB and is never below maxResponseBytes', async (t) => {
  const base = { datasources: [schema({ typeDefs: 'type Query { a: Int }' })], generatedDir: join(dir, 'g2') }
  t.equal(resolveConfig(base).server.maxIntrospectionBytes, 128 * 1024 * 1024)
  t.equal(resolveConfig({ ...base, server: { maxResponseBytes: 200 * 1024 * 1024 } }).server.maxIntrospectionBytes, 200 * 1024 * 1024)
  t.throws(() => resolveConfig({ ...base, server: { maxIntrospectionBytes: 0 } }), { code: 'TRB_ERR_CONFIG_INVALID' })
})
