/**
 * The data directives of stored operations, WunderGraph style (README "Operation directives"):
 *
 * - `@internalOperation` (operation): served to code only (TypeScript operations, hooks), 404 over HTTP.
 * - `@removeNullVariables` (operation): variables whose value is null are dropped before execution,
 *   so an argument with a default takes its default.
 * - `@internal` (variable): not public input; filled by `@export`.
 * - `@injectGeneratedUUID`, `@injectCurrentDateTime(format:|customFormat:)`,
 *   `@injectEnvironmentVariable(name:)` (variable): the value is set by the server; not public input.
 * - `@jsonSchema(pattern:, minimum:, …)` (variable): keywords merged into the variables JSON Schema.
 * - `@export(as: "var")` (field) with a sibling `_join` field (of type Query): the field's value
 *   fills `$var` for the selection under `_join`, run once per level for every parent together.
 * - `@transform(get: "a.b")` (field): the field's value is replaced by the value at that path.
 *
 * None of them is part of the schema: {@link extractOperationDirectives} removes them (and the
 * `_join` fields) before the document is validated, and returns what they declare.
 */
import {
  GraphQLError,
  Kind,
  getNamedType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  typeFromAST,
  visit,
  type ArgumentNode,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type GraphQLType,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type TypeNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql'
import type { JsonSchema } from './json-schema.js'

/** A server-side value of a variable. */
export type Injection =
  | { kind: 'uuid' }
  /** `layout` is a Go reference-time layout (`2006-01-02T15:04:05Z07:00`), formatted in UTC. */
  | { kind: 'dateTime'; layout: string }
  /** The environment variable's value, read when the operation is loaded. */
  | { kind: 'env'; name: string; value: string }

/** A `_join` field: the selection run with the exported values of each parent object. */
export interface OperationJoin {
  /** Response keys from `data` to the object that holds the `_join` field (lists are walked through). */
  readonly path: readonly string[]
  /** The `_join` field's response key (its alias, or `_join`). */
  readonly key: string
  /** Exported variable → response key of the sibling field it comes from. */
  readonly exports: Readonly<Record<string, string>>
  /** The selection under `_join`, as a query of its own with the variables it uses (validated). */
  readonly document: DocumentNode
  readonly operation: OperationDefinitionNode
}

/** Root fields run after the others, with variables exported by them (`@export` outside lists, no `_join`). */
export interface OperationLater {
  /** Exported variable → response path of the field it comes from (objects only, no lists). */
  readonly exports: Readonly<Record<string, readonly string[]>>
  /** The later root fields, as an operation of their own with the variables they use (validated). */
  readonly document: DocumentNode
  readonly operation: OperationDefinitionNode
}

/** A `@transform(get:)`: the value at `path` is replaced by the value at `get` inside it. */
export interface OperationTransform {
  readonly path: readonly string[]
  readonly get: readonly string[]
}

/** What an operation's data directives declare. */
export interface OperationDirectiveRules {
  readonly internalOperation: boolean
  readonly removeNullVariables: boolean
  /** `@internal` variables (filled by `@export`). */
  readonly internalVariables: readonly string[]
  /** Variable → its server-side value. */
  readonly inject: Readonly<Record<string, Injection>>
  /** Variable → JSON Schema keywords of `@jsonSchema`: `value` for the value (the items of a list), `list` for the list. */
  readonly jsonSchema: Readonly<Record<string, { value: JsonSchema; list: JsonSchema }>>
  readonly joins: readonly OperationJoin[]
  /** The root fields that use variables exported (outside lists) by the others: run after them; null when none. */
  readonly later: OperationLater | null
  /** Deepest first. */
  readonly transforms: readonly OperationTransform[]
}

const OPERATION_DIRECTIVES = new Set(['internalOperation', 'removeNullVariables'])
const VARIABLE_DIRECTIVES = new Set(['internal', 'injectGeneratedUUID', 'injectCurrentDateTime', 'injectEnvironmentVariable', 'jsonSchema'])
const FIELD_DIRECTIVES = new Set(['export', 'transform'])
/** The field that holds a joined selection. */
export const JOIN_FIELD = '_join'

/** Go's named layouts (package time), which `@injectCurrentDateTime(format:)` accepts, plus ISO8601. */
const DATE_FORMATS: Readonly<Record<string, string>> = {
  ISO8601: '2006-01-02T15:04:05Z07:00',
  RFC3339: '2006-01-02T15:04:05Z07:00',
  RFC3339Nano: '2006-01-02T15:04:05.999999999Z07:00',
  ANSIC: 'Mon Jan _2 15:04:05 2006',
  UnixDate: 'Mon Jan _2 15:04:05 MST 2006',
  RubyDate: 'Mon Jan 02 15:04:05 -0700 2006',
  RFC822: '02 Jan 06 15:04 MST',
  RFC822Z: '02 Jan 06 15:04 -0700',
  RFC850: 'Monday, 02-Jan-06 15:04:05 MST',
  RFC1123: 'Mon, 02 Jan 2006 15:04:05 MST',
  RFC1123Z: 'Mon, 02 Jan 2006 15:04:05 -0700',
  Kitchen: '3:04PM',
  Stamp: 'Jan _2 15:04:05',
  StampMilli: 'Jan _2 15:04:05.000',
  StampMicro: 'Jan _2 15:04:05.000000',
  StampNano: 'Jan _2 15:04:05.000000000',
  DateTime: '2006-01-02 15:04:05',
  DateOnly: '2006-01-02',
  TimeOnly: '15:04:05',
}

/** `@jsonSchema(commonPattern:)` values → keywords. EMAIL, DOMAIN and URL are ajv-formats' `email`, `hostname` and `uri`. */
const COMMON_PATTERNS: Readonly<Record<string, JsonSchema>> = {
  EMAIL: { format: 'email' },
  DOMAIN: { format: 'hostname' },
  URL: { format: 'uri' },
  URLPATH: { pattern: '^/[A-Za-z0-9\\-._~!$&\'()*+,;=:@%/]*$' },
  ALPHA: { pattern: '^[A-Za-z]+$' },
  ALPHANUMERIC: { pattern: '^[A-Za-z0-9]+$' },
  NUMERIC: { pattern: '^[0-9]+$' },
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
/** Go layout elements, longest first so that `January` wins over `Jan` and `2006` over `2`. */
const LAYOUT_TOKEN = /January|Monday|2006|Z07:00|-07:00|-0700|Jan|Mon|MST|Z0700|\.0+|\.9+|002|__2|_2|01|02|03|04|05|06|15|PM|pm|1|2|3|4|5/g

/**
 * Formats a date with a Go reference-time layout (`Mon Jan 2 15:04:05 MST 2006`), in UTC.
 * Supported elements: years (2006, 06), months (January, Jan, 01, 1), days (Monday, Mon, 02, _2, 2,
 * 002), hours (15, 03, 3), minutes (04, 4), seconds (05, 5), fractions (.000, .999), PM, zones (MST,
 * Z07:00, -07:00, -0700, Z0700). Other characters are copied.
 */
export function formatGoLayout(date: Date, layout: string): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  const h12 = date.getUTCHours() % 12 || 12
  return layout.replace(LAYOUT_TOKEN, (tok) => {
    if (/^\.0+$/.test(tok)) return `.${pad(date.getUTCMilliseconds(), 3).padEnd(tok.length - 1, '0').slice(0, tok.length - 1)}`
    if (/^\.9+$/.test(tok)) {
      const frac = pad(date.getUTCMilliseconds(), 3).padEnd(tok.length - 1, '0').slice(0, tok.length - 1).replace(/0+$/, '')
      return frac ? `.${frac}` : ''
    }
    switch (tok) {
      case 'January': return MONTHS[date.getUTCMonth()]!
      case 'Jan': return MONTHS[date.getUTCMonth()]!.slice(0, 3)
      case 'Monday': return DAYS[date.getUTCDay()]!
      case 'Mon': return DAYS[date.getUTCDay()]!.slice(0, 3)
      case '2006': return String(date.getUTCFullYear())
      case '06': return pad(date.getUTCFullYear() % 100)
      case '01': return pad(date.getUTCMonth() + 1)
      case '1': return String(date.getUTCMonth() + 1)
      case '02': return pad(date.getUTCDate())
      case '_2': return String(date.getUTCDate()).padStart(2, ' ')
      case '2': return String(date.getUTCDate())
      case '002': case '__2': {
        const day = Math.floor((Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()) - Date.UTC(date.getUTCFullYear(), 0, 1)) / 86_400_000) + 1
        return tok === '002' ? pad(day, 3) : String(day).padStart(3, ' ')
      }
      case '15': return pad(date.getUTCHours())
      case '03': return pad(h12)
      case '3': return String(h12)
      case '04': return pad(date.getUTCMinutes())
      case '4': return String(date.getUTCMinutes())
      case '05': return pad(date.getUTCSeconds())
      case '5': return String(date.getUTCSeconds())
      case 'PM': return date.getUTCHours() < 12 ? 'AM' : 'PM'
      case 'pm': return date.getUTCHours() < 12 ? 'am' : 'pm'
      case 'MST': return 'UTC'
      case 'Z07:00': case 'Z0700': return 'Z'
      case '-07:00': return '+00:00'
      case '-0700': return '+0000'
      default: return tok
    }
  })
}

