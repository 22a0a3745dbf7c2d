/**
 * OpenAPI 3.0 / 3.1 document → executable GraphQL schema. Pure: no I/O; every upstream call goes
 * through the `request` function it is given, so it is tested on fixture documents.
 *
 * Conversion rules (docs/architecture.md §4, "REST fields"):
 *
 * - **Operations.** Each `paths.<path>.<method>` operation becomes one root field: `GET` → `Query`,
 *   `POST`/`PUT`/`PATCH`/`DELETE` → `Mutation`, `HEAD` → `Query` returning `HeadResponse` (status and
 *   headers); `OPTIONS` and `TRACE` are skipped. The field is
 *   named after the `operationId`, with every run of characters outside `[_0-9A-Za-z]` replaced by `_`
 *   (`_` prepended before a leading digit); without an `operationId` the name is `<method><PathInPascal>`
 *   with `{param}` segments written `By<Param>` (`GET /api/v1/role/{code}` → `getApiV1RoleByCode`).
 *   Name clashes get a numeric suffix (`getPet2`). Root fields are nullable so that one failing
 *   upstream call leaves the rest of the response intact. `summary`/`description` become the field's
 *   description, `deprecated: true` its deprecation. When no operation is a GET, `Query` holds one
 *   placeholder field `_empty: Boolean`.
 * - **Arguments.** Path, query, header and cookie parameters (path-item level ones merged with the
 *   operation's) become arguments, named after the parameter with invalid characters replaced by `_`
 *   (`X-Request-Id` → `X_Request_Id`). `required: true` (always for path parameters) → non-null. A path
 *   parameter whose value is `.` or `..` is refused with `TRB_ERR_BAD_REQUEST` (400) before any call. A
 *   scalar or enum `default` becomes the argument's default value. A `{param}` of the path template
 *   that no parameter declares becomes a `String!` argument.
 * - **Request body.** The body becomes the argument `input` (`requestBody` if a parameter is already
 *   called `input`), non-null when `requestBody.required`. Of its media types, the first JSON
 *   (`application/json`, `*+json`), else `application/x-www-form-urlencoded`, else
 *   `multipart/form-data`, else text (`text/*`, `application/xml`, `*+xml`), else the first one is
 *   used (a warning names the operation when others are left out). JSON, form and multipart bodies
 *   are typed from the body schema: an input object named after the schema's component (`RoleInput`
 *   stays `RoleInput`, `Pet` becomes `PetInput`) or `<OperationId>Input` for an inline schema; in
 *   multipart bodies, `format: binary` properties are `Bytes` (base64) sent as file parts: a file
 *   uploaded through the GraphQL multipart request spec keeps its file name and `Content-Type`, a
 *   base64 variable is named after the property as `application/octet-stream`. Text bodies are
 *   `String`, sent as they are; any other media type (`application/octet-stream`, `image/png`...) is
 *   `Bytes`, sent as raw bytes (with an uploaded file's own type when the declared one is a wildcard
 *   such as `image/*`).
 * - **Response.** The schema of the `200` response, else `201`, else the first other `2XX`, else
 *   `default`, for its JSON media type. A response without content (e.g. `204`) → `Boolean` (resolves
 *   to `true`); a `text/*` one → `String`; any other media type → `Bytes` (base64).
 * - **Schemas → types.** `string` → `String` (`format: date-time` → `DateTime`, `byte`/`binary` →
 *   `Bytes`, `decimal` → `Decimal`); `integer` → `Int`, or `BigInt` for `format: int64` or a `minimum`/`maximum` outside the
 *   32-bit range; `number` → `Float`; `boolean` → `Boolean`; `array` → list (items non-null unless
 *   nullable); an `enum` (or `const`) of strings → a GraphQL enum whose values are the strings with
 *   invalid characters replaced by `_` (`in-progress` → `in_progress`, `''` → `_EMPTY`, `true` → `_true`),
 *   mapped back to the raw strings on both sides; enums of other values → their base scalar. An
 *   `object` with properties → an object type (output) or an input object (input); one with no
 *   properties (free-form, `additionalProperties` only) → `JSON`. `readOnly` properties are left out of
 *   inputs, `writeOnly` ones out of outputs. Property names are sanitised like arguments; the
 *   resolver reads the raw property.
 * - **Names.** A schema reached through `#/components/schemas/<Name>` is named `<Name>` (sanitised),
 *   once, wherever it is used; an inline schema is named from where it sits: `<OperationId>Response`
 *   (PascalCase) for a response, `<Parent><Property>` for a property, `<OperationId><Param>` for a
 *   parameter, `<...>Input` for input objects. Component names win over derived ones; clashes with
 *   other types, built-in and shared scalars (`DateTime`, `JSON`, `BigInt`, `Decimal`, `Bytes`) and root
 *   types get a numeric suffix.
 * - **Nullability.** A property is non-null when it is in `required` and not nullable; nullable means
 *   3.0 `nullable: true`, 3.1 `type: [x, 'null']`, a `null` in `enum`, or a `{ type: 'null' }` member of
 *   `oneOf`/`anyOf`.
 * - **Composition.** `allOf` is merged (properties and `required` united; a lone `allOf: [$ref]` is the
 *   referenced type). `oneOf`/`anyOf` of object schemas → a union when the members can be told apart:
 *   by `discriminator.propertyName` (values from `mapping`, the component name or a `const`/one-value
 *   `enum` of the property), by a property that has a distinct `const` in every member, by a required
 *   property unique to each member, or by a unique property set (each member has properties no other
 *   has; a value is the member whose own properties it carries); otherwise → `JSON` with a warning.
 *   Members that are not all objects (scalars, arrays, mixed) → `JSON`, the documented fallback (the
 *   value is passed through as it is, nothing is lost), except members of one scalar type → that scalar. In inputs,
 *   `oneOf`/`anyOf` → `JSON`. Cycles of `$ref` are fine in outputs (types are built lazily). Input
 *   types are never recursive: a property that leads back into the input type being built (directly
 *   or through arrays and other input types) is typed `JSON` and sent as given, because graphql-jit
 *   (used by mercurius) cannot compile variables of recursive input types.
 * - **Metadata.** Each root field carries `extensions.rest`, a {@link RestOperationMeta} (method, path
 *   template, parameter locations, body and response media types). Resolvers are closures: nothing
 *   depends on public type names, so `compose/` can rename every type with `mapSchema`.
 * - **Not supported:** external `$ref`s (→ `JSON`, with a warning), multipart bodies, callbacks,
 *   links. Security schemes are not converted: each request carries its operation's `security`
 *   (`RestRequest.security`) and `security.ts` applies the source's credentials.
 */
