/**
 * Runs what the data directives of ./directives.ts declare on a result: the `_join` selections
 * (batched: one execution per `_join` field for every parent object of the level together, each
 * distinct set of exported values once, as aliased root fields of one document, so a GraphQL source
 * gets one request and the stitching batcher merges the rest) and the `@transform` flattenings, and
 * the JSON Schema of the response they give.
 */
import { GraphQLError, Kind, execute, visit, type DocumentNode, type FieldNode, type GraphQLSchema, type OperationDefinitionNode, type VariableDefinitionNode } from 'graphql'
import { nullable, responseSchema, type JsonSchema } from './json-schema.js'
import type { OperationDirectiveRules, OperationJoin, OperationLater, OperationTransform } from './directives.js'

type Obj = Record<string, unknown>

/** The non-null branch of a schema (`anyOf: [s, {type: null}]` → s), and whether it was nullable. */
function unwrap(s: JsonSchema): { inner: JsonSchema; isNullable: boolean } {
  if (s.anyOf) {
    const inner = s.anyOf.find((b) => b.type !== 'null')
    return { inner: inner ?? {}, isNullable: true }
  }
  const isNullable = Array.isArray(s.type) && s.type.includes('null')
  return { inner: s, isNullable }
}

function isArraySchema(s: JsonSchema): boolean {
  return s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))
}

/** The object schemas at a response path (lists and nullability walked through). */
function objectSchemaAt(root: JsonSchema, path: readonly string[]): JsonSchema | undefined {
  let s: JsonSchema | undefined = root
  for (const key of path) {
    let inner: JsonSchema = unwrap(s!).inner
    while (isArraySchema(inner) && inner.items) inner = unwrap(inner.items).inner
    s = inner.properties?.[key]
    if (!s) return undefined
  }
  let inner: JsonSchema = unwrap(s!).inner
  while (isArraySchema(inner) && inner.items) inner = unwrap(inner.items).inner
  return inner
}

/** The schema of the value at `get` inside a value of schema `s` (lists map, nullability kept). */
function schemaAtGet(s: JsonSchema, get: readonly string[]): JsonSchema {
  if (get.length === 0) return s
  const { inner, isNullable } = unwrap(s)
  let out: JsonSchema
  if (isArraySchema(inner)) out = { type: 'array', items: schemaAtGet(inner.items ?? {}, get) }
  else {
    const next = inner.properties?.[get[0]!]
    out = next ? schemaAtGet(next, get.slice(1)) : {}
  }
  return isNullable ? nullable(out) : out
}

/**
 * The response schema of an operation with its `_join` fields (each nullable: a parent whose
 * exported value is null gets null) and `@transform` flattenings applied.
 * @throws Error naming the path when a `@transform(get:)` path is not in the selection.
 */
export function directedResponseSchema(schema: GraphQLSchema, base: JsonSchema, rules: OperationDirectiveRules): JsonSchema {
  if (!rules.joins.length && !rules.transforms.length && !rules.later) return base
  const out = structuredClone(base)
  if (rules.later) {
    const later = responseSchema(schema, rules.later.document, rules.later.operation)
    out.properties = { ...out.properties, ...later.properties }
    const required = [...(out.required ?? []), ...(later.required ?? [])]
    if (required.length) out.required = required
  }
  for (const join of rules.joins) {
    const holder = objectSchemaAt(out, join.path)
    if (!holder?.properties) continue
    holder.properties[join.key] = nullable(responseSchema(schema, join.document, join.operation))
  }
  for (const t of rules.transforms) {
    const holder = objectSchemaAt(out, t.path.slice(0, -1))
    const key = t.path[t.path.length - 1]!
    const value = holder?.properties?.[key]
    if (!holder?.properties || !value) continue
    if (!getPathExists(value, t.get)) throw new Error(`@transform(get: "${t.get.join('.')}") on ${t.path.join('.')}: the selection has no such path`)
    holder.properties[key] = schemaAtGet(value, t.get)
  }
  return out
}

