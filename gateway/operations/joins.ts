/**
 * Runs what the data directives of ./directives.ts declare on a result: the `_join` selections
 * (batched: one execution per `_join` field for every parent object of the level together, each
 * distinct set of exported values once — a database `findMany`/`findUnique` keyed by the exported
 * value as one `IN (…)` read for the level, any other root field as aliased copies in the same
 * document, so a GraphQL source gets one request and the stitching batcher merges the rest) and the
 * `@transform` flattenings, and
 * the JSON Schema of the response they give.
 */
import { GraphQLError, Kind, execute, getNamedType, getNullableType, isInputObjectType, isLeafType, isObjectType, parseType, visit, type DocumentNode, type FieldNode, type GraphQLSchema, type OperationDefinitionNode, type ValueNode, type VariableDefinitionNode } from 'graphql'
import { EXT } from '../connectors/database/compiler/read.js'
import type { DirectFieldExtension } from '../connectors/database/direct.js'
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
 * Runs one `_join` for every parent object of its level, {@link MAX_JOIN_VALUES} distinct sets of
 * exported values at a time: the root fields a database serves by the exported value
 * ({@link batchedField}) as one `IN (…)` read each, the others as aliased copies (`_<i>_<key>`) with
 * renamed variables (`$<var>__<i>`) in the same document. Fills `parent[join.key]` (null when an
 * exported value is null).
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
  const plan = joinPlan(schema, join)
  const errors: GraphQLError[] = []
  for (let from = 0; from < list.length; from += MAX_JOIN_VALUES) {
    errors.push(...(await runJoinChunk(schema, join, plan, list.slice(from, from + MAX_JOIN_VALUES), names, variables, context)))
  }
  return errors
}

/**
 * Most distinct sets of exported values one `_join` document carries; a level with more runs one
 * document per this many, one after the other (so an upstream never receives a document of more
 * than this many aliased copies, and a database `IN (…)` list never holds more than this many values).
 */
export const MAX_JOIN_VALUES = 500

type JoinGroup = { values: unknown[]; parents: { obj: Obj; path: (string | number)[] }[] }

/** The response key of a field. */
const keyOf = (f: FieldNode) => f.alias?.value ?? f.name.value
const nameNode = (value: string) => ({ kind: Kind.NAME, value }) as const
/** The alias under which a batched read selects the column it is matched by. */
const MATCH_KEY = '_trb_key'

/** A joined root field that a database serves for a whole level with one read. */
interface BatchedField {
  /** The field as the operation wrote it (run value by value when the batched answer may be cut). */
  field: FieldNode
  /** The exported variable it reads. */
  variable: string
  /** The `findMany` root field with `where: { <column>: { in: $<listVariable> } }` and the column selected as {@link MATCH_KEY}. */
  node: FieldNode
  /** `$<listVariable>: [T!]`, the `in` filter's type. */
  definition: VariableDefinitionNode
  listVariable: string
  /** A `findMany` gives each parent its rows; a `findUnique` its row or null. */
  many: boolean
  /** The source's `maxTake`: an answer of this many rows may be cut, so the level then runs value by value. */
  maxRows: number
}

/** How a `_join`'s root fields run: batched database reads, and aliased copies per value set. */
interface JoinPlan {
  batched: BatchedField[]
  copies: FieldNode[]
}

const plans = new WeakMap<OperationJoin, JoinPlan>()

function joinPlan(schema: GraphQLSchema, join: OperationJoin): JoinPlan {
  let plan = plans.get(join)
  if (!plan) {
    const exported = new Set(Object.keys(join.exports))
    const batched: BatchedField[] = []
    const copies: FieldNode[] = []
    for (const sel of join.operation.selectionSet.selections) {
      if (sel.kind !== Kind.FIELD) continue
      const b = batchedField(schema, sel, exported, batched.length)
      if (b) batched.push(b)
      else copies.push(sel)
    }
    plans.set(join, (plan = { batched, copies }))
  }
  return plan
}

/**
 * The batched form of a joined root field, or null when it has none. Batched: a database
 * `findMany` whose arguments are `where` (with `<column>: { equals: $var }` beside any constant or
 * public-variable conditions) and `orderBy` only, or a `findUnique` with `where: { <column>: $var }`;
 * the exported variable used nowhere else in the field, no directive on it, the column a leaf field of
 * the row type whose filter takes `in`. Anything else (`take`/`skip`/`cursor`, a REST or GraphQL
 * target, a compound key) keeps one aliased copy per value set.
 */
