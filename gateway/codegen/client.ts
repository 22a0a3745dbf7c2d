/**
 * Renders `generated/client.ts`: a typed fetch client for every served stored operation. Its only
 * import is the package's runtime, `tributary-gateway/client` (gateway/client/index.ts), which uses the
 * global `fetch`, `URLSearchParams`, `TextDecoder` and streams, so it runs on Node.js 18+, Deno, Bun
 * and browsers (with a bundler).
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
import { describeAuthRules } from '../auth/directives.js'
import type { Gateway } from '../runtime.js'
import type { CompiledOperation } from '../operations/compile.js'
import { defRefName, mergedDefs, type JsonSchema } from '../operations/json-schema.js'

const BIGINT_PATTERN = '^-?\\d+$'
const DECIMAL_PATTERN = '^-?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d+)?$'
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** What a generated client imports from the package: the runtime of `gateway/client/index.ts`. */
const RUNTIME = `import { Transport, type CallOptions, type ClientOptions, type OperationInfo } from 'tributary-gateway/client'
import type * as Runtime from 'tributary-gateway/client'
import type { HooksConfigInput } from 'tributary-gateway'
export { TributaryError } from 'tributary-gateway/client'
export type { TributaryErrorItem, CallOptions, ClientOptions, HeadersOption } from 'tributary-gateway/client'

// ----- shared scalars (see tributary-gateway/client) -----
export type DateTime = Runtime.DateTime
export type BigIntString = Runtime.BigIntString
export type DecimalString = Runtime.DecimalString
export type Base64String = Runtime.Base64String
export type JSONValue = Runtime.JSONValue

`

/** Type names and method names derived from an operation's URL name. */
export interface Names {
  /** Method name on the client: `users/GetUser` → `users_GetUser`. */
  method: string
  /** Prefix of the exported types: `users/GetUser` → `Users_GetUser`. */
  type: string
}

/** The client method and type prefix of each operation, unique within the file. */
export function namesOf(ops: readonly CompiledOperation[]): Map<CompiledOperation, Names> {
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

/** `name` as an object key: bare when it is an identifier, else a string literal. */
export function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/** The type name of a `#/$defs/<Name>` reference: `<Name>`. */
function defName(ref: string): string {
  return defRefName(ref) ?? ref
}

/**
 * The TypeScript type of a JSON Schema produced by `gateway/operations/json-schema.ts`.
 * @param indent the indentation of the line the type starts on.
 * @param refName the type name of a `$ref` (an input object of `$defs`); default: the `$defs` key
 */
export function jsonSchemaToTs(schema: JsonSchema, indent = '', refName: (ref: string) => string = defName): string {
  // An input object: `{$ref, type: "object"}`, or `["object", "null"]` when nullable.
  if (typeof schema.$ref === 'string') return union([refName(schema.$ref), ...(Array.isArray(schema.type) && schema.type.includes('null') ? ['null'] : [])])
  if (schema.anyOf) return union(schema.anyOf.map((s) => jsonSchemaToTs(s, indent, refName)))
  if (schema.enum) return union(schema.enum.map((v) => JSON.stringify(v)))
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.length === 0) return 'JSONValue'
  return union(types.map((t) => single(t, schema, indent, refName)))
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)]
  if (unique.includes('JSONValue')) return 'JSONValue'
  // `T | null` reads better than `null | T`
  return [...unique.filter((p) => p !== 'null'), ...unique.filter((p) => p === 'null')].join(' | ')
}

function single(type: string, schema: JsonSchema, indent: string, refName: (ref: string) => string): string {
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
      const item = jsonSchemaToTs(schema.items, indent, refName)
      return /^[A-Za-z0-9_]+$/.test(item) ? `${item}[]` : `Array<${item}>`
    }
    case 'object':
      return objectType(schema, indent, refName)
    default:
      return 'JSONValue'
  }
}

function objectType(schema: JsonSchema, indent: string, refName: (ref: string) => string): string {
  const props = schema.properties
  if (!props) return 'Record<string, JSONValue>'
  const entries = Object.entries(props)
  if (entries.length === 0) return schema.additionalProperties === false ? 'Record<string, never>' : 'Record<string, JSONValue>'
  const required = new Set(schema.required ?? [])
  const inner = `${indent}  `
  const lines = entries.map(([name, s]) => `${comment(s.description, inner)}${inner}${propertyKey(name)}${required.has(name) ? '' : '?'}: ${jsonSchemaToTs(s, inner, refName)}`)
  return `{\n${lines.join('\n')}\n${indent}}`
}

