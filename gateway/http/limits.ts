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
  type GraphQLError,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql'
import { GraphQLLimitError } from '../errors.js'
import { expandedSelections, fragmentsInDependencyOrder } from '../operations/fragments.js'
import { jsonDepth } from '../json-depth.js'
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

/**
 * Depth of each operation (and of its root introspection fields), each fragment measured once, in
 * dependency order: a spread counts its fragment's depth, read from the memo (0 for a fragment in a
 * cycle, or unknown). Recursion follows only the nesting written in one definition, which the parser
 * already went through.
 */
function depths(document: DocumentNode): Map<OperationDefinitionNode, { depth: number; introspection: number }> {
  /** Plain depth of each fragment, and its depth split as at the root (fragments spread on the root type). */
  const plain = new Map<string, number>()
  const rooted = new Map<string, { depth: number; introspection: number }>()
  const depthOf = (set: SelectionSetNode): number => {
    let max = 0
    for (const sel of set.selections) {
      const d =
        sel.kind === Kind.FIELD ? 1 + (sel.selectionSet ? depthOf(sel.selectionSet) : 0) : sel.kind === Kind.INLINE_FRAGMENT ? depthOf(sel.selectionSet) : (plain.get(sel.name.value) ?? 0)
      if (d > max) max = d
    }
    return max
  }
  /** Depth of a root selection set, with root introspection fields set aside. */
  const root = (set: SelectionSetNode): { depth: number; introspection: number } => {
    let depth = 0
    let introspection = 0
    for (const sel of set.selections) {
      let r: { depth: number; introspection: number } | undefined
      if (sel.kind === Kind.FIELD) {
        const d = 1 + (sel.selectionSet ? depthOf(sel.selectionSet) : 0)
        r = sel.name.value === '__schema' || sel.name.value === '__type' ? { depth: 0, introspection: d } : { depth: d, introspection: 0 }
      } else r = sel.kind === Kind.INLINE_FRAGMENT ? root(sel.selectionSet) : rooted.get(sel.name.value)
      if (!r) continue
      depth = Math.max(depth, r.depth)
      introspection = Math.max(introspection, r.introspection)
    }
    return { depth, introspection }
  }
  for (const frag of fragmentsInDependencyOrder(document)) {
    plain.set(frag.name.value, depthOf(frag.selectionSet))
    rooted.set(frag.name.value, root(frag.selectionSet))
  }
  const out = new Map<OperationDefinitionNode, { depth: number; introspection: number }>()
  for (const d of document.definitions) if (d.kind === Kind.OPERATION_DEFINITION) out.set(d, root(d.selectionSet))
  return out
}

/**
 * Checks a parsed document.
 * @returns one GraphQLError (code `TRB_ERR_GRAPHQL_LIMIT`) per exceeded limit; empty when fine.
 */
export function checkDocumentLimits(document: DocumentNode, limits: DocumentLimits): GraphQLError[] {
  const maxIntrospectionDepth = limits.maxIntrospectionDepth ?? DEFAULT_MAX_INTROSPECTION_DEPTH
  const operationDepths = depths(document)
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
    const { depth, introspection } = operationDepths.get(d)!
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

/**
 * The fragment limits, checked before validation, in time linear in the document's size:
 * - `maxFragmentSpreads`: the spreads (`...Name`) written in the document. graphql-js'
 *   OverlappingFieldsCanBeMergedRule compares the fragments of a selection set pairwise and follows
 *   spread chains, so its time grows with the square of the spreads (300: about 90 ms; 100: about 10 ms).
 * - `maxSelections`: the field selections of each operation with every spread counted as a copy of
 *   its fragment (`expandedSelections`, computed once per fragment), which is what graphql-tools'
 *   delegation (prepareGatewayDocument) and graphql-jit's compilation walk: a fragment that spreads
 *   the next one twice, 22 levels deep, is 4 million selections in 1 KB.
 * @returns a `TRB_ERR_GRAPHQL_LIMIT` GraphQLError naming the limit, or null when within both
 */
export function checkFragmentLimits(document: DocumentNode, limits: { maxFragmentSpreads: number; maxSelections: number }): GraphQLError | null {
  const tooMany = checkFragmentSpreads(document, limits.maxFragmentSpreads)
  if (tooMany) return tooMany
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue
    const selections = expandedSelections(document, d)
    if (selections > limits.maxSelections) {
      const count = selections > Number.MAX_SAFE_INTEGER ? `more than ${Number.MAX_SAFE_INTEGER}` : String(selections)
      return codedGraphQLError(new GraphQLLimitError(`Operation${d.name ? ` "${d.name.value}"` : ''} has ${count} selections once its fragments are expanded, more than the maximum of ${limits.maxSelections} (maxSelections)`), d)
    }
  }
  return null
}

