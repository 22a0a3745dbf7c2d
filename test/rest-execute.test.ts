// The REST connector end to end: createRestSource against real fastify upstreams on 127.0.0.1,
// executed with graphql-js `execute` and with graphql-jit `compileQuery` (what mercurius uses).
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { execute, parse, printSchema, type ExecutionResult, type GraphQLSchema } from 'graphql'
import { compileQuery, isCompiledQuery } from 'graphql-jit'
import { pino } from 'pino'
import { createRestSource, type RestSourceOptions } from '../gateway/connectors/rest/index.js'
import type { ConnectorContext, LocalSubschema } from '../gateway/connectors/types.js'

const fixturePath = fileURLToPath(new URL('./fixtures/openapi/petstore-3.0.json', import.meta.url))
const context: ConnectorContext = { namespace: 'pets', sourceName: 'pets', logger: pino({ level: 'silent' }), mode: 'development', cacheDir: join(mkdtempSync(join(tmpdir(), 'tributary-rest-execute-')), 'sources'), cwd: process.cwd() }

interface Seen { method: string; url: string; headers: Record<string, unknown>; body: unknown }

const pet = { id: 42, name: 'Rex', status: 'sold-out', tag: null, tags: ['good'], 'x-rating': 4.5, createdAt: '2026-11-20T10:00:00Z', owner: { name: 'Ann', address: { city: 'Oslo' } }, photo: 'aGk=' }

async function startUpstream(t: Test): Promise<{ url: string; seen: Seen[] }> {
  const app: FastifyInstance = Fastify()
  const seen: Seen[] = []
  app.addHook('onRequest', async (req) => { seen.push({ method: req.method, url: req.url, headers: req.headers, body: undefined }) })
  app.addHook('preHandler', async (req) => { seen[seen.length - 1]!.body = req.body })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, body))
  app.get('/openapi.json', async () => ({ ...JSON.parse(readFileSync(fixturePath, 'utf8')), servers: [{ url: '/v1' }] }))
  app.get('/v1/pets', async (req, reply) => {
    if (req.headers['x-request-id'] === 'bad-shape') return { not: 'a list' }
    if (req.headers['x-request-id'] === 'bad-item') return [{ id: 1, name: 'Odd', status: 'lost' }]
    return reply.send([pet])
  })
  app.post('/v1/pets', async (req, reply) => reply.code(201).send({ ...(req.body as object), id: 7 }))
  app.get<{ Params: { petId: string } }>('/v1/pets/:petId', async (req, reply) => {
    const { petId } = req.params
    if (petId === '404') return reply.code(404).send({ code: 404, message: 'Pet 404 not found' })
    if (petId === '500') return reply.code(500).send({ message: `database exploded ${'x'.repeat(500)}` })
    if (petId === '418') return reply.code(418).type('text/plain').send('I am a teapot with a stack trace at /srv/app.js:1')
    if (petId === '1') return reply.send('not an object')
    return { ...pet, id: petId }
  })
  app.patch('/v1/pets/:petId', async (req) => ({ ...pet, ...(req.body as object) }))
  app.delete('/v1/pets/:petId', async (_req, reply) => reply.code(204).send())
  app.get<{ Params: { petId: string } }>('/v1/pets/:petId/animal', async (req) => (req.params.petId === 'tom' ? { kind: 'cat', meows: true } : { kind: 'dog', barks: 3 }))
  app.get('/v1/search', async () => ({ total: 1, items: [{ id: 'a', score: 0.5, 'match-kind': 'in-progress' }], next: null, anything: 5 }))
  app.get('/v1/metadata', async () => ({ a: 1, b: [true, null] }))
  app.post('/v1/nodes', async (req) => req.body)
  app.get('/v1/health', async (_req, reply) => reply.type('text/plain').send('all good'))
  app.get('/v1/counter', async (_req, reply) => reply.type('application/json').send('1000000000000'))
  app.get('/v1/slow', async () => { await new Promise((r) => setTimeout(r, 2500)); return { ok: true } })
  app.get('/v1/bad-json', async (_req, reply) => reply.type('application/json').send('{"ok":'))
  t.teardown(() => app.close())
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { url, seen }
}

async function source(t: Test, options: Partial<RestSourceOptions> & { baseUrl?: string }): Promise<LocalSubschema> {
  // One request per call, no breaker: these tests are about mapping answers; retries and the breaker are tested in rest-resilience.
  const s = await createRestSource({ openapi: fixturePath, retry: { retries: 0 }, circuitBreaker: false, ...options }, context)
  t.teardown(() => s.close())
  return s
}