const NO_RULES: OperationDirectiveRules = Object.freeze({ internalOperation: false, removeNullVariables: false, internalVariables: [], inject: {}, jsonSchema: {}, joins: [], later: null, transforms: [] })

function arg(d: DirectiveNode, name: string): ArgumentNode | undefined {
  return d.arguments?.find((a) => a.name.value === name)
}

function stringArg(d: DirectiveNode, name: string, errors: GraphQLError[]): string | undefined {
  const a = arg(d, name)
  if (!a) return undefined
  if (a.value.kind !== Kind.STRING) {
    errors.push(new GraphQLError(`@${d.name.value}(${name}:) must be a string`, { nodes: a }))
    return undefined
  }
  return a.value.value
}

function onlyArgs(d: DirectiveNode, allowed: readonly string[], errors: GraphQLError[]): void {
  for (const a of d.arguments ?? []) {
    if (!allowed.includes(a.name.value)) {
      errors.push(new GraphQLError(allowed.length ? `@${d.name.value} has no argument "${a.name.value}" (${allowed.join(', ')})` : `@${d.name.value} takes no arguments`, { nodes: a }))
    }
  }
}

function namedTypeName(type: TypeNode): string {
  return type.kind === Kind.NAMED_TYPE ? type.name.value : namedTypeName(type.type)
}

