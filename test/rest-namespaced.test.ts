// A REST source built with its namespace (convertOpenApi's `namespace`, the path the gateway takes) is the
// schema composition made before by renaming the unprefixed one with applyNamespace (compose/namespace.ts):
// the same SDL, the same order of named types, the same root fields and resolvers.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { graphql, isSpecifiedScalarType, printSchema, type GraphQLSchema } from 'graphql'
import { convertOpenApi, type RestRequest } from '../gateway/connectors/rest/convert.js'
import type { OpenApiDocument } from '../gateway/connectors/rest/openapi.js'
import { applyNamespace } from '../gateway/compose/namespace.js'
import { composeSchema } from '../gateway/compose/index.js'
import { sharedScalars } from '../gateway/scalars.js'
import { largeOpenApi } from './helpers/large-openapi.js'

const fixture = (name: string): OpenApiDocument =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`./fixtures/openapi/${name}`, import.meta.url)), 'utf8')) as OpenApiDocument

/** Every conversion feature that names a type: components, inline objects, enums, unions, inputs (a recursive one), allOf, HEAD, reserved and clashing names. */
const mixed: OpenApiDocument = {
  openapi: '3.1.0',
  info: { title: 'mixed', version: '1' },
  paths: {
    '/things/{id}': {
      get: {
        operationId: 'get-thing',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'mode', in: 'query', schema: { type: 'string', enum: ['fast', 'in-progress', ''], default: 'fast' } },
          { name: 'filter', in: 'query', style: 'deepObject', schema: { type: 'object', properties: { a: { type: 'integer', format: 'int64' } } } },
        ],
        responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
      },
      head: { operationId: 'headThing', responses: { 200: { description: 'ok' } } },
      put: {
        operationId: 'putThing',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Tree' } } } },
        responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { ok: { type: 'boolean' }, pet: { oneOf: [{ $ref: '#/components/schemas/Cat' }, { $ref: '#/components/schemas/Dog' }], discriminator: { propertyName: 'kind' } } } } } } } },
      },
      post: {
        requestBody: { content: { 'multipart/form-data': { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' }, note: { type: 'string' } } } } } },
        responses: { 204: { description: 'none' } },
      },
    },
    '/json': {
      get: { responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/JSON' } } } } } },
    },
  },
  components: {
    schemas: {
      Thing: {
        type: 'object',
        required: ['id'],
        properties: {
          id: { type: 'string' },
          'created-at': { type: 'string', format: 'date-time' },
          status: { type: 'string', enum: ['open', 'closed'] },
          owner: { allOf: [{ $ref: '#/components/schemas/Dog' }, { type: 'object', properties: { extra: { type: 'number' } } }] },
          nested: { type: 'object', properties: { deep: { type: 'object', properties: { x: { type: 'integer' } } } } },
          anything: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
          query: { $ref: '#/components/schemas/Query' },
        },
      },
      Tree: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } } },
      Cat: { type: 'object', properties: { kind: { type: 'string' }, meows: { type: 'boolean' } } },
      Dog: { type: 'object', properties: { kind: { type: 'string' }, barks: { type: 'boolean' } } },
      JSON: { type: 'object', properties: { raw: { type: 'string' } } },
      Query: { type: 'object', properties: { q: { type: 'string' } } },
      ThingInput: { type: 'object', properties: { x: { type: 'string' } } },
    },
  },
} as unknown as OpenApiDocument

/** Only mutations: the placeholder `_empty` Query field. */
const mutationsOnly: OpenApiDocument = {
  openapi: '3.0.3',
  info: { title: 'm', version: '1' },
  paths: { '/x': { delete: { operationId: 'dropX', responses: { 204: { description: 'gone' } } } } },
} as unknown as OpenApiDocument

/** The named types of a schema in order, built-in scalars left out (graphql-tools' rewiring places those anywhere). */
const namedTypes = (schema: GraphQLSchema): string[] => Object.keys(schema.getTypeMap()).filter((n) => !isSpecifiedScalarType(schema.getType(n)!))

const calls: RestRequest[] = []
const request = async (req: RestRequest): Promise<unknown> => {
  calls.push(req)
  return req.method === 'HEAD' ? { status: 200, headers: {} } : { id: 'a', 'created-at': '2026-01-01T00:00:00Z', status: 'open', nested: { deep: { x: 1 } } }
}

const documents: Array<[string, OpenApiDocument]> = [
  ['petstore 3.0', fixture('petstore-3.0.json')],
  ['petstore 3.1', fixture('petstore-3.1.json')],
  ['mixed', mixed],
  ['mutations only', mutationsOnly],
  ['large', largeOpenApi({ name: 'large', resources: 12, properties: 8 }) as unknown as OpenApiDocument],
]

for (const [label, doc] of documents) {
  t.test(`${label}: built namespaced = renamed afterwards`, async (t) => {
    for (const namespace of ['ns', '']) {
      const renamed = applyNamespace(convertOpenApi(doc, { request }).schema, namespace)
      const built = convertOpenApi(doc, { request, namespace }).schema
      t.equal(printSchema(built), printSchema(renamed), `${namespace || 'no namespace'}: the same SDL`)
      t.same(namedTypes(built), namedTypes(renamed), `${namespace || 'no namespace'}: the same types in the same order`)
      for (const [name, scalar] of Object.entries(sharedScalars)) {
        const type = built.getType(name)
        if (type) t.equal(type, scalar, `${name} is the shared instance`)
      }
      // Composed as the gateway composes them: the REST path (namespaced) against the renaming path.
      const composedBuilt = composeSchema([{ namespace, name: 'a', subschema: { kind: 'local', schema: convertOpenApi(doc, { request }).schema, namespaced: { namespace, schema: built }, health: async () => ({ status: 'up' }), close: async () => {} } }])
      const composedRenamed = composeSchema([{ namespace, name: 'a', subschema: { kind: 'local', schema: convertOpenApi(doc, { request }).schema, health: async () => ({ status: 'up' }), close: async () => {} } }])
      t.equal(printSchema(composedBuilt), printSchema(composedRenamed), `${namespace || 'no namespace'}: the same composed SDL`)
      t.same(namedTypes(composedBuilt), namedTypes(composedRenamed), `${namespace || 'no namespace'}: the same composed type order`)
    }
  })
}

t.test('the namespaced fields resolve as the renamed ones do', async (t) => {
  const built = convertOpenApi(mixed, { request, namespace: 'ns' }).schema
  calls.length = 0
  const result = await graphql({
    schema: built,
    source: '{ ns_get_thing(id: "a", mode: in_progress, filter: { a: "5" }) { id created_at status nested { deep { x } } } ns_headThing(id: "b") { status } }',
  })
  t.same(result.errors, undefined)
  t.same(result.data, { ns_get_thing: { id: 'a', created_at: '2026-01-01T00:00:00.000Z', status: 'open', nested: { deep: { x: 1 } } }, ns_headThing: { status: 200 } })
  t.same(calls.map((c) => [c.method, c.path, c.query, c.operation]), [
    ['GET', '/things/a', [['mode', 'in-progress'], ['filter[a]', '5']], 'get_thing'],
    ['HEAD', '/things/b', [], 'headThing'],
  ], 'the upstream calls, named by the document\'s own field names')
  t.equal(built.getType('ns_HeadResponse')?.name, 'ns_HeadResponse')
  t.same(Object.keys(built.getTypeMap()).filter((n) => /JSON|Query/.test(n)), ['Query', 'JSON', 'ns_Query2', 'ns_JSON2'], 'components named like a shared scalar or a root type: renamed, then prefixed')
})