import {
  GraphQLBoolean, GraphQLEnumType, GraphQLFloat, GraphQLInputObjectType, GraphQLInt, GraphQLList,
  GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString, GraphQLUnionType, astFromValue,
  type GraphQLEnumValueConfigMap, type GraphQLFieldConfig, type GraphQLFieldConfigArgumentMap,
  type GraphQLFieldConfigMap, type GraphQLInputFieldConfigMap, type GraphQLInputType,
  type GraphQLNullableType, type GraphQLOutputType, type GraphQLScalarType,
} from 'graphql'
import { FormData } from 'undici'
import { BadRequestError } from '../../errors.js'
import { BigIntScalar, BytesScalar, DateTimeScalar, DecimalScalar, JSONScalar, fileInfoOf } from '../../scalars.js'
import {
  HTTP_METHODS, deref, isObject,
  type HttpMethod, type MediaTypeObject, type OpenApiDocument, type OperationObject, type ParameterObject,
  type RequestBodyObject, type ResponseObject, type SchemaObject, type SecurityRequirement,
} from './openapi.js'
import { formEncode, formEncodings, serializeQuery, toJson, toText } from './serialize.js'

export { toJson }

/** How the body of an upstream answer is decoded: parsed JSON, text, base64 of the bytes, or ignored (`true`). */
export type ResponseKind = 'json' | 'text' | 'binary' | 'none' | 'head'

/** How a request body is encoded: JSON, `application/x-www-form-urlencoded`, `multipart/form-data`, text (`text/*`, XML) or raw bytes. */
/**
 * What a HEAD operation (a Query field) returns: the answer's status and headers (lower-case names;
 * `set-cookie` left out, repeated headers joined with `, `).
 */
const headResponse = () => new GraphQLObjectType({
  name: 'HeadResponse',
  description: 'The status and headers of the answer to a HEAD request.',
  fields: {
    status: { type: new GraphQLNonNull(GraphQLInt), description: 'The HTTP status (2xx).' },
    headers: { type: new GraphQLNonNull(JSONScalar), description: 'Response headers by lower-case name, without set-cookie; repeated ones joined with ", ".' },
  },
})

export type BodyKind = 'json' | 'form' | 'multipart' | 'text' | 'binary'

/** One upstream call, ready to send: what a resolver hands to the {@link RestRequestFn}. */
export interface RestRequest {
  /** Upper-case HTTP method. */
  method: string
  /** The path template with its parameters filled in and URL-encoded, e.g. `/api/v1/role/a%2Fb`. Relative to the base URL. */
  path: string
  /** Query parameters in order, already serialised (arrays repeated: `[['a','1'],['a','2']]`). */
  query: Array<[string, string]>
  /** Header parameters (and `cookie`), lower-case names. */
  headers: Record<string, string>
  /** The serialised request body, if any: text, bytes, or a `FormData` (multipart; undici sets its boundary). */
  body?: string | Buffer | FormData
  /** The body's media type, e.g. `application/json`. */
  contentType?: string
  /** How to decode the answer. */
  responseKind: ResponseKind
  /** The GraphQL field name, for error messages. */
  operation: string
  /** The operation's `security` (else the document's), for the source's credentials; absent when neither declares any. */
  security?: SecurityRequirement[]
}

/**
 * Sends a {@link RestRequest} and resolves to the decoded 2xx answer: parsed JSON (`null` for an
 * empty body), a string (`text`, or base64 for `binary`) or `true` (`none`). `context` is the GraphQL
 * context, for forwarded headers. Rejects with an error carrying GraphQL `extensions` on failure.
 */
export type RestRequestFn = (request: RestRequest, context: unknown) => Promise<unknown>

/** Where one argument goes in the upstream request. */
export interface RestParameterMeta {
  /** The parameter's name in the document. */
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  /** The GraphQL argument it comes from. */
  argument: string
}

/** The `extensions.rest` of a root field: the upstream operation behind it. */
export interface RestOperationMeta {
  /** Upper-case HTTP method. */
  method: string
  /** Path template as in the document, e.g. `/api/v1/role/{code}`. */
  path: string
  /** The document's `operationId`, if any. */
  operationId?: string
  parameters: RestParameterMeta[]
  /** The request body: the argument that carries it, its media type and how it is encoded. */
  body?: { argument: string; contentType: string; required: boolean; kind: BodyKind }
  /** The response used for the field's type: status key (`200`, `2XX`, `default`...), media type, decoding. */
  response: { status?: string; contentType?: string; kind: ResponseKind }
}

/** Options of {@link convertOpenApi}. */
export interface ConvertOptions {
  /** Called by every resolver to reach the upstream. */
  request: RestRequestFn
}

/** What {@link convertOpenApi} returns. */
export interface ConvertResult {
  /** The executable schema, without any namespace. */
  schema: GraphQLSchema
  /** Parts of the document that were skipped or approximated, one sentence each. */
  warnings: string[]
}

type Codec = (value: unknown) => unknown
type Predicate = (value: Record<string, unknown>) => boolean
interface Analysed { schema: SchemaObject | undefined; nullable: boolean }
type Kind = 'object' | 'array' | 'enum' | 'string' | 'integer' | 'number' | 'boolean' | 'union' | 'json'

const RESERVED = new Set(['Query', 'Mutation', 'Subscription', 'String', 'Int', 'Float', 'Boolean', 'ID', 'DateTime', 'JSON', 'BigInt', 'Decimal', 'Bytes'])
const INT32_MIN = -2147483648
const INT32_MAX = 2147483647
const identity: Codec = (v) => v

/** Replaces each run of characters outside `[_0-9A-Za-z]` by `_`, prefixes `_` to a leading digit, shortens a leading `__`. */
export function sanitizeName(raw: string): string {
  let s = raw.replace(/[^_0-9A-Za-z]+/g, '_')
  if (s === '' || s === '_') return '_'
  if (/^[0-9]/.test(s)) s = `_${s}`
  if (s.startsWith('__')) s = s.replace(/^_+/, '_')
  return s
}

