/**
 * Argument values for the compiler. A field's argument AST is turned, guided by its GraphQL input
 * types, into a plain tree whose leaves are {@link Leaf}s: a constant from a literal, or a getter that
 * reads a variable at run time. The SQL therefore depends only on the *shape* of the variables
 * (present, null, list lengths, object keys), never on their values; {@link shapeKey} fingerprints
 * that shape so that a plan can be reused for every request with the same shape.
 */
import {
  Kind,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLInputType,
  type ValueNode,
  type FieldNode,
  type SelectionSetNode,
  type FragmentDefinitionNode,
} from 'graphql'
import type { Getter, Vars } from './frag.js'

/** A scalar or enum value at a leaf of an argument tree. */
export class Leaf {
  constructor(
    /** Reads the value at run time. */
    readonly get: Getter,
    /** The value when it is known at compile time (literals). */
    readonly constant?: { value: unknown },
    /** The value seen at compile time (the first request's), for compile-time decisions such as the sign of `take`. */
    readonly sample?: unknown,
  ) {}
}

/** A JSON null in an argument tree (`equals: null`). */
export const NULL = Symbol('null')

/** An argument tree: objects and arrays of leaves. */
export type ArgValue = Leaf | typeof NULL | ArgValue[] | { [key: string]: ArgValue }

/** True when the value is an input-object node of an argument tree. */
export function isObj(v: ArgValue | undefined): v is { [key: string]: ArgValue } {
  return typeof v === 'object' && v !== null && !(v instanceof Leaf) && !Array.isArray(v)
}

function fromRuntime(value: unknown, type: GraphQLInputType, get: Getter): ArgValue | undefined {
  if (value === undefined) return undefined
  if (value === null) return NULL
  const t = getNullableType(type) as GraphQLInputType
  if (isListType(t)) {
    const items = Array.isArray(value) ? value : [value]
    const itemGet = (i: number): Getter => (Array.isArray(value) ? (v, x) => (get(v, x) as unknown[])[i] : get)
    return items.map((item, i) => fromRuntime(item, t.ofType as GraphQLInputType, itemGet(i)) ?? NULL)
  }
  if (isInputObjectType(t)) {
    const out: { [key: string]: ArgValue } = {}
    const fields = t.getFields()
    for (const key of Object.keys(value as object)) {
      const f = fields[key]
      if (!f) continue
      const child = fromRuntime((value as Record<string, unknown>)[key], f.type, (v, x) => (get(v, x) as Record<string, unknown>)[key])
      if (child !== undefined) out[key] = child
    }
    return out
  }
  return new Leaf(get, undefined, value)
}

/**
 * Converts one argument value node to an argument tree.
 * @returns undefined when the argument is absent (a missing variable)
 */
export function fromAst(node: ValueNode, type: GraphQLInputType, vars: Vars): ArgValue | undefined {
  if (node.kind === Kind.VARIABLE) {
    const name = node.name.value
    return fromRuntime(vars[name], type, (v) => v[name])
  }
  if (node.kind === Kind.NULL) return NULL
  const t = getNullableType(type) as GraphQLInputType
  if (isListType(t)) {
    const itemType = t.ofType as GraphQLInputType
    if (node.kind !== Kind.LIST) {
      const one = fromAst(node, itemType, vars)
      return one === undefined ? [] : [one]
    }
    return node.values.map((n) => fromAst(n, itemType, vars) ?? NULL)
  }
  if (isInputObjectType(t)) {
    if (node.kind !== Kind.OBJECT) return undefined
    const fields = t.getFields()
    const out: { [key: string]: ArgValue } = {}
    for (const f of node.fields) {
      const def = fields[f.name.value]
      if (!def) continue
      const child = fromAst(f.value, def.type, vars)
      if (child !== undefined) out[f.name.value] = child
    }
    return out
  }
  if (isEnumType(t)) {
    if (node.kind !== Kind.ENUM) return undefined
    const value = t.getValue(node.value)?.value ?? node.value
    return new Leaf(() => value, { value }, value)
  }
  if (isScalarType(t)) {
    if (hasVariable(node)) {
      // A JSON literal with variables inside: evaluated at run time.
      return new Leaf((v) => t.parseLiteral(node, v), undefined, t.parseLiteral(node, vars))
    }
    const value = t.parseLiteral(node, undefined)
    return new Leaf(() => value, { value }, value)
  }
  return undefined
}

