/**
 * Renders `generated/client.ts`: a typed fetch client for every served stored operation, with no
 * dependencies (it uses the global `fetch`, `URLSearchParams`, `TextDecoder` and streams, so it runs
 * on Node.js 18+, Deno, Bun and browsers).
 *
 * - queries: `client.TodoById(variables)` sends `GET /operations/TodoById?...`, encoding variables
 *   the way the gateway coerces them (`gateway/operations/compile.ts`): scalars and lists of scalars
 *   as query params (lists as repeated params), everything else (input objects, `null`, JSON
 *   scalars, empty lists) inside `variables=<JSON>`;
 * - `client.live.TodoById(variables)`: the same query as a live query (`?live=true`, Server-Sent
 *   Events), an async iterator that yields the result each time it changes;
 * - mutations: `POST` with a JSON body;
 * - subscriptions: an async iterator over Server-Sent Events read with fetch streaming; leaving the
 *   loop (`break`, `return`) closes the connection, which releases the upstream on the gateway.
 *
 * Each operation gets exported `<Name>Variables` and `<Name>Response` types derived from its
 * variables and response JSON Schemas (`gateway/operations/json-schema.ts`). Shared scalars map to
 * `DateTime` (ISO 8601 string), `BigIntString` / `DecimalString` (strings), `Base64String` and
 * `JSONValue` (`unknown`). Every failure (HTTP status >= 400, `errors` in a stream event, a body that
 * is not JSON) throws `TributaryError` with the HTTP `status` and the `errors` array.
 */
import type { Gateway } from '../runtime.js'
import type { CompiledOperation } from '../operations/compile.js'
import type { JsonSchema } from '../operations/json-schema.js'

