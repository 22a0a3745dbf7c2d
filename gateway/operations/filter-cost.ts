/**
 * The cost of relation filters (README "Query cost"), added to the selection cost of limits.ts
 * (`buildCostPlan`) before an operation runs. A relation filter is a correlated subquery the
 * database evaluates for every row it filters, so each level multiplies like a list field:
 *
 * - a to-many filter (`albums: { some | every | none: W }`) costs `listSize × (1 + cost(W))`;
 * - a to-one filter (`artist: { is | isNot: W }`, one indexed row) costs `1 × (1 + cost(W))`;
 * - `AND`/`OR`/`NOT` and other fields add up; scalar filters cost nothing;
 * - the arguments of a field are priced per object the field returns, and per object of each
 *   enclosing list: `findManyArtist(take: 10, where: W)` adds `10 × cost(W)`, and a nested
 *   `albums(where: W)` under it `10 × listSize × cost(W)`.
 *
 * So `findManyArtist(where: { albums: { some: { tracks: { some: { … } } } } })` with 4 to-many
 * levels adds 10 × (10 + 100 + 1000 + 10000) = 111,100, over the default `maxCost` (20,000).
 * Relation filter input types are the ones a connector marks with `extensions.tributaryRelationFilter`
 * (connectors/types.ts). Sizes (`take`) are read as `buildCostPlan` reads them.
 *
 * Time: the plan of an operation is built once per (schema, operation node), in time linear in the
 * document (each fragment compiled once, spreads referenced, never expanded); evaluating it is
 * linear in the plan plus, when a variable can hold a relation filter, in that variable's JSON (each
 * variable walked once per request and input type). Operations without relation filters cost 0
 * without evaluation.
 */
import {
  Kind,
  getNamedType,
  getNullableType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  typeFromAST,
  type ArgumentNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql'
import { RELATION_FILTER_EXTENSION } from '../connectors/types.js'

/** Deepest JSON nesting walked in a variable (the request's variables were checked against `maxInputDepth` already); deeper costs Infinity. */
const MAX_WALK_DEPTH = 64

/** `constant + Σ coef × cost(variable as type)`: the cost of argument values, variables left open. */
interface Linear {
  constant: number
  terms: { coef: number; name: string; type: GraphQLInputType }[]
}

/** One field of the plan: its size, its arguments' cost per object, its sub-selection. */
interface FieldNode {
  /** A constant size, or the variable of its `take`; null = the list default. */
  size: number | string | null
  list: boolean
  args: Linear
  children: PlanNode[]
}
type PlanNode = FieldNode | { fragment: string }

interface Plan {
  /** The cost when it does not depend on the request's variables. */
  constant: number | undefined
  cost(variables: Record<string, unknown> | null | undefined): number
}

const ZERO: Plan = { constant: 0, cost: () => 0 }
const plans = new WeakMap<GraphQLSchema, WeakMap<OperationDefinitionNode, Map<number, Plan>>>()

/** The relation filter kind of an input type (see {@link RELATION_FILTER_EXTENSION}). */
function relationKind(type: GraphQLNamedType): 'many' | 'one' | undefined {
  const kind = (type.extensions as Record<string, unknown> | undefined)?.[RELATION_FILTER_EXTENSION]
  return kind === 'many' || kind === 'one' ? kind : undefined
}

/**
 * The relation-filter cost of `operation` for one request's variables: 0 when it has no relation
 * filter (literal, or reachable from a variable's type). Cached per schema and operation node.
 * @param listSize the size of a to-many level and of a list without `take` (`graphql.defaultListSize`)
 * @param variablesOnly price only what the variables bring (stored operations: their literals are
 *   the deployer's); a literal level around a variable still multiplies the variable's cost
 * @returns a non-negative number, possibly Infinity for absurd inputs (then over any `maxCost`)
 */
export function filterCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, listSize: number, variables: Record<string, unknown> | null | undefined, variablesOnly = false): number {
  let bySchema = plans.get(schema)
  if (!bySchema) plans.set(schema, (bySchema = new WeakMap()))
  let byKey = bySchema.get(operation)
  if (!byKey) bySchema.set(operation, (byKey = new Map()))
  const key = listSize * 2 + (variablesOnly ? 1 : 0)
  let plan = byKey.get(key)
  if (!plan) byKey.set(key, (plan = buildFilterCostPlan(schema, document, operation, listSize, variablesOnly)))
  return plan.constant ?? plan.cost(variables)
}

