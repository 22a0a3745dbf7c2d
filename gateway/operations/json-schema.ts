/**
 * JSON Schemas derived from a stored operation: one for its variables (used by ajv to coerce and
 * validate them, and by the OpenAPI document) and one for its response data (used by
 * fast-json-stringify to serialise it, and by the OpenAPI document). JSON Schema draft 2020-12 subset
 * that OpenAPI 3.1 accepts.
 */
import {
  Kind,
  getNamedType,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  TypeInfo,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLInputObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type GraphQLCompositeType,
  type SelectionSetNode,
  type OperationDefinitionNode,
  type DocumentNode,
  type GraphQLField,
} from 'graphql'

/** A JSON Schema object (the subset this module produces). */
export interface JsonSchema {
  type?: string | string[]
  format?: string
  pattern?: string
  enum?: unknown[]
  items?: JsonSchema
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  anyOf?: JsonSchema[]
  description?: string
  default?: unknown
  nullable?: boolean
  [key: string]: unknown
}

function scalarSchema(name: string): JsonSchema {
  switch (name) {
    case 'Int':
      return { type: 'integer', minimum: -2147483648, maximum: 2147483647 }
    case 'Float':
      return { type: 'number' }
    case 'Boolean':
      return { type: 'boolean' }
    case 'String':
      return { type: 'string' }
    case 'ID':
      return { type: 'string' }
    case 'DateTime':
      return { type: 'string', format: 'date-time' }
    case 'BigInt':
      return { type: 'string', pattern: '^-?\\d+$' }
    case 'Decimal':
      return { type: 'string', pattern: '^-?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d+)?$' }
    case 'Bytes':
      return { type: 'string', contentEncoding: 'base64' }
    default:
      return {} // JSON and unknown custom scalars: any value
  }
}

/** A schema that also accepts null: `type: [t, "null"]` for a single type, else `anyOf: [s, {type: null}]`. */
export function nullable(schema: JsonSchema): JsonSchema {
  const s = schema.enum && !schema.enum.includes(null) ? { ...schema, enum: [...schema.enum, null] } : schema
  if (typeof s.type === 'string') return { ...s, type: [s.type, 'null'] }
  if (s.type === undefined && !s.anyOf) return s // any value already includes null
  return { anyOf: [s, { type: 'null' }] }
}

/** The prefix of the references to input objects in variables schemas: `#/$defs/<input object name>`. */
const DEFS_REF_PREFIX = '#/$defs/'

/**
 * How many input objects one variables schema expands into its `$defs`, breadth-first from the
 * variables: the nearest levels (a where-input, its filters, the related tables' where-inputs...)
 * are checked by ajv; an input object past the bound is `{}` in `$defs` (any object; GraphQL's
 * variable coercion still checks it, with a 400 `TRB_ERR_GRAPHQL_VALIDATION`). Chinook's largest
 * where-input reaches 32; a 300-table chain of foreign keys reaches over 600, which ajv cannot
 * compile (its stack overflows on a chain of references that long) and which would be compiled
 * twice per operation at startup.
 */
export const MAX_INPUT_OBJECTS = 100

/** The `$defs` being built for one variables schema: the entries, and the input objects still to expand, in breadth-first order. */
interface InputDefs {
  defs: Record<string, JsonSchema>
  queue: GraphQLInputObjectType[]
}

/**
 * The JSON Schema of a GraphQL input type. Nullable types accept `null`. Every input object is a
 * reference with its type, `{$ref: "#/$defs/<TypeName>", type: "object"}` (`["object", "null"]`
 * when nullable), its schema put once into `$defs` under its GraphQL name by {@link expandDefs}, so
 * recursive input types (`AND: [XWhereInput!]`) and the relation filters of a database's
 * where-inputs are expanded at a size linear in the number of input types reached. A `$defs` entry
 * holds the object's keywords (`properties`, `required`, `additionalProperties: false`) and no
 * `type`: the reference says whether null is allowed, so a bad value gets one error at its own path,
 * not the errors of every branch of an `anyOf`. (JSON Schema 2020-12 §10.3.2.1 / §8.2.3.1: `$ref`
 * applies beside its siblings.)
 *
 * The database connector's nested-write inputs (`extensions.tributary.nestedWrite`) stay
 * `{type: object}` (open; GraphQL's variable coercion still checks them, with a 400): they reach
 * every related model's create and connect inputs in turn, most of the schema's input types.
 */
