/** Small readers of SDL documents shared by the federation glue (composition.ts, partial-unions.ts, requires.ts). */
import { Kind, type ArgumentNode, type DocumentNode, type TypeNode } from 'graphql'

/** The named type under a type's list and non-null wrappers (`[Book!]!` → `Book`). */
export const namedOf = (type: TypeNode): string => (type.kind === Kind.NAMED_TYPE ? type.name.value : namedOf(type.type))

/** The value of a string or enum argument, by name; undefined when absent or of another kind. */
export function argValue(args: readonly ArgumentNode[] | undefined, name: string): string | undefined {
  const value = args?.find((a) => a.name.value === name)?.value
  return value?.kind === Kind.STRING || value?.kind === Kind.ENUM ? value.value : undefined
}

/** Per union or interface of a document, its possible object types (members, implementations); and the object types. */
export function possibleTypesOf(doc: DocumentNode): { possible: Map<string, Set<string>>; objects: Set<string> } {
  const possible = new Map<string, Set<string>>()
  const objects = new Set<string>()
  const add = (abstract: string, type: string) => (possible.get(abstract) ?? possible.set(abstract, new Set()).get(abstract)!).add(type)
  for (const def of doc.definitions) {
    if (def.kind === Kind.UNION_TYPE_DEFINITION) for (const m of def.types ?? []) add(def.name.value, m.name.value)
    if (def.kind === Kind.OBJECT_TYPE_DEFINITION) {
      objects.add(def.name.value)
      for (const i of def.interfaces ?? []) add(i.name.value, def.name.value)
    }
  }
  return { possible, objects }
}