/** Builds the plan of {@link filterCost}. */
function buildFilterCostPlan(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, listSize: number, variablesOnly: boolean): Plan {
  const fragmentDefs = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragmentDefs.set(d.name.value, d)
  const varTypes = new Map<string, GraphQLInputType>()
  const defaults = new Map<string, number>()
  for (const v of operation.variableDefinitions ?? []) {
    const t = typeFromAST(schema, v.type as never) as GraphQLInputType | undefined
    if (t) varTypes.set(v.variable.name.value, t)
    if (v.defaultValue?.kind === Kind.INT) defaults.set(v.variable.name.value, Math.abs(Number(v.defaultValue.value)))
  }
  // Input types from which a relation filter can be reached (memoized; cycles are resolved as "not through here").
  const reaches = new Map<GraphQLNamedType, boolean>()
  const canReach = (type: GraphQLInputType): boolean => {
    const named = getNamedType(type)
    if (!isInputObjectType(named)) return false
    const known = reaches.get(named)
    if (known !== undefined) return known
    reaches.set(named, false)
    let yes = relationKind(named) !== undefined
    if (!yes) for (const f of Object.values(named.getFields())) if (canReach(f.type)) { yes = true; break }
    reaches.set(named, yes)
    return yes
  }
  let dynamic = false
  let priced = false
  const add = (into: Linear, from: Linear, coef: number): void => {
    into.constant += coef * from.constant
    for (const t of from.terms) into.terms.push({ coef: coef * t.coef, name: t.name, type: t.type })
  }
  /** The cost of one argument value of `type` (a literal, possibly holding variables). */
  const valueCost = (value: ValueNode, type: GraphQLInputType): Linear => {
    const out: Linear = { constant: 0, terms: [] }
    if (value.kind === Kind.VARIABLE) {
      if (canReach(type)) {
        out.terms.push({ coef: 1, name: value.name.value, type: varTypes.get(value.name.value) ?? type })
        dynamic = priced = true
      }
      return out
    }
    const inner = getNullableType(type) as GraphQLInputType
    if (isListType(inner)) {
      const item = inner.ofType as GraphQLInputType
      if (value.kind === Kind.LIST) for (const v of value.values) add(out, valueCost(v, item), 1)
      else add(out, valueCost(value, item), 1)
      return out
    }
    if (value.kind !== Kind.OBJECT || !isInputObjectType(inner) || !canReach(inner)) return out
    const fields = inner.getFields()
    const kind = relationKind(inner)
    for (const f of value.fields) {
      if (!Object.hasOwn(fields, f.name.value) || f.value.kind === Kind.NULL) continue
      const c = valueCost(f.value, fields[f.name.value]!.type)
      if (kind === undefined) add(out, c, 1)
      else {
        const factor = kind === 'many' ? listSize : 1
        if (!variablesOnly) {
          out.constant += factor
          priced = true
        }
        add(out, c, factor)
      }
    }
    return out
  }
  const argsCost = (nodes: readonly ArgumentNode[] | undefined, defs: readonly GraphQLArgument[]): Linear => {
    const out: Linear = { constant: 0, terms: [] }
    for (const a of nodes ?? []) {
      const def = defs.find((d) => d.name === a.name.value)
      if (def) add(out, valueCost(a.value, def.type), 1)
    }
    return out
  }
  const compiled = new Map<string, PlanNode[]>()
  const nodesOf = (set: SelectionSetNode, type: GraphQLNamedType | undefined): PlanNode[] => {
    const out: PlanNode[] = []
    for (const sel of set.selections) {
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        out.push(...nodesOf(sel.selectionSet, (sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : type) ?? undefined))
        continue
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const name = sel.name.value
        const frag = fragmentDefs.get(name)
        if (!frag) continue
        if (!compiled.has(name)) {
          compiled.set(name, [])
          compiled.set(name, nodesOf(frag.selectionSet, schema.getType(frag.typeCondition.name.value) ?? undefined))
        }
        out.push({ fragment: name })
        continue
      }
      const field = type && (isObjectType(type) || isInterfaceType(type)) ? type.getFields()[sel.name.value] : undefined
      if (!field) continue
      const list = isListType(isNonNullType(field.type) ? field.type.ofType : field.type)
      const take = sel.arguments?.find((a) => a.name.value === 'take')?.value
      const size = take?.kind === Kind.INT ? Math.abs(Number(take.value)) : take?.kind === Kind.VARIABLE ? take.name.value : null
      if (typeof size === 'string') dynamic = true
      out.push({ size, list, args: argsCost(sel.arguments, field.args), children: sel.selectionSet ? nodesOf(sel.selectionSet, getNamedType(field.type)) : [] })
    }
    return out
  }
  const root = nodesOf(operation.selectionSet, schema.getRootType(operation.operation) ?? undefined)
  if (!priced) return ZERO

  const evaluate = (vars: Record<string, unknown> | null | undefined): number => {
    const variableCosts = new Map<string, Map<GraphQLInputType, number>>()
    const variableCost = (name: string, type: GraphQLInputType): number => {
      let byType = variableCosts.get(name)
      if (!byType) variableCosts.set(name, (byType = new Map()))
      let c = byType.get(type)
      if (c === undefined) byType.set(type, (c = jsonCost(vars && Object.hasOwn(vars, name) ? vars[name] : undefined, type, listSize)))
      return c
    }
    const linear = (l: Linear): number => {
      let total = l.constant
      for (const t of l.terms) total += t.coef * variableCost(t.name, t.type)
      return total
    }
    /** Objects a field returns, as buildCostPlan counts them: 1, or `take` (literal, variable, its default), else `listSize`. */
    const sizeOf = (n: FieldNode): number => {
      if (!n.list) return 1
      if (n.size === null) return listSize
      if (typeof n.size === 'number') return n.size
      const v = vars?.[n.size]
      return typeof v === 'number' ? Math.abs(v) : (defaults.get(n.size) ?? listSize)
    }
    const fragmentCosts = new Map<string, number>()
    const nodesCost = (nodes: PlanNode[]): number => {
      let total = 0
      for (const n of nodes) {
        if ('fragment' in n) {
          let c = fragmentCosts.get(n.fragment)
          if (c === undefined) {
            fragmentCosts.set(n.fragment, 0) // a cycle (refused by validation) counts 0
            fragmentCosts.set(n.fragment, (c = nodesCost(compiled.get(n.fragment) ?? [])))
          }
          total += c
          continue
        }
        const own = linear(n.args) + nodesCost(n.children)
        if (own > 0) total += sizeOf(n) * own
      }
      return total
    }
    return nodesCost(root)
  }
  const constant = dynamic ? undefined : evaluate(undefined)
  return { constant, cost: (vars) => constant ?? evaluate(vars) }
}

