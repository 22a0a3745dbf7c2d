/**
 * Document limits (cf. graphql-armor, Apollo Router), the one implementation used by `/graphql` and
 * by the WebSocket endpoint: selection depth and number of aliases. Depth counts field levels
 * (`{ messages { id } }` has depth 2); fragments add no level; fragment cycles count as 0
 * (NoFragmentCyclesRule reports them). Root introspection fields (`__schema`, `__type`) are measured
 * against their own, larger limit, so the standard introspection query (type references 8 levels
 * deep) passes while a deeper one does not. The token limit is applied by the parser. Also the
 * nesting of input values (literals here, variables per request) and the cost of an operation
 * (computed once per document, or per request when a variable feeds a `take`).
 */
import {
  Kind,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  visit,
  type ASTVisitor,
  type GraphQLNamedType,
  type GraphQLSchema,
  type ValueNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql'
import { GraphQLLimitError } from '../errors.js'
import { codedGraphQLError } from './format-error.js'

/** Default limit for the subtree of a root introspection field. */
export const DEFAULT_MAX_INTROSPECTION_DEPTH = 16

/** Limits to check. */
export interface DocumentLimits {
  /** Deepest selection allowed; a root field is depth 1. `Infinity` disables it. */
  maxDepth: number
  /** Most aliases allowed in the whole document. `Infinity` disables it. */
  maxAliases: number
  /** Deepest subtree of a root `__schema`/`__type` field. Default {@link DEFAULT_MAX_INTROSPECTION_DEPTH}. */
  maxIntrospectionDepth?: number
  /** Deepest nesting of object/list literals (see {@link documentInputDepth}). Default: unlimited. */
  maxInputDepth?: number
}

function depths(operation: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>, memo: Map<string, number>) {
  const visiting = new Set<string>()
  const depthOf = (set: SelectionSetNode): number => {
    let max = 0
    for (const sel of set.selections) {
      let d = 0
      if (sel.kind === Kind.FIELD) d = 1 + (sel.selectionSet ? depthOf(sel.selectionSet) : 0)
      else if (sel.kind === Kind.INLINE_FRAGMENT) d = depthOf(sel.selectionSet)
      else {
        const name = sel.name.value
        const cached = memo.get(name)
        if (cached !== undefined) d = cached
        else {
          const frag = fragments.get(name)
          if (frag && !visiting.has(name)) {
            visiting.add(name)
            d = depthOf(frag.selectionSet)
            visiting.delete(name)
            memo.set(name, d)
          }
        }
      }
      if (d > max) max = d
    }
    return max
  }
  /** Depth of the root selection set, with root introspection fields set aside. */
  const root = (set: SelectionSetNode, seen: Set<string>): { depth: number; introspection: number } => {
    let depth = 0
    let introspection = 0
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const d = 1 + (sel.selectionSet ? depthOf(sel.selectionSet) : 0)
        if (sel.name.value === '__schema' || sel.name.value === '__type') introspection = Math.max(introspection, d)
        else depth = Math.max(depth, d)
        continue
      }
      let inner: SelectionSetNode | undefined
      if (sel.kind === Kind.INLINE_FRAGMENT) inner = sel.selectionSet
      else if (!seen.has(sel.name.value)) {
        seen.add(sel.name.value)
        inner = fragments.get(sel.name.value)?.selectionSet
      }
      if (inner) {
        const r = root(inner, seen)
        depth = Math.max(depth, r.depth)
        introspection = Math.max(introspection, r.introspection)
      }
    }
    return { depth, introspection }
  }
  return root(operation.selectionSet, new Set())
}

/**
 * Checks a parsed document.
 * @returns one GraphQLError (code `TRB_ERR_GRAPHQL_LIMIT`) per exceeded limit; empty when fine.
 */