/** `get-all_roles` → `GetAllRoles`: splits on non-alphanumerics, upper-cases each part's first letter. */
export function pascalCase(raw: string): string {
  const s = raw.split(/[^0-9A-Za-z]+/).filter(Boolean).map((p) => p[0]!.toUpperCase() + p.slice(1)).join('')
  return sanitizeName(s === '' ? '_' : s)
}

function enumValueName(raw: string): string {
  if (raw === '') return '_EMPTY'
  const s = sanitizeName(raw)
  return s === 'true' || s === 'false' || s === 'null' ? `_${s}` : s
}

function unique(base: string, used: Set<string>): string {
  let name = base
  for (let i = 2; used.has(name); i++) name = `${base}${i}`
  used.add(name)
  return name
}

function isJsonMedia(media: string): boolean {
  return /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(media) || media === '*/*'
}

function stripInput(name: string): string {
  return name.endsWith('Input') && name.length > 5 ? name.slice(0, -5) : name
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

/** A property's own description: an inline schema's, or the one written beside a `$ref` (3.1); a referenced type keeps its own. */
function propertyDescription(raw: SchemaObject | undefined, target: SchemaObject | undefined): string | undefined {
  if (isObject(raw) && typeof raw.$ref === 'string') return str(raw.description)
  return isObject(target) ? str(target.description) : undefined
}

/**
 * Input scalar value → JSON-ready value. Tolerates what graphql-jit makes of literals (it embeds
 * them as JSON: a Date becomes its ISO string, a Buffer `{ type: 'Buffer', data }`).
 */
function scalarCodec(type: GraphQLScalarType): Codec {
  if (type === BigIntScalar) return (v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : v)
  if (type === BytesScalar) {
    return (v) => {
      // An uploaded file stays a Buffer, so that a multipart body still sees its name and type (toJson and toText write it as base64).
      if (fileInfoOf(v)) return v
      if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('base64')
      if (isObject(v) && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data as number[]).toString('base64')
      return v
    }
  }
  if (type === DateTimeScalar) return (v) => (v instanceof Date ? v.toISOString() : v)
  return identity
}

/**
 * Converts an OpenAPI 3.0 or 3.1 document into an executable GraphQL schema (rules in this file's
 * header). Pure: the document is not modified and nothing is fetched.
 * @param document a parsed OpenAPI 3.x document whose `$ref`s are local (`#/...`).
 * @returns the schema and warnings about skipped or approximated parts.
 * @throws Error when the resulting schema is invalid (a bug, or a document GraphQL cannot express).
 */
export function convertOpenApi(document: OpenApiDocument, options: ConvertOptions): ConvertResult {
  return new Converter(document, options).run()
}

class Converter {
  /** The type of every HEAD operation's field, made once per document. */
  private headType?: GraphQLObjectType
  private readonly warnings: string[] = []
  private readonly usedTypeNames = new Set<string>()
  private readonly componentNames = new Set<string>()
  private readonly componentOf = new Map<object, string>()
  private readonly analysed = new WeakMap<object, Analysed>()
  private readonly merged = new WeakMap<object, SchemaObject>()
  private readonly outputs = new Map<object, GraphQLOutputType>()
  private readonly inputs = new Map<object, { type: GraphQLInputType; codec: Codec }>()
  private readonly enums = new Map<object, GraphQLEnumType>()
  private readonly predicates = new Map<object, Predicate[]>()
  private readonly fieldNames = new Set<string>()

  constructor(private readonly doc: OpenApiDocument, private readonly options: ConvertOptions) {
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      const target = deref<SchemaObject>(doc, schema)
      if (!isObject(target)) continue
      if (!this.componentOf.has(target)) this.componentOf.set(target, name)
      this.componentNames.add(sanitizeName(name))
    }
  }

  run(): ConvertResult {
    const query: GraphQLFieldConfigMap<unknown, unknown> = {}
    const mutation: GraphQLFieldConfigMap<unknown, unknown> = {}
    for (const [path, rawItem] of Object.entries(this.doc.paths ?? {})) {
      const item = deref(this.doc, rawItem)
      if (!isObject(item)) continue
      for (const method of HTTP_METHODS) {
        const op = item[method]
        if (!isObject(op)) continue
        if (method === 'options' || method === 'trace') {
          this.warnings.push(`${method.toUpperCase()} ${path}: ${method.toUpperCase()} operations are not converted`)
          continue
        }
        const built = this.operation(path, method, op, item.parameters ?? [])
        if (built) (method === 'get' || method === 'head' ? query : mutation)[built.name] = built.field
      }
    }
    if (Object.keys(query).length === 0) {
      query._empty = { type: GraphQLBoolean, description: 'Placeholder: this API has no GET operation.', resolve: () => null }
    }
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: query }),
      mutation: Object.keys(mutation).length ? new GraphQLObjectType({ name: 'Mutation', fields: mutation }) : undefined,
    })
    return { schema, warnings: this.warnings }
  }

  // ---------------------------------------------------------------- operations

  private fieldName(path: string, method: HttpMethod, op: OperationObject): string {
    let base: string
    if (typeof op.operationId === 'string' && op.operationId.trim() !== '') base = sanitizeName(op.operationId.trim())
    else {
      const segments = path.split('/').filter(Boolean).map((seg) => {
        const param = /^\{(.+)\}$/.exec(seg)
        return param ? `By${pascalCase(param[1]!)}` : pascalCase(seg)
      })
      base = sanitizeName(`${method}${segments.join('').replace(/^_+/, '')}`)
    }
    const name = unique(base, this.fieldNames)
    if (name !== base) this.warnings.push(`${method.toUpperCase()} ${path}: field name ${base} is taken; named ${name}`)
    return name
  }

  private operation(path: string, method: HttpMethod, op: OperationObject, itemParams: ParameterObject[]): { name: string; field: GraphQLFieldConfig<unknown, unknown> } | undefined {
    const where = `${method.toUpperCase()} ${path}`
    const name = this.fieldName(path, method, op)
    const P = pascalCase(name)

    // Parameters: operation-level ones override path-item ones with the same (name, in).
    const byKey = new Map<string, ParameterObject>()
    for (const raw of [...itemParams, ...(op.parameters ?? [])]) {
      const p = deref<ParameterObject>(this.doc, raw)
      if (!isObject(p) || typeof p.name !== 'string' || !['path', 'query', 'header', 'cookie'].includes(p.in)) {
        this.warnings.push(`${where}: a parameter could not be resolved and is ignored`)
        continue
      }
      byKey.set(`${p.in}:${p.name}`, p)
    }
    for (const m of path.matchAll(/\{([^}]+)\}/g)) {
      if (!byKey.has(`path:${m[1]}`)) byKey.set(`path:${m[1]}`, { name: m[1]!, in: 'path', required: true, schema: { type: 'string' } })
    }

    const args: GraphQLFieldConfigArgumentMap = {}
    const argNames = new Set<string>()
    interface Param { meta: RestParameterMeta; codec: Codec; style: string; explode: boolean; json: boolean }
    const params: Param[] = []
    for (const p of byKey.values()) {
      const lowerHeader = p.in === 'header' ? p.name.toLowerCase() : ''
      if (lowerHeader === 'accept' || lowerHeader === 'content-type' || lowerHeader === 'authorization') {
        // OpenAPI §4.8.12.1: these header parameters are ignored (authorization: use headers/forwardHeaders).
        continue
      }
      let schema = p.schema
      let json = false
      if (!schema && isObject(p.content)) {
        const media = Object.keys(p.content)[0]
        schema = media ? (p.content[media] as MediaTypeObject).schema : undefined
        json = media !== undefined && isJsonMedia(media)
      }
      const argument = unique(sanitizeName(p.name), argNames)
      const hint = `${P}${pascalCase(p.name)}`
      const { type, nullable, codec } = this.input(schema, hint)
      const required = p.in === 'path' || p.required === true
      const nonNull = required && !(nullable && p.in !== 'path')
      const defaultValue = this.defaultFor(deref(this.doc, schema), type)
      args[argument] = {
        type: nonNull ? new GraphQLNonNull(type) : type,
        description: p.description,
        defaultValue,
        deprecationReason: p.deprecated && !nonNull ? 'Deprecated in the OpenAPI document.' : undefined,
      }
      const style = p.style ?? (p.in === 'query' || p.in === 'cookie' ? 'form' : 'simple')
      params.push({ meta: { name: p.name, in: p.in, argument }, codec, style, explode: p.explode ?? style === 'form', json })
    }

    // Request body: the first media type by preference JSON, form, multipart, text/XML, anything else as bytes.
    let body: { argument: string; contentType: string; required: boolean; kind: BodyKind; encode: (value: unknown) => string | Buffer | FormData } | undefined
    const rb = deref<RequestBodyObject>(this.doc, op.requestBody)
    if (isObject(rb) && isObject(rb.content) && Object.keys(rb.content).length > 0) {
      const medias = Object.keys(rb.content)
      const [media, kind] = pickBodyMedia(medias)
      const argument = unique(argNames.has('input') ? 'requestBody' : 'input', argNames)
      const schema = (rb.content[media] as MediaTypeObject).schema
      const required = rb.required === true
      const contentType = media.split(';')[0]!.trim()
      let type: GraphQLInputType & GraphQLNullableType
      let encode: (value: unknown) => string | Buffer | FormData
      if (kind === 'text') {
        type = GraphQLString
        encode = (v) => toText(v)
      } else if (kind === 'binary') {
        type = BytesScalar
        encode = toBuffer
      } else {
        const input = this.input(schema, `${P}Input`, true)
        type = input.type
        const { codec } = input
        if (kind === 'json') encode = (v) => toJson(v === null ? null : codec(v))
        else if (kind === 'form') {
          const encodings = formEncodings((rb.content[media] as MediaTypeObject).encoding)
          encode = (v) => formEncode(v === null ? null : codec(v), encodings)
        }
        else {
          const binary = this.binaryProperties(schema)
          encode = (v) => multipartEncode(v === null ? null : codec(v), binary)
        }
      }
      args[argument] = { type: required ? new GraphQLNonNull(type) : type, description: str(rb.description) }
      body = { argument, contentType, required, kind, encode }
      if (medias.length > 1 && kind !== 'json') this.warnings.push(`${where} (${name}): request body sent as ${contentType}; other media types (${medias.filter((m) => m !== media).join(', ')}) are not offered`)
    }

    // Response.
    const response: ReturnType<Converter['pickResponse']> = method === 'head' ? { kind: 'head' } : this.pickResponse(op.responses)
    let type: GraphQLOutputType
    if (response.kind === 'head') type = (this.headType ??= headResponse())
    else if (response.kind === 'json') type = this.output(response.schema, `${P}Response`).type
    else if (response.kind === 'none') type = GraphQLBoolean
    else if (response.kind === 'text') type = GraphQLString
    else type = BytesScalar

    const meta: RestOperationMeta = {
      method: method.toUpperCase(),
      path,
      ...(typeof op.operationId === 'string' ? { operationId: op.operationId } : {}),
      parameters: params.map((p) => p.meta),
      ...(body ? { body: { argument: body.argument, contentType: body.contentType, required: body.required, kind: body.kind } } : {}),
      response: { status: response.status, contentType: response.contentType, kind: response.kind },
    }

    const request = this.options.request
    const upper = meta.method
    const security = Array.isArray(op.security) ? op.security : Array.isArray(this.doc.security) ? this.doc.security : undefined
    const buildRequest = (args: Record<string, unknown>): RestRequest => {
      let urlPath = path
      const query: Array<[string, string]> = []
      const headers: Record<string, string> = {}
      const cookies: string[] = []
      for (const p of params) {
        const raw = args[p.meta.argument]
        if (raw === undefined || raw === null) {
          if (p.meta.in === 'path') urlPath = urlPath.split(`{${p.meta.name}}`).join('')
          continue
        }
        const value = p.codec(raw)
        switch (p.meta.in) {
          case 'path': {
            const text = p.json ? toJson(value) : simple(value)
            // `.` and `..` survive percent-encoding and would move the request to another path (RFC 3986 §5.2.4).
            if (text === '.' || text === '..') throw Object.assign(new BadRequestError(`${name}: path parameter ${p.meta.name} may not be "${text}"`), { extensions: { code: 'TRB_ERR_BAD_REQUEST', http: { status: 400 } } })
            urlPath = urlPath.split(`{${p.meta.name}}`).join(encodeURIComponent(text))
            break
          }
          case 'query':
            serializeQuery(query, p.meta.name, value, p.style, p.explode, p.json)
            break
          case 'header':
            headers[p.meta.name.toLowerCase()] = p.json ? toJson(value) : simple(value)
            break
          case 'cookie':
            cookies.push(`${p.meta.name}=${encodeURIComponent(p.json ? toJson(value) : simple(value))}`)
            break
        }
      }
      if (cookies.length) headers.cookie = cookies.join('; ')
      const req: RestRequest = { method: upper, path: urlPath, query, headers, responseKind: response.kind, operation: name }
      if (security) req.security = security
      if (body) {
        const raw = args[body.argument]
        if (raw !== undefined) {
          // A raw body declared with a wildcard media type (`image/*`) is sent as the uploaded file's own type.
          const file = body.kind === 'binary' && body.contentType.includes('*') ? fileInfoOf(raw) : undefined
          req.contentType = file?.contentType ?? body.contentType
          req.body = body.encode(raw)
        }
      }
      return req
    }

    const field: GraphQLFieldConfig<unknown, unknown> = {
      type,
      args,
      description: [op.summary, op.description].filter((s) => typeof s === 'string' && s.trim() !== '').join('\n\n') || undefined,
      deprecationReason: op.deprecated ? 'Deprecated in the OpenAPI document.' : undefined,
      extensions: { rest: meta },
      resolve: (_source, fieldArgs, context) => request(buildRequest(fieldArgs as Record<string, unknown>), context),
    }
    return { name, field }
  }

  /** Raw names of the top-level properties of a multipart body that are files (`format: binary`, or arrays of them). */
  private binaryProperties(raw: SchemaObject | undefined): Set<string> {
    const out = new Set<string>()
    const { schema } = this.analyse(raw)
    for (const [prop, propSchema] of Object.entries(schema?.properties ?? {})) {
      let p = this.analyse(propSchema).schema
      if (p && this.kindOf(p) === 'array') p = this.analyse(p.items).schema
      if (p && p.type === 'string' && p.format === 'binary') out.add(prop)
    }
    return out
  }

  private pickResponse(responses: Record<string, ResponseObject> | undefined): { kind: ResponseKind; schema?: SchemaObject; status?: string; contentType?: string } {
    const keys = Object.keys(responses ?? {})
    const status = ['200', '201'].find((k) => keys.includes(k))
      ?? keys.filter((k) => /^2\d\d$/.test(k)).sort()[0]
      ?? keys.find((k) => /^2xx$/i.test(k))
      ?? (keys.includes('default') ? 'default' : undefined)
    if (status === undefined) return { kind: 'none' }
    const res = deref<ResponseObject>(this.doc, responses![status])
    const content = isObject(res) && isObject(res.content) ? res.content : undefined
    const medias = Object.keys(content ?? {})
    if (!content || medias.length === 0) return { kind: 'none', status }
    const json = medias.find(isJsonMedia)
    if (json) return { kind: 'json', schema: (content[json] as MediaTypeObject).schema, status, contentType: json }
    const text = medias.find((m) => /^text\//i.test(m))
    if (text) return { kind: 'text', status, contentType: text }
    return { kind: 'binary', status, contentType: medias[0] }
  }

  private defaultFor(schema: SchemaObject | undefined, type: GraphQLInputType): unknown {
    if (!isObject(schema) || schema.default === undefined || schema.default === null) return undefined
    const d = schema.default
    if (typeof d !== 'string' && typeof d !== 'number' && typeof d !== 'boolean') return undefined
    if (type === BigIntScalar || type === DateTimeScalar || type === BytesScalar || type === JSONScalar) return undefined
    try {
      return astFromValue(d, type) ? d : undefined
    } catch {
      return undefined
    }
  }

  // ---------------------------------------------------------------- schema analysis

  private derive(from: SchemaObject, patch: Partial<SchemaObject>): SchemaObject {
    const out = { ...from, ...patch }
    const comp = this.componentOf.get(from)
    if (comp !== undefined) this.componentOf.set(out, comp)
    return out
  }

  /** Resolves `$ref`s and nullability wrappers; the returned schema is identity-stable for caching. */
  private analyse(input: SchemaObject | undefined, depth = 0): Analysed {
    if (input === undefined || input === null) return { schema: undefined, nullable: true }
    if (isObject(input) && typeof input.$ref === 'string' && !input.$ref.startsWith('#')) {
      this.warnings.push(`external $ref ${input.$ref} is not supported; typed as JSON`)
      return { schema: undefined, nullable: true }
    }
    const s = deref<SchemaObject>(this.doc, input)
    if (!isObject(s)) {
      if (isObject(input) && typeof input.$ref === 'string') this.warnings.push(`$ref ${input.$ref} cannot be resolved; typed as JSON`)
      return { schema: undefined, nullable: true }
    }
    const memo = this.analysed.get(s)
    if (memo) return memo
    if (depth > 32) return { schema: undefined, nullable: true }
    let nullable = s.nullable === true
    let schema: SchemaObject = s
    if (Array.isArray(s.type)) {
      const types = s.type.filter((t) => t !== 'null')
      if (types.length !== s.type.length) nullable = true
      schema = this.derive(schema, { type: types.length === 1 ? types[0] : types.length === 0 ? undefined : types })
    }
    if (Array.isArray(s.enum) && s.enum.includes(null)) {
      nullable = true
      schema = this.derive(schema, { enum: s.enum.filter((v) => v !== null) })
    }
    const structural = schema.type !== undefined || schema.properties !== undefined || schema.items !== undefined || schema.enum !== undefined
    for (const key of ['oneOf', 'anyOf'] as const) {
      const list = schema[key]
      if (!Array.isArray(list)) continue
      const members = list.filter((m) => {
        const t = deref<SchemaObject>(this.doc, m)
        const isNull = isObject(t) && (t.type === 'null' || (Array.isArray(t.enum) && t.enum.length === 1 && t.enum[0] === null))
        if (isNull) nullable = true
        return !isNull
      })
      if (members.length === 1 && !structural) {
        const inner = this.analyse(members[0], depth + 1)
        const result = { schema: inner.schema, nullable: nullable || inner.nullable }
        this.analysed.set(s, result)
        return result
      }
      if (members.length !== list.length) schema = this.derive(schema, { [key]: members })
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      if (schema.allOf.length === 1 && !structural && !schema.oneOf && !schema.anyOf) {
        const inner = this.analyse(schema.allOf[0], depth + 1)
        const result = { schema: inner.schema, nullable: nullable || inner.nullable }
        this.analysed.set(s, result)
        return result
      }
      schema = this.mergeAllOf(schema)
    }
    const result = { schema, nullable }
    this.analysed.set(s, result)
    return result
  }

  private mergeAllOf(s: SchemaObject, seen: Set<object> = new Set()): SchemaObject {
    const memo = this.merged.get(s)
    if (memo) return memo
    seen.add(s)
    const out = this.derive(s, {})
    delete out.allOf
    const properties: Record<string, SchemaObject> = { ...(s.properties ?? {}) }
    const required = new Set(s.required ?? [])
    for (const raw of s.allOf ?? []) {
      const p0 = deref<SchemaObject>(this.doc, raw)
      if (!isObject(p0) || seen.has(p0)) continue
      const p = Array.isArray(p0.allOf) ? this.mergeAllOf(p0, seen) : p0
      for (const [k, v] of Object.entries(p.properties ?? {})) if (!(k in properties)) properties[k] = v
      for (const r of p.required ?? []) required.add(r)
      for (const key of ['type', 'format', 'items', 'enum', 'const', 'additionalProperties', 'description', 'discriminator', 'oneOf', 'anyOf'] as const) {
        if (out[key] === undefined && p[key] !== undefined) (out as Record<string, unknown>)[key] = p[key]
      }
      if (p.nullable === true && out.nullable === undefined) out.nullable = true
    }
    if (Object.keys(properties).length > 0) out.properties = properties
    if (required.size > 0) out.required = [...required]
    if (out.type === undefined && out.properties) out.type = 'object'
    this.merged.set(s, out)
    return out
  }

  private kindOf(s: SchemaObject | undefined): Kind {
    if (!isObject(s)) return 'json'
    if (Array.isArray(s.type)) return 'json'
    const t = s.type
    const values = Array.isArray(s.enum) ? s.enum : s.const !== undefined ? [s.const] : undefined
    if (values && values.length > 0) {
      if (values.every((v) => typeof v === 'string')) return 'enum'
      if (values.every((v) => typeof v === 'number')) return values.every(Number.isInteger) && t !== 'number' ? 'integer' : 'number'
      if (values.every((v) => typeof v === 'boolean')) return 'boolean'
      return 'json'
    }
    if (t === undefined && (Array.isArray(s.oneOf) || Array.isArray(s.anyOf))) return 'union'
    if (t === 'object' || (t === undefined && isObject(s.properties))) {
      if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) return 'union'
      return isObject(s.properties) && Object.keys(s.properties).length > 0 ? 'object' : 'json'
    }
    if (t === 'array' || (t === undefined && s.items !== undefined)) return 'array'
    if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return t
    return 'json'
  }

  private scalarFor(kind: 'string' | 'integer' | 'number' | 'boolean', s: SchemaObject): GraphQLScalarType {
    switch (kind) {
      case 'string':
        if (s.format === 'date-time') return DateTimeScalar
        if (s.format === 'byte' || s.format === 'binary') return BytesScalar
        if (s.format === 'decimal') return DecimalScalar
        return GraphQLString
      case 'integer':
        if (s.format === 'int64') return BigIntScalar
        if ((typeof s.minimum === 'number' && s.minimum < INT32_MIN) || (typeof s.maximum === 'number' && s.maximum > INT32_MAX)) return BigIntScalar
        return GraphQLInt
      case 'number':
        return GraphQLFloat
      case 'boolean':
        return GraphQLBoolean
    }
  }

  private typeName(s: SchemaObject, hint: string, input = false): string {
    const comp = this.componentOf.get(s)
    if (comp !== undefined) {
      const base = sanitizeName(comp)
      if (!input) return this.claim(base, base)
      const candidate = base.endsWith('Input') ? base : `${base}Input`
      return this.claim(candidate, base)
    }
    return this.claim(sanitizeName(hint))
  }

  /** Reserves a type name; component names are kept for their own component (`own`). */
  private claim(base: string, own?: string): string {
    let name = base
    for (let i = 2; RESERVED.has(name) || this.usedTypeNames.has(name) || (name !== own && this.componentNames.has(name)); i++) name = `${base}${i}`
    this.usedTypeNames.add(name)
    return name
  }

  private enumFor(s: SchemaObject, hint: string): GraphQLEnumType {
    const cached = this.enums.get(s)
    if (cached) return cached
    const raw = (Array.isArray(s.enum) ? s.enum : [s.const]).filter((v): v is string => typeof v === 'string')
    const values: GraphQLEnumValueConfigMap = {}
    const used = new Set<string>()
    for (const v of new Set(raw)) values[unique(enumValueName(v), used)] = { value: v }
    const type = new GraphQLEnumType({ name: this.typeName(s, hint), description: typeof s.description === 'string' ? s.description : undefined, values })
    this.enums.set(s, type)
    return type
  }

  // ---------------------------------------------------------------- output types

  private output(input: SchemaObject | undefined, hint: string): { type: GraphQLOutputType & GraphQLNullableType; nullable: boolean } {
    const { schema, nullable } = this.analyse(input)
    return { type: this.outputOf(schema, hint), nullable }
  }

  private outputOf(s: SchemaObject | undefined, hint: string): GraphQLOutputType & GraphQLNullableType {
    if (!s) return JSONScalar
    const cached = this.outputs.get(s)
    if (cached) return cached as GraphQLOutputType & GraphQLNullableType
    const kind = this.kindOf(s)
    let type: GraphQLOutputType & GraphQLNullableType
    switch (kind) {
      case 'object':
        return this.objectFor(s, hint)
      case 'union':
        type = this.unionFor(s, hint)
        break
      case 'array': {
        const item = this.output(s.items, hint)
        type = new GraphQLList(item.nullable ? item.type : new GraphQLNonNull(item.type))
        break
      }
      case 'enum':
        type = this.enumFor(s, hint)
        break
      case 'json':
        type = JSONScalar
        break
      default:
        type = this.scalarFor(kind, s)
    }
    this.outputs.set(s, type)
    return type
  }

  private objectFor(s: SchemaObject, hint: string): GraphQLObjectType {
    const cached = this.outputs.get(s)
    if (cached) return cached as GraphQLObjectType
    const name = this.typeName(s, hint)
    const preds: Predicate[] = []
    this.predicates.set(s, preds)
    const required = new Set(s.required ?? [])
    const type: GraphQLObjectType = new GraphQLObjectType({
      name,
      description: s.description,
      isTypeOf: (value) => isObject(value) && preds.every((p) => p(value)),
      fields: () => {
        const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
        const used = new Set<string>()
        for (const [prop, propSchema] of Object.entries(s.properties ?? {})) {
          const target = deref<SchemaObject>(this.doc, propSchema)
          if (isObject(target) && target.writeOnly === true) continue
          const fieldName = unique(sanitizeName(prop), used)
          const { type: t, nullable } = this.output(propSchema, `${name}${pascalCase(prop)}`)
          fields[fieldName] = {
            type: required.has(prop) && !nullable ? new GraphQLNonNull(t) : t,
            description: propertyDescription(propSchema, target),
            deprecationReason: isObject(target) && target.deprecated === true ? 'Deprecated in the OpenAPI document.' : undefined,
            ...(fieldName !== prop ? { resolve: (src: unknown) => (src as Record<string, unknown>)[prop] } : {}),
          }
        }
        if (Object.keys(fields).length === 0) fields._empty = { type: GraphQLBoolean, description: 'Placeholder: every property is write-only.', resolve: () => null }
        return fields
      },
    })
    this.outputs.set(s, type)
    return type
  }

  private unionFor(s: SchemaObject, hint: string): GraphQLOutputType & GraphQLNullableType {
    const list = (s.oneOf ?? s.anyOf ?? []) as SchemaObject[]
    const members = list.map((m) => this.analyse(m).schema)
    const kinds = members.map((m) => this.kindOf(m))
    if (members.length === 0) return JSONScalar
    if (!kinds.every((k) => k === 'object')) {
      const first = kinds[0]!
      if ((first === 'string' || first === 'integer' || first === 'number' || first === 'boolean') && kinds.every((k) => k === first)) {
        const scalars = new Set(members.map((m) => this.scalarFor(first, m!)))
        if (scalars.size === 1) return [...scalars][0]!
      }
      return JSONScalar
    }
    const objects = [...new Set(members as SchemaObject[])]
    const preds = this.discriminate(s, objects)
    if (!preds) {
      this.warnings.push(`${hint}: oneOf/anyOf members cannot be told apart; typed as JSON`)
      return JSONScalar
    }
    const name = this.typeName(s, hint)
    const types = objects.map((m, i) => {
      const t = this.objectFor(m, `${name}${pascalCase(typeof m.title === 'string' ? m.title : `Option${i + 1}`)}`)
      this.predicates.get(m)!.push(preds[i]!)
      return t
    })
    return new GraphQLUnionType({ name, description: s.description, types })
  }

  /** One predicate per member telling its values apart, or undefined when the members are not discriminable. */
  private discriminate(s: SchemaObject, members: SchemaObject[]): Predicate[] | undefined {
    const constsOf = (m: SchemaObject, prop: string): unknown[] => {
      const p = this.analyse(m.properties?.[prop]).schema
      if (!isObject(p)) return []
      if (p.const !== undefined) return [p.const]
      return Array.isArray(p.enum) ? p.enum : []
    }
    const prop = s.discriminator?.propertyName
    if (typeof prop === 'string') {
      const values = members.map((m) => {
        const out = new Set<unknown>(constsOf(m, prop))
        for (const [value, ref] of Object.entries(s.discriminator?.mapping ?? {})) {
          const target = ref.startsWith('#') ? deref<SchemaObject>(this.doc, { $ref: ref }) : deref<SchemaObject>(this.doc, { $ref: `#/components/schemas/${ref}` })
          if (target && this.analyse(target).schema === m) out.add(value)
        }
        const comp = this.componentOf.get(m)
        if (comp !== undefined && out.size === 0) out.add(comp)
        return out
      })
      if (values.every((v) => v.size > 0)) return values.map((v) => (value) => v.has(value[prop]))
    }
    // A property with a distinct const value in every member.
    const common = Object.keys(members[0]!.properties ?? {}).filter((k) => members.every((m) => m.properties && k in m.properties))
    for (const k of common) {
      const values = members.map((m) => constsOf(m, k))
      const flat = values.flat()
      if (values.every((v) => v.length > 0) && new Set(flat).size === flat.length) return values.map((v) => (value) => v.includes(value[k]))
    }
    // A required property unique to each member.
    const uniqueKeys = members.map((m, i) => (m.required ?? []).find((k) => members.every((o, j) => j === i || !(o.properties && k in o.properties))))
    if (uniqueKeys.every((k) => k !== undefined)) return uniqueKeys.map((k) => (value) => k! in value)
    // A unique property set: every member has properties no other member has. A value is the member
    // whose own properties it carries; one carrying none is any member that another's do not claim.
    const own = members.map((m, i) => Object.keys(m.properties ?? {}).filter((k) => members.every((o, j) => j === i || !(o.properties && k in o.properties))))
    if (own.every((keys) => keys.length > 0)) {
      return own.map((keys, i) => (value) => keys.some((k) => k in value) || !own.some((other, j) => j !== i && other.some((k) => k in value)))
    }
    return undefined
  }

  // ---------------------------------------------------------------- input types

  private input(raw: SchemaObject | undefined, hint: string, topLevelBody = false): { type: GraphQLInputType & GraphQLNullableType; nullable: boolean; codec: Codec } {
    const { schema, nullable } = this.analyse(raw)
    const { type, codec } = this.inputOf(schema, hint, topLevelBody)
    return { type, nullable, codec }
  }

  private inputOf(s: SchemaObject | undefined, hint: string, topLevelBody = false): { type: GraphQLInputType & GraphQLNullableType; codec: Codec } {
    if (!s) return { type: JSONScalar, codec: identity }
    const cached = this.inputs.get(s)
    if (cached) return cached as { type: GraphQLInputType & GraphQLNullableType; codec: Codec }
    const kind = this.kindOf(s)
    let result: { type: GraphQLInputType & GraphQLNullableType; codec: Codec }
    switch (kind) {
      case 'object':
        return this.inputObjectFor(s, topLevelBody ? hint : `${stripInput(hint)}Input`)
      case 'array': {
        const item = this.input(s.items, stripInput(hint))
        const codec: Codec = (v) => (Array.isArray(v) ? v.map((x) => (x === null ? null : item.codec(x))) : item.codec(v))
        result = { type: new GraphQLList(item.nullable ? item.type : new GraphQLNonNull(item.type)), codec }
        break
      }
      case 'enum':
        result = { type: this.enumFor(s, stripInput(hint)), codec: identity }
        break
      case 'union':
      case 'json':
        result = { type: JSONScalar, codec: identity }
        break
      default:
        const scalar = this.scalarFor(kind, s)
        result = { type: scalar, codec: scalarCodec(scalar) }
    }
    this.inputs.set(s, result)
    return result
  }

  private inputObjectFor(s: SchemaObject, hint: string): { type: GraphQLInputObjectType; codec: Codec } {
    const name = this.typeName(s, hint, true)
    const mapping: Array<[gql: string, json: string, codec: Codec]> = []
    const required = new Set(s.required ?? [])
    const type = new GraphQLInputObjectType({
      name,
      description: s.description,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {}
        const used = new Set<string>()
        mapping.length = 0
        for (const [prop, propSchema] of Object.entries(s.properties ?? {})) {
          const target = deref<SchemaObject>(this.doc, propSchema)
          if (isObject(target) && target.readOnly === true) continue
          const fieldName = unique(sanitizeName(prop), used)
          // A property leading back into this type is JSON: no recursive input types (see header).
          const cycle = this.objectTargets(propSchema).some((child) => this.reaches(child, s))
          const { type: t, nullable, codec } = cycle
            ? { type: JSONScalar, nullable: this.analyse(propSchema).nullable, codec: identity }
            : this.input(propSchema, `${stripInput(name)}${pascalCase(prop)}`)
          const hasDefault = isObject(target) && target.default !== undefined
          fields[fieldName] = {
            type: required.has(prop) && !nullable && !hasDefault ? new GraphQLNonNull(t) : t,
            description: propertyDescription(propSchema, target),
            defaultValue: this.defaultFor(target, t),
          }
          mapping.push([fieldName, prop, codec])
        }
        if (Object.keys(fields).length === 0) {
          fields._empty = { type: GraphQLBoolean, description: 'Placeholder: every property is read-only.' }
        }
        return fields
      },
    })
    const codec: Codec = (value) => {
      if (!isObject(value)) return value
      const out: Record<string, unknown> = {}
      for (const [gql, json, c] of mapping) {
        const v = value[gql]
        if (v !== undefined) out[json] = v === null ? null : c(v)
      }
      return out
    }
    const result = { type, codec }
    this.inputs.set(s, result)
    return result
  }

  /** The object schemas an input property holds: itself, or its (nested) array items. Unions and JSON hold none. */
  private objectTargets(raw: SchemaObject | undefined, depth = 0): SchemaObject[] {
    const { schema } = this.analyse(raw)
    if (!schema || depth > 16) return []
    const kind = this.kindOf(schema)
    if (kind === 'object') return [schema]
    if (kind === 'array') return this.objectTargets(schema.items, depth + 1)
    return []
  }

  /** True when input type `from` leads to `to` through its (non-read-only) properties, arrays included. */
  private reaches(from: SchemaObject, to: SchemaObject, seen: Set<object> = new Set()): boolean {
    if (from === to) return true
    if (seen.has(from)) return false
    seen.add(from)
    for (const propSchema of Object.values(from.properties ?? {})) {
      const target = deref<SchemaObject>(this.doc, propSchema)
      if (isObject(target) && target.readOnly === true) continue
      if (this.objectTargets(propSchema).some((child) => this.reaches(child, to, seen))) return true
    }
    return false
  }
}

