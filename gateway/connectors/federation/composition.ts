/**
 * Composition of a federation source's subgraphs in the gateway (README "Apollo Federation subgraphs" →
 * "Composition"): `@theguild/federation-composition`, plus three workarounds of its defects (version
 * 0.27.0) where its supergraph differs from Apollo's composition (the federation gateway audit's
 * `requires-with-fragments`, `union-intersection`, `interface-object-with-requires`):
 *
 * 1. `@requires` with inline fragments (`@requires(fields: "data { ... on Bar { bar } }")`): its
 *    satisfiability check refuses them (`cannot satisfy @require conditions on field "T.f"`). When every
 *    composition error is such a satisfiability error on a field whose `@requires` has a fragment, the
 *    subgraphs are composed again without that check (its `SatisfiabilityRule`), with a warning; any other
 *    error still fails the load;
 * 2. a field whose type differs between subgraphs, a union member in one and the union in another
 *    (`book: Book` in A, `book: ViewerMedia` in B): it types the supergraph field with the member, Apollo
 *    with the union (the most general of the subgraphs' types, which every subgraph's value fits). The
 *    supergraph field gets that type (the per-subgraph `@join__field(type:)` are kept), nullable where
 *    any subgraph's type is;
 * 3. an `@external` field that a `@requires` of the same subgraph needs (an `@interfaceObject` with
 *    `name: String @external` and `username @requires(fields: "name")`): it omits
 *    `@join__field(graph:, external: true)`, so the planner believes that subgraph resolves it and never
 *    sends it in the representation (`Requires field 'name' not provided`). The directives are added:
 *    `@join__field(graph: X)` for each other subgraph of the type, `external: true` for that one.
 */
import {
  Kind,
  parse,
  parseType,
  print,
  type ConstDirectiveNode,
  type DefinitionNode,
  type DocumentNode,
  type FieldDefinitionNode,
  type TypeNode,
} from 'graphql'
import { argValue, namedOf, possibleTypesOf } from './sdl.js'

/** One subgraph to compose: its name, URL and SDL. */
export interface CompositionInput {
  name: string
  url: string
  sdl: string
}

/** The outcome: a supergraph SDL, or every composition error's message; `notes` names the workarounds applied. */
export type CompositionOutcome = { supergraphSdl: string; errors?: undefined; notes: string[] } | { supergraphSdl?: undefined; errors: string[]; notes: string[] }

const REQUIRES_CONDITION = /cannot satisfy @require conditions on field "([A-Za-z_][\w]*)\.([A-Za-z_][\w]*)"/g

/**
 * Composes `subgraphs` with `@theguild/federation-composition` (loaded lazily) and applies the
 * workarounds above. Never throws for invalid subgraphs: the errors are returned.
 */
export async function composeWithGuild(subgraphs: readonly CompositionInput[]): Promise<CompositionOutcome> {
  // Loaded here: the composition library (with lodash, about 400 modules) is only needed to compose.
  const { composeServices } = await import('@theguild/federation-composition')
  const documents = subgraphs.map((s) => ({ name: s.name, url: s.url, typeDefs: parse(s.sdl) }))
  const notes: string[] = []
  let composed = composeServices(documents)
  if (composed.errors && requiresWithFragmentsOnly(composed.errors, documents.map((d) => d.typeDefs))) {
    composed = composeServices(documents, { disableValidationRules: ['SatisfiabilityRule'] })
    if (!composed.errors) notes.push('the satisfiability check was skipped: it refuses @requires with fragments')
  }
  if (composed.errors) return { errors: composed.errors.map((e) => e.message), notes }
  return { supergraphSdl: fixSupergraph(composed.supergraphSdl!, documents, notes), notes }
}

/** Whether every error is a satisfiability error on `@require conditions` of fields whose `@requires` has a fragment. */
function requiresWithFragmentsOnly(errors: readonly { message: string; extensions?: Record<string, unknown> }[], documents: readonly DocumentNode[]): boolean {
  const withFragments = new Set<string>()
  for (const doc of documents) {
    for (const def of doc.definitions) {
      for (const field of fieldsOf(def)) {
        const requires = argValue(field.directives?.find((d) => isFederationDirective(d, 'requires'))?.arguments, 'fields')
        if (requires?.includes('...')) withFragments.add(`${(def as { name: { value: string } }).name.value}.${field.name.value}`)
      }
    }
  }
  return errors.every((e) => {
    if (e.extensions?.code !== 'SATISFIABILITY_ERROR') return false
    const fields = [...e.message.matchAll(REQUIRES_CONDITION)].map((m) => `${m[1]}.${m[2]}`)
    return fields.length > 0 && fields.every((f) => withFragments.has(f))
  })
}

const fieldsOf = (def: DefinitionNode): readonly FieldDefinitionNode[] =>
  def.kind === Kind.OBJECT_TYPE_DEFINITION || def.kind === Kind.OBJECT_TYPE_EXTENSION || def.kind === Kind.INTERFACE_TYPE_DEFINITION || def.kind === Kind.INTERFACE_TYPE_EXTENSION ? (def.fields ?? []) : []