export function checkDocumentLimits(document: DocumentNode, limits: DocumentLimits): GraphQLError[] {
  const maxIntrospectionDepth = limits.maxIntrospectionDepth ?? DEFAULT_MAX_INTROSPECTION_DEPTH
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const memo = new Map<string, number>()
  const errors: GraphQLError[] = []
  const fail = (message: string, node?: OperationDefinitionNode) => errors.push(codedGraphQLError(new GraphQLLimitError(message), node))
  let aliases = 0
  const countAliases = (set: SelectionSetNode): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD && sel.alias) aliases++
      if (sel.kind !== Kind.FRAGMENT_SPREAD && sel.selectionSet) countAliases(sel.selectionSet)
    }
  }
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) countAliases(d.selectionSet)
    if (d.kind !== Kind.OPERATION_DEFINITION) continue
    countAliases(d.selectionSet)
    const { depth, introspection } = depths(d, fragments, memo)
    const name = d.name ? ` "${d.name.value}"` : ''
    if (depth > limits.maxDepth) fail(`Operation${name} has depth ${depth}, more than the maximum of ${limits.maxDepth}`, d)
    else if (introspection > maxIntrospectionDepth) fail(`Operation${name} has introspection depth ${introspection}, more than the maximum of ${maxIntrospectionDepth}`, d)
  }
  if (aliases > limits.maxAliases) fail(`The document uses ${aliases} aliases; the limit is ${limits.maxAliases}`)
  if (limits.maxInputDepth !== undefined) {
    const inputDepth = documentInputDepth(document)
    if (inputDepth > limits.maxInputDepth) fail(`An argument is nested ${inputDepth} levels deep, more than the maximum of ${limits.maxInputDepth} (maxInputDepth)`)
  }
  return errors
}

/** {@link checkDocumentLimits} as a graphql-js validation rule (for the WebSocket endpoint's `validate`). */
export function createDocumentLimitsRule(limits: DocumentLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    Document(node) {
      for (const err of checkDocumentLimits(node, limits)) context.reportError(err)
    },
  })
}

// ---------------------------------------------------------------------------------------------
// input nesting

/**
 * Deepest nesting of object and list values in the document's literals (arguments, variable
 * defaults, directive arguments): `{ NOT: { id: { equals: 1 } } }` has depth 3.
 */
export function documentInputDepth(document: DocumentNode): number {
  let max = 0
  const depthOf = (v: ValueNode): number => {
    if (v.kind === Kind.OBJECT) return 1 + v.fields.reduce((m, f) => Math.max(m, depthOf(f.value)), 0)
    if (v.kind === Kind.LIST) return 1 + v.values.reduce((m, x) => Math.max(m, depthOf(x)), 0)
    return 0
  }
  visit(document, {
    Argument(node) {
      max = Math.max(max, depthOf(node.value))
      return false
    },
    VariableDefinition(node) {
      if (node.defaultValue) max = Math.max(max, depthOf(node.defaultValue))
    },
  })
  return max
}

/**
 * Deepest nesting of objects and arrays in a JSON value (the variables of one request), walked
 * without recursion so that hostile nesting cannot overflow the stack. `{}` and `{ id: 1 }` have
 * depth 1. Stops counting once `limit` is exceeded.
 */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length) {
    const [v, d] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (d > max) max = d
    if (max > limit) return max
    for (const key in v as Record<string, unknown>) stack.push([(v as Record<string, unknown>)[key], d + 1])
  }
  return max
}

/**
 * Checks the nesting of a request's variables (the variables object itself is level 1, so a
 * `where` variable nested n levels deep counts n + 1).
 * @returns a `TRB_ERR_GRAPHQL_LIMIT` GraphQLError, or null when within `maxInputDepth`
 */
export function checkVariablesDepth(variables: unknown, maxInputDepth: number): GraphQLError | null {
  if (variables === null || typeof variables !== 'object') return null
  const depth = jsonDepth(variables, maxInputDepth + 1)
  return depth > maxInputDepth + 1 ? codedGraphQLError(new GraphQLLimitError(`The variables are nested more than ${maxInputDepth} levels deep (maxInputDepth)`)) : null
}

// ---------------------------------------------------------------------------------------------
// cost

