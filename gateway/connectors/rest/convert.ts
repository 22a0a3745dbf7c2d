/**
 * OpenAPI 3.0 / 3.1 document → executable GraphQL schema. Pure: no I/O; every upstream call goes
 * through the `request` function it is given, so it is tested on fixture documents.
 *
 * The converter is split by concern: this file is the entry and **operations → root fields**
 * (field names, arguments, request bodies, responses, resolvers); **schemas → types** is
 * `schema-types.ts` (`SchemaTypes`, which `Converter` extends); **parameter and body serialization**
 * is `serialize.ts`; **document loading** (files, URLs, YAML, Swagger 2.0, the cache) is
 * `load-document.ts`; the document's shapes and `$ref` resolution are `openapi.ts`.
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
 *   depends on public type names. With `options.namespace` the types and root fields get their public
 *   (namespaced) names here, so `compose/` does not rename them (a `mapSchema` pass, a second
 *   `GraphQLSchema` and a heal fewer per source).
 * - **Not supported:** external `$ref`s (→ `JSON`, with a warning), callbacks, links. Security schemes are not converted: each request carries its operation's `security`
 *   (`RestRequest.security`) and `security.ts` applies the source's credentials.
 */
import {
  GraphQLBoolean, GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString,
  type GraphQLFieldConfig, type GraphQLFieldConfigArgumentMap, type GraphQLFieldConfigMap,
  type GraphQLInputType, type GraphQLNullableType, type GraphQLOutputType,
} from 'graphql'
import type { FormData } from 'undici'
import { undici } from '../../undici.js'
import { BadRequestError } from '../../errors.js'
import { BytesScalar, JSONScalar, fileInfoOf } from '../../scalars.js'
import {
  HTTP_METHODS, deref, isObject,
  type HttpMethod, type MediaTypeObject, type OpenApiDocument, type OperationObject, type ParameterObject,
  type RequestBodyObject, type ResponseObject, type SchemaObject, type SecurityRequirement,
} from './openapi.js'
import { formEncode, formEncodings, serializeQuery, toJson, toText } from './serialize.js'
import { SchemaTypes, pascalCase, sanitizeName, str, unique, type Codec } from './schema-types.js'

export { toJson, pascalCase, sanitizeName }

/** How the body of an upstream answer is decoded: parsed JSON, text, base64 of the bytes, or ignored (`true`). */
export type ResponseKind = 'json' | 'text' | 'binary' | 'none' | 'head'

/** How a request body is encoded: JSON, `application/x-www-form-urlencoded`, `multipart/form-data`, text (`text/*`, XML) or raw bytes. */
/**
 * What a HEAD operation (a Query field) returns: the answer's status and headers (lower-case names;
 * `set-cookie` left out, repeated headers joined with `, `).
 */
const headResponse = (prefix: string) => new GraphQLObjectType({
  name: `${prefix}HeadResponse`,
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
  /**
   * The source's namespace, `''` (the default) for none. The schema is built with its public names
   * (types `<namespace>_<Type>`, root fields `<namespace>_<field>`), the very schema `compose/`'s
   * `applyNamespace` would make of the unprefixed one, so that composition need not rename it.
   */
  namespace?: string
}

/** What {@link convertOpenApi} returns. */
export interface ConvertResult {
  /** The executable schema, with `options.namespace` applied (none by default). */
  schema: GraphQLSchema
  /** Parts of the document that were skipped or approximated, one sentence each. */
  warnings: string[]
}

function isJsonMedia(media: string): boolean {
  return /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(media) || media === '*/*'
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

class Converter extends SchemaTypes {
  /** The type of every HEAD operation's field, made once per document. */
  private headType?: GraphQLObjectType
  private readonly fieldNames = new Set<string>()

  constructor(doc: OpenApiDocument, private readonly options: ConvertOptions) {
    super(doc, options.namespace)
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
        if (built) (method === 'get' || method === 'head' ? query : mutation)[this.prefix + built.name] = built.field
      }
    }
    if (Object.keys(query).length === 0) {
      query[`${this.prefix}_empty`] = { type: GraphQLBoolean, description: 'Placeholder: this API has no GET operation.', resolve: () => null }
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
    if (response.kind === 'head') type = (this.headType ??= headResponse(this.prefix))
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
  const form = new (undici().FormData)()
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

