/**
 * Document limits applied to every `/graphql` document before execution (cf. graphql-armor,
 * Apollo Router): selection depth (introspection fields excluded, so the standard introspection
 * query with type references 8 levels deep passes) and number of aliases. The token limit is
 * applied by the parser (`parse(source, { maxTokens })`).
 */
import { GraphQLError, Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql'

/** Limits to check. */
export interface DocumentLimits {
  /** Deepest selection set allowed; a root field is depth 1. */
  maxDepth: number
  /** Most aliases allowed in the whole document. */
  maxAliases: number
}

/**
 * Checks a parsed (and validated, so fragment cycles are impossible) document.
 * @returns one GraphQLError (extensions.code `TRB_ERR_GRAPHQL_LIMIT`) per exceeded limit; empty when fine.
 */
export function checkDocumentLimits(document: DocumentNode, limits: DocumentLimits): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  let aliases = 0
  let maxSeen = 0
  const depthOf = (set: SelectionSetNode, depth: number, visiting: Set<string>): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (sel.alias) aliases++
        if (sel.name.value.startsWith('__')) continue
        maxSeen = Math.max(maxSeen, depth)
        if (sel.selectionSet && depth <= limits.maxDepth) depthOf(sel.selectionSet, depth + 1, visiting)
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        depthOf(sel.selectionSet, depth, visiting)
      } else {
        const f = fragments.get(sel.name.value)
        if (f && !visiting.has(f.name.value)) depthOf(f.selectionSet, depth, new Set(visiting).add(f.name.value))
      }
    }
  }
  for (const d of document.definitions) if (d.kind === Kind.OPERATION_DEFINITION) depthOf(d.selectionSet, 1, new Set())
  const errors: GraphQLError[] = []
  if (maxSeen > limits.maxDepth) {
    errors.push(new GraphQLError(`Query depth exceeds the limit of ${limits.maxDepth}`, { extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }))
  }
  if (aliases > limits.maxAliases) {
    errors.push(new GraphQLError(`The document uses ${aliases} aliases; the limit is ${limits.maxAliases}`, { extensions: { code: 'TRB_ERR_GRAPHQL_LIMIT' } }))
  }
  return errors
}