function inputTypeSchema(type: GraphQLInputType, state: InputDefs): JsonSchema {
  if (isNonNullType(type)) return innerInput(type.ofType, state)
  return nullable(innerInput(type, state))
}

function innerInput(type: GraphQLInputType, state: InputDefs): JsonSchema {
  if (isListType(type)) return { type: 'array', items: inputTypeSchema(type.ofType, state) }
  if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((v) => v.name) }
  if (isInputObjectType(type)) {
    if ((type.extensions?.['tributary'] as { nestedWrite?: boolean } | undefined)?.nestedWrite) return { type: 'object' }
    if (!Object.hasOwn(state.defs, type.name)) {
      state.defs[type.name] = {} // expanded by expandDefs (a field of its own type refers back to it)
      state.queue.push(type)
    }
    return { $ref: `${DEFS_REF_PREFIX}${type.name}`, type: 'object' }
  }
  if (isScalarType(type)) return scalarSchema(type.name)
  return {}
}

/**
 * Fills the `$defs` entries of the queued input objects, breadth-first, up to
 * {@link MAX_INPUT_OBJECTS}; the entries past the bound stay `{}` with a description saying so.
 */
function expandDefs(state: InputDefs): void {
  let expanded = 0
  for (let type = state.queue.shift(); type; type = state.queue.shift()) {
    const schema = state.defs[type.name]!
    if (expanded++ >= MAX_INPUT_OBJECTS) {
      schema.description = `${type.description ? `${type.description} ` : ''}(Not expanded: past the ${MAX_INPUT_OBJECTS} input objects of this schema; checked by GraphQL.)`
      continue
    }
    if (type.description) schema.description = type.description
    const properties: Record<string, JsonSchema> = {}
    const required: string[] = []
    for (const field of Object.values(type.getFields())) {
      const fieldSchema = inputTypeSchema(field.type, state)
      properties[field.name] = field.description ? { ...fieldSchema, description: field.description } : fieldSchema
      if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(field.name)
    }
    Object.assign(schema, { properties, ...(required.length ? { required } : {}), additionalProperties: false })
  }
}

/**
 * Bounds that arguments declare in `extensions.tributary` (the database connector's `take`:
 * `{ maxTake }`, `skip`: `{ minimum }`), by the name of the variable passed to them directly, over the
 * operation and the fragments of `document`. A variable used by several bounded arguments gets the
 * tightest bounds.
 */
function variableBounds(schema: GraphQLSchema, operation: OperationDefinitionNode, document?: DocumentNode): Map<string, { minimum?: number; maximum?: number }> {
  const bounds = new Map<string, { minimum?: number; maximum?: number }>()
  const typeInfo = new TypeInfo(schema)
  const visitor = visitWithTypeInfo(typeInfo, {
    Argument(node) {
      if (node.value.kind !== Kind.VARIABLE) return
      const ext = (typeInfo.getArgument()?.extensions as { tributary?: { maxTake?: number; minimum?: number } } | undefined)?.tributary
      if (!ext) return
      const b = bounds.get(node.value.name.value) ?? {}
      if (typeof ext.maxTake === 'number') {
        b.maximum = Math.min(b.maximum ?? Infinity, ext.maxTake)
        b.minimum = Math.max(b.minimum ?? -Infinity, -ext.maxTake)
      }
      if (typeof ext.minimum === 'number') b.minimum = Math.max(b.minimum ?? -Infinity, ext.minimum)
      bounds.set(node.value.name.value, b)
    },
  })
  visit(operation, visitor)
  for (const d of document?.definitions ?? []) if (d.kind === Kind.FRAGMENT_DEFINITION) visit(d, visitor)
  return bounds
}