/**
 * The relation-filter cost of a JSON value (a request's variable) of input type `type`, walked as
 * {@link buildFilterCostPlan} walks literals. Values of the wrong shape cost 0 (coercion refuses
 * them later); nesting past {@link MAX_WALK_DEPTH} costs Infinity.
 */
function jsonCost(value: unknown, type: GraphQLInputType, listSize: number, depth = 0): number {
  if (value === null || value === undefined || typeof value !== 'object') return 0
  if (depth > MAX_WALK_DEPTH) return Infinity
  const inner = getNullableType(type) as GraphQLInputType
  if (isListType(inner)) {
    const item = inner.ofType as GraphQLInputType
    if (!Array.isArray(value)) return jsonCost(value, item, listSize, depth + 1)
    let total = 0
    for (const v of value) total += jsonCost(v, item, listSize, depth + 1)
    return total
  }
  if (!isInputObjectType(inner) || Array.isArray(value)) return 0
  const fields = inner.getFields()
  const kind = relationKind(inner)
  let total = 0
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(fields, key)) continue
    const v = (value as Record<string, unknown>)[key]
    if (v === null || v === undefined) continue
    const c = jsonCost(v, fields[key]!.type, listSize, depth + 1)
    if (kind === undefined) total += c
    else {
      const factor = kind === 'many' ? listSize : 1
      total += factor * (1 + c)
    }
  }
  return total
}
