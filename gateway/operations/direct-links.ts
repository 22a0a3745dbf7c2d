/**
 * Batched links inside direct plans (./direct-plan.ts; README "Links"). A database root field whose
 * selection holds link fields still runs as ONE statement whose result is its final JSON: each link
 * field is compiled as a marker, `"__trb_link<n>": <the parent's batch key>`, at the link field's
 * place in the selection order. Once the statement answers, the keys are read from the markers, the
 * link's target is called once per `batch.maxKeys` distinct keys (as the link's resolver would:
 * compose/links.ts `LinkDirectAccess`), each matched item is serialised for the link field's
 * selection set, and the markers are replaced by `"<response key>": <item JSON>`. The rows are never
 * parsed, walked or re-serialised, and no resolver runs per parent (what a query planner does: fetch
 * the level, then merge).
 *
 * Served this way: batched links whose target is a REST operation returning the list itself, whose
 * batch key is an `Int` or `String` field of the parent, selected without directives, outside
 * named fragments, once per response key. Their selection set may use fields without resolvers of
 * object types (no interfaces or unions; a REST type's synchronous `isTypeOf` is checked as graphql-js
 * does), `__typename`, inline fragments and fragment spreads on the item type itself, no arguments and
 * no directives. Any other link field makes the whole root field
 * run through GraphQL execution, as before.
 *
 * Errors are GraphQL execution's (GraphQL spec §6.4.4 "Handling Field Errors"): a failed call gives
 * every parent it served `null` and its own error at the link field's path; a value that does not
 * complete (null in a non-null field, a scalar that does not serialise) gives null up to the nearest
 * nullable field and an error at its path. Those cases, and only those, parse the statement's JSON to
 * know each parent's path.
 */