function listDepth(type: TypeNode | GraphQLType): number {
  if ('kind' in type && typeof type.kind === 'string' && (type.kind === Kind.NON_NULL_TYPE || type.kind === Kind.LIST_TYPE || type.kind === Kind.NAMED_TYPE)) {
    const node = type as TypeNode
    if (node.kind === Kind.NON_NULL_TYPE) return listDepth(node.type)
    if (node.kind === Kind.LIST_TYPE) return 1 + listDepth(node.type)
    return 0
  }
  const t = type as GraphQLType
  if (isNonNullType(t)) return listDepth(t.ofType)
  if (isListType(t)) return 1 + listDepth(t.ofType)
  return 0
}

function isListTypeNode(type: TypeNode): boolean {
  return type.kind === Kind.LIST_TYPE || (type.kind === Kind.NON_NULL_TYPE && type.type.kind === Kind.LIST_TYPE)
}

const STRINGISH = new Set(['String', 'ID', 'DateTime', 'UUID', 'BigInt', 'Decimal'])
const NUMERIC = new Set(['Int', 'Float'])

/** Reads the `@jsonSchema` arguments of a variable into keywords; misuse is pushed to `errors`. */
function readJsonSchema(d: DirectiveNode, v: VariableDefinitionNode, errors: GraphQLError[]): { value: JsonSchema; list: JsonSchema } {
  const value: JsonSchema = {}
  const list: JsonSchema = {}
  const named = namedTypeName(v.type)
  const isList = isListTypeNode(v.type)
  const name = `$${v.variable.name.value}`
  if (!d.arguments?.length) errors.push(new GraphQLError('@jsonSchema needs at least one argument (pattern, commonPattern, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, minItems, maxItems, uniqueItems, enum, title, description)', { nodes: d }))
  const num = (a: ArgumentNode, whole: boolean): number | undefined => {
    const n = a.value.kind === Kind.INT || a.value.kind === Kind.FLOAT ? Number(a.value.value) : NaN
    if (!Number.isFinite(n) || (whole && (!Number.isInteger(n) || n < 0))) {
      errors.push(new GraphQLError(`@jsonSchema(${a.name.value}:) must be ${whole ? 'a whole number of 0 or more' : 'a number'}`, { nodes: a }))
      return undefined
    }
    return n
  }
  const needs = (a: ArgumentNode, kinds: Set<string>, what: string): boolean => {
    if (kinds.has(named)) return true
    errors.push(new GraphQLError(`@jsonSchema(${a.name.value}:) applies to ${what} variables, and ${name} is ${named}`, { nodes: a }))
    return false
  }
  const str = (a: ArgumentNode): string | undefined => {
    if (a.value.kind === Kind.STRING) return a.value.value
    errors.push(new GraphQLError(`@jsonSchema(${a.name.value}:) must be a string`, { nodes: a }))
    return undefined
  }
  for (const a of d.arguments ?? []) {
    const key = a.name.value
    switch (key) {
      case 'pattern': {
        const p = str(a)
        if (p === undefined || !needs(a, STRINGISH, 'string')) break
        try {
          new RegExp(p, 'u') // ajv compiles patterns with the `u` flag
          value.pattern = p
        } catch (err) {
          errors.push(new GraphQLError(`@jsonSchema(pattern:) is not a valid regular expression: ${(err as Error).message}`, { nodes: a }))
        }
        break
      }
      case 'commonPattern': {
        const p = a.value.kind === Kind.ENUM || a.value.kind === Kind.STRING ? a.value.value : ''
        const keywords = COMMON_PATTERNS[p]
        if (!keywords) errors.push(new GraphQLError(`@jsonSchema(commonPattern:) must be one of ${Object.keys(COMMON_PATTERNS).join(', ')}`, { nodes: a }))
        else if (needs(a, STRINGISH, 'string')) Object.assign(value, keywords)
        break
      }
      case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum': case 'multipleOf': {
        const n = num(a, false)
        if (n === undefined || !needs(a, NUMERIC, 'Int or Float')) break
        if (key === 'multipleOf' && n <= 0) errors.push(new GraphQLError('@jsonSchema(multipleOf:) must be above 0', { nodes: a }))
        else value[key] = n
        break
      }
      case 'minLength': case 'maxLength': {
        const n = num(a, true)
        if (n !== undefined && needs(a, STRINGISH, 'string')) value[key] = n
        break
      }
      case 'minItems': case 'maxItems': {
        const n = num(a, true)
        if (n === undefined) break
        if (!isList) errors.push(new GraphQLError(`@jsonSchema(${key}:) applies to list variables, and ${name} is not a list`, { nodes: a }))
        else list[key] = n
        break
      }
      case 'uniqueItems': {
        if (a.value.kind !== Kind.BOOLEAN) errors.push(new GraphQLError('@jsonSchema(uniqueItems:) must be true or false', { nodes: a }))
        else if (!isList) errors.push(new GraphQLError(`@jsonSchema(uniqueItems:) applies to list variables, and ${name} is not a list`, { nodes: a }))
        else list.uniqueItems = a.value.value
        break
      }
      case 'enum': {
        const values = a.value.kind === Kind.LIST ? a.value.values : [a.value]
        const out = values.map((x: ValueNode) => (x.kind === Kind.STRING || x.kind === Kind.ENUM ? x.value : x.kind === Kind.INT || x.kind === Kind.FLOAT ? Number(x.value) : undefined))
        if (out.length === 0 || out.some((x) => x === undefined)) errors.push(new GraphQLError('@jsonSchema(enum:) must be a non-empty list of strings or numbers', { nodes: a }))
        else value.enum = out
        break
      }
      case 'title': case 'description': {
        const s = str(a)
        if (s !== undefined) list[key] = s
        break
      }
      default:
        errors.push(new GraphQLError(`@jsonSchema has no argument "${key}"`, { nodes: a }))
    }
  }
  if (typeof value.minimum === 'number' && typeof value.maximum === 'number' && value.minimum > value.maximum) errors.push(new GraphQLError('@jsonSchema: minimum is above maximum', { nodes: d }))
  if (typeof value.minLength === 'number' && typeof value.maxLength === 'number' && value.minLength > value.maxLength) errors.push(new GraphQLError('@jsonSchema: minLength is above maxLength', { nodes: d }))
  if (typeof list.minItems === 'number' && typeof list.maxItems === 'number' && list.minItems > list.maxItems) errors.push(new GraphQLError('@jsonSchema: minItems is above maxItems', { nodes: d }))
  if (!isList) return { value: { ...value, ...list }, list: {} }
  return { value, list }
}

