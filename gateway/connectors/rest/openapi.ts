/**
 * The parts of an OpenAPI 3.0 / 3.1 document (https://spec.openapis.org/oas/v3.1.0) and of JSON
 * Schema that the REST connector reads, plus local `$ref` resolution (JSON Pointer, RFC 6901).
 * Everything is optional and loosely typed: documents in the wild are.
 */

/** A JSON Schema object as OpenAPI 3.0 (`nullable`) and 3.1 (`type: [x, 'null']`, `const`) write it. */
export interface SchemaObject {
  $ref?: string
  type?: string | string[]
  format?: string
  title?: string
  description?: string
  nullable?: boolean
  deprecated?: boolean
  readOnly?: boolean
  writeOnly?: boolean
  enum?: unknown[]
  const?: unknown
  default?: unknown
  minimum?: number
  maximum?: number
  properties?: Record<string, SchemaObject>
  required?: string[]
  additionalProperties?: boolean | SchemaObject
  items?: SchemaObject
  allOf?: SchemaObject[]
  oneOf?: SchemaObject[]
  anyOf?: SchemaObject[]
  discriminator?: { propertyName: string; mapping?: Record<string, string> }
  [key: string]: unknown
}

/** A parameter object (OpenAPI §4.8.12). */
export interface ParameterObject {
  $ref?: string
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  description?: string
  required?: boolean
  deprecated?: boolean
  style?: string
  explode?: boolean
  schema?: SchemaObject
  content?: Record<string, MediaTypeObject>
}

/** A media type object (OpenAPI §4.8.14). */
export interface MediaTypeObject {
  schema?: SchemaObject
  /** Per-property serialization of form and multipart bodies (§4.8.15), by property name. */
  encoding?: Record<string, { contentType?: string; style?: string; explode?: boolean }>
}

/** A request body object (OpenAPI §4.8.13). */
export interface RequestBodyObject {
  $ref?: string
  description?: string
  required?: boolean
  content?: Record<string, MediaTypeObject>
}

/** A response object (OpenAPI §4.8.17). */
export interface ResponseObject {
  $ref?: string
  description?: string
  content?: Record<string, MediaTypeObject>
}

/** An operation object (OpenAPI §4.8.10). */
export interface OperationObject {
  operationId?: string
  summary?: string
  description?: string
  deprecated?: boolean
  parameters?: ParameterObject[]
  requestBody?: RequestBodyObject
  responses?: Record<string, ResponseObject>
  /** Alternatives (OR) of scheme sets (AND), each scheme name with its scopes; `[]` means none (OpenAPI §4.8.30). */
  security?: SecurityRequirement[]
}

/** A security requirement object (OpenAPI §4.8.30): scheme name → scopes (OAuth2) or roles. */
export type SecurityRequirement = Record<string, string[]>

/** A security scheme object (OpenAPI §4.8.27): `apiKey`, `http`, `oauth2` (client credentials used), `openIdConnect`, `mutualTLS`. */
export interface SecuritySchemeObject {
  $ref?: string
  type: string
  /** apiKey: where the key goes. */
  in?: 'header' | 'query' | 'cookie'
  /** apiKey: the header, query parameter or cookie name. */
  name?: string
  /** http: `bearer`, `basic`... (case-insensitive, RFC 7235). */
  scheme?: string
  /** oauth2 flows; the gateway fetches tokens for `clientCredentials` only (other flows take the caller's token, `fromCaller`). */
  flows?: {
    clientCredentials?: { tokenUrl?: string; scopes?: Record<string, string> }
    authorizationCode?: { authorizationUrl?: string; tokenUrl?: string; scopes?: Record<string, string> }
    implicit?: { authorizationUrl?: string; scopes?: Record<string, string> }
    password?: { tokenUrl?: string; scopes?: Record<string, string> }
  }
}

/** The HTTP methods a path item may hold, lower-case as in the document. */
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const
/** One of {@link HTTP_METHODS}. */
export type HttpMethod = (typeof HTTP_METHODS)[number]

/** A path item object (OpenAPI §4.8.9). */
export type PathItemObject = { $ref?: string; parameters?: ParameterObject[] } & Partial<Record<HttpMethod, OperationObject>>

/** A server object (OpenAPI §4.8.5). */
export interface ServerObject {
  url: string
  variables?: Record<string, { default: string }>
}

/** An OpenAPI 3.x document (OpenAPI §4.8.1). */
export interface OpenApiDocument {
  openapi: string
  info?: { title?: string; version?: string }
  servers?: ServerObject[]
  paths?: Record<string, PathItemObject>
  components?: {
    schemas?: Record<string, SchemaObject>
    parameters?: Record<string, ParameterObject>
    requestBodies?: Record<string, RequestBodyObject>
    responses?: Record<string, ResponseObject>
    securitySchemes?: Record<string, SecuritySchemeObject>
  }
  /** Default security requirements of every operation. */
  security?: SecurityRequirement[]
}

/** True for a non-null, non-array object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Follows a local `$ref` (`#/components/schemas/Role`, JSON Pointer with `~0`/`~1` escapes and
 * percent-encoding) inside `document`, chains included.
 * @returns the target, or undefined for external or dangling references and for cycles of `$ref`s.
 */
export function resolveRef(document: unknown, ref: string): unknown {
  if (!isObject(document)) return resolveUncached(document, ref)
  // A large document is read through the same references thousands of times (Stripe's expandable fields).
  let cache = resolved.get(document)
  if (!cache) resolved.set(document, (cache = new Map()))
  if (cache.has(ref)) return cache.get(ref)
  const target = resolveUncached(document, ref)
  cache.set(ref, target)
  return target
}

/** Targets of the references of each document, by reference (documents are not changed once loaded). */
const resolved = new WeakMap<object, Map<string, unknown>>()

function resolveUncached(document: unknown, ref: string): unknown {
  const seen = new Set<string>()
  let current: unknown = { $ref: ref }
  while (isObject(current) && typeof current.$ref === 'string') {
    const r = current.$ref
    if (seen.has(r) || !r.startsWith('#')) return undefined
    seen.add(r)
    let node: unknown = document
    const pointer = decodeURIComponent(r.slice(1))
    if (pointer !== '') {
      for (const raw of pointer.replace(/^\//, '').split('/')) {
        const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
        if (!isObject(node) && !Array.isArray(node)) return undefined
        node = (node as Record<string, unknown>)[key]
        if (node === undefined) return undefined
      }
    }
    current = node
  }
  return current
}

/** Replaces a `{ $ref }` object by its target (see {@link resolveRef}); other values are returned as they are. */
export function deref<T>(document: unknown, value: T | undefined): T | undefined {
  if (isObject(value) && typeof value.$ref === 'string') return resolveRef(document, value.$ref) as T | undefined
  return value
}