import {
  GraphQLError,
  GraphQLList,
  GraphQLNonNull,
  Kind,
  defaultFieldResolver,
  getNamedType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql'
import { inspect } from 'graphql/jsutils/inspect.js'
import { LINK_EXTENSION, type LinkDirectAccess, type LinkFieldExtension } from '../connectors/types.js'

/** The prefix of the marker aliases; a document that uses it itself gets no direct plan. */
const MARKER = '__trb_link'

/** An error found while completing a link value, its path relative to the link field. */
interface CompletionError {
  path: Array<string | number>
  message: string
  node: FieldNode
  original?: Error
}

/**
 * Completes a value of one output type as JSON text (GraphQL spec §6.4.3 CompleteValue).
 * @returns the JSON text, or undefined when the value is null because of an error that must
 *   propagate (recorded in `errors`), i.e. null for a non-null position.
 */
type Complete = (value: unknown, path: Array<string | number>, sink: Sink) => string | undefined

/**
 * Where a completion records its errors. Paths are built only when `paths` is set: a value is first
 * completed without them (no allocation per field), and completed again with them if it had errors.
 */
interface Sink {
  errors: CompletionError[]
  paths: boolean
}

/** One link field of a root field's selection, served by the direct plan. */
interface LinkSite {
  /** The link field's response key (its alias or name). */
  responseKey: string
  /** `"<response key>":`, what replaces the marker's key. */
  keyText: string
  access: LinkDirectAccess
  /** The resolve info the link's target call gets (compose/links.ts `callTarget`). */
  info: GraphQLResolveInfo
  /** Completes the link field's value (the item, or the list of items with `many`). */
  complete: Complete
}

/** A root field with its link fields compiled as markers. */
export interface LinkedRoot {
  /** The root field to give the database's direct compiler: every served link field replaced by its marker. */
  field: FieldNode
  /** The link sites by marker number; empty when the field selects no link. */
  sites: LinkSite[]
}

/** What the direct plan of a root field with links resolves to when some link value failed. */
export interface LinkedPartial {
  /** The root field's value, with null where the errors are. */
  value: unknown
  /** The errors, their paths starting at the root field's response key. */
  errors: GraphQLError[]
}

/** Thrown while compiling: the selection cannot be served by a direct plan. */
class Unsupported extends Error {}

/**
 * The batch key types served: their direct JSON value is the value the link's resolver reads (an
 * `ID` prints as a string where the row may hold a number, which a list-of-Int argument would refuse).
 */
const KEY_TYPES = new Set(['Int', 'String'])

/**
 * Replaces the link fields of a database root field's selection by their markers.
 * @param field the root field's node; `type` its named type (the database model's object type)
 * @returns the rewritten field and its link sites (`sites` empty and `field` unchanged when it selects
 *   no link field), or null when it selects a link field that a direct plan cannot serve
 */
export function compileLinkedRoot(schema: GraphQLSchema, field: FieldNode, type: GraphQLObjectType, fragments: Record<string, FragmentDefinitionNode>, operation: OperationDefinitionNode): LinkedRoot | null {
  const sites: LinkSite[] = []
  // Each named fragment is searched once per document, whatever the number of its spreads: linear.
  const memo = new Map<string, boolean>()
  const rewrite = (set: SelectionSetNode, parent: GraphQLObjectType, keys: Set<string>): SelectionSetNode => {
    let changed = false
    const selections = set.selections.map((sel): SelectionNode => {
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        if (spreadHoldsLink(schema, sel.name.value, fragments, memo)) throw new Unsupported('a link field inside a named fragment')
        return sel
      }
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        if (sel.typeCondition && sel.typeCondition.name.value !== parent.name) {
          if (holdsLink(schema, sel.selectionSet, fragments, memo)) throw new Unsupported('a link field under another type condition')
          return sel
        }
        const inner = rewrite(sel.selectionSet, parent, keys)
        if (inner === sel.selectionSet) return sel
        changed = true
        return { ...sel, selectionSet: inner }
      }
      const responseKey = sel.alias?.value ?? sel.name.value
      if (responseKey.startsWith(MARKER)) throw new Unsupported('a response key that a marker uses')
      const def = parent.getFields()[sel.name.value]
      if (!def) return sel
      const link = def.extensions?.[LINK_EXTENSION] as LinkFieldExtension | undefined
      if (link) {
        if (!link.direct || sel.directives?.length || keys.has(responseKey)) throw new Unsupported('a link field the direct plan cannot serve')
        keys.add(responseKey)
        const keyField = parent.getFields()[link.direct.key]
        if (!keyField || !KEY_TYPES.has(getNamedType(keyField.type).name)) throw new Unsupported('a batch key that is not an Int or a String')
        const item = getNamedType(schema.getQueryType()?.getFields()[link.direct.target]?.type)
        if (!item || !isObjectType(item)) throw new Unsupported('a target without an object item type')
        const linkType: GraphQLOutputType = link.direct.many ? new GraphQLList(new GraphQLNonNull(item)) : item
        const complete = completer(linkType, parent.name, def.name, sel, fragments)
        const info = {
          fieldName: def.name,
          fieldNodes: [sel],
          returnType: def.type,
          parentType: parent,
          path: { prev: undefined, key: responseKey, typename: parent.name },
          schema,
          fragments,
          rootValue: undefined,
          operation,
          variableValues: {},
        } as GraphQLResolveInfo
        const marker = `${MARKER}${sites.length}`
        sites.push({ responseKey, keyText: `${JSON.stringify(responseKey)}:`, access: link.direct, info, complete })
        changed = true
        return { kind: Kind.FIELD, alias: { kind: Kind.NAME, value: marker }, name: { kind: Kind.NAME, value: link.direct.key } }
      }
      const named = getNamedType(def.type)
      if (!sel.selectionSet || !isObjectType(named)) {
        if (sel.selectionSet && holdsLink(schema, sel.selectionSet, fragments, memo)) throw new Unsupported('a link field under an abstract type')
        return sel
      }
      const inner = rewrite(sel.selectionSet, named, new Set())
      if (inner === sel.selectionSet) return sel
      changed = true
      return { ...sel, selectionSet: inner }
    })
    return changed ? { ...set, selections } : set
  }
  try {
    if (!field.selectionSet) return { field, sites }
    const selectionSet = rewrite(field.selectionSet, type, new Set())
    return { field: selectionSet === field.selectionSet ? field : { ...field, selectionSet }, sites }
  } catch (err) {
    if (err instanceof Unsupported) return null
    throw err
  }
}

/**
 * True when a selection set selects a link field (or a marker alias) anywhere below, fragments
 * included; `memo` holds the answer for each named fragment already searched.
 */
function holdsLink(schema: GraphQLSchema, set: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, memo: Map<string, boolean>): boolean {
  for (const sel of set.selections) {
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      if (spreadHoldsLink(schema, sel.name.value, fragments, memo)) return true
      continue
    }
    if (sel.kind === Kind.FIELD && (sel.alias?.value ?? sel.name.value).startsWith(MARKER)) return true
    if (sel.kind === Kind.FIELD && sel.name.value.startsWith('__') === false) {
      // A link field on any type: its name is a field of some type with the link extension.
      if (isLinkName(schema, sel.name.value)) return true
    }
    if (sel.selectionSet && holdsLink(schema, sel.selectionSet, fragments, memo)) return true
  }
  return false
}