/** Identifiers the generated file declares besides the input objects' types. */
const FILE_IDENTIFIERS = ['Transport', 'CallOptions', 'ClientOptions', 'OperationInfo', 'Runtime', 'TributaryError', 'TributaryErrorItem', 'HeadersOption', 'DateTime', 'BigIntString', 'DecimalString', 'Base64String', 'JSONValue', 'TributaryClient', 'createClient', 'operations', 'Operations', 'ServerOperations', 'HooksConfig', 'HooksConfigInput']

/**
 * The input objects the operations' variables refer to ({@link mergedDefs}) and the TypeScript name
 * of each: its GraphQL name, with `_` appended while that is taken by another identifier of the file
 * (`<Op>Variables`, `JSONValue`...).
 */
function inputTypes(ops: readonly CompiledOperation[], names: Map<CompiledOperation, Names>): { defs: Map<string, JsonSchema>; tsNames: Map<string, string>; typeName: (ref: string) => string } {
  const defs = mergedDefs(ops.map((op) => op.variablesSchema))
  const taken = new Set<string>(FILE_IDENTIFIERS)
  for (const n of names.values()) taken.add(`${n.type}Variables`).add(`${n.type}Response`)
  const tsNames = new Map<string, string>()
  for (const name of defs.keys()) {
    let ts = name
    while (taken.has(ts)) ts += '_'
    taken.add(ts)
    tsNames.set(name, ts)
  }
  return { defs, tsNames, typeName: (ref) => tsNames.get(defName(ref)) ?? 'JSONValue' }
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

/** ` Needs a token…` (the operation's auth directives, for its docstring), or ''. */
function authDoc(op: CompiledOperation): string {
  const note = describeAuthRules(op.stored.auth)
  return note ? ` ${note} Pass it with the client's \`token\` option.` : ''
}

/** `operations/<name>.graphql`, or `.ts` for a TypeScript operation (its file under the operations folder, as named in docs). */
export function operationFileOf(op: CompiledOperation): string {
  return `operations/${op.name}.${op.stored.language === 'typescript' ? 'ts' : 'graphql'}`
}

/** Whether the operation has a required variable (the client's `variables` argument is then not optional). */
export function hasRequired(op: CompiledOperation): boolean {
  return (op.variablesSchema.required ?? []).length > 0
}

/** The operations served over HTTP (not `@internal`), sorted by name: those the client and the hooks cover. */
export function servedOperations(gateway: Gateway): CompiledOperation[] {
  return [...gateway.operations.values()].filter((op) => !op.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
}

/**
 * Renders `generated/client.ts` for the served (non-internal) operations of a gateway.
 * @returns TypeScript source that compiles under `strict`, `noUnusedLocals` and `noUnusedParameters`
 *   (with zero operations too); it imports the package's runtime, `tributary-gateway/client`, and the hook types of `tributary-gateway` (type-only).
 */
export function renderClient(gateway: Gateway): string {
  const ops = servedOperations(gateway)
  const names = namesOf(ops)
  const out: string[] = []
  out.push(`/**
 * Typed client for this deployment's stored operations. Generated by Tributary from operations/
 * (gateway/codegen/client.ts): do not edit; \`npx tributary generate\` writes it again (so do \`start\` and \`dev\`).
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
  // With no operation, the call options and operation table types are not used (noUnusedLocals).
  out.push(ops.length ? RUNTIME : RUNTIME.replace('{ Transport, type CallOptions, type ClientOptions, type OperationInfo }', '{ Transport, type ClientOptions }'))
  const inputs = inputTypes(ops, names)
  if (inputs.defs.size > 0) {
    out.push('// ----- input objects of the GraphQL schema (the variables\' $defs) -----\n')
    for (const [name, schema] of inputs.defs) {
      out.push(`/** ${schema.description ? `${schema.description.replace(/\*\//g, '*\\/')} ` : ''}The input object \`${name}\` of the GraphQL schema. */`)
      out.push(`export type ${inputs.tsNames.get(name)} = ${jsonSchemaToTs({ ...schema, type: 'object' }, '', inputs.typeName)}\n`)
    }
  }
  out.push('// ----- operations -----\n')
  for (const op of ops) {
    const n = names.get(op)!
    const where = `\`${op.name}\` (${operationFileOf(op)})`
    out.push(`/** Variables of the stored ${op.kind} ${where}. */`)
    out.push(`export type ${n.type}Variables = ${jsonSchemaToTs(op.variablesSchema, '', inputs.typeName)}\n`)
    out.push(`/** ${op.kind === 'subscription' ? 'One event' : 'The data object'} of the stored ${op.kind} ${where}. */`)
    out.push(`export type ${n.type}Response = ${jsonSchemaToTs(op.responseSchema, '', inputs.typeName)}\n`)
  }

  out.push(`/** Each stored operation's variables (\`input\`) and data object (\`response\`), by operation name: what typed hooks read. */`)
  out.push(`export interface Operations {`)
  for (const op of ops) out.push(`  ${JSON.stringify(op.name)}: { input: ${names.get(op)!.type}Variables; response: ${names.get(op)!.type}Response }`)
  out.push(`}\n`)
  out.push(`/**
 * Each served operation with its kind: with the internal ones of \`generated/operations.ts\`, what the
 * in-process \`operations\` client of TypeScript operations is typed from (README "TypeScript operations").
 */`)
  out.push(`export interface ServerOperations {`)
  for (const op of ops) out.push(`  ${JSON.stringify(op.name)}: { kind: ${JSON.stringify(op.kind)}; input: ${names.get(op)!.type}Variables; response: ${names.get(op)!.type}Response }`)
  out.push(`}\n`)
  out.push(`/** Config \`hooks\` typed for these operations (README "Hooks"): \`hooks: { operations: { … } } satisfies HooksConfig\`. */`)
  out.push(`export type HooksConfig = HooksConfigInput<Operations>\n`)
  if (ops.length) {
    out.push(`const operations = {`)
    for (const op of ops) out.push(`  ${propertyKey(names.get(op)!.method)}: { path: ${JSON.stringify(`/operations/${op.name}`)}, plain: ${JSON.stringify(plainVariables(op))} },`)
    out.push(`} satisfies Record<string, OperationInfo>\n`)
  }

  const signature = (op: CompiledOperation) => `variables${hasRequired(op) ? '' : '?'}: ${names.get(op)!.type}Variables, options?: CallOptions`
  const queries = ops.filter((op) => op.kind === 'query')
  out.push(`/** The typed client: one method per stored operation, and \`live\` for the live variant of each query. */`)
  out.push(`export interface TributaryClient {`)
  for (const op of ops) {
    const n = names.get(op)!
    const path = `/operations/${op.name}`
    if (op.kind === 'query') {
      out.push(`  /** Runs the query \`${op.name}\`: \`GET ${path}\`.${authDoc(op)} @throws TributaryError */`)
      out.push(`  ${propertyKey(n.method)}(${signature(op)}): Promise<${n.type}Response>`)
    } else if (op.kind === 'mutation') {
      out.push(`  /** Runs the mutation \`${op.name}\`: \`POST ${path}\` with a JSON body.${authDoc(op)} @throws TributaryError */`)
      out.push(`  ${propertyKey(n.method)}(${signature(op)}): Promise<${n.type}Response>`)
    } else {
      out.push(`  /** Subscribes to \`${op.name}\`: \`GET ${path}\` as Server-Sent Events; leave the loop to close it.${authDoc(op)} @throws TributaryError */`)
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
  ${ops.length ? 'const t = ' : '// No operation yet: the options are still checked.\n  '}new Transport(options)
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

/**
 * Renders `generated/operations.ts`: the declaration merging that types the in-process `operations`
 * client of TypeScript operations (`OperationRegistry` of `tributary-gateway` extends the served
 * operations' `ServerOperations` of `generated/client.ts` and the internal ones, declared here so
 * that the browser client never names them). A file of its own, so that a browser bundle of the
 * client never augments the server package, and a program holding several projects can leave it out.
 * Input objects only internal operations use are `JSONValue`.
 * @returns TypeScript source, types only (it compiles to an empty module)
 */
export function renderOperationRegistry(gateway: Gateway): string {
  const ops = servedOperations(gateway)
  const inputs = inputTypes(ops, namesOf(ops))
  const internal = [...gateway.operations.values()].filter((op) => op.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
  const entries = internal.map((op) => `  ${JSON.stringify(op.name)}: { kind: ${JSON.stringify(op.kind)}; input: ${jsonSchemaToTs(op.variablesSchema, '  ', inputs.typeName)}; response: ${jsonSchemaToTs(op.responseSchema, '  ', inputs.typeName)} }`)
  const body = entries.join('\n')
  const candidates = ['DateTime', 'BigIntString', 'DecimalString', 'Base64String', 'JSONValue', ...inputs.tsNames.values()]
  const used = candidates.filter((name) => new RegExp(`\\b${name}\\b`).test(body)).sort()
  return `/**
 * Types the 'operations' client of this project's TypeScript operations: operations.query({ operationName, input })
 * checks the name, the input and the data against generated/client.ts. Generated by Tributary
 * (gateway/codegen/client.ts): do not edit. It takes effect while this file is part of the TypeScript
 * program (the default tsconfig.json includes every file). README "TypeScript operations".
 */
/* eslint-disable */
import type { ${['ServerOperations', ...used].join(', ')} } from './client.js'

/** The internal operations (\`internal/\` folders, \`@internalOperation\`): callable in process only. */
interface InternalOperations {
${body ? `${body}\n` : ''}}

declare module 'tributary-gateway' {
  interface OperationRegistry extends ServerOperations, InternalOperations {}
}
`
}