function checkFragmentSpreads(document: DocumentNode, max: number): GraphQLError | null {
  let spreads = 0
  const sets: SelectionSetNode[] = []
  for (const d of document.definitions) if (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) sets.push(d.selectionSet)
  while (sets.length) {
    for (const sel of sets.pop()!.selections) {
      if (sel.kind === Kind.FRAGMENT_SPREAD) spreads++
      else if (sel.selectionSet) sets.push(sel.selectionSet)
    }
  }
  return spreads > max ? codedGraphQLError(new GraphQLLimitError(`The document has ${spreads} fragment spreads, more than the maximum of ${max} (maxFragmentSpreads)`)) : null
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
  children: CostItem[]
}

/** A field, or a fragment spread: a reference to the fragment's shared items, never a copy of them. */
type CostItem = CostNode | { fragment: string }

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
 * default), else `listSize`. Fragments count where they are spread, each spread its fragment's
 * whole cost (spreading one twice counts twice); root fields and aliases add up.
 *
 * Linear in the document's size: each fragment's items are built once and shared by its spreads,
 * and each computation of the cost computes each fragment's cost once, in dependency order
 * (`fragmentsInDependencyOrder`), so a fragment that spreads the next one twice, 40 levels
 * deep, costs 2^40 times its last one's cost without being expanded. A fragment in a cycle counts 0
 * where it closes the cycle (NoFragmentCyclesRule reports it).
 */
export function buildCostPlan(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, listSize: number): CostPlan {
  const defaults = new Map<string, number>()
  for (const v of operation.variableDefinitions ?? []) {
    if (v.defaultValue?.kind === Kind.INT) defaults.set(v.variable.name.value, Math.abs(Number(v.defaultValue.value)))
  }
  let dynamic = false
  const itemsOf = (set: SelectionSetNode, type: GraphQLNamedType | undefined, out: CostItem[]): CostItem[] => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const t = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : type
        itemsOf(sel.selectionSet, t ?? undefined, out)
        continue
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        out.push({ fragment: sel.name.value })
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
      out.push({ size, list, children: itemsOf(sel.selectionSet, field ? getNamedType(field.type) : undefined, []) })
    }
    return out
  }
  const fragments = fragmentsInDependencyOrder(document).map((frag) => ({ name: frag.name.value, items: itemsOf(frag.selectionSet, schema.getType(frag.typeCondition.name.value) ?? undefined, []) }))
  const root = itemsOf(operation.selectionSet, schema.getRootType(operation.operation) ?? undefined, [])
  const evaluate = (vars: Record<string, unknown> | null | undefined): number => {
    const fragmentCost = new Map<string, number>()
    const sum = (items: CostItem[]): number => {
      let total = 0
      for (const n of items) {
        if ('fragment' in n) {
          total += fragmentCost.get(n.fragment) ?? 0
          continue
        }
        let size = 1
        if (n.list) {
          if (typeof n.size === 'number') size = n.size
          else if (typeof n.size === 'string') {
            const v = vars?.[n.size]
            size = typeof v === 'number' ? Math.abs(v) : (defaults.get(n.size) ?? listSize)
          } else size = listSize
        }
        total += size * (1 + sum(n.children))
      }
      return total
    }
    for (const f of fragments) fragmentCost.set(f.name, sum(f.items))
    return sum(root)
  }
  const constant = dynamic ? undefined : evaluate(undefined)
  return { constant, cost: (vars) => constant ?? evaluate(vars) }
}

/**
 * Checks a cost against the limit.
 * @returns a `TRB_ERR_GRAPHQL_LIMIT` GraphQLError naming both, or null
 */
export function checkCost(cost: number, maxCost: number): GraphQLError | null {
  return cost > maxCost ? codedGraphQLError(new GraphQLLimitError(`The operation costs ${cost > Number.MAX_SAFE_INTEGER ? `more than ${Number.MAX_SAFE_INTEGER}` : cost}, more than the maximum of ${maxCost} (maxCost); ask for fewer or smaller lists (take)`)) : null
}