function hasVariable(node: ValueNode): boolean {
  if (node.kind === Kind.VARIABLE) return true
  if (node.kind === Kind.LIST) return node.values.some(hasVariable)
  if (node.kind === Kind.OBJECT) return node.fields.some((f) => hasVariable(f.value))
  return false
}

/** Reads the arguments of a field node into trees, by argument name. Absent arguments fall back to their default values. */
export function readArgs(node: FieldNode, defs: readonly GraphQLArgument[], vars: Vars): Record<string, ArgValue> {
  const out: Record<string, ArgValue> = {}
  for (const def of defs) {
    const a = node.arguments?.find((x) => x.name.value === def.name)
    let v: ArgValue | undefined
    if (a) v = fromAst(a.value, def.type, vars)
    if (v === undefined && def.defaultValue !== undefined) {
      const value = def.defaultValue
      v = isLeafType(getNamedType(def.type)) ? new Leaf(() => value, { value }, value) : fromRuntime(value, def.type, () => value)
    }
    if (v !== undefined) out[def.name] = v
  }
  return out
}

/**
 * One leaf for a whole list of leaves (a list-typed input such as a PostgreSQL array value): reads
 * every item at run time into an array (NULL items as null). Constant when every item is.
 */
export function listLeaf(items: readonly ArgValue[]): Leaf {
  const leaves = items.map((x) => (x instanceof Leaf ? x : null))
  const get: Getter = (v, x) => leaves.map((l) => (l === null ? null : l.get(v, x)))
  const constant = leaves.every((l) => l === null || l.constant !== undefined) ? { value: leaves.map((l) => (l === null ? null : l.constant!.value)) } : undefined
  return new Leaf(get, constant, leaves.map((l) => (l === null ? null : sampleOf(l))))
}

/** The compile-time sample value of a leaf (its constant, or the first request's variable value). */
export function sampleOf(v: ArgValue | undefined): unknown {
  if (v === undefined || v === NULL) return null
  if (v instanceof Leaf) return v.constant ? v.constant.value : v.sample
  return undefined
}

/**
 * Fingerprints the shape of one runtime variable value, guided by its input type: presence, null, the
 * sign of numbers, enum values, list lengths and input-object keys (in order). Two requests whose
 * variables have the same fingerprints compile to the same SQL; scalar values never matter.
 */
export function shapeOf(type: GraphQLInputType, value: unknown): string {
  if (value === undefined) return 'u'
  if (value === null) return 'n'
  const t = getNullableType(type) as GraphQLInputType
  if (isListType(t)) {
    const item = t.ofType as GraphQLInputType
    if (!Array.isArray(value)) return shapeOf(item, value)
    let s = `[${value.length}`
    for (const v of value) s += `,${shapeOf(item, v)}`
    return `${s}]`
  }
  if (isInputObjectType(t)) {
    const fields = t.getFields()
    let s = '{'
    for (const key in value as Record<string, unknown>) {
      const f = fields[key]
      if (f) s += `${key}:${shapeOf(f.type, (value as Record<string, unknown>)[key])},`
    }
    return `${s}}`
  }
  if (isEnumType(t)) return `e${String(value)}`
  if (typeof value === 'number') return value < 0 ? '-' : 's'
  return 's'
}

/** Collects the names of the variables used in the arguments of a selection (fragments included), in a stable order. */
export function collectVariables(nodes: readonly FieldNode[], fragments: Record<string, FragmentDefinitionNode>): string[] {
  const names = new Set<string>()
  const seenFragments = new Set<string>()
  const visitValue = (v: ValueNode): void => {
    if (v.kind === Kind.VARIABLE) names.add(v.name.value)
    else if (v.kind === Kind.LIST) v.values.forEach(visitValue)
    else if (v.kind === Kind.OBJECT) v.fields.forEach((f) => visitValue(f.value))
  }
  const visitSet = (set: SelectionSetNode | undefined): void => {
    if (!set) return
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        sel.arguments?.forEach((a) => visitValue(a.value))
        visitSet(sel.selectionSet)
      } else if (sel.kind === Kind.INLINE_FRAGMENT) visitSet(sel.selectionSet)
      else if (!seenFragments.has(sel.name.value)) {
        seenFragments.add(sel.name.value)
        visitSet(fragments[sel.name.value]?.selectionSet)
      }
    }
  }
  for (const n of nodes) {
    n.arguments?.forEach((a) => visitValue(a.value))
    visitSet(n.selectionSet)
  }
  return [...names]
}
