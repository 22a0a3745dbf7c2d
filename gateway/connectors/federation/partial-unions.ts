/**
 * Partial unions below shareable paths (README "Apollo Federation subgraphs" → "Partial unions"; the
 * federation gateway audit's `partial-union-complex`), glue around `@graphql-tools/federation`.
 *
 * A union is *partial* when its members differ between subgraphs (`@join__unionMember(graph:, member:)`):
 * subgraph A declares `union Action = Common | OnlyA`, subgraph B `union Action = Common | OnlyB`. Where
 * the path to such a union field can be resolved by several subgraphs (a `@shareable` field of an entity,
 * which the query planner may take from any subgraph that defines it after an entity hop), only the
 * members common to all those *candidate* subgraphs are guaranteed to be resolvable: Apollo's query
 * planner (Apollo Router, Apollo Gateway) and Hive Router then answer the fields of the other members
 * with `null` (`{ __typename: "OnlyA", a: null }`), whichever subgraph answers. `@graphql-tools/federation`
 * sends the member's fragment to the subgraph that happens to answer and returns its value; this module
 * makes the gateway follow the audit's (Apollo's) rule instead, by rewriting each subgraph request:
 *
 * - the candidate subgraphs of a field are computed along the request's selections: a root field's are
 *   the subgraphs defining it; a field of an entity type (a resolvable `@key` in some subgraphs) can be
 *   reached in every subgraph that defines it and where the entity is resolvable, or where the path
 *   already is; a field of a value type only where the path already is. The subgraph receiving the
 *   request is always a candidate; `_entities` starts from it alone;
 * - below a partial union field, a fragment on a member that is not a member in every candidate
 *   subgraph, and that is not an entity (no `@key`: no other subgraph could be asked for its fields), is
 *   replaced by `... on Member { __typename }`: the object keeps its type, its other fields resolve to
 *   `null` in the gateway (GraphQL's usual null for a nullable field, an error propagated to the nearest
 *   nullable parent for a non-null one);
 * - a fragment spread whose content changes is inlined (an inline fragment with the same type condition
 *   and directives), so the fragment's other uses are untouched.
 *
 * Where the path has a single candidate (a field only one subgraph defines, as in the audit's
 * `partial-union`), every member that subgraph declares is kept. Interfaces are left as they are.
 */