/**
 * The variables JSON Schema of an operation: an object with one property per variable,
 * `required` for non-null variables without a default, `additionalProperties: false`. A variable
 * passed to a bounded argument (a database list's `take`, within `±maxTake`; `skip`, not negative)
 * gets that argument's `minimum`/`maximum`. Input objects are references into the schema's own
 * `$defs` (one entry per input object type reached, by GraphQL name, at most {@link MAX_INPUT_OBJECTS}
 * of them expanded; see {@link inputTypeSchema}).
 * @param document the operation's document, for the arguments inside its fragments
 */
export function variablesSchema(schema: GraphQLSchema, operation: OperationDefinitionNode, document?: DocumentNode): JsonSchema {
  const bounds = variableBounds(schema, operation, document)
  const properties: Record<string, JsonSchema> = {}
  const inputs: InputDefs = { defs: {}, queue: [] }
  const required: string[] = []
  for (const def of operation.variableDefinitions ?? []) {
    const name = def.variable.name.value
    const type = typeFromAST(schema, def.type) as GraphQLInputType | undefined
    if (!type) continue
    properties[name] = inputTypeSchema(type, inputs)
    const b = bounds.get(name)
    // Only Int variables carry minimum/maximum; a bounded argument never takes a list or an object.
    if (b && properties[name].minimum !== undefined) Object.assign(properties[name], b)
    if (def.defaultValue) properties[name].default = valueFromLiteral(def.defaultValue)
    if (def.type.kind === Kind.NON_NULL_TYPE && !def.defaultValue) required.push(name)
  }
  expandDefs(inputs)
  const defs = inputs.defs
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false, ...(Object.keys(defs).length ? { $defs: Object.fromEntries(byName(Object.entries(defs))) } : {}) }
}

/** Entries in name order, so that generated files do not depend on the order of a walk. */
function byName<T>(entries: [string, T][]): [string, T][] {
  return entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** The `$defs` name a variables schema's reference points to (`#/$defs/X` → `X`), or undefined for any other reference. */
export function defRefName(ref: string): string | undefined {
  return ref.startsWith(DEFS_REF_PREFIX) ? ref.slice(DEFS_REF_PREFIX.length) : undefined
}

/**
 * The input objects of several variables schemas (their `$defs`), in name order: one schema per
 * GraphQL name. An input object may be expanded in one operation and left open (`{}`, past
 * {@link MAX_INPUT_OBJECTS}) in another; both describe the same GraphQL type, and the expanded
 * entry, which says more, is the one kept. For the OpenAPI document and the typed client.
 */
export function mergedDefs(schemas: readonly JsonSchema[]): Map<string, JsonSchema> {
  const merged = new Map<string, JsonSchema>()
  for (const schema of schemas) {
    for (const [name, def] of Object.entries((schema.$defs ?? {}) as Record<string, JsonSchema>)) {
      if (!merged.get(name)?.properties) merged.set(name, def)
    }
  }
  return new Map(byName([...merged]))
}

function valueFromLiteral(node: import('graphql').ValueNode): unknown {
  switch (node.kind) {
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value)
    case Kind.STRING:
    case Kind.ENUM:
      return node.value
    case Kind.BOOLEAN:
      return node.value
    case Kind.NULL:
      return null
    case Kind.LIST:
      return node.values.map(valueFromLiteral)
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, valueFromLiteral(f.value)]))
    default:
      return undefined
  }
}

interface Walk {
  schema: GraphQLSchema
  fragments: Map<string, FragmentDefinitionNode>
}

function outputSchema(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, walk: Walk): JsonSchema {
  if (isNonNullType(type)) return innerOutput(type.ofType, selectionSet, walk)
  return nullable(innerOutput(type, selectionSet, walk))
}

function innerOutput(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, walk: Walk): JsonSchema {
  if (isListType(type)) return { type: 'array', items: outputSchema(type.ofType, selectionSet, walk) }
  if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((v) => v.name) }
  if (isScalarType(type)) return scalarSchema(type.name)
  return selectionSchema(type as GraphQLCompositeType, selectionSet!, walk)
}