/** {@link holdsLink} of the named fragment `name`, searched once (a cycle, in an invalid document, ends as false). */
function spreadHoldsLink(schema: GraphQLSchema, name: string, fragments: Record<string, FragmentDefinitionNode>, memo: Map<string, boolean>): boolean {
  let known = memo.get(name)
  if (known === undefined) {
    memo.set(name, false)
    const fragment = fragments[name]
    known = fragment ? holdsLink(schema, fragment.selectionSet, fragments, memo) : false
    memo.set(name, known)
  }
  return known
}

/** Link field names of a schema (any type), computed once per schema. */
const linkNames = new WeakMap<GraphQLSchema, Set<string>>()
function isLinkName(schema: GraphQLSchema, name: string): boolean {
  let names = linkNames.get(schema)
  if (!names) {
    names = new Set()
    for (const t of Object.values(schema.getTypeMap())) {
      if (!isObjectType(t)) continue
      for (const f of Object.values(t.getFields())) if (f.extensions?.[LINK_EXTENSION]) names.add(f.name)
    }
    linkNames.set(schema, names)
  }
  return names.has(name)
}

/** The fields of a selection set on `type`, fragments on that same type flattened; throws Unsupported otherwise. */
function fieldsOf(set: SelectionSetNode, type: GraphQLObjectType, fragments: Record<string, FragmentDefinitionNode>, out: FieldNode[], seen: Set<string>): FieldNode[] {
  for (const sel of set.selections) {
    if (sel.directives?.length) throw new Unsupported('a directive in a link selection')
    if (sel.kind === Kind.FIELD) out.push(sel)
    else if (sel.kind === Kind.INLINE_FRAGMENT) {
      if (sel.typeCondition && sel.typeCondition.name.value !== type.name) throw new Unsupported('a type condition in a link selection')
      fieldsOf(sel.selectionSet, type, fragments, out, seen)
    } else {
      const fragment = fragments[sel.name.value]
      if (!fragment || seen.has(sel.name.value) || fragment.typeCondition.name.value !== type.name) throw new Unsupported('a fragment in a link selection')
      seen.add(sel.name.value)
      fieldsOf(fragment.selectionSet, type, fragments, out, seen)
    }
  }
  return out
}

/**
 * Compiles the completion of a link field's value of type `type` (its selection set `node`), with
 * graphql-js' messages: `Cannot return null for non-nullable field T.f.`, `Expected Iterable, but did
 * not find one for field T.f.`, a scalar's own serialisation error.
 * @throws Unsupported for what the direct plan does not complete (see the module comment)
 */
function completer(type: GraphQLOutputType, parentName: string, fieldName: string, node: FieldNode, fragments: Record<string, FragmentDefinitionNode>): Complete {
  let byType = completers.get(node)
  const known = byType?.get(type)
  if (known) return known
  const made = compileCompleter(type, parentName, fieldName, node, fragments)
  if (!byType) completers.set(node, (byType = new Map()))
  byType.set(type, made)
  return made
}

/**
 * Completers by field node and type. A field node of a named fragment spread in many places is
 * compiled once: compiling a document's links makes one completer per field node and type, not one
 * per path through its fragments (which doubles at every level where a fragment spreads the next one
 * twice: requests are held to `graphql.maxSelections` expanded selections before a plan is compiled,
 * and this keeps the compile to the document's own nodes whatever that limit is). A node's parent
 * type is fixed by its place (a fragment in a link selection is on that very type), so node and type
 * determine the completer; entries live as long as the parsed document and the schema's types.
 */
const completers = new WeakMap<FieldNode, Map<GraphQLOutputType, Complete>>()

/** {@link completer}, not remembered. */
function compileCompleter(type: GraphQLOutputType, parentName: string, fieldName: string, node: FieldNode, fragments: Record<string, FragmentDefinitionNode>): Complete {
  const nullMessage = `Cannot return null for non-nullable field ${parentName}.${fieldName}.`
  if (isNonNullType(type)) {
    const inner = completer(type.ofType, parentName, fieldName, node, fragments)
    return (value, path, sink) => {
      if (value === null || value === undefined) {
        sink.errors.push({ path, message: nullMessage, node })
        return undefined
      }
      return inner(value, path, sink)
    }
  }
  const inner = completeNullable(type, parentName, fieldName, node, fragments)
  return (value, path, sink) => (value === null || value === undefined ? 'null' : (inner(value, path, sink) ?? 'null'))
}

