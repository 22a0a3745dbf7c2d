/**
 * The OpenAPI 3.1 description (https://spec.openapis.org/oas/v3.1.0) of every served stored
 * operation (docs/architecture.md §5) and of the config's custom routes:
 * - queries: GET with one query parameter per variable (scalars and lists as `form`/`explode`
 *   params, input objects as JSON in their param), the optional `variables=<JSON>` and `live`
 *   params, `ETag` / `Cache-Control` headers and 304; and POST with a JSON body;
 * - mutations: POST with a JSON body;
 * - subscriptions: GET `text/event-stream`;
 * - response schemas derived from selection sets (`gateway/operations/json-schema.ts`, JSON Schema
 *   2020-12 as OpenAPI 3.1 uses it), and the error responses of docs/architecture.md §5 (`#/components/schemas/Errors`).
 * Internal operations (`operations/internal/`) are left out.
 */
import type { Gateway } from '../runtime.js'
import type { CompiledOperation } from '../operations/compile.js'
import { defRefName, mergedDefs, omitProperties, type JsonSchema } from '../operations/json-schema.js'
import { operationFileOf } from './client.js'
import { describeAuthRules } from '../auth/directives.js'

/** An OpenAPI 3.1 document (loosely typed: it is written out as JSON). */
export type OpenApiDocument = Record<string, unknown>

const errorSchema: JsonSchema = {
  type: 'object',
  description: 'Every error response of /operations/* and of the custom routes (docs/architecture.md §5).',
  required: ['errors'],
  properties: {
    errors: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string' },
          path: { type: 'array', items: { type: ['string', 'integer'] } },
          locations: { type: 'array', items: { type: 'object', properties: { line: { type: 'integer' }, column: { type: 'integer' } } } },
          extensions: {
            type: 'object',
            properties: {
              code: { type: 'string', description: 'A `TRB_ERR_*` code (README "Error codes"), or a GraphQL error code' },
              variable: { type: 'string', description: '400: the variable at fault' },
              instancePath: { type: 'string', description: '400: JSON Pointer into the variables (`/where/id/equals`)' },
              schemaPath: { type: 'string', description: "400: the failing keyword in the operation's variables JSON Schema" },
              errorId: { type: 'string', description: '500: the id of the log line of a masked error' },
              http: { type: 'object', properties: { status: { type: 'integer' } }, description: '502: the upstream status' },
            },
          },
        },
      },
    },
    data: { description: 'Partial data, when some root fields succeeded' },
  },
}

const ERRORS_REF = { $ref: '#/components/schemas/Errors' }

function errorResponses(kind: CompiledOperation['kind'], stream: boolean, auth = false): Record<string, unknown> {
  const ref = { content: { 'application/json': { schema: ERRORS_REF } } }
  return {
    '400': { description: 'Invalid variables: every bad variable is named with its JSON Schema path, every missing required one too', ...ref },
    ...(auth
      ? {
          '401': { description: 'No token (TRB_ERR_AUTH_REQUIRED) or an invalid one (TRB_ERR_AUTH_INVALID); see WWW-Authenticate', ...ref },
          '403': { description: 'The token lacks a role or claim the operation needs (TRB_ERR_AUTH_FORBIDDEN)', ...ref },
        }
      : {}),
    '404': { description: 'Unknown operation, or no row found (custom routes)', ...ref },
    '405': { description: `Wrong method; see the Allow header${kind === 'mutation' ? ' (POST only)' : ''}`, ...ref },
    ...(stream ? { '406': { description: 'A stream was asked for without Accept: text/event-stream', ...ref } } : {}),
    '500': { description: 'Internal error; the message is masked and its id logged', ...ref },
    '502': { description: 'An upstream failed; partial data is included', ...ref },
    '504': { description: 'An upstream timed out', ...ref },
  }
}

const cacheHeaders = {
  ETag: { description: 'A weak ETag of the body; send it back in If-None-Match to get 304', schema: { type: 'string' } },
  'Cache-Control': { description: 'From the operation\'s `# @cache` line; `private` when the request carries Authorization or a cookie', schema: { type: 'string' } },
}

function isComplex(schema: JsonSchema): boolean {
  const text = JSON.stringify(schema)
  return text.includes('"object"') || text.includes('"$ref"') || (schema.type === undefined && !schema.anyOf && !schema.enum)
}

const COMPONENT_REF_PREFIX = '#/components/schemas/'

/**
 * The input objects of the variables schemas ({@link mergedDefs}) as OpenAPI components. A variables
 * schema refers to its input objects as `#/$defs/<Name>` inside itself; placed in the document, such
 * a reference would resolve against the document's root (OpenAPI 3.1 §4.8.24.2), so every `$defs`
 * entry becomes `#/components/schemas/<Name>` and `rewrite` points the references there. A name
 * taken by another component (`reserved`: `Errors`) gets `_` appended.
 */