import {
  Kind,
  parse,
  visit as visitAst,
  type DefinitionNode,
  type ArgumentNode,
  type DirectiveNode,
  type DocumentNode,
  type FieldDefinitionNode,
  type FragmentDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql'
import { argValue, namedOf } from './sdl.js'

/** Rewrites one subgraph request's document; `graph` is the subgraph's `join__Graph` enum value. */
export type PartialUnionRewrite = (graph: string, document: DocumentNode) => DocumentNode

/** What the rewrite needs of a supergraph: per type and field, the subgraphs (join__Graph enum values). */
interface SupergraphIndex {
  roots: Map<string, string>
  typeGraphs: Map<string, Set<string>>
  entityGraphs: Map<string, Set<string>>
  fieldGraphs: Map<string, Set<string>>
  fieldTypes: Map<string, string>
  /** Partial unions only: per union, per subgraph, its members there. */
  partialUnions: Map<string, Map<string, Set<string>>>
}

const argBoolean = (args: readonly ArgumentNode[] | undefined, name: string): boolean | undefined => {
  const value = args?.find((a) => a.name.value === name)?.value
  return value?.kind === Kind.BOOLEAN ? value.value : undefined
}
const add = (map: Map<string, Set<string>>, key: string, value: string) => {
  let set = map.get(key)
  if (!set) map.set(key, (set = new Set()))
  set.add(value)
}
const joins = (directives: readonly DirectiveNode[] | undefined, name: string) => (directives ?? []).filter((d) => d.name.value === name)

/** Reads the join__ directives of a supergraph SDL (join v0.1 to v0.5). */
function indexSupergraph(sdl: string): SupergraphIndex {
  const index: SupergraphIndex = { roots: new Map([['query', 'Query'], ['mutation', 'Mutation'], ['subscription', 'Subscription']]), typeGraphs: new Map(), entityGraphs: new Map(), fieldGraphs: new Map(), fieldTypes: new Map(), partialUnions: new Map() }
  const unions = new Map<string, { members: string[]; perGraph: Map<string, Set<string>> }>()
  for (const def of parse(sdl, { noLocation: true }).definitions) {
    if (def.kind === Kind.SCHEMA_DEFINITION) for (const op of def.operationTypes) index.roots.set(op.operation, op.type.name.value)
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.INTERFACE_TYPE_DEFINITION && def.kind !== Kind.UNION_TYPE_DEFINITION) continue
    const type = def.name.value
    for (const d of joins(def.directives, 'join__type')) {
      const graph = argValue(d.arguments, 'graph')
      if (!graph) continue
      add(index.typeGraphs, type, graph)
      if (argValue(d.arguments, 'key') !== undefined && argBoolean(d.arguments, 'resolvable') !== false) add(index.entityGraphs, type, graph)
    }
    if (def.kind === Kind.UNION_TYPE_DEFINITION) {
      const perGraph = new Map<string, Set<string>>()
      for (const d of joins(def.directives, 'join__unionMember')) {
        const graph = argValue(d.arguments, 'graph')
        const member = argValue(d.arguments, 'member')
        if (graph && member) add(perGraph, graph, member)
      }
      unions.set(type, { members: (def.types ?? []).map((t) => t.name.value), perGraph })
      continue
    }
    for (const field of (def.fields ?? []) as FieldDefinitionNode[]) {
      const key = `${type}.${field.name.value}`
      index.fieldTypes.set(key, namedOf(field.type))
      for (const d of joins(field.directives, 'join__field')) {
        const graph = argValue(d.arguments, 'graph')
        if (graph && argBoolean(d.arguments, 'external') !== true) add(index.fieldGraphs, key, graph)
      }
    }
  }
  for (const [union, { members, perGraph }] of unions) {
    const graphs = index.typeGraphs.get(union)
    // Without join__unionMember (join v0.1, v0.2) the members per subgraph are not known: not partial.
    if (!graphs || perGraph.size === 0) continue
    const partial = members.some((m) => !index.entityGraphs.has(m) && [...graphs].some((g) => !perGraph.get(g)?.has(m)))
    if (partial) index.partialUnions.set(union, perGraph)
  }
  return index
}

/** The definitions without the fragments no operation spreads any more (an inlined spread's fragment: GraphQL refuses unused fragments). */
function withoutUnusedFragments(definitions: readonly DefinitionNode[]): DefinitionNode[] {
  const used = new Set<string>()
  const byName = new Map(definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]))
  const pending: DefinitionNode[] = definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION)
  for (let node = pending.pop(); node; node = pending.pop()) {
    visitAst(node, {
      FragmentSpread(spread) {
        const fragment = byName.get(spread.name.value)
        if (fragment && !used.has(spread.name.value)) {
          used.add(spread.name.value)
          pending.push(fragment)
        }
      },
    })
  }
  return definitions.filter((d) => d.kind !== Kind.FRAGMENT_DEFINITION || used.has(d.name.value))
}

/**
 * The rewrite of subgraph requests for a supergraph, or undefined when it has no partial union (a union
 * whose members differ between subgraphs, with a member that is not an entity): nothing to rewrite.
 * @param supergraphSdl a valid supergraph SDL (join__ directives)
 */
