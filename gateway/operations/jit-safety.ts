/**
 * graphql-jit 0.8.x generates variable-coercion code by walking input types recursively, so a
 * variable whose input type refers to itself (Prisma-style `XWhereInput { AND: [XWhereInput!] }`)
 * overflows the stack after blocking the event loop for seconds. Such documents are executed with
 * graphql-js instead; everything else goes through graphql-jit.
 */
import {
  getNamedType,
  isInputObjectType,
  typeFromAST,
  type GraphQLInputObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql'

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

/** True when graphql-jit can compile the operation: none of its variables has a recursive input type. */
export function isJitSafe(schema: GraphQLSchema, operation: OperationDefinitionNode): boolean {
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type as never)
    const named = type && getNamedType(type)
    if (named && isInputObjectType(named) && isRecursiveInput(schema, named)) return false
  }
  return true
}
