/**
 * Synthetic OpenAPI 3.0 documents shaped like the large public APIs a gateway fronts (Stripe,
 * GitHub, Twilio...): many component schemas with nested objects, enums, arrays, `$ref`s between
 * components, expandable fields (`anyOf: [string, $ref]`, Stripe), `allOf` compositions, lists in an
 * envelope (`{ data: [...], has_more }`), path and query parameters (a `deepObject` filter), JSON
 * and form request bodies. Deterministic: the same options give the same document. Used by
 * test/introspection-size.test.ts and the bench's `compose-large` scenario (bench/compose-large.ts).
 */

/** Sizes of a {@link largeOpenApi} document. */
export interface LargeOpenApiOptions {
  /** A name for the API (its title and its operationId prefix). */
  name: string
  /** Component schemas (resources). Each gets a list, a read, a create (form body), an update (JSON body) and a delete. */
  resources: number
  /** Scalar properties per resource (besides the nested object, the enum, the array and the references). */
  properties: number
  /** Base URL of `servers[0]`. Default `http://127.0.0.1:1`. */
  serverUrl?: string
}

const SCALARS = [
  { type: 'string' },
  { type: 'integer', format: 'int64' },
  { type: 'boolean' },
  { type: 'number' },
  { type: 'string', format: 'date-time' },
  { type: 'integer' },
  { type: 'string', nullable: true },
]

/** An OpenAPI 3.0.3 document of `resources × 5` operations; see the file header. */
export function largeOpenApi(o: LargeOpenApiOptions): Record<string, unknown> {
  const schemas: Record<string, unknown> = {}
  const paths: Record<string, unknown> = {}
  const ref = (i: number) => ({ $ref: `#/components/schemas/resource_${i}` })
  schemas.metadata = { type: 'object', additionalProperties: { type: 'string' }, description: 'Set of key-value pairs.' }
  schemas.address = { type: 'object', properties: { line1: { type: 'string' }, line2: { type: 'string', nullable: true }, city: { type: 'string' }, country: { type: 'string' }, postal_code: { type: 'string' } } }
  for (let i = 0; i < o.resources; i++) {
    const properties: Record<string, unknown> = {
      id: { type: 'string', description: `Unique identifier of the ${o.name} resource ${i}.` },
      object: { type: 'string', enum: [`resource_${i}`] },
      status: { type: 'string', enum: ['active', 'inactive', 'pending', 'canceled', 'past_due'] },
      metadata: { $ref: '#/components/schemas/metadata' },
      shipping: { type: 'object', properties: { address: { $ref: '#/components/schemas/address' }, name: { type: 'string' }, phone: { type: 'string', nullable: true }, tracking: { type: 'object', properties: { carrier: { type: 'string' }, number: { type: 'string' } } } } },
      tags: { type: 'array', items: { type: 'string' } },
      // Stripe's expandable fields: an id, or the object itself.
      parent: { anyOf: [{ type: 'string' }, ref((i + 1) % o.resources)], nullable: true },
      related: { type: 'array', items: ref((i + 7) % o.resources) },
    }
    for (let p = 0; p < o.properties; p++) properties[`field_${p}`] = { ...SCALARS[(i + p) % SCALARS.length], description: `Field ${p} of resource ${i}: ${'described at length so that the document weighs what real ones do. '.repeat(1 + (p % 3))}` }
    schemas[`resource_${i}`] = { type: 'object', required: ['id', 'object', 'status'], description: `Resource ${i} of ${o.name}.`, properties }
    schemas[`resource_${i}_detail`] = { allOf: [ref(i), { type: 'object', properties: { history: { type: 'array', items: { type: 'object', properties: { at: { type: 'string', format: 'date-time' }, event: { type: 'string' } } } } } }] }
    const list = { type: 'object', required: ['data', 'has_more'], properties: { object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: ref(i) }, has_more: { type: 'boolean' }, url: { type: 'string' } } }
    const ok = (schema: unknown) => ({ 200: { description: 'ok', content: { 'application/json': { schema } } } })
    const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 5000 } }
    const form = { type: 'object', properties: Object.fromEntries(Object.entries(properties).filter(([k]) => k.startsWith('field_') || k === 'metadata' || k === 'tags')) }
    paths[`/v1/resource_${i}`] = {
      get: {
        operationId: `${o.name}_list_resource_${i}`,
        summary: `List resource ${i}`,
        parameters: [
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
          { name: 'starting_after', in: 'query', schema: { type: 'string' } },
          { name: 'created', in: 'query', style: 'deepObject', explode: true, schema: { type: 'object', properties: { gt: { type: 'integer' }, lt: { type: 'integer' } } } },
          { name: 'expand', in: 'query', style: 'deepObject', explode: true, schema: { type: 'array', items: { type: 'string' } } },
        ],
        responses: ok(list),
      },
      post: {
        operationId: `${o.name}_create_resource_${i}`,
        requestBody: { content: { 'application/x-www-form-urlencoded': { schema: form, encoding: { metadata: { style: 'deepObject', explode: true } } } } },
        responses: ok(ref(i)),
      },
    }
    paths[`/v1/resource_${i}/{id}`] = {
      get: { operationId: `${o.name}_retrieve_resource_${i}`, parameters: [idParam], responses: ok({ $ref: `#/components/schemas/resource_${i}_detail` }) },
      put: { operationId: `${o.name}_update_resource_${i}`, parameters: [idParam], requestBody: { required: true, content: { 'application/json': { schema: ref(i) } } }, responses: ok(ref(i)) },
      delete: { operationId: `${o.name}_delete_resource_${i}`, parameters: [idParam], responses: ok({ type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }) },
    }
  }
  return {
    openapi: '3.0.3',
    info: { title: `${o.name} API`, version: '2026-11-27' },
    servers: [{ url: o.serverUrl ?? 'http://127.0.0.1:1' }],
    paths,
    components: { schemas },
  }
}
