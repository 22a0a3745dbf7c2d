/**
 * Document limits (cf. graphql-armor, Apollo Router), the one implementation used by `/graphql` and
 * by the WebSocket endpoint: selection depth and number of aliases. Depth counts field levels
 * (`{ messages { id } }` has depth 2); fragments add no level; fragment cycles count as 0
 * (NoFragmentCyclesRule reports them). Root introspection fields (`__schema`, `__type`) are measured
 * against their own, larger limit, so the standard introspection query (type references 8 levels
 * deep) passes while a deeper one does not. The token limit is applied by the parser.
 */
import {
  Kind,
  type ASTVisitor,
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