function readVariable(v: VariableDefinitionNode, errors: GraphQLError[], env: NodeJS.ProcessEnv, out: { internal: string[]; inject: Record<string, Injection>; jsonSchema: Record<string, { value: JsonSchema; list: JsonSchema }> }): void {
  const name = v.variable.name.value
  let sources = 0
  const named = namedTypeName(v.type)
  const scalarOnly = (d: DirectiveNode, allowed: Set<string>) => {
    if (allowed.has(named) && !isListTypeNode(v.type)) return true
    errors.push(new GraphQLError(`@${d.name.value} needs a ${[...allowed].join(' or ')} variable, and $${name} is ${namedTypeName(v.type)}${isListTypeNode(v.type) ? ' (a list)' : ''}`, { nodes: d }))
    return false
  }
  for (const d of v.directives ?? []) {
    const dn = d.name.value
    if (OPERATION_DIRECTIVES.has(dn)) {
      errors.push(new GraphQLError(`@${dn} belongs on the operation, not on a variable`, { nodes: d }))
      continue
    }
    if (FIELD_DIRECTIVES.has(dn)) {
      errors.push(new GraphQLError(`@${dn} belongs on a field, not on a variable`, { nodes: d }))
      continue
    }
    if (!VARIABLE_DIRECTIVES.has(dn)) continue
    if (dn === 'jsonSchema') {
      out.jsonSchema[name] = readJsonSchema(d, v, errors)
      continue
    }
    sources++
    if (v.defaultValue) errors.push(new GraphQLError(`$${name} is set by the server (@${dn}) and cannot have a default value`, { nodes: v.defaultValue }))
    if (dn === 'internal') {
      onlyArgs(d, [], errors)
      out.internal.push(name)
    } else if (dn === 'injectGeneratedUUID') {
      onlyArgs(d, [], errors)
      if (scalarOnly(d, new Set(['String', 'ID', 'UUID']))) out.inject[name] = { kind: 'uuid' }
    } else if (dn === 'injectCurrentDateTime') {
      onlyArgs(d, ['format', 'customFormat'], errors)
      const format = arg(d, 'format')
      const custom = stringArg(d, 'customFormat', errors)
      let layout = DATE_FORMATS.ISO8601!
      if (format && custom !== undefined) errors.push(new GraphQLError('@injectCurrentDateTime takes format or customFormat, not both', { nodes: d }))
      else if (custom !== undefined) {
        if (!custom) errors.push(new GraphQLError('@injectCurrentDateTime(customFormat:) must not be empty', { nodes: d }))
        layout = custom
      } else if (format) {
        const f = format.value.kind === Kind.ENUM || format.value.kind === Kind.STRING ? format.value.value : ''
        if (DATE_FORMATS[f]) layout = DATE_FORMATS[f]!
        else errors.push(new GraphQLError(`@injectCurrentDateTime(format:) must be one of ${Object.keys(DATE_FORMATS).join(', ')}, or give customFormat: "<Go layout>"`, { nodes: format }))
      }
      if (scalarOnly(d, new Set(['String', 'ID', 'DateTime']))) out.inject[name] = { kind: 'dateTime', layout }
    } else {
      onlyArgs(d, ['name'], errors)
      const envName = stringArg(d, 'name', errors)
      if (!envName) {
        errors.push(new GraphQLError('@injectEnvironmentVariable needs name: "<ENVIRONMENT_VARIABLE>"', { nodes: d }))
        continue
      }
      const value = env[envName]
      if (value === undefined) errors.push(new GraphQLError(`@injectEnvironmentVariable: the environment variable ${envName} is not set`, { nodes: d }))
      else if (scalarOnly(d, new Set(['String', 'ID']))) out.inject[name] = { kind: 'env', name: envName, value }
    }
  }
  if (sources > 1) errors.push(new GraphQLError(`$${name} can take only one of @internal, @injectGeneratedUUID, @injectCurrentDateTime, @injectEnvironmentVariable, @fromClaim`, { nodes: v }))
}