/** Runs a document with graphql-js and with graphql-jit; checks both agree and returns the (JSON-normalised) result. */
async function run(t: Test, schema: GraphQLSchema, query: string, variables?: Record<string, unknown>, contextValue: unknown = {}): Promise<ExecutionResult> {
  const document = parse(query)
  const js = JSON.parse(JSON.stringify(await execute({ schema, document, variableValues: variables, contextValue }))) as ExecutionResult
  const compiled = compileQuery(schema, document)
  if (!isCompiledQuery(compiled)) throw new Error(`jit: ${JSON.stringify(compiled)}`)
  const jit = JSON.parse(JSON.stringify(await compiled.query(undefined, contextValue, variables))) as ExecutionResult
  // graphql-jit words some of graphql-js's own messages differently; ours (with a code) must match.
  const shape = (r: ExecutionResult): unknown => ({ data: r.data, errors: r.errors?.map((e) => ({ message: e.extensions?.code ? e.message : '', path: e.path, extensions: e.extensions })) })
  t.same(shape(jit), shape(js), `jit agrees with graphql-js: ${query.replace(/\s+/g, ' ').slice(0, 60)}`)
  return js
}

t.test('queries: path, query and header parameters, nested objects, enums, unions, scalars', async (t) => {
  const { url, seen } = await startUpstream(t)
  const { schema } = await source(t, { baseUrl: `${url}/v1` })

  const list = await run(t, schema, `query ($since: DateTime) {
    listPets(limit: 5, status: [available, sold_out], sort: _name, X_Request_Id: "req-1", since: $since) {
      id name status tag tags x_rating createdAt photo owner { name address { city street } }
    }
  }`, { since: '2026-11-20T10:00:00.000Z' })
  t.same(list, { data: { listPets: [{ id: '42', name: 'Rex', status: 'sold_out', tag: null, tags: ['good'], x_rating: 4.5, createdAt: '2026-11-20T10:00:00.000Z', photo: 'aGk=', owner: { name: 'Ann', address: { city: 'Oslo', street: null } } }] } })
  const last = seen.at(-1)!
  t.equal(last.url, '/v1/pets?limit=5&status=available&status=sold-out&sort=-name&since=2026-11-20T10%3A00%3A00.000Z', 'arrays repeated, enum raw values, DateTime as ISO')
  t.equal(last.headers['x-request-id'], 'req-1')
  t.equal(last.headers.accept, 'application/json')

  await run(t, schema, '{ listPets(X_Request_Id: "r") { id } }')
  t.equal(seen.at(-1)!.url, '/v1/pets?limit=20', 'argument defaults are sent')

  // BigInt arguments go through variables: graphql-jit cannot compile a BigInt literal (see the report).
  const one = await run(t, schema, 'query ($id: BigInt!) { showPetById(petId: $id) { id name } }', { id: '9007199254740993' })
  t.same(one, { data: { showPetById: { id: '9007199254740993', name: 'Rex' } } })
  t.equal(seen.at(-1)!.url, '/v1/pets/9007199254740993', 'a BigInt path parameter keeps its digits')

  await run(t, schema, '{ getAnimal(petId: "a b/c?") { __typename } }')
  t.equal(seen.at(-1)!.url, '/v1/pets/a%20b%2Fc%3F/animal', 'path parameters are URL-encoded')

  const animals = await run(t, schema, `{
    cat: getAnimal(petId: "tom") { __typename ... on Cat { kind meows } ... on Dog { barks } }
    dog: getAnimal(petId: "rex") { __typename ... on Cat { meows } ... on Dog { kind barks } }
  }`)
  t.same(animals, { data: { cat: { __typename: 'Cat', kind: 'cat', meows: true }, dog: { __typename: 'Dog', kind: 'dog', barks: 3 } } })

  const search = await run(t, schema, '{ getSearch(q: "r x", page_size_: 2) { total items { id score match_kind } next anything } getMetadata get_health getCounter }')
  t.same(search, { data: {
    getSearch: { total: 1, items: [{ id: 'a', score: 0.5, match_kind: 'in_progress' }], next: null, anything: 5 },
    getMetadata: { a: 1, b: [true, null] },
    get_health: 'all good',
    getCounter: '1000000000000',
  } })
  t.ok(seen.some((s) => s.url === '/v1/search?q=r+x&page%5Bsize%5D=2'), 'query names keep their raw spelling')
})