const BIGINT_PATTERN = '^-?\\d+$'
const DECIMAL_PATTERN = '^-?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d+)?$'
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** The runtime part of the generated file: the same for every deployment. */
const RUNTIME = `// ----- shared scalars -----

/** \`DateTime\`: an ISO 8601 UTC date-time string, e.g. \`2026-11-20T10:00:00.000Z\`. */
export type DateTime = string
/** \`BigInt\`: a whole number as a decimal string (it may not fit a JS number). */
export type BigIntString = string
/** \`Decimal\`: an exact decimal number as a string. */
export type DecimalString = string
/** \`Bytes\`: base64. */
export type Base64String = string
/** \`JSON\` and unknown custom scalars: any JSON value. */
export type JSONValue = unknown

// ----- runtime -----

/** One error of a response (docs/architecture.md §5): \`{ message, path?, extensions: { code } }\`. */
export interface TributaryErrorItem {
  message: string
  path?: (string | number)[]
  locations?: { line: number; column: number }[]
  extensions?: { code?: string; [key: string]: unknown }
}

/** Thrown by every client call that fails: an HTTP status >= 400, or \`errors\` in a stream event. */
export class TributaryError extends Error {
  /** The HTTP status (200 for an error inside a stream event, 0 when no response was received). */
  readonly status: number
  /** The \`errors\` array of the response (at least one item). */
  readonly errors: TributaryErrorItem[]
  /** Partial data sent next to the errors, if any. */
  readonly data: unknown
  constructor(status: number, errors: TributaryErrorItem[], data?: unknown) {
    super(errors.map((e) => e.message).join('; ') || \`HTTP \${status}\`)
    this.name = 'TributaryError'
    this.status = status
    this.errors = errors
    this.data = data
  }
  /** The first error's \`extensions.code\` (\`TRB_ERR_OPERATION_VARIABLES\`...). */
  get code(): string | undefined {
    return this.errors[0]?.extensions?.code
  }
}

/** Headers, or a function returning them (called for every request: fresh tokens). */
export type HeadersOption = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The gateway's base URL, e.g. \`http://127.0.0.1:4000\`. */
  baseUrl: string
  /** Headers sent with every request. */
  headers?: HeadersOption
  /** The fetch implementation. Default: the global \`fetch\`. */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request (or closes the stream). */
  signal?: AbortSignal
  /** Extra headers for this call. */
  headers?: Record<string, string>
}

interface OperationInfo {
  path: string
  /** Variables sent as plain query params (scalars, enums and lists of them). */
  plain: readonly string[]
}

function isPlainValue(value: unknown): boolean {
  const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
  return Array.isArray(value) ? value.length > 0 && value.every(scalar) : scalar(value)
}

function queryString(info: OperationInfo, variables: object | undefined, live: boolean): string {
  const params = new URLSearchParams()
  const json: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(variables ?? {})) {
    if (value === undefined) continue
    if (info.plain.includes(key) && isPlainValue(value)) {
      for (const v of Array.isArray(value) ? value : [value]) params.append(key, String(v))
    } else {
      json[key] = value
    }
  }
  if (Object.keys(json).length > 0) params.set('variables', JSON.stringify(json))
  if (live) params.set('live', 'true')
  const s = params.toString()
  return s ? \`?\${s}\` : ''
}

function errorsOf(body: unknown, status: number): TributaryErrorItem[] {
  const errors = (body as { errors?: unknown } | null | undefined)?.errors
  if (Array.isArray(errors) && errors.length > 0) return errors as TributaryErrorItem[]
  return [{ message: \`HTTP \${status}\`, extensions: { code: 'TRB_CLIENT_HTTP' } }]
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new TributaryError(res.status, [{ message: \`The response is not JSON (HTTP \${res.status})\`, extensions: { code: 'TRB_CLIENT_BAD_RESPONSE' } }])
  }
}

/** Reads a Server-Sent Events body (HTML Living Standard §9.2.6) and yields the \`data\` of each event. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let data: string[] = []
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      for (;;) {
        const m = /\\r\\n|\\r|\\n/.exec(buffer)
        if (!m || (m[0] === '\\r' && m.index === buffer.length - 1)) break
        const line = buffer.slice(0, m.index)
        buffer = buffer.slice(m.index + m[0].length)
        if (line === '') {
          if (data.length > 0) yield data.join('\\n')
          data = []
        } else if (line.startsWith('data')) {
          const v = line.slice(4)
          if (v === '' || v.startsWith(':')) data.push(v.startsWith(': ') ? v.slice(2) : v.slice(1))
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/** The client returned by {@link createClient}, before the per-operation methods are bound. */
class Transport {
  private readonly base: string
  private readonly fetchImpl: (input: string, init?: RequestInit) => Promise<Response>
  private readonly headersOption: HeadersOption | undefined

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\\/+$/, '')
    const f = options.fetch ?? globalThis.fetch
    if (typeof f !== 'function') throw new TypeError('No fetch implementation: pass options.fetch')
    this.fetchImpl = (input, init) => f(input, init)
    this.headersOption = options.headers
  }

  private async headers(extra: Record<string, string>, call: CallOptions | undefined): Promise<Record<string, string>> {
    const common = typeof this.headersOption === 'function' ? await this.headersOption() : (this.headersOption ?? {})
    return { ...common, ...extra, ...(call?.headers ?? {}) }
  }

  private async send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(url, init)
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      throw new TributaryError(0, [{ message: \`Request failed: \${(err as Error).message}\`, extensions: { code: 'TRB_CLIENT_NETWORK' } }])
    }
  }

  async query(info: OperationInfo, variables: object | undefined, call: CallOptions | undefined): Promise<unknown> {
    const res = await this.send(this.base + info.path + queryString(info, variables, false), {
      method: 'GET',
      headers: await this.headers({ accept: 'application/json' }, call),
      signal: call?.signal ?? null,
    })
    return this.result(res)
  }

  async mutate(info: OperationInfo, variables: object | undefined, call: CallOptions | undefined): Promise<unknown> {
    const res = await this.send(this.base + info.path, {
      method: 'POST',
      headers: await this.headers({ accept: 'application/json', 'content-type': 'application/json' }, call),
      body: JSON.stringify(variables ?? {}),
      signal: call?.signal ?? null,
    })
    return this.result(res)
  }

  private async result(res: Response): Promise<unknown> {
    const body = await readJson(res)
    if (!res.ok) throw new TributaryError(res.status, errorsOf(body, res.status), (body as { data?: unknown } | undefined)?.data)
    return body
  }

  async *stream(info: OperationInfo, variables: object | undefined, live: boolean, call: CallOptions | undefined): AsyncGenerator<unknown, void, undefined> {
    const controller = new AbortController()
    const abort = () => controller.abort()
    call?.signal?.addEventListener('abort', abort)
    try {
      const res = await this.send(this.base + info.path + queryString(info, variables, live), {
        method: 'GET',
        headers: await this.headers({ accept: 'text/event-stream' }, call),
        signal: controller.signal,
      })
      if (!res.ok || !res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
        const body = await readJson(res)
        throw new TributaryError(res.status, errorsOf(body, res.status))
      }
      for await (const text of sseData(res.body)) {
        let event: { data?: unknown; errors?: TributaryErrorItem[] }
        try {
          event = JSON.parse(text) as { data?: unknown; errors?: TributaryErrorItem[] }
        } catch {
          throw new TributaryError(res.status, [{ message: 'An event is not JSON', extensions: { code: 'TRB_CLIENT_BAD_RESPONSE' } }])
        }
        if (event.errors && event.errors.length > 0) throw new TributaryError(res.status, event.errors, event.data)
        yield event.data
      }
    } finally {
      call?.signal?.removeEventListener('abort', abort)
      controller.abort()
    }
  }
}
`