function inputComponents(defs: Map<string, JsonSchema>, reserved: ReadonlySet<string>): { schemas: Record<string, JsonSchema>; rewrite<T>(value: T): T } {
  const names = new Map<string, string>()
  const taken = new Set(reserved)
  for (const name of defs.keys()) {
    let component = name
    while (taken.has(component)) component += '_'
    taken.add(component)
    names.set(name, component)
  }
  /** A copy of `value` with `#/$defs/` references pointed at the components and `$defs` keys left out. */
  const rewrite = <T>(value: T): T => {
    if (Array.isArray(value)) return value.map(rewrite) as T
    if (!value || typeof value !== 'object') return value
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      if (k === '$defs') continue
      const name = k === '$ref' && typeof v === 'string' ? defRefName(v) : undefined
      out[k] = name === undefined ? rewrite(v) : `${COMPONENT_REF_PREFIX}${names.get(name) ?? name}`
    }
    return out as T
  }
  const schemas = Object.fromEntries([...defs].map(([name, schema]) => [names.get(name)!, rewrite(schema)]))
  return { schemas, rewrite }
}

function queryParameters(op: CompiledOperation, exclude: readonly string[] = []): Record<string, unknown>[] {
  const props = op.variablesSchema.properties ?? {}
  const required = new Set(op.variablesSchema.required ?? [])
  const params: Record<string, unknown>[] = Object.entries(props)
    .filter(([name]) => !exclude.includes(name))
    .map(([name, schema]) => ({
      name,
      in: 'query',
      required: required.has(name),
      ...(schema.description ? { description: schema.description } : {}),
      ...(isComplex(schema) ? { content: { 'application/json': { schema } } } : { schema, style: 'form', explode: true }),
    }))
  if (params.length > 0 && !props.variables) {
    params.push({
      name: 'variables',
      in: 'query',
      required: false,
      description: 'Any of the variables as one JSON object (for nested input objects); other params are merged into it',
      content: { 'application/json': { schema: omitProperties(op.variablesSchema, []) } },
    })
  }
  return params
}

function operationId(op: CompiledOperation, suffix = ''): string {
  return `${op.name.replace(/[^A-Za-z0-9_]/g, '_')}${suffix}`
}

/**
 * Builds the document.
 * @param serverUrl the gateway's base URL for `servers` (omitted when undefined).
 * @returns a plain JSON object; `paths` has one entry per served operation (`/operations/<name>`)
 *   and per custom route path (`:id` becomes `{id}`).
 */
