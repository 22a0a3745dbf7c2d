/**
 * The OpenAPI 3.1 description of every served stored operation (DESIGN.md §5): queries as GET with
 * query parameters (and POST with a JSON body), mutations as POST with a JSON body, subscriptions as
 * GET `text/event-stream`; response schemas derived from selection sets; the error responses of §5.
 */
import type { Gateway } from '../runtime.js'
import type { CompiledOperation } from '../operations/compile.js'
import type { JsonSchema } from '../operations/json-schema.js'

/** An OpenAPI 3.1 document (loosely typed: it is written out as JSON). */
export type OpenApiDocument = Record<string, unknown>

const errorSchema: JsonSchema = {
  type: 'object',
  required: ['errors'],
  properties: {
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string' },
          path: { type: 'array', items: { type: ['string', 'integer'] } },
          extensions: { type: 'object', properties: { code: { type: 'string' } } },
        },
      },
    },
    data: {},
  },
}

function errorResponses(kind: CompiledOperation['kind']): Record<string, unknown> {
  const ref = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Errors' } } } }
  return {
    '400': { description: 'Invalid variables: each bad variable is named with its JSON Schema path', ...ref },
    '404': { description: 'Unknown operation, or no row found (custom routes)', ...ref },
    '405': { description: `Wrong method; see Allow${kind === 'mutation' ? ' (POST only)' : ''}`, ...ref },
    '500': { description: 'Internal error; the message is masked and its id logged', ...ref },
    '502': { description: 'An upstream failed; partial data is included', ...ref },
    '504': { description: 'An upstream timed out', ...ref },
  }
}

function queryParameters(op: CompiledOperation): unknown[] {
  const props = op.variablesSchema.properties ?? {}
  const required = new Set(op.variablesSchema.required ?? [])
  return Object.entries(props).map(([name, schema]) => {
    const isComplex = JSON.stringify(schema).includes('"object"')
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(isComplex ? { content: { 'application/json': { schema } } } : { schema, explode: true, style: 'form' }),
    }
  })
}

/**
 * Builds the document.
 * @param serverUrl the gateway's base URL for `servers` (omitted when undefined).
 */
export function buildOpenApiDocument(gateway: Gateway, serverUrl?: string): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {}
  const ops = [...gateway.operations.values()].filter((op) => !op.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
  for (const op of ops) {
    const okJson = { content: { 'application/json': { schema: op.responseSchema } } }
    const entry: Record<string, unknown> = {}
    const common = { tags: [op.kind], description: `Stored ${op.kind} \`${op.name}\` (operations/${op.name}.graphql).` }
    if (op.kind === 'query') {
      entry.get = {
        ...common,
        operationId: op.name.replace(/\//g, '_'),
        parameters: [...queryParameters(op), { name: 'live', in: 'query', required: false, schema: { type: 'boolean' }, description: 'With Accept: text/event-stream, stream the result on every change' }],
        responses: { '200': { description: 'The data object, without a wrapper. ETag and Cache-Control are set.', ...okJson }, '304': { description: 'Not modified (If-None-Match)' }, ...errorResponses(op.kind) },
      }
      entry.post = {
        ...common,
        operationId: `${op.name.replace(/\//g, '_')}_post`,
        requestBody: { required: false, content: { 'application/json': { schema: op.variablesSchema } } },
        responses: { '200': { description: 'The data object, without a wrapper', ...okJson }, ...errorResponses(op.kind) },
      }
    } else if (op.kind === 'mutation') {
      entry.post = {
        ...common,
        operationId: op.name.replace(/\//g, '_'),
        requestBody: { required: (op.variablesSchema.required ?? []).length > 0, content: { 'application/json': { schema: op.variablesSchema } } },
        responses: { '200': { description: 'The data object, without a wrapper', ...okJson }, ...errorResponses(op.kind) },
      }
    } else {
      entry.get = {
        ...common,
        operationId: op.name.replace(/\//g, '_'),
        parameters: queryParameters(op),
        responses: {
          '200': { description: 'Server-Sent Events: one `data:` event of JSON `{data, errors?}` per result', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          ...errorResponses(op.kind),
        },
      }
    }
    paths[`/operations/${op.name}`] = entry
  }
  for (const route of gateway.config.routes) {
    const op = gateway.operations.get(route.operation)
    if (!op) continue
    const path = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')
    const pathParams = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1])
    const method = route.method.toLowerCase()
    const params = pathParams.map((name) => ({ name, in: 'path', required: true, schema: op.variablesSchema.properties?.[name] ?? { type: 'string' } }))
    const usesBody = !['GET', 'DELETE'].includes(route.method)
    paths[path] = {
      ...(paths[path] ?? {}),
      [method]: {
        tags: ['routes'],
        operationId: `route_${method}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
        description: `Custom route for the stored ${op.kind} \`${op.name}\`.`,
        parameters: [...params, ...(usesBody ? [] : queryParameters(op).filter((p) => !pathParams.includes((p as { name: string }).name)))],
        ...(usesBody ? { requestBody: { content: { 'application/json': { schema: op.variablesSchema } } } } : {}),
        responses: { '200': { description: 'The data object', content: { 'application/json': { schema: op.responseSchema } } }, ...errorResponses(op.kind) },
      },
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tributary operations', version: '1.0.0', description: 'Every stored operation of this deployment as a REST endpoint.' },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths,
    components: { schemas: { Errors: errorSchema } },
  }
}