/** Type names and method names derived from an operation's URL name. */
interface Names {
  /** Method name on the client: `users/GetUser` → `users_GetUser`. */
  method: string
  /** Prefix of the exported types: `users/GetUser` → `Users_GetUser`. */
  type: string
}

function namesOf(ops: readonly CompiledOperation[]): Map<CompiledOperation, Names> {
  const used = new Set<string>(['live'])
  const out = new Map<CompiledOperation, Names>()
  for (const op of ops) {
    let method = op.name.replace(/[/-]/g, '_')
    if (/^[0-9]/.test(method)) method = `_${method}`
    let candidate = method
    for (let i = 2; used.has(candidate); i++) candidate = `${method}_${i}`
    used.add(candidate)
    out.set(op, { method: candidate, type: candidate.charAt(0).toUpperCase() + candidate.slice(1) })
  }
  return out
}

function comment(text: string | undefined, indent: string): string {
  if (!text) return ''
  return `${indent}/** ${text.replace(/\*\//g, '*\\/').replace(/\n/g, `\n${indent} * `)} */\n`
}

function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/**
 * The TypeScript type of a JSON Schema produced by `gateway/operations/json-schema.ts`.
 * @param indent the indentation of the line the type starts on.
 */
export function jsonSchemaToTs(schema: JsonSchema, indent = ''): string {
  if (schema.anyOf) return union(schema.anyOf.map((s) => jsonSchemaToTs(s, indent)))
  if (schema.enum) return union(schema.enum.map((v) => JSON.stringify(v)))
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.length === 0) return 'JSONValue'
  return union(types.map((t) => single(t, schema, indent)))
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)]
  if (unique.includes('JSONValue')) return 'JSONValue'
  // `T | null` reads better than `null | T`
  return [...unique.filter((p) => p !== 'null'), ...unique.filter((p) => p === 'null')].join(' | ')
}