t.test('mutations: JSON bodies, input field names mapped back, 204 → true', async (t) => {
  const { url, seen } = await startUpstream(t)
  const { schema } = await source(t, { baseUrl: `${url}/v1` })

  const created = await run(t, schema, `mutation ($input: NewPetInput!) { createPet(input: $input) { id name status tag x_rating weightGrams owner { name } } }`, {
    input: { name: 'Kit', status: 'pending', tag: null, x_rating: 3, weightGrams: 1200, owner: { name: 'Bo', pets: [] }, secret: 's3' },
  })
  t.same(created, { data: { createPet: { id: '7', name: 'Kit', status: 'pending', tag: null, x_rating: 3, weightGrams: 1200, owner: { name: 'Bo' } } } })
  const post = seen.findLast((s) => s.method === 'POST')!
  t.same(post.body, { name: 'Kit', status: 'pending', tag: null, 'x-rating': 3, weightGrams: 1200, owner: { name: 'Bo', pets: [] }, secret: 's3' }, 'raw property names and enum values in the body')
  t.match(post.headers['content-type'], /^application\/json/)

  const updated = await run(t, schema, 'mutation ($id: BigInt!) { updatePet(petId: $id, input: { status: sold_out, labels: { color: "red" } }) { status } }', { id: 3 })
  t.same(updated, { data: { updatePet: { status: 'sold_out' } } })
  t.same(seen.at(-1)!.body, { status: 'sold-out', labels: { color: 'red' } })

  const deleted = await run(t, schema, 'mutation ($id: BigInt!) { deletePet(petId: $id) }', { id: '3' })
  t.same(deleted, { data: { deletePet: true } })
  t.equal(seen.at(-1)!.method, 'DELETE')

  const node = await run(t, schema, 'mutation { createNode(input: { value: "a", next: { value: "b", next: null } }) { value next { value next { value } } } }')
  t.same(seen.at(-1)!.body, { value: 'a', next: { value: 'b', next: null } }, 'a recursive property is JSON, sent as given')
  t.same(node.data, { createNode: null })
  t.equal(node.errors?.[0]?.path?.join('.'), 'createNode.next.next', 'a null where the document says required is a field error')
})

t.test('upstream errors: status pass-through, safe messages, shape mismatches', async (t) => {
  const { url } = await startUpstream(t)
  const { schema } = await source(t, { baseUrl: `${url}/v1` })

  const notFound = await run(t, schema, 'query ($id: BigInt!) { showPetById(petId: $id) { id } getSearch(q: "x") { total } }', { id: 404 })
  t.same(notFound.data, { showPetById: null, getSearch: { total: 1 } }, 'partial data')
  t.match(notFound.errors, [{ message: 'Upstream pets failed: 404 Not Found: Pet 404 not found', locations: [{ line: 1, column: 24 }], path: ['showPetById'], extensions: { code: 'TRB_ERR_UPSTREAM', http: { status: 404 } } }])
  t.same(notFound.errors?.[0]?.extensions?.upstream, { source: 'pets', method: 'GET', path: '/v1/pets/404', status: 404, body: '{"code":404,"message":"Pet 404 not found"}' }, 'details for the formatter (shown in development only)')

  const failed = await run(t, schema, 'query ($id: BigInt!) { showPetById(petId: $id) { id } }', { id: 500 })
  t.match(failed.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 500 } })
  t.match(failed.errors?.[0]?.message, /^Upstream pets failed: 500 Internal Server Error: database exploded x+…$/)
  t.ok(failed.errors![0]!.message.length < 260, 'the upstream message is truncated')

  const teapot = await run(t, schema, 'query ($id: BigInt!) { showPetById(petId: $id) { id } }', { id: 418 })
  t.equal(teapot.errors?.[0]?.message, "Upstream pets failed: 418 I'm a Teapot", 'a non-JSON error body is not shown')
  t.match(teapot.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 418 } })

  const badJson = await run(t, schema, '{ getBadJson { ok } }')
  t.same(badJson.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 502 } })
  t.equal(badJson.errors?.[0]?.message, 'Upstream pets failed: getBadJson: the answer is not valid JSON')

  const notObject = await run(t, schema, 'query ($id: BigInt!) { showPetById(petId: $id) { id } }', { id: 1 })
  t.same(notObject.data, { showPetById: null })
  t.equal(notObject.errors?.length, 1, 'a string where an object is expected is a GraphQL error')

  const notList = await run(t, schema, '{ listPets(X_Request_Id: "bad-shape") { id } }')
  t.same(notList.data, { listPets: null })
  t.equal(notList.errors?.length, 1, 'an object where a list is expected is a GraphQL error')

  const badEnum = await run(t, schema, '{ listPets(X_Request_Id: "bad-item") { id status } }')
  t.same(badEnum.data, { listPets: null })
  t.match(badEnum.errors?.[0]?.message, /Enum "PetStatus" cannot represent value: "lost"/)
})