/** The dotted path of `@transform(get:)`: response keys, `[]` steps allowed and ignored (lists are walked through). */
function parseGetPath(get: string): string[] | null {
  const parts = get.split('.').map((p) => p.replace(/^\[\]$/, '')).filter((p) => p !== '')
  return get !== '' && parts.every((p) => /^[_A-Za-z][_0-9A-Za-z]*$/.test(p)) ? parts : null
}

interface WalkState {
  schema: GraphQLSchema
  variables: Map<string, VariableDefinitionNode>
  internal: Set<string>
  errors: GraphQLError[]
  joins: OperationJoin[]
  transforms: OperationTransform[]
  fragments: FragmentDefinitionNode[]
  /** Exported variables that something fills (a `_join` sibling, or a field for later root fields). */
  filled: Set<string>
  /** Variables exported outside lists and joins, for later root fields: variable → response path of the field. */
  rootExports: Record<string, string[]>
  operation: OperationDefinitionNode
}

/** Variables used in a selection set (fragment spreads followed). */
function usedVariables(selectionSet: SelectionSetNode, fragments: readonly FragmentDefinitionNode[]): Set<string> {
  const used = new Set<string>()
  const seen = new Set<string>()
  const walk = (node: SelectionSetNode) => {
    visit(node, {
      Variable: (v) => {
        used.add(v.name.value)
      },
      FragmentSpread: (s) => {
        if (seen.has(s.name.value)) return
        seen.add(s.name.value)
        const f = fragments.find((x) => x.name.value === s.name.value)
        if (f) walk(f.selectionSet)
      },
    })
  }
  walk(selectionSet)
  return used
}

function fieldDirective(field: FieldNode, name: string): DirectiveNode | undefined {
  return field.directives?.find((d) => d.name.value === name)
}

function withoutOurDirectives(field: FieldNode, selectionSet: SelectionSetNode | undefined): FieldNode {
  const directives = field.directives?.filter((d) => !FIELD_DIRECTIVES.has(d.name.value))
  return { ...field, directives, selectionSet }
}