function batchedField(schema: GraphQLSchema, f: FieldNode, exported: ReadonlySet<string>, index: number): BatchedField | null {
  const query = schema.getQueryType()
  const field = query?.getFields()[f.name.value]
  const ext = field?.extensions?.[EXT] as DirectFieldExtension | undefined
  if (!query || !field || f.directives?.length || (ext?.kind !== 'findMany' && ext?.kind !== 'findUnique')) return null
  const uses: string[] = []
  visit(f, { Variable: (v) => void (exported.has(v.name.value) && uses.push(v.name.value)) })
  if (uses.length !== 1) return null
  const variable = uses[0]!
  const args = f.arguments ?? []
  const where = args.find((a) => a.name.value === 'where')
  if (!where || where.value.kind !== Kind.OBJECT) return null
  const isVar = (v: ValueNode) => v.kind === Kind.VARIABLE && v.name.value === variable
  let column: string | undefined
  if (ext.kind === 'findMany') {
    if (args.some((a) => a.name.value !== 'where' && a.name.value !== 'orderBy')) return null
    column = where.value.fields.find((of) => of.value.kind === Kind.OBJECT && of.value.fields.length === 1 && of.value.fields[0]!.name.value === 'equals' && isVar(of.value.fields[0]!.value))?.name.value
  } else if (args.length === 1 && where.value.fields.length === 1 && isVar(where.value.fields[0]!.value)) {
    column = where.value.fields[0]!.name.value
  }
  if (!column) return null
  const rowType = getNamedType(field.type)
  const target =
    ext.kind === 'findMany'
      ? field
      : Object.values(query.getFields()).find((q) => (q.extensions?.[EXT] as DirectFieldExtension | undefined)?.kind === 'findMany' && getNamedType(q.type) === rowType)
  const whereType = target && getNullableType(target.args.find((a) => a.name === 'where')?.type)
  const filterType = isInputObjectType(whereType) ? getNullableType(whereType.getFields()[column]?.type) : undefined
  const inField = isInputObjectType(filterType) ? filterType.getFields()['in'] : undefined
  const columnType = isObjectType(rowType) ? rowType.getFields()[column]?.type : undefined
  if (!target || !inField || !columnType || !isLeafType(getNamedType(columnType))) return null
  const listVariable = `__trb_in_${index}`
  const inValue: ValueNode = { kind: Kind.OBJECT, fields: [{ kind: Kind.OBJECT_FIELD, name: nameNode('in'), value: { kind: Kind.VARIABLE, name: nameNode(listVariable) } }] }
  const conditions =
    ext.kind === 'findMany'
      ? where.value.fields.map((of) => (of.name.value === column ? { ...of, value: inValue } : of))
      : [{ kind: Kind.OBJECT_FIELD, name: nameNode(column), value: inValue } as const]
  const node: FieldNode = {
    kind: Kind.FIELD,
    alias: nameNode(`_b${index}`),
    name: nameNode(target.name),
    arguments: [{ ...where, value: { kind: Kind.OBJECT, fields: conditions } }, ...args.filter((a) => a.name.value === 'orderBy')],
    selectionSet: { kind: Kind.SELECTION_SET, selections: [...(f.selectionSet?.selections ?? []), { kind: Kind.FIELD, alias: nameNode(MATCH_KEY), name: nameNode(column) }] },
  }
  const definition: VariableDefinitionNode = { kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: nameNode(listVariable) }, type: parseType(String(inField.type)) }
  const maxTake = (target.args.find((a) => a.name === 'take')?.extensions?.[EXT] as { maxTake?: number } | undefined)?.maxTake
  return { field: f, variable, node, definition, listVariable, many: ext.kind === 'findMany', maxRows: maxTake ?? Number.POSITIVE_INFINITY }
}

/** One chunk of value sets: the batched reads and the aliased copies run at once, then each parent gets its answer. */
async function runJoinChunk(schema: GraphQLSchema, join: OperationJoin, plan: JoinPlan, list: JoinGroup[], names: string[], variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const answers = list.map((): Obj => ({}))
  const runs = [runCopies(schema, join, plan.copies, list, answers, names, variables, context)]
  if (plan.batched.length) runs.push(runBatched(schema, join, plan.batched, list, answers, names, variables, context))
  const errors = (await Promise.all(runs)).flat()
  const fields = join.operation.selectionSet.selections as readonly FieldNode[]
  list.forEach((g, i) => {
    const value: Obj = {}
    for (const f of fields) value[keyOf(f)] = answers[i]![keyOf(f)] ?? null
    // Each parent gets its own copy: @transform rewrites values in place.
    g.parents.forEach((p, n) => (p.obj[join.key] = n === 0 ? value : structuredClone(value)))
  })
  return errors
}