/** The completion of a non-null value of a nullable type; undefined when it must be null (errors recorded). */
function completeNullable(type: GraphQLOutputType, parentName: string, fieldName: string, node: FieldNode, fragments: Record<string, FragmentDefinitionNode>): Complete {
  if (isListType(type)) {
    const item = completer(type.ofType, parentName, fieldName, node, fragments)
    const message = `Expected Iterable, but did not find one for field ${parentName}.${fieldName}.`
    return (value, path, sink) => {
      if (!Array.isArray(value)) {
        sink.errors.push({ path, message, node })
        return undefined
      }
      let text = '['
      for (let i = 0; i < value.length; i++) {
        const v = item(value[i], sink.paths ? [...path, i] : path, sink)
        if (v === undefined) return undefined
        text += i === 0 ? v : `,${v}`
      }
      return `${text}]`
    }
  }
  if (isScalarType(type) || isEnumType(type)) {
    return (value, path, sink) => {
      let out: unknown
      try {
        out = type.serialize(value)
      } catch (err) {
        sink.errors.push({ path, message: err instanceof Error ? err.message : String(err), node, ...(err instanceof Error ? { original: err } : {}) })
        return undefined
      }
      if (out === undefined || out === null) {
        sink.errors.push({ path, message: `Expected \`${type.name}.serialize\` to return a non-nullable value.`, node })
        return undefined
      }
      return JSON.stringify(out)
    }
  }
  if (!isObjectType(type)) throw new Unsupported('an abstract type in a link selection')
  if (!node.selectionSet) throw new Unsupported('an object without a selection')
  const fields: Array<{ key: string; prefix: string; name: string; typename: boolean; complete?: Complete }> = []
  const keys = new Set<string>()
  for (const f of fieldsOf(node.selectionSet, type, fragments, [], new Set())) {
    const key = f.alias?.value ?? f.name.value
    if (keys.has(key)) throw new Unsupported('a response key selected twice in a link selection')
    keys.add(key)
    if (f.arguments?.length) throw new Unsupported('an argument in a link selection')
    const prefix = `${fields.length ? ',' : '{'}${JSON.stringify(key)}:`
    if (f.name.value === '__typename') {
      fields.push({ key, prefix, name: f.name.value, typename: true })
      continue
    }
    const def = type.getFields()[f.name.value]
    if (!def || (def.resolve !== undefined && def.resolve !== defaultFieldResolver)) throw new Unsupported('a field with a resolver in a link selection')
    fields.push({ key, prefix, name: def.name, typename: false, complete: completer(def.type, type.name, def.name, f, fragments) })
  }
  const typename = JSON.stringify(type.name)
  // A REST item type's isTypeOf is a synchronous check of the JSON value (connectors/rest/schema-types.ts).
  const isTypeOf = type.isTypeOf
  return (value, path, sink) => {
    if (isTypeOf && isTypeOf(value, undefined, undefined as never) !== true) {
      sink.errors.push({ path, message: `Expected value of type "${type.name}" but got: ${inspect(value)}.`, node })
      return undefined
    }
    const source = typeof value === 'object' ? (value as Record<string, unknown>) : undefined
    let text = ''
    for (const f of fields) {
      if (f.typename) {
        text += f.prefix + typename
        continue
      }
      const v = f.complete!(source?.[f.name], sink.paths ? [...path, f.key] : path, sink)
      if (v === undefined) return undefined
      text += f.prefix + v
    }
    return fields.length ? `${text}}` : '{}'
  }
}

/** A marker found in a statement's JSON text: where it starts and ends, its site and its key. */
interface Found {
  start: number
  end: number
  site: number
  key: unknown
}

/**
 * Reads the markers of a statement's JSON text: `"__trb_link<n>":<JSON scalar>`, each preceded by `{`
 * or `,` (a key; a string value's quotes are escaped, so it cannot hold one). Only the compiler
 * writes keys there: the document's response keys (one using the marker prefix gets no plan), and
 * no stored JSON text (direct plans refuse JSON columns: connectors/database/compiler/direct-read.ts).
 * @param sites how many link sites the plan has: a marker number beyond them is not one of its markers
 * @throws Error when the text is not what the compiler writes (a marker without its value)
 */
