/**
 * `@requires` field sets with fragments on abstract types (README "Apollo Federation subgraphs" →
 * "Composition"; the audit's `requires-with-fragments`), glue around `@graphql-tools/federation` 4.x.
 *
 * The library builds the representation of an entity by projecting the fetched data on the `@requires`
 * field set, and keeps an inline fragment only when the object's `__typename` *equals* its type
 * condition: `data { foo ... on Bar { bar } }` with `Bar` an interface sends `data: { foo }` without
 * `bar` for a `Qux` implementing `Bar` (the requiring subgraph computes from missing data, silently). Before
 * stitching, each `@join__field(requires:)` of the supergraph with a fragment on an interface or union is
 * rewritten into one fragment per possible object type (`... on Baz { bar } ... on Qux { bar }`), which
 * selects the same data and which that projection follows. Fragments that cannot apply under an object
 * type are dropped.
 */
import { Kind, parse, print, type DefinitionNode, type FieldDefinitionNode, type SelectionNode, type SelectionSetNode } from 'graphql'
import { namedOf, possibleTypesOf } from './sdl.js'


/**
 * The supergraph SDL with the `requires:` field sets of `@join__field` expanded over possible types;
 * the same string when none has a fragment on an abstract type.
 */
export function expandRequiresFragments(supergraphSdl: string): string {
  if (!supergraphSdl.includes('requires:') || !supergraphSdl.includes('...')) return supergraphSdl
  const doc = parse(supergraphSdl, { noLocation: true })
  const { possible, objects } = possibleTypesOf(doc)
  const fieldTypes = new Map<string, string>()
  for (const def of doc.definitions) {
    if (def.kind === Kind.OBJECT_TYPE_DEFINITION || def.kind === Kind.INTERFACE_TYPE_DEFINITION) for (const f of def.fields ?? []) fieldTypes.set(`${def.name.value}.${f.name.value}`, namedOf(f.type))
  }
  const concrete = (type: string): Set<string> => (objects.has(type) ? new Set([type]) : (possible.get(type) ?? new Set()))

  /** `set` under `parent`: every inline fragment's condition an object type that `parent` may be. */
  const expand = (set: SelectionSetNode, parent: string): SelectionSetNode => {
    const selections: SelectionNode[] = []
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const type = fieldTypes.get(`${parent}.${sel.name.value}`)
        selections.push(sel.selectionSet && type ? { ...sel, selectionSet: expand(sel.selectionSet, type) } : sel)
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const condition = sel.typeCondition?.name.value
        if (condition === undefined || condition === parent) {
          selections.push(...expand(sel.selectionSet, parent).selections)
          continue
        }
        const parents = concrete(parent)
        for (const type of concrete(condition)) {
          if (!parents.has(type)) continue
          const inner = expand(sel.selectionSet, type)
          selections.push(type === parent ? { ...sel, selectionSet: inner } : { ...sel, typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: type } }, selectionSet: inner })
        }
      } else selections.push(sel)
    }
    return { ...set, selections }
  }

  let changed = false
  const definitions = doc.definitions.map((def): DefinitionNode => {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.INTERFACE_TYPE_DEFINITION) return def
    const fields = (def.fields ?? []).map((field): FieldDefinitionNode => {
      let touched = false
      const directives = (field.directives ?? []).map((d) => {
        if (d.name.value !== 'join__field') return d
        const args = (d.arguments ?? []).map((a) => {
          if (a.name.value !== 'requires' || a.value.kind !== Kind.STRING || !a.value.value.includes('...')) return a
          const op = parse(`{${a.value.value}}`, { noLocation: true }).definitions[0]
          if (op?.kind !== Kind.OPERATION_DEFINITION) return a
          const expanded = expand(op.selectionSet, def.name.value)
          const text = print(expanded).replace(/^\{\s*|\s*\}$/g, '').replace(/\s+/g, ' ')
          if (text === a.value.value) return a
          touched = true
          return { ...a, value: { kind: Kind.STRING, value: text } as const }
        })
        return { ...d, arguments: args }
      })
      return touched ? { ...field, directives } : field
    })
    if (fields.every((f, i) => f === def.fields?.[i])) return def
    changed = true
    return { ...def, fields }
  })
  return changed ? print({ ...doc, definitions }) : supergraphSdl
}