/** Walks a selection set: strips `@export`/`@transform`, takes `_join` fields out, records what they declare. */
function walkSelections(set: SelectionSetNode, parent: GraphQLCompositeType | undefined, path: string[], state: WalkState, scope: { inList: boolean; inJoin: boolean } = { inList: false, inJoin: false }): SelectionSetNode {
  const selections: SelectionNode[] = []
  const exports: Record<string, string> = {}
  const joinFields: FieldNode[] = []
  for (const sel of set.selections) {
    if (sel.kind === Kind.INLINE_FRAGMENT) {
      const cond = sel.typeCondition ? state.schema.getType(sel.typeCondition.name.value) : parent
      selections.push({ ...sel, selectionSet: walkSelections(sel.selectionSet, cond as GraphQLCompositeType | undefined, path, state, scope) })
      continue
    }
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      selections.push(sel)
      continue
    }
    const key = sel.alias?.value ?? sel.name.value
    const transform = fieldDirective(sel, 'transform')
    if (transform) {
      onlyArgs(transform, ['get'], state.errors)
      const get = stringArg(transform, 'get', state.errors)
      const parts = get === undefined ? null : parseGetPath(get)
      if (!parts) state.errors.push(new GraphQLError('@transform needs get: "<dotted path of response keys>", e.g. get: "weather.summary"', { nodes: transform }))
      else state.transforms.push({ path: [...path, key], get: parts })
    }
    if (sel.name.value === JOIN_FIELD) {
      if (fieldDirective(sel, 'export')) state.errors.push(new GraphQLError(`@export cannot be on ${JOIN_FIELD}`, { nodes: sel }))
      if (sel.arguments?.length) state.errors.push(new GraphQLError(`${JOIN_FIELD} takes no arguments`, { nodes: sel.arguments[0] }))
      if (!sel.selectionSet) state.errors.push(new GraphQLError(`${JOIN_FIELD} needs a selection of Query fields`, { nodes: sel }))
      else if (state.operation.operation !== 'query') state.errors.push(new GraphQLError(`${JOIN_FIELD} is supported in queries only`, { nodes: sel }))
      else joinFields.push(sel)
      continue
    }
    let fieldType: GraphQLOutputType | undefined
    if (parent && (isObjectType(parent) || isInterfaceType(parent))) fieldType = parent.getFields()[sel.name.value]?.type
    const exp = fieldDirective(sel, 'export')
    if (exp) {
      onlyArgs(exp, ['as'], state.errors)
      const as = stringArg(exp, 'as', state.errors)
      const variable = as === undefined ? undefined : state.variables.get(as)
      if (as === undefined) state.errors.push(new GraphQLError('@export needs as: "<variable name>"', { nodes: exp }))
      else if (!variable) state.errors.push(new GraphQLError(`@export(as: "${as}"): the operation declares no variable $${as}`, { nodes: exp }))
      else if (!state.internal.has(as)) state.errors.push(new GraphQLError(`@export(as: "${as}"): $${as} must be marked @internal (clients cannot set an exported variable)`, { nodes: exp }))
      else if (fieldType) {
        const named = getNamedType(fieldType)
        const vType = typeFromAST(state.schema, variable.type as never) as GraphQLType | undefined
        if (!isLeafType(named)) state.errors.push(new GraphQLError(`@export(as: "${as}"): only scalar and enum fields can be exported, and ${sel.name.value} is ${named.name}`, { nodes: exp }))
        else if (vType && (listDepth(fieldType) !== listDepth(vType) || !compatible(named.name, getNamedType(vType).name))) {
          state.errors.push(new GraphQLError(`@export(as: "${as}"): the field's type ${String(fieldType)} does not fit $${as}: ${String(vType)}`, { nodes: exp }))
        } else exports[as] = key
      }
    }
    const child = sel.selectionSet && fieldType ? (getNamedType(fieldType) as GraphQLCompositeType) : undefined
    const childScope = { inList: scope.inList || (!!fieldType && listDepth(fieldType) > 0), inJoin: scope.inJoin }
    selections.push(withoutOurDirectives(sel, sel.selectionSet ? walkSelections(sel.selectionSet, child, [...path, key], state, childScope) : undefined))
  }
  if (!joinFields.length && Object.keys(exports).length) {
    const first = set.selections.find((x): x is FieldNode => x.kind === Kind.FIELD && !!fieldDirective(x, 'export'))
    if (scope.inList || scope.inJoin) {
      const where = scope.inJoin ? `inside ${JOIN_FIELD}` : 'in a list'
      state.errors.push(new GraphQLError(`@export ${where} needs a ${JOIN_FIELD} field beside it (in the same selection set), whose selection uses the exported variable`, { nodes: first ? fieldDirective(first, 'export') : set }))
    } else {
      // Outside lists: the value fills the variable for the later root fields that use it.
      for (const [as, key] of Object.entries(exports)) {
        if (state.rootExports[as]) state.errors.push(new GraphQLError(`$${as} is exported twice`, { nodes: first ? fieldDirective(first, 'export') : set }))
        state.rootExports[as] = [...path, key]
        state.filled.add(as)
      }
    }
  }
  if (joinFields.length) {
    for (const joinField of joinFields) {
      const joinKey = joinField.alias?.value ?? JOIN_FIELD
      const j = { ...joinField, selectionSet: walkSelections(joinField.selectionSet!, state.schema.getQueryType() ?? undefined, [...path, joinKey], state, { inList: scope.inList, inJoin: true }) }
      const used = usedVariables(j.selectionSet, state.fragments)
      for (const v of Object.keys(exports)) state.filled.add(v)
      const missing = [...used].filter((v) => state.internal.has(v) && !(v in exports))
      if (missing.length) state.errors.push(new GraphQLError(`${JOIN_FIELD} uses ${missing.map((v) => `$${v}`).join(', ')}, which no sibling field @export`, { nodes: joinField }))
      for (const s of joinField.selectionSet!.selections) {
        if (s.kind !== Kind.FIELD) state.errors.push(new GraphQLError(`the selection of ${JOIN_FIELD} must be fields (fragments may be used inside them)`, { nodes: s }))
        if (s.kind === Kind.FIELD && s.selectionSet && containsJoin(s.selectionSet)) state.errors.push(new GraphQLError(`${JOIN_FIELD} cannot be nested inside ${JOIN_FIELD}`, { nodes: s }))
      }
      const operation: OperationDefinitionNode = {
        kind: Kind.OPERATION_DEFINITION,
        operation: 'query' as OperationDefinitionNode['operation'],
        name: { kind: Kind.NAME, value: `${state.operation.name?.value ?? 'Operation'}Join` },
        variableDefinitions: (state.operation.variableDefinitions ?? []).filter((v) => used.has(v.variable.name.value)).map((v) => ({ ...v, directives: [] })),
        directives: [],
        selectionSet: j.selectionSet,
      }
      state.joins.push({ path, key: joinKey, exports: { ...exports }, document: { kind: Kind.DOCUMENT, definitions: [operation, ...state.fragments] }, operation })
    }
  }
  return { ...set, selections }
}