function single(type: string, schema: JsonSchema, indent: string): string {
  switch (type) {
    case 'null':
      return 'null'
    case 'boolean':
      return 'boolean'
    case 'integer':
    case 'number':
      return 'number'
    case 'string':
      if (schema.format === 'date-time') return 'DateTime'
      if (schema.pattern === BIGINT_PATTERN) return 'BigIntString'
      if (schema.pattern === DECIMAL_PATTERN) return 'DecimalString'
      if (schema.contentEncoding === 'base64') return 'Base64String'
      return 'string'
    case 'array': {
      if (!schema.items) return 'JSONValue[]'
      const item = jsonSchemaToTs(schema.items, indent)
      return /^[A-Za-z0-9_]+$/.test(item) ? `${item}[]` : `Array<${item}>`
    }
    case 'object':
      return objectType(schema, indent)
    default:
      return 'JSONValue'
  }
}

function objectType(schema: JsonSchema, indent: string): string {
  const props = schema.properties
  if (!props) return 'Record<string, JSONValue>'
  const entries = Object.entries(props)
  if (entries.length === 0) return schema.additionalProperties === false ? 'Record<string, never>' : 'Record<string, JSONValue>'
  const required = new Set(schema.required ?? [])
  const inner = `${indent}  `
  const lines = entries.map(([name, s]) => `${comment(s.description, inner)}${inner}${propertyKey(name)}${required.has(name) ? '' : '?'}: ${jsonSchemaToTs(s, inner)}`)
  return `{\n${lines.join('\n')}\n${indent}}`
}

/** Variables sent as plain query params: scalars, enums and lists of them (never objects or JSON scalars). */
function plainVariables(op: CompiledOperation): string[] {
  const isPlainSchema = (s: JsonSchema | undefined): boolean => {
    if (!s) return false
    if (s.anyOf) return s.anyOf.every((x) => (x.type === 'null' ? true : isPlainSchema(x)))
    if (s.enum) return true
    const types = (Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type]).filter((t) => t !== 'null')
    if (types.length !== 1) return false
    if (types[0] === 'array') return isPlainSchema(s.items) && s.items?.type !== 'array'
    return ['string', 'integer', 'number', 'boolean'].includes(types[0])
  }
  return Object.entries(op.variablesSchema.properties ?? {})
    .filter(([name, s]) => name !== 'variables' && name !== 'live' && isPlainSchema(s))
    .map(([name]) => name)
}

function hasRequired(op: CompiledOperation): boolean {
  return (op.variablesSchema.required ?? []).length > 0
}

/**
 * Renders `generated/client.ts` for the served (non-internal) operations of a gateway.
 * @returns TypeScript source that compiles under `strict` with no dependencies.
 */