function findMarkers(text: string, sites: number): Found[] {
  const found: Found[] = []
  const head = `"${MARKER}`
  for (let i = text.indexOf(head); i >= 0; i = text.indexOf(head, i + head.length)) {
    const before = text.charCodeAt(i - 1)
    if (before !== 123 && before !== 44) continue // `{` or `,`
    let j = i + head.length
    let site = 0
    const digits = j
    for (let c = text.charCodeAt(j); c >= 48 && c <= 57; c = text.charCodeAt(++j)) site = site * 10 + (c - 48)
    if (j === digits || text.charCodeAt(j) !== 34 || text.charCodeAt(j + 1) !== 58 || site >= sites) continue // `"` then `:`, a site of this plan
    const v0 = j + 2
    let v1 = v0
    if (text.charCodeAt(v0) === 34) {
      v1 = v0 + 1
      for (let c = text.charCodeAt(v1); c !== 34; c = text.charCodeAt(v1)) {
        if (Number.isNaN(c)) throw new Error('a link marker without its value')
        v1 += c === 92 ? 2 : 1
      }
      v1++
    } else {
      for (let c = text.charCodeAt(v1); c !== 44 && c !== 125 && c !== 93; c = text.charCodeAt(v1)) {
        if (Number.isNaN(c)) throw new Error('a link marker without its value')
        v1++
      }
    }
    found.push({ start: i, end: v1, site, key: JSON.parse(text.slice(v0, v1)) })
    i = v1 - head.length
  }
  return found
}

/** The completed value of one key of one site: its JSON text, and its errors (relative paths) if any. */
interface Completed {
  text: string
  errors?: CompletionError[]
  /** The call that served the key failed. */
  failure?: Error
}

/**
 * Serves the link sites of a statement's JSON text (see the module comment).
 * @param text the root field's JSON, as the statement produced it (markers included)
 * @param rootKey the root field's response key (errors' paths start with it)
 * @returns the final JSON text, or a {@link LinkedPartial} when some link value failed
 */
export async function serveLinks(text: string, sites: readonly LinkSite[], context: unknown, rootKey: string): Promise<string | LinkedPartial> {
  const found = findMarkers(text, sites.length)
  if (!found.length) return text
  // Distinct non-null keys by site, in order of appearance.
  const keys: Array<Map<string, unknown>> = sites.map(() => new Map())
  for (const f of found) if (f.key !== null) keys[f.site]!.set(String(f.key), f.key)
  const completed: Array<Map<string, Completed>> = await Promise.all(
    sites.map(async (site, n) => {
      const byKey = new Map<string, Completed>()
      const wanted = keys[n]!
      if (!wanted.size) return byKey
      const items = await site.access.load([...wanted.values()], site.info, context)
      for (const k of wanted.keys()) {
        const item = items.get(k)
        if (item instanceof Error) {
          byKey.set(k, { text: 'null', failure: item })
          continue
        }
        const value = item ?? (site.access.many ? [] : null)
        const sink: Sink = { errors: [], paths: false }
        const out = site.complete(value, [], sink)
        if (!sink.errors.length) {
          byKey.set(k, { text: out ?? 'null' })
          continue
        }
        // Completed again, with the errors' paths.
        const traced: Sink = { errors: [], paths: true }
        byKey.set(k, { text: site.complete(value, [], traced) ?? 'null', errors: traced.errors })
      }
      return byKey
    }),
  )
  let failed = false
  let out = ''
  let last = 0
  for (const f of found) {
    const site = sites[f.site]!
    const c = f.key === null ? undefined : completed[f.site]!.get(String(f.key))
    if (c?.failure || c?.errors) failed = true
    out += text.slice(last, f.start) + site.keyText + (c ? c.text : site.access.many ? '[]' : 'null')
    last = f.end
  }
  out += text.slice(last)
  if (!failed) return out
  return partial(text, sites, completed, rootKey)
}

/**
 * The slow path of {@link serveLinks}, when some link value failed: the statement's JSON is parsed to
 * find each parent's path, and every failed value gives its parent null and its own errors.
 */
function partial(text: string, sites: readonly LinkSite[], completed: ReadonlyArray<Map<string, Completed>>, rootKey: string): LinkedPartial {
  const errors: GraphQLError[] = []
  const walk = (value: unknown, path: Array<string | number>): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]))
    if (value === null || typeof value !== 'object') return value
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      // A marker of this plan, as findMarkers reads them; any other key is the data's own.
      const n = k.startsWith(MARKER) ? Number(k.slice(MARKER.length)) : -1
      const site = sites[n]
      if (site === undefined) {
        out[k] = walk(v, [...path, k])
        continue
      }
      const at = [...path, site.responseKey]
      const c = v === null ? undefined : completed[n]!.get(String(v))
      out[site.responseKey] = c ? JSON.parse(c.text) : v === null && site.access.many ? [] : null
      if (c?.failure) errors.push(new GraphQLError(c.failure.message, { nodes: site.info.fieldNodes, path: at, originalError: c.failure }))
      for (const e of c?.errors ?? []) errors.push(new GraphQLError(e.message, { nodes: [e.node], path: [...at, ...e.path], ...(e.original ? { originalError: e.original } : {}) }))
    }
    return out
  }
  const value = walk(JSON.parse(text), [rootKey])
  return { value, errors }
}