function getPathExists(s: JsonSchema, get: readonly string[]): boolean {
  if (get.length === 0) return true
  let inner = unwrap(s).inner
  while (isArraySchema(inner) && inner.items) inner = unwrap(inner.items).inner
  const next = inner.properties?.[get[0]!]
  return !!next && getPathExists(next, get.slice(1))
}

/** Every object at a response path of `data` (lists walked through, nulls skipped), with its path. */
function objectsAt(data: unknown, path: readonly string[], at: (string | number)[] = [], out: { obj: Obj; path: (string | number)[] }[] = []): { obj: Obj; path: (string | number)[] }[] {
  if (data === null || data === undefined) return out
  if (Array.isArray(data)) {
    data.forEach((item, i) => objectsAt(item, path, [...at, i], out))
    return out
  }
  if (typeof data !== 'object') return out
  if (path.length === 0) out.push({ obj: data as Obj, path: at })
  else objectsAt((data as Obj)[path[0]!], path.slice(1), [...at, path[0]!], out)
  return out
}

function rename(field: FieldNode, exported: ReadonlySet<string>, suffix: string, alias: string): FieldNode {
  const renamed = visit(field, {
    Variable: (v) => (exported.has(v.name.value) ? { ...v, name: { ...v.name, value: `${v.name.value}${suffix}` } } : undefined),
  }) as FieldNode
  return { ...renamed, alias: { kind: Kind.NAME, value: alias } }
}

/**
 * Runs one `_join` for every parent object of its level, in one execution per {@link MAX_JOIN_VALUES}
 * distinct sets of exported values: each set becomes aliased copies (`_<i>_<key>`) of the joined root
 * fields with renamed variables (`$<var>__<i>`). Fills `parent[join.key]` (null when an exported
 * value is null).
 * @returns the errors of the joined fields, with paths under the first parent of each value set.
 */
async function runJoin(schema: GraphQLSchema, join: OperationJoin, data: Obj, variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const parents = objectsAt(data, join.path)
  const names = Object.keys(join.exports)
  const groups = new Map<string, JoinGroup>()
  for (const p of parents) {
    const values = names.map((v) => p.obj[join.exports[v]!])
    if (values.some((x) => x === null || x === undefined)) {
      p.obj[join.key] = null
      continue
    }
    const key = JSON.stringify(values)
    let g = groups.get(key)
    if (!g) groups.set(key, (g = { values, parents: [] }))
    g.parents.push(p)
  }
  if (groups.size === 0) return []
  const list = [...groups.values()]
  const errors: GraphQLError[] = []
  for (let from = 0; from < list.length; from += MAX_JOIN_VALUES) {
    errors.push(...(await runJoinChunk(schema, join, list.slice(from, from + MAX_JOIN_VALUES), names, variables, context)))
  }
  return errors
}

/**
 * Most distinct sets of exported values one `_join` document carries; a level with more runs one
 * document per this many, one after the other (so an upstream never receives a document of more
 * than this many aliased copies).
 */
export const MAX_JOIN_VALUES = 500

type JoinGroup = { values: unknown[]; parents: { obj: Obj; path: (string | number)[] }[] }