export function buildOpenApiDocument(gateway: Gateway, serverUrl?: string): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {}
  const ops = [...gateway.operations.values()].filter((op) => !op.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
  const inputs = inputComponents(mergedDefs(ops.map((op) => op.variablesSchema)), new Set(['Errors']))
  for (const op of ops) {
    const okJson = { 'application/json': { schema: op.responseSchema } }
    const entry: Record<string, unknown> = {}
    const authNote = describeAuthRules(op.stored.auth)
    const common = {
      tags: [op.kind],
      summary: `${op.kind} ${op.name}`,
      description: `Stored ${op.kind} \`${op.name}\` (${operationFileOf(op)}).${authNote ? ` ${authNote}` : ''}`,
      ...securityOf(op, gateway),
    }
    const bodyRequired = (op.variablesSchema.required ?? []).length > 0
    if (op.kind === 'query') {
      const live = op.stored.directives.liveIntervalMs ?? gateway.config.operations.liveIntervalMs
      entry.get = {
        ...common,
        operationId: operationId(op),
        parameters: [
          ...queryParameters(op),
          {
            name: 'live',
            in: 'query',
            required: false,
            schema: { type: 'boolean' },
            description: `With Accept: text/event-stream, stream the result (re-run every ${live} ms, sent when it changes)`,
          },
        ],
        responses: {
          '200': {
            description: 'The data object, without a wrapper. With live=true: Server-Sent Events, one `data:` event of JSON `{data, errors?}` per change.',
            headers: cacheHeaders,
            content: { ...okJson, 'text/event-stream': { schema: { type: 'string' } } },
          },
          '304': { description: 'Not modified (If-None-Match matched the ETag)', headers: cacheHeaders },
          ...errorResponses(op.kind, true, !!op.stored.auth),
        },
      }
      entry.post = {
        ...common,
        operationId: operationId(op, '_post'),
        requestBody: { required: bodyRequired, content: { 'application/json': { schema: op.variablesSchema } } },
        responses: { '200': { description: 'The data object, without a wrapper', content: okJson }, ...errorResponses(op.kind, false, !!op.stored.auth) },
      }
    } else if (op.kind === 'mutation') {
      entry.post = {
        ...common,
        operationId: operationId(op),
        requestBody: { required: bodyRequired, content: { 'application/json': { schema: op.variablesSchema } } },
        responses: { '200': { description: 'The data object, without a wrapper', content: okJson }, ...errorResponses(op.kind, false, !!op.stored.auth) },
      }
    } else {
      entry.get = {
        ...common,
        operationId: operationId(op),
        parameters: queryParameters(op),
        responses: {
          '200': {
            description: 'Server-Sent Events: one `data:` event of JSON `{data, errors?}` per result (data as in `x-event-schema`)',
            content: { 'text/event-stream': { schema: { type: 'string' }, 'x-event-schema': { type: 'object', properties: { data: op.responseSchema, errors: { type: 'array' } } } } },
          },
          ...errorResponses(op.kind, true, !!op.stored.auth),
        },
      }
    }
    paths[`/operations/${op.name}`] = entry
  }

  for (const route of gateway.config.routes) {
    const op = gateway.operations.get(route.operation)
    if (!op || op.stored.internal) continue
    const authNote = describeAuthRules(op.stored.auth)
    const path = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')
    const pathParams = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1])
    const method = route.method.toLowerCase()
    const params = pathParams.map((name) => {
      const schema = op.variablesSchema.properties?.[name] ?? { type: 'string' }
      return { name, in: 'path', required: true, schema: stripNull(schema) }
    })
    const usesBody = !['GET', 'DELETE'].includes(route.method)
    const isGet = route.method === 'GET'
    paths[path] = {
      ...(paths[path] ?? {}),
      [method]: {
        tags: ['routes'],
        summary: `${route.method} ${route.path} → ${op.name}`,
        operationId: `route_${method}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
        description: `Custom route for the stored ${op.kind} \`${op.name}\`. Path params feed its variables; a result whose every root field is null is a 404.${authNote ? ` ${authNote}` : ''}`,
        ...securityOf(op, gateway),
        parameters: [...params, ...(usesBody ? [] : queryParameters(op, pathParams))],
        ...(usesBody
          ? { requestBody: { required: (op.variablesSchema.required ?? []).some((r) => !pathParams.includes(r)), content: { 'application/json': { schema: omitProperties(op.variablesSchema, pathParams, true) } } } }
          : {}),
        responses: {
          '200': { description: 'The data object', ...(isGet ? { headers: cacheHeaders } : {}), content: { 'application/json': { schema: op.responseSchema } } },
          ...(isGet ? { '304': { description: 'Not modified (If-None-Match matched the ETag)', headers: cacheHeaders } } : {}),
          ...errorResponses(op.kind, false, !!op.stored.auth),
        },
      },
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tributary operations', version: '1.0.0', description: 'Every stored operation of this deployment as a REST endpoint.' },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    tags: [
      { name: 'query', description: 'Stored queries: GET (variables as query params) or POST (JSON body)' },
      { name: 'mutation', description: 'Stored mutations: POST with a JSON body' },
      { name: 'subscription', description: 'Stored subscriptions: GET with Accept: text/event-stream' },
      { name: 'routes', description: 'Custom REST routes of the config' },
    ],
    paths: inputs.rewrite(paths),
    components: { schemas: { Errors: errorSchema, ...inputs.schemas }, ...securitySchemes(gateway) },
  }
}

/**
 * The security schemes (OpenAPI 3.1 §4.8.27): a bearer JWT (`auth.jwt`), its cookie when one is
 * configured, and the login session cookie of `auth.oidc`.
 */
function securitySchemes(gateway: Gateway): Record<string, unknown> {
  const { jwt, oidc } = gateway.config.auth
  if (!jwt && !oidc) return {}
  return {
    securitySchemes: {
      ...(jwt ? { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A JWT verified by the gateway (auth.jwt)' } } : {}),
      ...(jwt?.cookie ? { cookieAuth: { type: 'apiKey', in: 'cookie', name: jwt.cookie, description: 'The same JWT in a cookie' } } : {}),
      ...(oidc ? { sessionCookie: { type: 'apiKey', in: 'cookie', name: oidc.cookie.name, description: 'The login session of /auth/cookie/authorize/<provider> (auth.oidc); mutations also need the X-CSRF-Token header' } } : {}),
    },
  }
}

/**
 * `security` of an operation whose directives need a token (any of the schemes), with the 401/403
 * responses, and `x-rbac` naming its roles; nothing for an open operation.
 */
function securityOf(op: CompiledOperation, gateway: Gateway): Record<string, unknown> {
  const rules = op.stored.auth
  const { jwt, oidc } = gateway.config.auth
  if (!rules || (!jwt && !oidc)) return {}
  return {
    security: [...(jwt ? [{ bearerAuth: [] }] : []), ...(jwt?.cookie ? [{ cookieAuth: [] }] : []), ...(oidc ? [{ sessionCookie: [] }] : [])],
    ...(rules.requireMatchAny || rules.requireMatchAll
      ? { 'x-rbac': { ...(rules.requireMatchAny ? { requireMatchAny: rules.requireMatchAny } : {}), ...(rules.requireMatchAll ? { requireMatchAll: rules.requireMatchAll } : {}) } }
      : {}),
  }
}

/** A path parameter is never null: drop `null` from its type. */
function stripNull(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((x) => x !== 'null')
    return { ...schema, type: types.length === 1 ? types[0] : types }
  }
  if (schema.anyOf) {
    const rest = schema.anyOf.filter((s) => s.type !== 'null')
    return rest.length === 1 ? rest[0] : { ...schema, anyOf: rest }
  }
  return schema
}
