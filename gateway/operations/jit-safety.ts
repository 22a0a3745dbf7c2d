/**
 * graphql-jit 0.8.x generates variable-coercion code by walking input types recursively, so a
 * variable whose input type refers to itself (Prisma-style `XWhereInput { AND: [XWhereInput!] }`)
 * overflows the stack after blocking the event loop for seconds. Such documents are executed with
 * graphql-js instead; everything else goes through graphql-jit.
 *
 * graphql-jit 0.8.x also walks each field's whole subtree once per field, following fragment
 * spreads into copies (ast.ts augmentFieldNodeTree), so a document whose fragments spread the next
 * one twice takes time exponential in its length to compile. An operation whose expanded size
 * ({@link expandedSelections}) is past {@link MAX_JIT_EXPANDED_SELECTIONS} runs with graphql-js,
 * whose field collection visits each fragment once per selection set (spec §6.3.2).
 */
import {
  getNamedType,
  isInputObjectType,
  typeFromAST,
  type GraphQLInputObjectType,
  type GraphQLSchema,
  type DocumentNode,
  type OperationDefinitionNode,
} from 'graphql'
import { expandedSelections } from './fragments.js'

/**
 * Largest number of field selections, fragments expanded, that graphql-jit compiles; farther
 * documents run with graphql-js. 10,000: about 25 ms of compilation (a 13-level doubling bomb on a
 * local type); no operation written by hand comes near it.
 */
export const MAX_JIT_EXPANDED_SELECTIONS = 10_000

const recursiveBySchema = new WeakMap<GraphQLSchema, Map<string, boolean>>()

function reachesItself(start: GraphQLInputObjectType): boolean {
  const seen = new Set<string>()
  const stack: GraphQLInputObjectType[] = [start]
  while (stack.length) {
    const type = stack.pop()!
    for (const field of Object.values(type.getFields())) {
      const named = getNamedType(field.type)
      if (!isInputObjectType(named)) continue
      if (named === start) return true
      if (!seen.has(named.name)) {
        seen.add(named.name)
        stack.push(named)
      }
    }
  }
  return false
}

/** True when an input object type can contain itself, directly or through other input types. */
export function isRecursiveInput(schema: GraphQLSchema, type: GraphQLInputObjectType): boolean {
  let cache = recursiveBySchema.get(schema)
  if (!cache) recursiveBySchema.set(schema, (cache = new Map()))
  let result = cache.get(type.name)
  if (result === undefined) {
    // Any input type that reaches a recursive type is unsafe too.
    const seen = new Set<string>([type.name])
    const stack = [type]
    result = false
    while (stack.length && !result) {
      const t = stack.pop()!
      if (reachesItself(t)) result = true
      for (const field of Object.values(t.getFields())) {
        const named = getNamedType(field.type)
        if (isInputObjectType(named) && !seen.has(named.name)) {
          seen.add(named.name)
          stack.push(named)
        }
      }
    }
    cache.set(type.name, result)
  }
  return result
}

/**
 * True when graphql-jit can compile the operation: none of its variables has a recursive input
 * type, and its selections, fragments expanded, number at most {@link MAX_JIT_EXPANDED_SELECTIONS}.
 * Linear in the document's size.
 */
export function isJitSafe(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): boolean {
  if (expandedSelections(document, operation) > MAX_JIT_EXPANDED_SELECTIONS) return false
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type as never)
    const named = type && getNamedType(type)
    if (named && isInputObjectType(named) && isRecursiveInput(schema, named)) return false
  }
  return true
}