/** One field of a {@link CostPlan}: its multiplier and its sub-selection. */
interface CostNode {
  /** A constant size, or the variable whose value is the size (`take: $n`); null = the list default. */
  size: number | string | null
  /** True for list fields (their size multiplies), false for single objects (size 1). */
  list: boolean
  children: CostNode[]
}

/** The cost of one operation: constant, or computed from the variables that feed `take`. */
export interface CostPlan {
  /** The cost when it does not depend on variables. */
  readonly constant: number | undefined
  /** The cost for these variables (the constant, when there is one). */
  cost(variables: Record<string, unknown> | null | undefined): number
}

/**
 * Builds the cost plan of an operation (cf. Apollo Router demand control, graphql-armor cost
 * limit). Every field with a sub-selection costs 1 per object it returns, plus the cost of its
 * sub-selection per object; leaf fields cost nothing. A list field returns as many objects as its
 * `take` argument (absolute value; a literal, or the variable's value at request time, or its
 * default), else `listSize`. Fragments count where they are spread; root fields and aliases add up.
 */
export function buildCostPlan(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, listSize: number): CostPlan {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const defaults = new Map<string, number>()
  for (const v of operation.variableDefinitions ?? []) {
    if (v.defaultValue?.kind === Kind.INT) defaults.set(v.variable.name.value, Math.abs(Number(v.defaultValue.value)))
  }
  let dynamic = false
  const nodesOf = (set: SelectionSetNode, type: GraphQLNamedType | undefined, visiting: Set<string>): CostNode[] => {
    const out: CostNode[] = []
    for (const sel of set.selections) {
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const t = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : type
        out.push(...nodesOf(sel.selectionSet, t ?? undefined, visiting))
        continue
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const frag = fragments.get(sel.name.value)
        if (!frag || visiting.has(sel.name.value)) continue
        visiting.add(sel.name.value)
        out.push(...nodesOf(frag.selectionSet, schema.getType(frag.typeCondition.name.value) ?? undefined, visiting))
        visiting.delete(sel.name.value)
        continue
      }
      if (!sel.selectionSet) continue
      const field = type && (isObjectType(type) || isInterfaceType(type)) ? type.getFields()[sel.name.value] : undefined
      const list = field ? isListType(getNullableType(field.type)) : false
      let size: number | string | null = null
      const take = sel.arguments?.find((a) => a.name.value === 'take')
      if (take?.value.kind === Kind.INT) size = Math.abs(Number(take.value.value))
      else if (take?.value.kind === Kind.VARIABLE) {
        size = take.value.name.value
        dynamic = true
      }
      out.push({ size, list, children: nodesOf(sel.selectionSet, field ? getNamedType(field.type) : undefined, visiting) })
    }
    return out
  }
  const root = nodesOf(operation.selectionSet, schema.getRootType(operation.operation) ?? undefined, new Set())
  const evaluate = (nodes: CostNode[], vars: Record<string, unknown> | null | undefined): number => {
    let total = 0
    for (const n of nodes) {
      let size = 1
      if (n.list) {
        if (typeof n.size === 'number') size = n.size
        else if (typeof n.size === 'string') {
          const v = vars?.[n.size]
          size = typeof v === 'number' ? Math.abs(v) : (defaults.get(n.size) ?? listSize)
        } else size = listSize
      }
      total += size * (1 + evaluate(n.children, vars))
    }
    return total
  }
  const constant = dynamic ? undefined : evaluate(root, undefined)
  return { constant, cost: (vars) => constant ?? evaluate(root, vars) }
}

/**
 * Checks a cost against the limit.
 * @returns a `TRB_ERR_GRAPHQL_LIMIT` GraphQLError naming both, or null
 */
export function checkCost(cost: number, maxCost: number): GraphQLError | null {
  return cost > maxCost ? codedGraphQLError(new GraphQLLimitError(`The operation costs ${cost}, more than the maximum of ${maxCost} (maxCost); ask for fewer or smaller lists (take)`)) : null
}