/** `@name` or `@federation__name` (the namespaced form of an unimported federation directive). */
const isFederationDirective = (d: { name: { value: string } }, name: string) => d.name.value === name || d.name.value === `federation__${name}`
const joinField = (graph: string, external: boolean): ConstDirectiveNode => ({
  kind: Kind.DIRECTIVE,
  name: { kind: Kind.NAME, value: 'join__field' },
  arguments: [
    { kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'graph' }, value: { kind: Kind.ENUM, value: graph } },
    ...(external ? [{ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'external' }, value: { kind: Kind.BOOLEAN, value: true } } as const] : []),
  ],
})
/** The top-level field names of a field set (`"a b { c } ... on T { d }"` → a, b, d). */
function topFields(fieldSet: string): string[] {
  try {
    const op = parse(`{${fieldSet}}`, { noLocation: true }).definitions[0]
    if (op?.kind !== Kind.OPERATION_DEFINITION) return []
    const names: string[] = []
    const visit = (sels: typeof op.selectionSet.selections) => {
      for (const s of sels) {
        if (s.kind === Kind.FIELD) names.push(s.name.value)
        else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet.selections)
      }
    }
    visit(op.selectionSet.selections)
    return names
  } catch {
    return []
  }
}

/**
 * The type of a field across subgraphs: the named type of which every other one is a possible type
 * (a union containing the members, an interface they implement), with the outer wrappers of `current`,
 * nullable where any subgraph's type is nullable. Undefined when there is no such type or nothing changes.
 */
function generalType(current: TypeNode, perGraph: TypeNode[], possible: (abstract: string) => Set<string>): TypeNode | undefined {
  const names = [...new Set(perGraph.map(namedOf))]
  if (names.length < 2) return undefined
  const general = names.find((n) => names.every((m) => m === n || possible(n).has(m)))
  if (!general || general === namedOf(current)) return undefined
  const nullableTop = perGraph.some((t) => t.kind !== Kind.NON_NULL_TYPE)
  const rename = (t: TypeNode): TypeNode =>
    t.kind === Kind.NAMED_TYPE ? { ...t, name: { ...t.name, value: general } } : t.kind === Kind.LIST_TYPE ? { ...t, type: rename(t.type) } : { ...t, type: rename(t.type) as typeof t.type }
  const renamed = rename(current)
  return nullableTop && renamed.kind === Kind.NON_NULL_TYPE ? renamed.type : renamed
}

/** Applies workarounds 2 and 3 to a supergraph SDL composed from `documents`; pushes a note per fix. */
function fixSupergraph(sdl: string, documents: readonly { name: string; typeDefs: DocumentNode }[], notes: string[]): string {
  const supergraph = parse(sdl, { noLocation: true })
  // Subgraph name → join__Graph enum value.
  const graphOf = new Map<string, string>()
  const possibleTypes = possibleTypesOf(supergraph).possible
  for (const def of supergraph.definitions) {
    if (def.kind === Kind.ENUM_TYPE_DEFINITION && def.name.value === 'join__Graph') {
      for (const v of def.values ?? []) {
        const name = argValue(v.directives?.find((d) => d.name.value === 'join__graph')?.arguments, 'name')
        if (name !== undefined) graphOf.set(name, v.name.value)
      }
    }
  }
  const possible = (abstract: string) => possibleTypes.get(abstract) ?? new Set<string>()

  // Workaround 3: per type, field and subgraph, the @external fields a @requires of that subgraph needs (not key fields).
  const externalNeeded = new Map<string, Set<string>>() // `Type.field` → join__Graph values
  for (const { name, typeDefs } of documents) {
    const graph = graphOf.get(name)
    if (!graph) continue
    for (const def of typeDefs.definitions) {
      const fields = fieldsOf(def)
      if (fields.length === 0) continue
      const type = (def as { name: { value: string } }).name.value
      const keys = new Set(((def as { directives?: readonly ConstDirectiveNode[] }).directives ?? []).filter((d) => isFederationDirective(d, 'key')).flatMap((d) => topFields(argValue(d.arguments, 'fields') ?? '')))
      const required = new Set(fields.flatMap((f) => topFields(argValue(f.directives?.find((d) => isFederationDirective(d, 'requires'))?.arguments, 'fields') ?? '')))
      for (const f of fields) {
        if (!f.directives?.some((d) => isFederationDirective(d, 'external')) || keys.has(f.name.value) || !required.has(f.name.value)) continue
        const key = `${type}.${f.name.value}`
        ;(externalNeeded.get(key) ?? externalNeeded.set(key, new Set()).get(key)!).add(graph)
      }
    }
  }

  let changed = false
  const definitions = supergraph.definitions.map((def) => {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.INTERFACE_TYPE_DEFINITION) return def
    const typeGraphs = (def.directives ?? []).filter((d) => d.name.value === 'join__type').map((d) => argValue(d.arguments, 'graph')).filter((g): g is string => g !== undefined)
    let touched = false
    const fields = (def.fields ?? []).map((field) => {
      let next = field
      const joins = (field.directives ?? []).filter((d) => d.name.value === 'join__field')
      const typed = joins.map((d) => argValue(d.arguments, 'type')).filter((t): t is string => t !== undefined)
      const general = typed.length > 1 ? generalType(field.type, typed.map((t) => parseType(t)), possible) : undefined
      if (general) {
        next = { ...next, type: general }
        notes.push(`${def.name.value}.${field.name.value} is typed ${print(general)}, the most general of its subgraphs' types`)
      }
      const externalIn = externalNeeded.get(`${def.name.value}.${field.name.value}`)
      if (externalIn && !joins.some((d) => argValue(d.arguments, 'graph') !== undefined)) {
        next = { ...next, directives: [...(next.directives ?? []), ...typeGraphs.map((g) => joinField(g, externalIn.has(g)))] }
        notes.push(`${def.name.value}.${field.name.value} is external in ${[...externalIn].join(', ')}`)
      }
      if (next !== field) touched = true
      return next
    })
    if (!touched) return def
    changed = true
    return { ...def, fields }
  })
  return changed ? print({ ...supergraph, definitions }) : sdl
}