export function renderClient(gateway: Gateway): string {
  const ops = [...gateway.operations.values()].filter((op) => !op.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
  const names = namesOf(ops)
  const out: string[] = []
  out.push(`/**
 * Typed client for this deployment's stored operations. Generated by Tributary from operations/
 * (gateway/codegen/client.ts): do not edit; run \`npm run build\`.
 *
 * \`\`\`ts
 * import { createClient } from './generated/client.js'
 * const client = createClient({ baseUrl: 'http://127.0.0.1:4000' })
${ops.find((o) => o.kind === 'query') ? ` * const data = await client.${names.get(ops.find((o) => o.kind === 'query')!)!.method}(${hasRequired(ops.find((o) => o.kind === 'query')!) ? '{ ... }' : ''})\n` : ''}${ops.find((o) => o.kind === 'subscription') ? ` * for await (const event of client.${names.get(ops.find((o) => o.kind === 'subscription')!)!.method}()) console.log(event)\n` : ''} * \`\`\`
 *
 * Queries are sent as GET (scalar variables as query params, the others in \`variables=<JSON>\`),
 * mutations as POST with a JSON body, subscriptions and live queries as Server-Sent Events read with
 * fetch streaming. Failures throw {@link TributaryError}.
 */
/* eslint-disable */
`)
  out.push(RUNTIME)
  out.push('// ----- operations -----\n')
  for (const op of ops) {
    const n = names.get(op)!
    const where = `\`${op.name}\` (operations/${op.name}.graphql)`
    out.push(`/** Variables of the stored ${op.kind} ${where}. */`)
    out.push(`export type ${n.type}Variables = ${jsonSchemaToTs(op.variablesSchema)}\n`)
    out.push(`/** ${op.kind === 'subscription' ? 'One event' : 'The data object'} of the stored ${op.kind} ${where}. */`)
    out.push(`export type ${n.type}Response = ${jsonSchemaToTs(op.responseSchema)}\n`)
  }

  out.push(`const operations = {`)
  for (const op of ops) out.push(`  ${propertyKey(names.get(op)!.method)}: { path: ${JSON.stringify(`/operations/${op.name}`)}, plain: ${JSON.stringify(plainVariables(op))} },`)
  out.push(`} satisfies Record<string, OperationInfo>\n`)

  const signature = (op: CompiledOperation) => `variables${hasRequired(op) ? '' : '?'}: ${names.get(op)!.type}Variables, options?: CallOptions`
  const queries = ops.filter((op) => op.kind === 'query')
  out.push(`/** The typed client: one method per stored operation, and \`live\` for the live variant of each query. */`)
  out.push(`export interface TributaryClient {`)
  for (const op of ops) {
    const n = names.get(op)!
    const path = `/operations/${op.name}`
    if (op.kind === 'query') {
      out.push(`  /** Runs the query \`${op.name}\`: \`GET ${path}\`. @throws TributaryError */`)
      out.push(`  ${propertyKey(n.method)}(${signature(op)}): Promise<${n.type}Response>`)
    } else if (op.kind === 'mutation') {
      out.push(`  /** Runs the mutation \`${op.name}\`: \`POST ${path}\` with a JSON body. @throws TributaryError */`)
      out.push(`  ${propertyKey(n.method)}(${signature(op)}): Promise<${n.type}Response>`)
    } else {
      out.push(`  /** Subscribes to \`${op.name}\`: \`GET ${path}\` as Server-Sent Events; leave the loop to close it. @throws TributaryError */`)
      out.push(`  ${propertyKey(n.method)}(${signature(op)}): AsyncGenerator<${n.type}Response, void, undefined>`)
    }
  }
  out.push(`  /** Live queries: \`GET /operations/<Query>?live=true\` as Server-Sent Events; yields the result whenever it changes. */`)
  out.push(`  live: {`)
  for (const op of queries) {
    const n = names.get(op)!
    out.push(`    ${propertyKey(n.method)}(${signature(op)}): AsyncGenerator<${n.type}Response, void, undefined>`)
  }
  out.push(`  }`)
  out.push(`}\n`)

  out.push(`/**
 * Creates a client.
 * @throws TypeError when there is no global fetch and none is passed.
 */
export function createClient(options: ClientOptions): TributaryClient {
  const t = new Transport(options)
  return {`)
  for (const op of ops) {
    const n = names.get(op)!
    const info = `operations.${n.method}`
    const type = `${n.type}Response`
    const params = `variables${hasRequired(op) ? '' : '?'}: ${n.type}Variables, options?: CallOptions`
    if (op.kind === 'query') out.push(`    ${propertyKey(n.method)}: (${params}) => t.query(${info}, variables, options) as Promise<${type}>,`)
    else if (op.kind === 'mutation') out.push(`    ${propertyKey(n.method)}: (${params}) => t.mutate(${info}, variables, options) as Promise<${type}>,`)
    else out.push(`    ${propertyKey(n.method)}: (${params}) => t.stream(${info}, variables, false, options) as AsyncGenerator<${type}, void, undefined>,`)
  }
  out.push(`    live: {`)
  for (const op of queries) {
    const n = names.get(op)!
    out.push(`      ${propertyKey(n.method)}: (variables${hasRequired(op) ? '' : '?'}: ${n.type}Variables, options?: CallOptions) => t.stream(operations.${n.method}, variables, true, options) as AsyncGenerator<${n.type}Response, void, undefined>,`)
  }
  out.push(`    },`)
  out.push(`  }`)
  out.push(`}`)
  return out.join('\n') + '\n'
}