/**
 * The schema of one selection set on a composite type. Fields reached only through a type condition
 * (fragments on other types, abstract types) are optional; the others are required.
 */
function selectionSchema(parent: GraphQLCompositeType, selectionSet: SelectionSetNode, walk: Walk): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  const required = new Set<string>()
  // Each fragment is visited once per selection set (twice when first reached only conditionally),
  // however often it is spread: a fragment that spreads the next one twice is not expanded.
  const visited = new Map<string, boolean>()
  const visit = (typeCondition: GraphQLCompositeType, set: SelectionSetNode, conditional: boolean) => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value
        const skippable = (sel.directives ?? []).some((d) => d.name.value === 'skip' || d.name.value === 'include')
        if (sel.name.value === '__typename') {
          properties[key] = { type: 'string' }
        } else {
          const field = fieldOf(typeCondition, sel.name.value)
          if (!field) continue
          const existing = properties[key]
          const next = outputSchema(field.type, sel.selectionSet, walk)
          properties[key] = existing && existing.properties && next.properties ? mergeObjects(existing, next) : next
        }
        if (!conditional && !skippable) required.add(key)
      } else {
        const condName = sel.kind === Kind.INLINE_FRAGMENT ? sel.typeCondition?.name.value : walk.fragments.get(sel.name.value)?.typeCondition.name.value
        const set2 = sel.kind === Kind.INLINE_FRAGMENT ? sel.selectionSet : walk.fragments.get(sel.name.value)?.selectionSet
        if (!set2) continue
        const cond = (condName ? walk.schema.getType(condName) : typeCondition) as GraphQLCompositeType
        const skippable = (sel.directives ?? []).some((d) => d.name.value === 'skip' || d.name.value === 'include')
        const conditionally = conditional || skippable || cond.name !== parent.name
        if (sel.kind === Kind.FRAGMENT_SPREAD) {
          const before = visited.get(sel.name.value)
          if (before !== undefined && (before === false || conditionally)) continue
          visited.set(sel.name.value, conditionally)
        }
        visit(cond, set2, conditionally)
      }
    }
  }
  visit(parent, selectionSet, isAbstractType(parent))
  return { type: 'object', properties, ...(required.size ? { required: [...required] } : {}), additionalProperties: false }
}

function mergeObjects(a: JsonSchema, b: JsonSchema): JsonSchema {
  const properties = { ...a.properties }
  for (const [k, v] of Object.entries(b.properties ?? {})) {
    properties[k] = properties[k]?.properties && v.properties ? mergeObjects(properties[k], v) : v
  }
  return { ...a, properties }
}

function fieldOf(type: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (isObjectType(type) || 'getFields' in type) return (type as { getFields(): Record<string, GraphQLField<unknown, unknown>> }).getFields()[name]
  return undefined
}

/**
 * The JSON Schema of an operation's `data` object, derived from its selection set: aliases are
 * property names, non-null fields are required and not nullable, DateTime is a `date-time` string.
 */
export function responseSchema(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): JsonSchema {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const root = operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()
  if (!root) return { type: 'object' }
  return selectionSchema(root, operation.selectionSet, { schema, fragments })
}

/** True when a variable's GraphQL type is (a list of) an input object, i.e. it arrives as JSON in a query param. */
export function isObjectVariable(schema: GraphQLSchema, typeNode: import('graphql').TypeNode): boolean {
  const type = typeFromAST(schema, typeNode as never)
  return !!type && isInputObjectType(getNamedType(type))
}

/**
 * A variables schema without some properties (variables a path or a claim provides).
 * @param keepRequired keep `required` for the remaining properties (default: nothing is required).
 */
export function omitProperties(schema: JsonSchema, drop: readonly string[], keepRequired = false): JsonSchema {
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([k]) => !drop.includes(k)))
  const required = keepRequired ? (schema.required ?? []).filter((k) => !drop.includes(k)) : []
  const { required: _r, properties: _p, ...rest } = schema
  return { ...rest, properties, ...(required.length ? { required } : {}) }
}