t.test('timeouts → TRB_ERR_UPSTREAM_TIMEOUT (504); unreachable upstream → TRB_ERR_UPSTREAM (502)', async (t) => {
  const { url } = await startUpstream(t)
  const slow = await source(t, { baseUrl: `${url}/v1`, timeoutMs: 200 })
  const started = Date.now()
  const timedOut = await run(t, slow.schema, '{ getSlow { ok } }')
  // Two runs (graphql-js and jit); waiting for the upstream would take 2 × 2.5 s. undici checks timeouts about once a second.
  t.ok(Date.now() - started < 4000, 'does not wait for the upstream')
  t.same(timedOut.data, { getSlow: null })
  t.equal(timedOut.errors?.[0]?.message, 'Upstream pets timed out after 200 ms')
  t.same(timedOut.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM_TIMEOUT', http: { status: 504 } })

  const port = await freePort()
  const down = await source(t, { baseUrl: `http://127.0.0.1:${port}/v1` })
  const refused = await run(t, down.schema, '{ getSlow { ok } }')
  t.same(refused.data, { getSlow: null })
  t.equal(refused.errors?.[0]?.message, 'Upstream pets failed: connection refused (ECONNREFUSED)')
  t.same(refused.errors?.[0]?.extensions, { code: 'TRB_ERR_UPSTREAM', http: { status: 502 } })
  t.notMatch(refused.errors![0]!.message, /127\.0\.0\.1/, 'the upstream address is not shown')

  const health = await down.health()
  t.equal(health.status, 'down')
  t.equal(health.message, 'Upstream pets failed: connection refused (ECONNREFUSED)')
  t.equal((await slow.health()).status, 'up', 'any HTTP answer is up')

  await down.close()
  await down.close()
  t.pass('close is idempotent')
})

t.test('headers and forwardHeaders (mercurius reply.request.headers or context.headers)', async (t) => {
  const { url, seen } = await startUpstream(t)
  const { schema } = await source(t, { baseUrl: `${url}/v1`, headers: { 'X-Api-Key': 'k1' }, forwardHeaders: ['authorization', 'x-tenant'] })
  await run(t, schema, '{ getMetadata }', undefined, { reply: { request: { headers: { authorization: 'Bearer a', 'x-tenant': 't1', cookie: 'secret' } } } })
  let last = seen.at(-1)!
  t.equal(last.headers['x-api-key'], 'k1')
  t.equal(last.headers.authorization, 'Bearer a')
  t.equal(last.headers['x-tenant'], 't1')
  t.equal(last.headers.cookie, undefined, 'headers not listed are not forwarded')
  await run(t, schema, '{ getMetadata }', undefined, { headers: { authorization: 'Bearer b' } })
  last = seen.at(-1)!
  t.equal(last.headers.authorization, 'Bearer b')
  t.equal(last.headers['x-tenant'], undefined)
})

t.test('the document from a URL, with a relative server URL', async (t) => {
  const { url, seen } = await startUpstream(t)
  const s = await createRestSource({ openapi: `${url}/openapi.json` }, context)
  t.teardown(() => s.close())
  const result = await run(t, s.schema, '{ get_health }')
  t.same(result, { data: { get_health: 'all good' } })
  t.equal(seen.at(-1)!.url, '/v1/health', 'servers[0].url "/v1" is resolved against the document URL')
})

t.test('a YAML document (when the yaml package is installed); servers[0].url as the default base URL', async (t) => {
  const s = await createRestSource({ openapi: 'test/fixtures/openapi/tiny.yaml' }, context)
  t.teardown(() => s.close())
  t.equal(printSchema(s.schema), 'type Query {\n  ping: PingResponse\n}\n\ntype PingResponse {\n  pong: Boolean!\n}')
  const health = await s.health()
  t.equal(health.status, 'down', 'nothing listens on port 9')
})

t.test('load failures are TRB_ERR_SOURCE_LOAD', async (t) => {
  const { url } = await startUpstream(t)
  // A fresh cache: a cached copy would be used instead (see rest-document.test.ts).
  const fresh = { ...context, cacheDir: join(mkdtempSync(join(tmpdir(), 'tributary-rest-execute-')), 'sources') }
  await t.rejects(createRestSource({ openapi: 'test/fixtures/openapi/missing.json' }, fresh), { code: 'TRB_ERR_SOURCE_LOAD', message: /cannot read .*missing\.json: ENOENT/ })
  await t.rejects(createRestSource({ openapi: `${url}/nope.json` }, fresh), { code: 'TRB_ERR_SOURCE_LOAD', message: /answered 404/ })
  await t.rejects(createRestSource({ openapi: `${url}/v1/health` }, fresh), { code: 'TRB_ERR_SOURCE_LOAD' })
  await t.rejects(createRestSource({ openapi: `${url}/v1/metadata` }, fresh), { code: 'TRB_ERR_SOURCE_LOAD', message: /not an OpenAPI 3\.x document/ })
  await t.rejects(createRestSource({ openapi: `${url}/v1/search` }, fresh), { code: 'TRB_ERR_SOURCE_LOAD' })
})

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}