/** The joined document: the `_join` operation with `selections` and extra variable definitions. */
function joinDocument(join: OperationJoin, variableDefinitions: VariableDefinitionNode[], selections: FieldNode[]): DocumentNode {
  const operation: OperationDefinitionNode = { ...join.operation, variableDefinitions, selectionSet: { kind: Kind.SELECTION_SET, selections } }
  return { kind: Kind.DOCUMENT, definitions: [operation, ...join.document.definitions.slice(1)] }
}

/** Runs `fields` as aliased copies, one per value set, in one document; fills `answers[i][key]`. */
async function runCopies(schema: GraphQLSchema, join: OperationJoin, fields: readonly FieldNode[], list: JoinGroup[], answers: Obj[], names: string[], variables: Obj, context: unknown): Promise<GraphQLError[]> {
  if (!fields.length) return []
  const exported = new Set(names)
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
  const result = await execute({ schema, document: joinDocument(join, variableDefinitions, selections), variableValues: vars, contextValue: context })
  const answer = (result.data ?? {}) as Obj
  list.forEach((_g, i) => {
    for (const f of fields) answers[i]![keyOf(f)] = answer[`_${i}_${keyOf(f)}`] ?? null
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
 * Runs the batched database reads of a chunk in one document (one statement each: `IN` over the
 * chunk's distinct values) and hands each value set the rows whose column equals its value (compared
 * as strings). A read that returns `maxTake` rows may have been cut: that field then runs as copies.
 */
async function runBatched(schema: GraphQLSchema, join: OperationJoin, batched: readonly BatchedField[], list: JoinGroup[], answers: Obj[], names: string[], variables: Obj, context: unknown): Promise<GraphQLError[]> {
  const exported = new Set(names)
  const vars: Obj = { ...variables }
  for (const b of batched) {
    const n = names.indexOf(b.variable)
    vars[b.listVariable] = [...new Map(list.map((g) => [JSON.stringify(g.values[n]), g.values[n]])).values()]
  }
  const definitions = [...(join.operation.variableDefinitions ?? []).filter((d) => !exported.has(d.variable.name.value)), ...batched.map((b) => b.definition)]
  const result = await execute({ schema, document: joinDocument(join, definitions, batched.map((b) => b.node)), variableValues: vars, contextValue: context })
  const data = (result.data ?? {}) as Obj
  const cut: FieldNode[] = []
  batched.forEach((b, k) => {
    const rows = data[`_b${k}`]
    // A findUnique read gives at most one row per value: it can be cut only with more values than maxTake.
    if (Array.isArray(rows) && rows.length >= b.maxRows && (b.many || (vars[b.listVariable] as unknown[]).length > b.maxRows)) return void cut.push(b.field)
    const byKey = new Map<string, Obj[]>()
    for (const row of (rows ?? []) as Obj[]) {
      const { [MATCH_KEY]: match, ...rest } = row
      const key = String(match)
      byKey.get(key)?.push(rest) ?? byKey.set(key, [rest])
    }
    const n = names.indexOf(b.variable)
    list.forEach((g, i) => {
      const mine = rows === null || rows === undefined ? null : (byKey.get(String(g.values[n])) ?? [])
      answers[i]![keyOf(b.field)] = mine === null ? null : b.many ? mine.map((r) => (i === 0 ? r : structuredClone(r))) : (mine[0] ?? null)
    })
  })
  const first = list[0]!.parents[0]!
  const errors = (result.errors ?? []).map((e) => {
    const k = typeof e.path?.[0] === 'string' ? /^_b(\d+)$/.exec(e.path[0])?.[1] : undefined
    const b = k === undefined ? undefined : batched[Number(k)]
    return new GraphQLError(e.message, { path: b ? [...first.path, join.key, keyOf(b.field)] : undefined, originalError: e.originalError ?? undefined, extensions: e.extensions })
  })
  if (cut.length) errors.push(...(await runCopies(schema, join, cut, list, answers, names, variables, context)))
  return errors
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