/** RFC 6570 simple expansion of one value (path and header parameters): arrays comma-joined. */
function simple(value: unknown): string {
  if (Array.isArray(value)) return value.map(toText).join(',')
  if (isObject(value) && !(value instanceof Date) && !Buffer.isBuffer(value)) return Object.entries(value).map(([k, v]) => `${k},${toText(v)}`).join(',')
  return toText(value)
}

/** OpenAPI §4.8.12.4 query serialisation: `form` (explode: repeated keys), `spaceDelimited`, `pipeDelimited`, `deepObject`. */
/** The body media type used, by preference: JSON, form, multipart, text (`text/*`, XML), else the first as bytes. */
function pickBodyMedia(medias: string[]): [string, BodyKind] {
  const json = medias.find(isJsonMedia)
  if (json) return [json, 'json']
  const form = medias.find((m) => /^application\/x-www-form-urlencoded/i.test(m))
  if (form) return [form, 'form']
  const multipart = medias.find((m) => /^multipart\/form-data/i.test(m))
  if (multipart) return [multipart, 'multipart']
  const text = medias.find((m) => /^text\//i.test(m) || /^application\/([\w.+-]+\+)?xml\s*(;|$)/i.test(m))
  if (text) return [text, 'text']
  return [medias[0]!, 'binary']
}

/** A `Bytes` value (a Buffer from the scalar, graphql-jit's `{ type: 'Buffer', data }`, or base64 text) as a Buffer. */
function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value
  if (value instanceof Uint8Array) return Buffer.from(value)
  if (isObject(value) && value.type === 'Buffer' && Array.isArray(value.data)) return Buffer.from(value.data as number[])
  return Buffer.from(typeof value === 'string' ? value : toText(value), 'base64')
}

/**
 * `multipart/form-data` (RFC 7578): `binary` properties as file parts (an uploaded file with its own
 * file name and `Content-Type`, any other value named after the property as `application/octet-stream`),
 * objects as JSON, arrays repeated.
 */
function multipartEncode(value: unknown, binary: Set<string>): FormData {
  const form = new FormData()
  if (!isObject(value)) return form
  for (const [k, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue
    for (const item of Array.isArray(v) ? v : [v]) {
      if (binary.has(k)) {
        // An uploaded file keeps the name and media type its client gave it (gateway/http/graphql-multipart.ts).
        const file = fileInfoOf(item)
        form.append(k, new Blob([toBuffer(item)], { type: file?.contentType ?? 'application/octet-stream' }), file?.filename ?? k)
      }
      else form.append(k, toText(item))
    }
  }
  return form
}