export function partialUnionRewrite(supergraphSdl: string): PartialUnionRewrite | undefined {
  const index = indexSupergraph(supergraphSdl)
  if (index.partialUnions.size === 0) return undefined
  return (graph, document) => {
    const fragments = new Map<string, FragmentDefinitionNode>()
    for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
    let changed = false
    const definitions = document.definitions.map((def) => {
      if (def.kind !== Kind.OPERATION_DEFINITION) return def
      const root = index.roots.get(def.operation) ?? 'Query'
      const selectionSet = walk(def.selectionSet, root, undefined)
      if (selectionSet === def.selectionSet) return def
      changed = true
      return { ...def, selectionSet }
    })
    return changed ? { ...document, definitions: withoutUnusedFragments(definitions) } : document

    /**
     * The selection set with the unsafe member fragments of partial unions replaced; the same object when
     * nothing changed. `candidates` undefined: `type` is the operation's root type.
     */
    function walk(set: SelectionSetNode, type: string, candidates: Set<string> | undefined, union?: { name: string; graphs: Set<string> }): SelectionSetNode {
      let touched = false
      const selections = set.selections.map((sel): SelectionNode => {
        const next = visit(sel, type, candidates, union)
        if (next !== sel) touched = true
        return next
      })
      return touched ? { ...set, selections } : set
    }

    function visit(sel: SelectionNode, type: string, candidates: Set<string> | undefined, union?: { name: string; graphs: Set<string> }): SelectionNode {
      if (sel.kind === Kind.FIELD) {
        if (!sel.selectionSet || sel.name.value === '__typename') return sel
        // `_entities(representations:)`: each `... on Entity` starts in the receiving subgraph alone.
        if (candidates === undefined && sel.name.value === '_entities') {
          const selectionSet = walkEntities(sel.selectionSet)
          return selectionSet === sel.selectionSet ? sel : { ...sel, selectionSet }
        }
        const key = `${type}.${sel.name.value}`
        const fieldType = index.fieldTypes.get(key)
        if (fieldType === undefined) return sel
        const defining = index.fieldGraphs.get(key) ?? index.typeGraphs.get(type) ?? new Set<string>()
        const reachable = candidates === undefined ? undefined : new Set([...candidates, ...(index.entityGraphs.get(type) ?? [])])
        const next = new Set([...defining].filter((g) => reachable === undefined || reachable.has(g)))
        next.add(graph)
        const selectionSet = walk(sel.selectionSet, fieldType, next, index.partialUnions.has(fieldType) ? { name: fieldType, graphs: next } : undefined)
        return selectionSet === sel.selectionSet ? sel : { ...sel, selectionSet }
      }
      const condition = sel.kind === Kind.INLINE_FRAGMENT ? sel.typeCondition?.name.value : fragments.get(sel.name.value)?.typeCondition.name.value
      const inner = sel.kind === Kind.INLINE_FRAGMENT ? sel.selectionSet : fragments.get(sel.name.value)?.selectionSet
      if (!inner) return sel
      if (union && condition !== undefined && condition !== union.name && !safeMember(union, condition)) {
        changed = true
        return { kind: Kind.INLINE_FRAGMENT, typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: condition } }, directives: sel.directives, selectionSet: { kind: Kind.SELECTION_SET, selections: [{ kind: Kind.FIELD, name: { kind: Kind.NAME, value: '__typename' } }] } }
      }
      const narrowed = condition === undefined || condition === type ? candidates : candidates && new Set([...candidates].filter((g) => index.typeGraphs.get(condition)?.has(g) ?? true).concat(graph))
      const selectionSet = walk(inner, condition ?? type, narrowed, condition === undefined || condition === union?.name ? union : undefined)
      if (selectionSet === inner) return sel
      if (sel.kind === Kind.INLINE_FRAGMENT) return { ...sel, selectionSet }
      return { kind: Kind.INLINE_FRAGMENT, typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: condition! } }, directives: sel.directives, selectionSet }
    }

    /** The selections of `_entities`: inline fragments (or spreads) per entity type, from the receiving subgraph. */
    function walkEntities(set: SelectionSetNode): SelectionSetNode {
      let touched = false
      const selections = set.selections.map((sel): SelectionNode => {
        if (sel.kind === Kind.FIELD) return sel
        const condition = sel.kind === Kind.INLINE_FRAGMENT ? sel.typeCondition?.name.value : fragments.get(sel.name.value)?.typeCondition.name.value
        const inner = sel.kind === Kind.INLINE_FRAGMENT ? sel.selectionSet : fragments.get(sel.name.value)?.selectionSet
        if (!condition || !inner) return sel
        const selectionSet = walk(inner, condition, new Set([graph]))
        if (selectionSet === inner) return sel
        touched = true
        return { kind: Kind.INLINE_FRAGMENT, typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: condition } }, directives: sel.directives, selectionSet }
      })
      return touched ? { ...set, selections } : set
    }

    /** Whether `member` is resolvable wherever the union's path may be resolved: an entity, or a member in every candidate subgraph. */
    function safeMember(union: { name: string; graphs: Set<string> }, member: string): boolean {
      const perGraph = index.partialUnions.get(union.name)!
      if (![...perGraph.values()].some((members) => members.has(member))) return true // not a member: an interface condition, left alone
      if (index.entityGraphs.has(member)) return true
      return [...union.graphs].every((g) => perGraph.get(g)?.has(member) ?? false)
    }
  }
}
