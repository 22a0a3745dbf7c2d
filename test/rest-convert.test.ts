// The pure OpenAPI → GraphQL conversion (gateway/connectors/rest/convert.ts), checked through printSchema.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { GraphQLObjectType, printSchema, validateSchema } from 'graphql'
import { mapSchema, MapperKind } from '@graphql-tools/utils'
import { convertOpenApi, pascalCase, sanitizeName, type RestOperationMeta } from '../gateway/connectors/rest/convert.js'
import type { OpenApiDocument } from '../gateway/connectors/rest/openapi.js'

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/openapi/${name}`, import.meta.url))
const load = (name: string): OpenApiDocument => JSON.parse(readFileSync(fixture(name), 'utf8')) as OpenApiDocument
const noRequest = async (): Promise<unknown> => null

t.test('petstore 3.0 and 3.1 convert to the expected SDL', async (t) => {
  const expected = readFileSync(fixture('petstore.graphql'), 'utf8')
  for (const version of ['3.0', '3.1']) {
    const doc = load(`petstore-${version}.json`)
    const before = JSON.stringify(doc)
    const { schema, warnings } = convertOpenApi(doc, { request: noRequest })
    t.same(validateSchema(schema), [], `${version}: valid schema`)
    t.equal(`${printSchema(schema)}\n`, expected, `${version}: SDL`)
    t.same(warnings, [], `${version}: no warnings`)
    t.equal(JSON.stringify(doc), before, `${version}: the document is not modified`)
  }
})

t.test('root fields carry their operation in extensions.rest', async (t) => {
  const { schema } = convertOpenApi(load('petstore-3.0.json'), { request: noRequest })
  const list = schema.getQueryType()!.getFields().listPets!.extensions.rest as RestOperationMeta
  t.same(list, {
    method: 'GET',
    path: '/pets',
    operationId: 'listPets',
    parameters: [
      { name: 'limit', in: 'query', argument: 'limit' },
      { name: 'status', in: 'query', argument: 'status' },
      { name: 'sort', in: 'query', argument: 'sort' },
      { name: 'X-Request-Id', in: 'header', argument: 'X_Request_Id' },
      { name: 'since', in: 'query', argument: 'since' },
    ],
    response: { status: '200', contentType: 'application/json', kind: 'json' },
  })
  const update = schema.getMutationType()!.getFields().updatePet!.extensions.rest as RestOperationMeta
  t.same(update.body, { argument: 'input', contentType: 'application/json', required: false, kind: 'json' })
  t.same(update.parameters, [{ name: 'petId', in: 'path', argument: 'petId' }], 'path-item parameters are merged')
  const del = schema.getMutationType()!.getFields().deletePet!.extensions.rest as RestOperationMeta
  t.same(del.response, { status: '204', kind: 'none' })
  const health = schema.getQueryType()!.getFields().get_health!.extensions.rest as RestOperationMeta
  t.equal(health.response.kind, 'text')
})

t.test('enum values map back to the raw strings', async (t) => {
  const { schema } = convertOpenApi(load('petstore-3.0.json'), { request: noRequest })
  const status = schema.getType('PetStatus')
  t.ok(status && 'getValues' in status)
  t.same((status as import('graphql').GraphQLEnumType).getValues().map((v) => [v.name, v.value]), [['available', 'available'], ['pending', 'pending'], ['sold_out', 'sold-out']])
})

t.test('the schema survives a rename with mapSchema (no dependency on type names)', async (t) => {
  const { schema } = convertOpenApi(load('petstore-3.0.json'), { request: noRequest })
  const renamed = mapSchema(schema, {
    [MapperKind.OBJECT_TYPE]: (type) => (['Query', 'Mutation'].includes(type.name) ? type : new GraphQLObjectType({ ...type.toConfig(), name: `pets_${type.name}` })),
  })
  t.same(validateSchema(renamed), [])
  t.ok(renamed.getType('pets_Pet'))
  t.ok(renamed.getQueryType()!.getFields().listPets!.extensions.rest)
})

t.test('names: sanitising, derived operation names, collisions, reserved names', async (t) => {
  t.equal(sanitizeName('get-all roles'), 'get_all_roles')
  t.equal(sanitizeName('1st'), '_1st')
  t.equal(sanitizeName('__typename'), '_typename')
  t.equal(pascalCase('get-all_roles'), 'GetAllRoles')
  const doc: OpenApiDocument = {
    openapi: '3.1.0',
    paths: {
      '/api/v1/role/{code}': { get: { responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Query' } } } } } } },
      '/a': { get: { operationId: 'dup', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/DateTime' } } } } } } },
      '/b': { get: { operationId: 'dup', responses: { 204: { description: 'none' } } } },
      '/c/{id}': { get: { operationId: 'noParams', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { dupResponse: { type: 'string' } } } } } } } } },
      '/upload': {
        post: { operationId: 'upload', requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object' } } } }, responses: { 204: { description: 'none' } } },
        put: { operationId: 'form', requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { a: { type: 'string' } } } } } }, responses: { 204: { description: 'none' } } },
        options: { operationId: 'optionsUpload', responses: { 200: { description: 'ok' } } },
      },
      '/shapes': {
        get: {
          operationId: 'shapes',
          parameters: [
            { name: 'input', in: 'query', schema: { type: 'string' } },
            { name: 'ids', in: 'query', required: true, schema: { type: 'array', items: { type: 'integer', format: 'int64' } } },
            { name: 'filter', in: 'query', content: { 'application/json': { schema: { type: 'object', properties: { x: { type: 'integer' } } } } } },
          ],
          responses: {
            '2XX': {
              description: 'ok',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    properties: {
                      either: { oneOf: [{ $ref: '#/components/schemas/A' }, { $ref: '#/components/schemas/B' }] },
                      vague: { anyOf: [{ type: 'object', properties: { x: { type: 'string' } } }, { type: 'object', properties: { x: { type: 'integer' } } }] },
                      maybe: { anyOf: [{ $ref: '#/components/schemas/A' }, { type: 'null' }] },
                      numbers: { type: 'integer', enum: [1, 2, 3] },
                      mixed: { type: ['string', 'integer'] },
                      ext: { $ref: 'other.json#/Thing' },
                      map: { type: 'object', additionalProperties: { type: 'string' } },
                      huge: { type: 'integer', minimum: 0, maximum: 9007199254740991 },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    components: {
      schemas: {
        Query: { type: 'object', properties: { q: { type: 'string' } } },
        DateTime: { type: 'object', properties: { iso: { type: 'string' } } },
        NoParamsResponse: { type: 'object', properties: { taken: { type: 'boolean' } } },
        A: { type: 'object', required: ['a'], properties: { a: { type: 'string' } } },
        B: { type: 'object', required: ['b'], properties: { b: { type: 'string' } } },
      },
    },
  } as unknown as OpenApiDocument
  const { schema, warnings } = convertOpenApi(doc, { request: noRequest })
  t.same(validateSchema(schema), [])
  t.equal(printSchema(schema), [
    'type Query {',
    '  getApiV1RoleByCode(code: String!): Query2',
    '  dup: DateTime2',
    '  dup2: Boolean',
    '  noParams(id: String!): NoParamsResponse2',
    '  shapes(input: String, ids: [BigInt!]!, filter: ShapesFilterInput): ShapesResponse',
    '}',
    '',
    'type Query2 {',
    '  q: String',
    '}',
    '',
    'type DateTime2 {',
    '  iso: String',
    '}',
    '',
    'type NoParamsResponse2 {',
    '  dupResponse: String',
    '}',
    '',
    'type ShapesResponse {',
    '  either: ShapesResponseEither',
    '  vague: JSON',
    '  maybe: A',
    '  numbers: Int',
    '  mixed: JSON',
    '  ext: JSON',
    '  map: JSON',
    '  huge: BigInt',
    '}',
    '',
    'union ShapesResponseEither = A | B',
    '',
    'type A {',
    '  a: String!',
    '}',
    '',
    'type B {',
    '  b: String!',
    '}',
    '',
    '"""Any JSON value (ECMA-404)."""',
    'scalar JSON @specifiedBy(url: "https://www.ecma-international.org/publications-and-standards/standards/ecma-404/")',
    '',
    '"""A signed 64-bit integer, serialised as a decimal string."""',
    'scalar BigInt',
    '',
    'input ShapesFilterInput {',
    '  x: Int',
    '}',
    '',
    'type Mutation {',
    '  form(input: FormInput): Boolean',
    '  upload(input: JSON!): Boolean',
    '}',
    '',
    'input FormInput {',
    '  a: String',
    '}',
  ].join('\n'))
  t.same(warnings.sort(), [
    'GET /b: field name dup is taken; named dup2',
    'OPTIONS /upload: OPTIONS operations are not converted',
    'ShapesResponseVague: oneOf/anyOf members cannot be told apart; typed as JSON',
    'external $ref other.json#/Thing is not supported; typed as JSON',
  ])
})

t.test('an API without GET operations still has a Query type', async (t) => {
  const { schema } = convertOpenApi({ openapi: '3.0.0', paths: { '/x': { delete: { operationId: 'wipe', responses: { 204: { description: 'done' } } } } } }, { request: noRequest })
  t.equal(printSchema(schema), 'type Query {\n  """Placeholder: this API has no GET operation."""\n  _empty: Boolean\n}\n\ntype Mutation {\n  wipe: Boolean\n}')
})