async function runJoinChunk(schema: GraphQLSchema, join: OperationJoin, list: JoinGroup[], names: string[], variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const exported = new Set(names)
  const fields = join.operation.selectionSet.selections as readonly FieldNode[]
  const keyOf = (f: FieldNode) => f.alias?.value ?? f.name.value
  const variableDefinitions: VariableDefinitionNode[] = []
  const selections: FieldNode[] = []
  const vars: Obj = { ...variables }
  for (const def of join.operation.variableDefinitions ?? []) {
    const name = def.variable.name.value
    if (!exported.has(name)) variableDefinitions.push(def)
    else list.forEach((_g, i) => variableDefinitions.push({ ...def, variable: { ...def.variable, name: { ...def.variable.name, value: `${name}__${i}` } } }))
  }
  list.forEach((g, i) => {
    names.forEach((v, n) => (vars[`${v}__${i}`] = g.values[n]))
    for (const f of fields) selections.push(rename(f, exported, `__${i}`, `_${i}_${keyOf(f)}`))
  })
  const operation: OperationDefinitionNode = { ...join.operation, variableDefinitions, selectionSet: { kind: Kind.SELECTION_SET, selections } }
  const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [operation, ...join.document.definitions.slice(1)] }
  const result = await execute({ schema, document, variableValues: vars, contextValue: context })
  const answer = (result.data ?? {}) as Obj
  list.forEach((g, i) => {
    const value: Obj = {}
    for (const f of fields) value[keyOf(f)] = answer[`_${i}_${keyOf(f)}`] ?? null
    // Each parent gets its own copy: @transform rewrites values in place.
    g.parents.forEach((p, n) => (p.obj[join.key] = n === 0 ? value : structuredClone(value)))
  })
  return (result.errors ?? []).map((e) => {
    const [first, ...rest] = e.path ?? []
    const m = typeof first === 'string' ? /^_(\d+)_(.*)$/.exec(first) : null
    const parent = m ? list[Number(m[1])]?.parents[0] : undefined
    const path = parent && m ? [...parent.path, join.key, m[2]!, ...rest] : undefined
    return new GraphQLError(e.message, { path, originalError: e.originalError ?? undefined, extensions: e.extensions })
  })
}

/**
 * Runs the later root fields with the exported values read from `data` (a null value, or a missing
 * parent, gives null: a non-null variable then fails GraphQL's variable coercion, reported as an
 * error with those fields null) and merges their answers into `data`.
 */
async function runLater(schema: GraphQLSchema, later: OperationLater, data: Obj, variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const vars: Obj = { ...variables }
  for (const [name, path] of Object.entries(later.exports)) {
    let value: unknown = data
    for (const key of path) value = value !== null && typeof value === 'object' ? (value as Obj)[key] : null
    vars[name] = value ?? null
  }
  const result = await execute({ schema, document: later.document, variableValues: vars, contextValue: context })
  for (const sel of later.operation.selectionSet.selections) {
    if (sel.kind !== Kind.FIELD) continue
    const key = sel.alias?.value ?? sel.name.value
    data[key] = (result.data as Obj | null | undefined)?.[key] ?? null
  }
  return [...(result.errors ?? [])]
}

/** Replaces the value at every `path` with the value at `get` inside it (lists map, null stays null). */
function transformAt(data: unknown, t: OperationTransform): void {
  const holders = objectsAt(data, t.path.slice(0, -1))
  const key = t.path[t.path.length - 1]!
  const pick = (value: unknown, get: readonly string[]): unknown => {
    if (get.length === 0 || value === null || value === undefined) return value ?? null
    if (Array.isArray(value)) return value.map((v) => pick(v, get))
    if (typeof value !== 'object') return null
    return pick((value as Obj)[get[0]!], get.slice(1))
  }
  for (const h of holders) if (key in h.obj) h.obj[key] = pick(h.obj[key], t.get)
}

/**
 * Applies the `_join` fields (all joins of the operation in parallel, each one execution) and then
 * the `@transform`s (deepest first) to `data`, in place.
 * @returns the joined fields' errors.
 */
export async function applyOperationDirectives(schema: GraphQLSchema, rules: OperationDirectiveRules, data: Obj, variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const errors: GraphQLError[] = []
  if (rules.later) errors.push(...(await runLater(schema, rules.later, data, variables, context)))
  errors.push(...(await Promise.all(rules.joins.map((j) => runJoin(schema, j, data, variables, context)))).flat())
  for (const t of rules.transforms) transformAt(data, t)
  return errors
}