function containsJoin(set: SelectionSetNode): boolean {
  return set.selections.some((s) => (s.kind === Kind.FIELD ? s.name.value === JOIN_FIELD || (!!s.selectionSet && containsJoin(s.selectionSet)) : s.kind === Kind.INLINE_FRAGMENT && containsJoin(s.selectionSet)))
}

/** An exported field's scalar fits a variable's scalar when they are the same, or the variable is an ID taking a String or Int. */
function compatible(field: string, variable: string): boolean {
  return field === variable || (variable === 'ID' && (field === 'String' || field === 'Int')) || (variable === 'String' && field === 'ID')
}

/**
 * Removes the data directives (and `_join` fields) from a document and reads what they declare.
 * Call after the auth directives are removed and before validation.
 * @param env the environment `@injectEnvironmentVariable` reads (only the names written in operation files are read).
 * @returns the document to validate and run (the same object when it uses none of them), the rules,
 *   and the errors of misused directives, each with its location, in the shape of validation errors.
 *   Each join's own document must be validated too (its nodes keep their locations in the file).
 */
export function extractOperationDirectives(document: DocumentNode, schema: GraphQLSchema, env: NodeJS.ProcessEnv = process.env): { document: DocumentNode; rules: OperationDirectiveRules; errors: GraphQLError[] } {
  const errors: GraphQLError[] = []
  const names = new Set([...OPERATION_DIRECTIVES, ...VARIABLE_DIRECTIVES, ...FIELD_DIRECTIVES])
  let found = false
  visit(document, {
    Directive: (d) => {
      if (names.has(d.name.value)) found = true
    },
    Field: (f) => {
      if (f.name.value === JOIN_FIELD) found = true
    },
  })
  if (!found) return { document, rules: NO_RULES, errors }
  const fragments = document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
  for (const f of fragments) {
    visit(f, {
      Directive: (d) => {
        if (names.has(d.name.value)) errors.push(new GraphQLError(`@${d.name.value} is not supported inside fragments: write the field in the operation`, { nodes: d }))
      },
      Field: (fl) => {
        if (fl.name.value === JOIN_FIELD) errors.push(new GraphQLError(`${JOIN_FIELD} is not supported inside fragments: write it in the operation`, { nodes: fl }))
      },
    })
  }
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
  if (!op) return { document, rules: NO_RULES, errors }
  let internalOperation = false
  let removeNullVariables = false
  for (const d of op.directives ?? []) {
    const dn = d.name.value
    if (VARIABLE_DIRECTIVES.has(dn)) errors.push(new GraphQLError(`@${dn} belongs on a variable definition, not on the operation`, { nodes: d }))
    else if (FIELD_DIRECTIVES.has(dn)) errors.push(new GraphQLError(`@${dn} belongs on a field, not on the operation`, { nodes: d }))
    else if (dn === 'internalOperation') {
      onlyArgs(d, [], errors)
      internalOperation = true
    } else if (dn === 'removeNullVariables') {
      onlyArgs(d, [], errors)
      removeNullVariables = true
    }
  }
  const vars = { internal: [] as string[], inject: {} as Record<string, Injection>, jsonSchema: {} as Record<string, { value: JsonSchema; list: JsonSchema }> }
  for (const v of op.variableDefinitions ?? []) readVariable(v, errors, env, vars)
  const state: WalkState = {
    schema,
    variables: new Map((op.variableDefinitions ?? []).map((v) => [v.variable.name.value, v])),
    internal: new Set(vars.internal),
    errors,
    joins: [],
    transforms: [],
    fragments,
    filled: new Set(),
    rootExports: {},
    operation: op,
  }
  const root = op.operation === 'query' ? schema.getQueryType() : op.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()
  let selectionSet = walkSelections(op.selectionSet, root ?? undefined, [], state)
  let later: OperationLater | null = null
  const rootExported = Object.keys(state.rootExports)
  if (rootExported.length) {
    // The root fields that use a root-exported variable run after the others, with its value.
    const usesExport = (sel: SelectionNode) => sel.kind !== Kind.FRAGMENT_SPREAD && [...usedVariables({ kind: Kind.SELECTION_SET, selections: [sel] }, fragments)].some((v) => v in state.rootExports)
    const second = selectionSet.selections.filter(usesExport)
    const first = selectionSet.selections.filter((sel) => !usesExport(sel))
    const exportedFrom = new Set(rootExported.map((v) => state.rootExports[v]![0]))
    for (const sel of second) {
      if (sel.kind !== Kind.FIELD) state.errors.push(new GraphQLError('a root selection that uses an exported variable must be a field', { nodes: sel }))
      else if (exportedFrom.has(sel.alias?.value ?? sel.name.value)) state.errors.push(new GraphQLError('a root field cannot use a variable exported from inside itself', { nodes: sel }))
    }
    if (op.operation === 'subscription') state.errors.push(new GraphQLError('@export is not supported in subscriptions', { nodes: op }))
    if (!second.length) {
      for (const v of rootExported) state.errors.push(new GraphQLError(`$${v} is exported but no later root field uses it`, { nodes: state.variables.get(v)! }))
    } else {
      const used = usedVariables({ kind: Kind.SELECTION_SET, selections: second }, fragments)
      const operation: OperationDefinitionNode = {
        kind: Kind.OPERATION_DEFINITION,
        operation: op.operation,
        name: { kind: Kind.NAME, value: `${op.name?.value ?? 'Operation'}Later` },
        variableDefinitions: (op.variableDefinitions ?? []).filter((v) => used.has(v.variable.name.value)).map((v) => ({ ...v, directives: [] })),
        directives: [],
        selectionSet: { kind: Kind.SELECTION_SET, selections: second },
      }
      later = { exports: state.rootExports, document: { kind: Kind.DOCUMENT, definitions: [operation, ...fragments] }, operation }
      selectionSet = { ...selectionSet, selections: first }
    }
  }
  for (const v of vars.internal) {
    if (!state.filled.has(v)) errors.push(new GraphQLError(`$${v} is @internal but no field @export(as: "${v}") fills it`, { nodes: state.variables.get(v)! }))
  }
  if (op.operation === 'subscription' && state.transforms.length) errors.push(new GraphQLError('@transform is supported in queries and mutations only', { nodes: op }))
  // The variables the main selection no longer uses (only its joins did) leave its definitions.
  const used = usedVariables(selectionSet, fragments)
  const inJoins = new Set([...state.joins.map((j) => j.operation), ...(later ? [later.operation] : [])].flatMap((o) => (o.variableDefinitions ?? []).map((v) => v.variable.name.value)))
  // Public variables stay declared in the main selection even when only a join uses them (they are
  // public input); @internal ones leave it when it does not use them (no client provides them).
  const joinOnly = new Set([...state.internal].filter((v) => !used.has(v)))
  if (inJoins.size) {
    // The main selection is then validated without NoUnusedVariablesRule: this is that rule, over the whole operation.
    for (const [name, def] of state.variables) {
      if (!used.has(name) && !inJoins.has(name)) errors.push(new GraphQLError(`Variable "$${name}" is never used in operation "${op.name?.value ?? ''}".`, { nodes: def }))
    }
  }
  const strip = <D extends DirectiveNode>(ds: readonly D[] | undefined, set: Set<string>) => ds?.filter((d) => !set.has(d.name.value))
  const main: OperationDefinitionNode = {
    ...op,
    directives: strip(op.directives, OPERATION_DIRECTIVES),
    variableDefinitions: op.variableDefinitions?.filter((v) => !joinOnly.has(v.variable.name.value)).map((v) => ({ ...v, directives: strip(v.directives, VARIABLE_DIRECTIVES) })),
    selectionSet,
  }
  const rules: OperationDirectiveRules = Object.freeze({
    internalOperation,
    removeNullVariables,
    internalVariables: vars.internal,
    inject: vars.inject,
    jsonSchema: vars.jsonSchema,
    joins: state.joins,
    later,
    transforms: state.transforms.sort((a, b) => b.path.length - a.path.length),
  })
  return { document: { ...document, definitions: document.definitions.map((d) => (d === op ? main : d)) }, rules, errors }
}

/**
 * The server-side variable values of an operation (`@inject…`), computed for one request.
 * @param now the request's time (one value for every `@injectCurrentDateTime` of the request).
 */
export function injectedVariables(inject: Readonly<Record<string, Injection>>, now = new Date()): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, i] of Object.entries(inject)) {
    out[name] = i.kind === 'uuid' ? crypto.randomUUID() : i.kind === 'env' ? i.value : formatGoLayout(now, i.layout)
  }
  return out
}
