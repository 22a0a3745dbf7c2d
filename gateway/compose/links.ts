/**
 * Links (README "Links", docs/architecture.md §2.4): a field added to an object type of one source and
 * resolved by a `Query` root field of another, with arguments taken from the parent object — the
 * gateway's answer to Hasura remote relationships, Mesh `@resolveTo` and graphql-tools computed fields.
 *
 * - **Batching.** Every parent at one level of one request (same link, same field node) is collected
 *   until the current tick ends and no link call of the request is running (parents arriving in the
 *   answers of several calls above join one batch), then served together. A link with `batch` calls its target once per
 *   `batch.maxKeys` distinct keys, passing the list where the arguments say `'$keys'`, and matches the
 *   returned items to the parents by `batch.match`. A link without `batch` makes one call per distinct
 *   argument object. Calls of one level run at most `concurrency` at a time.
 * - **Projection.** The target is called through its own resolver with a field node whose selection
 *   set is the link field's: a database compiles only the selected columns, a remote GraphQL API
 *   receives only the selected fields. The parent fields a link reads are fetched even when the
 *   client did not select them (the database compiler reads `extensions.tributaryLink.requires`,
 *   delegation to a remote API reads the graphql-tools `stitchingInfo.fieldNodesByField` set here);
 *   they never reach the client, which only gets the fields it selected.
 * - **Failing softly.** The link field is nullable: a failing call gives `null` and an error at the
 *   field's path for the parents it served; sibling fields and other keys are unaffected.
 */
import {
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  Kind,
  OperationTypeNode,
  coerceInputValue,
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type FieldNode,
  type GraphQLField,
  type GraphQLFieldConfig,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionNode,
  type TypeNode,
  type VariableDefinitionNode,
} from 'graphql'
import { MapperKind, mapSchema } from '@graphql-tools/utils'
import { ConfigInvalidError } from '../errors.js'
import { LINK_EXTENSION, type LinkDirectAccess, type LinkFieldExtension } from '../connectors/types.js'
import { withSharedScalars } from './namespace.js'

/** How a link with a list-taking target serves every parent of a level in one call. */
export interface LinkBatch {
  /** The parent field whose value is the key, e.g. `ArtistId`. Parents whose key is null get null (or `[]` with `many`) without a call. */
  key: string
  /** The field of each item the target returns that holds a key, e.g. `ArtistId`: an item goes to the parents whose key equals it (compared as strings). */
  match: string
  /** Joins the keys when `'$keys'` fills a `String` argument (a REST parameter such as `?ids=1,2,3`). Default `,`. */
  separator?: string
  /** Most keys in one call; more distinct keys make several calls. Default 100. */
  maxKeys?: number
  /**
   * Where the list sits in the target's answer when the target returns an object around it: field
   * names separated by dots (`'data'` for Stripe's `{ data: [...] }`, `'artists'`, `'items'`). Each
   * field must be an object field, the last a list of objects. Default: the target returns the list.
   */
  resultPath?: string
}

/**
 * One link, declared in `config.ts` under `links`. Names are public names (namespace included).
 *
 * ```ts
 * links: [{ on: 'todo_Todo', field: 'owner', target: 'system_getRoleByCode', args: { code: '$parent.ownerCode' } }]
 * ```
 */
export interface LinkDefinition {
  /** The object type that gets the field, e.g. `chinook_Customer` (not a root type). */
  on: string
  /** The new field's name; the type must not have a field of that name. */
  field: string
  /** A `Query` root field of any source, e.g. `weather_forecasts`. */
  target: string
  /**
   * The target's arguments. JSON values, where a string `'$parent.<field>'` stands for the parent's
   * value of that field (leaf fields only), `'$keys'` (with `batch` only) for the list of distinct
   * keys, and a string starting with `$$` for itself minus one `$`. Without `batch`, a parent whose
   * referenced value is null gets null without a call. Default `{}`.
   */
  args?: Record<string, unknown>
  /** Serve a whole level with one call per `maxKeys` keys; the target must return a list of objects. Default: one call per distinct argument object. */
  batch?: LinkBatch
  /** With `batch`: the field is the list of every matching item (`true`) or the first one (`false`). Default false. */
  many?: boolean
  /** Most calls of one level of one request running at once. Default 8, at most 64. */
  concurrency?: number
  /** The field's description. */
  description?: string
}

/** Defaults of {@link LinkDefinition}. */
export const LINK_DEFAULTS = { concurrency: 8, maxConcurrency: 64, maxKeys: 100, separator: ',' } as const

const PARENT = /^\$parent\.([_A-Za-z][_0-9A-Za-z]*)$/
const KEYS = '$keys'

interface CompiledLink {
  index: number
  def: LinkDefinition
  /** Parent fields read by the arguments or the batch key. */
  requires: string[]
  concurrency: number
  maxKeys: number
  separator: string
  /** Argument names given by the link, in the target's order. */
  argNames: string[]
  /** The link field's type. */
  type: GraphQLOutputType
  /** Synthetic field nodes by the link field's first node (stable per document, so plan caches hit). */
  nodes: WeakMap<FieldNode, FieldNode>
  /** Synthetic operations by the request's operation. */
  operations: WeakMap<OperationDefinitionNode, OperationDefinitionNode>
  /** The unaliased `batch.match` field node, added to the target's selection. */
  matchNode: FieldNode | null
  /** `batch.resultPath` split at its dots (empty: the target returns the list). */
  resultPath: string[]
  /** The object types along `resultPath` and the item type, by schema (types are the final schema's, known at the first call). */
  types: WeakMap<GraphQLSchema, { path: GraphQLObjectType[]; item: GraphQLObjectType }>
  /** The target is a REST operation (`extensions.rest`, connectors/rest/convert.ts): its items are plain JSON objects. */
  restTarget: boolean
}

function fail(index: number, prop: string, message: string): never {
  throw new ConfigInvalidError(`links[${index}].${prop}: ${message}`)
}

function fieldNode(name: string): FieldNode {
  return { kind: Kind.FIELD, name: { kind: Kind.NAME, value: name } }
}

/** Walks an argument template, calling `visit` on every placeholder string. */
function placeholders(value: unknown, visit: (p: string) => void): void {
  if (typeof value === 'string') {
    if (value.startsWith('$') && !value.startsWith('$$')) visit(value)
  } else if (Array.isArray(value)) for (const v of value) placeholders(v, visit)
  else if (value && typeof value === 'object') for (const v of Object.values(value)) placeholders(v, visit)
}

/** The template with placeholders replaced: `parent(name)` for `$parent.<name>`, `keys` for `$keys`. */
function fill(value: unknown, parent: (name: string) => unknown, keys?: unknown[]): unknown {
  if (typeof value === 'string') {
    if (value.startsWith('$$')) return value.slice(1)
    if (value === KEYS) return keys
    const m = PARENT.exec(value)
    return m ? parent(m[1]!) : value
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, parent, keys))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = fill(v, parent, keys)
    return out
  }
  return value
}

function compileLink(schema: GraphQLSchema, def: LinkDefinition, index: number): CompiledLink {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter(Boolean))
  const on = schema.getType(def.on)
  if (!on || !isObjectType(on) || roots.has(on)) fail(index, 'on', `${def.on} is not an object type of the composed schema`)
  if (on.getFields()[def.field]) fail(index, 'field', `${def.on} already has a field ${def.field}`)
  const target = schema.getQueryType()?.getFields()[def.target]
  if (!target) fail(index, 'target', `no Query field named ${def.target}`)
  const args = def.args ?? {}
  const argNames: string[] = []
  for (const name of Object.keys(args)) {
    if (!target.args.some((a) => a.name === name)) fail(index, `args.${name}`, `${def.target} has no argument ${name}`)
  }
  for (const a of target.args) {
    if (a.name in args) argNames.push(a.name)
    else if (isNonNullType(a.type) && a.defaultValue === undefined) fail(index, 'args', `the required argument ${a.name} of ${def.target} is not given`)
  }
  const requires = new Set<string>()
  let usesKeys = false
  placeholders(args, (p) => {
    if (p === KEYS) {
      usesKeys = true
      return
    }
    const m = PARENT.exec(p)
    if (!m) fail(index, 'args', `unknown placeholder ${p} (use $parent.<field> or $keys; write $$ for a literal $)`)
    requires.add(m[1]!)
  })
  let type: GraphQLOutputType
  let matchNode: FieldNode | null = null
  const resultPath = def.batch?.resultPath ? def.batch.resultPath.split('.') : []
  if (def.batch) {
    if (!usesKeys) fail(index, 'args', `a batched link passes its keys with '$keys'`)
    if (requires.size) fail(index, 'args', `a batched link cannot use $parent.<field> in args (use batch.key)`)
    requires.add(def.batch.key)
    let list = getNullableType(target.type)
    let at = def.target
    for (const segment of resultPath) {
      const field = isObjectType(list) ? list.getFields()[segment] : undefined
      if (!field) fail(index, 'batch.resultPath', `${at} has no object field ${segment}`)
      list = getNullableType(field.type)
      at = `${at}.${segment}`
    }
    const item = isListType(list) ? getNamedType(list) : null
    if (!item || !isObjectType(item)) fail(index, resultPath.length ? 'batch.resultPath' : 'batch', `${at} must return a list of objects to be batched${resultPath.length ? '' : ' (or give batch.resultPath: the path of the list inside its answer)'}`)
    const match = item.getFields()[def.batch.match]
    if (!match || !isLeafType(getNamedType(match.type))) fail(index, 'batch.match', `${item.name} has no scalar field ${def.batch.match}`)
    matchNode = fieldNode(def.batch.match)
    type = def.many ? new GraphQLList(new GraphQLNonNull(item)) : item
  } else {
    if (usesKeys) fail(index, 'args', `'$keys' needs batch`)
    if (def.many !== undefined) fail(index, 'many', 'many needs batch')
    type = getNullableType(target.type) as GraphQLOutputType
  }
  for (const name of requires) {
    const f = on.getFields()[name]
    if (!f || !isLeafType(getNamedType(f.type))) fail(index, def.batch ? 'batch.key' : 'args', `${def.on} has no scalar field ${name}`)
  }
  const concurrency = def.concurrency ?? LINK_DEFAULTS.concurrency
  return {
    index,
    def,
    requires: [...requires],
    concurrency,
    maxKeys: def.batch?.maxKeys ?? LINK_DEFAULTS.maxKeys,
    separator: def.batch?.separator ?? LINK_DEFAULTS.separator,
    argNames,
    type,
    nodes: new WeakMap(),
    operations: new WeakMap(),
    matchNode,
    resultPath,
    types: new WeakMap(),
    restTarget: target.extensions?.['rest'] !== undefined,
  }
}

/** The object types along a batched link's `resultPath`, and its item type, in `schema`. */
function typesOf(link: CompiledLink, schema: GraphQLSchema): { path: GraphQLObjectType[]; item: GraphQLObjectType } {
  let known = link.types.get(schema)
  if (known) return known
  let item = getNamedType(schema.getQueryType()!.getFields()[link.def.target]!.type) as GraphQLObjectType
  const path: GraphQLObjectType[] = []
  for (const segment of link.resultPath) {
    path.push(item)
    item = getNamedType(item.getFields()[segment]!.type) as GraphQLObjectType
  }
  link.types.set(schema, (known = { path, item }))
  return known
}

function typeNode(type: GraphQLInputType): TypeNode {
  if (isNonNullType(type)) return { kind: Kind.NON_NULL_TYPE, type: typeNode(type.ofType) as never }
  if (isListType(type)) return { kind: Kind.LIST_TYPE, type: typeNode(type.ofType) }
  return { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: type.name } }
}

const variableName = (link: CompiledLink, arg: string) => `__link${link.index}_${arg}`

/**
 * Brings a value taken from a parent object to the argument's type before GraphQL coercion: numbers
 * become strings for `String`/`ID`, numeric strings numbers for `Int`/`Float`, a key list is joined
 * with `separator` for a `String` argument.
 */
function conform(type: GraphQLInputType, value: unknown, separator: string): unknown {
  if (value === null || value === undefined) return value
  const t = getNullableType(type) as GraphQLInputType
  if (isListType(t)) return Array.isArray(value) ? value.map((v) => conform(t.ofType, v, separator)) : conform(t.ofType, value, separator)
  if (isInputObjectType(t)) {
    if (typeof value !== 'object' || Array.isArray(value)) return value
    const fields = t.getFields()
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = fields[k] ? conform(fields[k]!.type, v, separator) : v
    return out
  }
  if (isScalarType(t) || isEnumType(t)) {
    if (Array.isArray(value)) return t.name === 'String' ? value.map(String).join(separator) : value
    if ((t.name === 'String' || t.name === 'ID') && (typeof value === 'number' || typeof value === 'bigint')) return String(value)
    if ((t.name === 'Int' || t.name === 'Float') && typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)) return Number(value)
  }
  return value
}

/**
 * Reads a leaf field of an object returned by a source: its property (returned as it is, without a
 * promise: the common case), else the field's own resolver's value or promise (REST renames), else
 * undefined.
 */
function readField(type: GraphQLObjectType, obj: unknown, name: string, context: unknown, info: GraphQLResolveInfo): unknown {
  if (obj === null || typeof obj !== 'object') return undefined
  const own = (obj as Record<string, unknown>)[name]
  if (own !== undefined) return own
  const field = type.getFields()[name]
  if (!field?.resolve) return undefined
  const node = fieldNode(name)
  return field.resolve(obj, {}, context, {
    ...pickInfo(info),
    fieldName: name,
    fieldNodes: [node],
    returnType: field.type,
    parentType: type,
    path: { prev: info.path, key: name, typename: type.name },
  })
}

function pickInfo(info: GraphQLResolveInfo) {
  return { schema: info.schema, fragments: info.fragments, rootValue: info.rootValue, operation: info.operation, variableValues: info.variableValues }
}

/** Calls the target root field through its resolver, with the link field's selection set. */
function callTarget(link: CompiledLink, args: Record<string, unknown>, info: GraphQLResolveInfo, context: unknown): unknown {
  const query = info.schema.getQueryType()!
  const field = query.getFields()[link.def.target] as GraphQLField<unknown, unknown>
  const first = info.fieldNodes[0]!
  let node = link.nodes.get(first)
  if (!node) {
    let selections: SelectionNode[] = info.fieldNodes.flatMap((n) => n.selectionSet?.selections ?? [])
    if (link.matchNode) selections.push(link.matchNode)
    // batch.resultPath: the item selection travels inside the fields that hold the list.
    for (const segment of [...link.resultPath].reverse()) selections = [{ ...fieldNode(segment), selectionSet: { kind: Kind.SELECTION_SET, selections } }]
    node = {
      kind: Kind.FIELD,
      name: { kind: Kind.NAME, value: link.def.target },
      arguments: link.argNames.map((a) => ({ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: a }, value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: variableName(link, a) } } })),
      directives: [],
      ...(selections.length ? { selectionSet: { kind: Kind.SELECTION_SET, selections } } : {}),
    }
    link.nodes.set(first, node)
  }
  let operation = link.operations.get(info.operation)
  if (!operation) {
    const defs: VariableDefinitionNode[] = link.argNames.map((a) => ({
      kind: Kind.VARIABLE_DEFINITION,
      variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: variableName(link, a) } },
      type: typeNode(field.args.find((x) => x.name === a)!.type),
    }))
    operation = { ...info.operation, operation: OperationTypeNode.QUERY, variableDefinitions: [...(info.operation.variableDefinitions ?? []), ...defs] }
    link.operations.set(info.operation, operation)
  }
  const variableValues: Record<string, unknown> = { ...info.variableValues }
  const coerced: Record<string, unknown> = {}
  for (const a of field.args) {
    if (a.name in args) {
      const v = coerceInputValue(conform(a.type, args[a.name], link.separator), a.type)
      coerced[a.name] = v
      variableValues[variableName(link, a.name)] = v
    } else if (a.defaultValue !== undefined) coerced[a.name] = a.defaultValue
  }
  const resolve = field.resolve ?? defaultFieldResolver
  const targetInfo: GraphQLResolveInfo = {
    schema: info.schema,
    fragments: info.fragments,
    rootValue: info.rootValue,
    operation,
    variableValues,
    fieldName: link.def.target,
    fieldNodes: [node],
    returnType: field.type,
    parentType: query,
    path: info.path,
  }
  return resolve(info.rootValue ?? {}, coerced, context, targetInfo)
}

interface Entry {
  /** The key (batch) or the argument object. */
  value: unknown
  /** The value of every parent with this key or argument object (one promise, however many parents). */
  promise: Promise<unknown>
  resolve(v: unknown): void
  reject(e: unknown): void
}
interface Pending {
  entries: Map<string, Entry>
  info: GraphQLResolveInfo
  context: unknown
}

/**
 * One request's link state: the parents waiting, by link and field node, and the link calls in
 * flight. A level is served when the tick ends *and* no link call of the request is running: the
 * parents of one level may arrive in the answers of several calls above it (a batched link below a
 * non-batched one), and each of those answers adds parents until the last one is in.
 */
interface Scope {
  pending: Map<CompiledLink, Map<FieldNode, Pending>>
  /** Link flushes running (from the start of a flush to its last call's answer). */
  inFlight: number
  /** Levels whose tick has ended, waiting for `inFlight` to reach 0. */
  ready: Array<() => void>
}

/** Link state by request scope (the request's context object). */
const scopes = new WeakMap<object, Scope>()
const resolved = Promise.resolve()

/** Runs the ready levels once every answer in flight has been handed to the executor (after its promise jobs and ticks). */
function releaseReady(scope: Scope): void {
  if (scope.inFlight > 0 || !scope.ready.length) return
  setImmediate(() => {
    if (scope.inFlight > 0) return
    const ready = scope.ready.splice(0)
    for (const run of ready) run()
  })
}

/** Runs `tasks` with at most `limit` at once. */
async function runLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await task(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

function enqueue(link: CompiledLink, context: unknown, info: GraphQLResolveInfo, dedupKey: string, value: unknown): Promise<unknown> {
  const scopeKey = (context !== null && typeof context === 'object' ? context : info.operation) as object
  let scope = scopes.get(scopeKey)
  if (!scope) scopes.set(scopeKey, (scope = { pending: new Map(), inFlight: 0, ready: [] }))
  const byLink = scope.pending
  let byNode = byLink.get(link)
  if (!byNode) byLink.set(link, (byNode = new Map()))
  const first = info.fieldNodes[0]!
  let pending = byNode.get(first)
  if (!pending) {
    const p: Pending = { entries: new Map(), info, context }
    pending = p
    byNode.set(first, p)
    const s = scope
    const run = () => {
      byNode!.delete(first)
      s.inFlight++
      void flush(link, p).finally(() => {
        s.inFlight--
        releaseReady(s)
      })
    }
    // Like DataLoader: after the promise jobs of this tick, so every sibling parent has been seen;
    // and, while link calls of the request are running, after their answers too (one call per level).
    void resolved.then(() =>
      process.nextTick(() => {
        if (s.inFlight === 0) return run()
        s.ready.push(run)
      }),
    )
  }
  const entries = pending.entries
  const known = entries.get(dedupKey)
  if (known) return known.promise
  let resolve!: (v: unknown) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<unknown>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  entries.set(dedupKey, { value, promise, resolve, reject })
  return promise
}

function settle(entries: readonly Entry[], outcome: (e: Entry) => unknown): void {
  for (const e of entries) {
    let value: unknown
    try {
      value = outcome(e)
    } catch (err) {
      e.reject(err)
      continue
    }
    e.resolve(value)
  }
}

async function flush(link: CompiledLink, pending: Pending): Promise<void> {
  const entries = [...pending.entries.values()]
  const { info, context } = pending
  if (!link.def.batch) {
    await runLimited(entries, link.concurrency, async (e) => {
      try {
        const value = await callTarget(link, e.value as Record<string, unknown>, info, context)
        settle([e], () => value)
      } catch (err) {
        settle([e], () => {
          throw err
        })
      }
    })
    return
  }
  const serve = async (chunk: Entry[]): Promise<void> => {
    try {
      const byKey = await loadChunk(link, chunk.map((e) => e.value), info, context)
      settle(chunk, (e) => byKey.get(String(e.value)) ?? (link.def.many ? [] : null))
    } catch (err) {
      settle(chunk, () => {
        throw err
      })
    }
  }
  // One call serves the level (the common case): no chunking, no concurrency limiter.
  if (entries.length <= link.maxKeys) return serve(entries)
  const chunks: Entry[][] = []
  for (let i = 0; i < entries.length; i += link.maxKeys) chunks.push(entries.slice(i, i + link.maxKeys))
  await runLimited(chunks, link.concurrency, serve)
}

/**
 * One call of a batched link for `keys` (at most `maxKeys`): the target's items by key (`String` of
 * their `batch.match` value), the first one or (`many`) all of them in answer order.
 * @throws the call's error
 */
async function loadChunk(link: CompiledLink, keys: readonly unknown[], info: GraphQLResolveInfo, context: unknown): Promise<Map<string, unknown>> {
  const batch = link.def.batch!
  const args = fill(link.def.args ?? {}, () => undefined, keys as unknown[]) as Record<string, unknown>
  let result = await callTarget(link, args, info, context)
  const types = typesOf(link, info.schema)
  for (let i = 0; i < link.resultPath.length && result !== null && result !== undefined; i++) result = await readField(types.path[i]!, result, link.resultPath[i]!, context, info)
  // Items by key: every item (many) or the first one.
  const byKey = new Map<string, unknown>()
  const many = link.def.many === true
  for (const item of Array.isArray(result) ? result : []) {
    let k = readField(types.item, item, batch.match, context, info)
    if (k instanceof Promise) k = await k
    if (k === null || k === undefined) continue
    const key = String(k)
    const known = byKey.get(key)
    if (!many) {
      if (known === undefined) byKey.set(key, item)
    } else if (known) (known as unknown[]).push(item)
    else byKey.set(key, [item])
  }
  return byKey
}

/**
 * A batched link's {@link LinkDirectAccess}: every key at once, chunked by `maxKeys`, at most
 * `concurrency` calls at a time; a failed chunk's keys map to its error.
 */
function directAccess(link: CompiledLink): LinkDirectAccess {
  return {
    key: link.def.batch!.key,
    many: link.def.many === true,
    target: link.def.target,
    async load(keys, info, context) {
      const chunks: unknown[][] = []
      for (let i = 0; i < keys.length; i += link.maxKeys) chunks.push(keys.slice(i, i + link.maxKeys))
      const out = new Map<string, unknown>()
      const one = async (chunk: unknown[]): Promise<void> => {
        try {
          for (const [k, v] of await loadChunk(link, chunk, info, context)) out.set(k, v)
        } catch (err) {
          const failure = err instanceof Error ? err : new Error(String(err))
          for (const k of chunk) out.set(String(k), failure)
        }
      }
      if (chunks.length === 1) await one(chunks[0]!)
      else await runLimited(chunks, link.concurrency, one)
      return out
    },
  }
}

function linkField(link: CompiledLink): GraphQLFieldConfig<unknown, unknown> {
  const { def } = link
  const batched = (key: unknown, context: unknown, info: GraphQLResolveInfo): unknown => {
    if (key === null || key === undefined) return def.many ? [] : null
    return enqueue(link, context, info, String(key), key)
  }
  const unbatched = async (parent: unknown, context: unknown, info: GraphQLResolveInfo): Promise<unknown> => {
    const values = new Map<string, unknown>()
    for (const name of link.requires) {
      const v = await readField(info.parentType, parent, name, context, info)
      if (v === null || v === undefined) return null
      values.set(name, v)
    }
    const args = fill(def.args ?? {}, (name) => values.get(name)) as Record<string, unknown>
    return enqueue(link, context, info, JSON.stringify(args), args)
  }
  // Synchronous up to the batch's promise when the key is a plain property (one promise per distinct key, not per parent).
  const resolve = (parent: unknown, _args: unknown, context: unknown, info: GraphQLResolveInfo): unknown => {
    if (!def.batch) return unbatched(parent, context, info)
    const key = readField(info.parentType, parent, def.batch.key, context, info)
    return key instanceof Promise ? key.then((k) => batched(k, context, info)) : batched(key, context, info)
  }
  // A direct plan serves batched links whose target is a REST operation that returns the list itself.
  const extension: LinkFieldExtension = { requires: link.requires, ...(def.batch && !link.resultPath.length && link.restTarget ? { direct: directAccess(link) } : {}) }
  return {
    type: link.type,
    description: def.description ?? `Link to \`${def.target}\`${def.batch ? ` (batched by ${def.batch.key})` : ''}.`,
    resolve,
    extensions: { [LINK_EXTENSION]: extension },
  }
}

/**
 * Adds the configured links to a composed schema.
 * @param schema the output of `composeSchema`.
 * @param links in config order.
 * @returns a new schema (the input when `links` is empty), its shared scalars still the instances of `gateway/scalars.ts`.
 * @throws ConfigInvalidError naming the link and property at fault: `links[0].target: no Query field named x`.
 */
export function applyLinks(schema: GraphQLSchema, links: readonly LinkDefinition[]): GraphQLSchema {
  if (!links.length) return schema
  const compiled = links.map((def, i) => compileLink(schema, def, i))
  const byType = new Map<string, CompiledLink[]>()
  const seen = new Set<string>()
  for (const l of compiled) {
    const id = `${l.def.on}.${l.def.field}`
    if (seen.has(id)) fail(l.index, 'field', `${id} is linked twice`)
    seen.add(id)
    byType.set(l.def.on, [...(byType.get(l.def.on) ?? []), l])
  }
  const mapped = mapSchema(schema, {
    [MapperKind.OBJECT_TYPE]: (type) => {
      const own = byType.get(type.name)
      if (!own) return type
      const config = type.toConfig()
      const fields = { ...config.fields }
      for (const l of own) fields[l.def.field] = linkField(l)
      return new GraphQLObjectType({ ...config, fields })
    },
  })
  const out = withSharedScalars(mapped)
  // Delegation to a remote GraphQL API adds these nodes next to a selected link field (graphql-tools
  // prepareGatewayDocument), so that a remote parent carries the fields the link reads.
  const fieldNodesByField: Record<string, Record<string, FieldNode[]>> = {}
  for (const l of compiled) (fieldNodesByField[l.def.on] ??= {})[l.def.field] = l.requires.map(fieldNode)
  const extensions = { ...out.extensions } as Record<string, unknown>
  const existing = extensions['stitchingInfo'] as { fieldNodesByField?: Record<string, Record<string, FieldNode[]>> } | undefined
  if (existing) {
    const into = (existing.fieldNodesByField ??= {})
    for (const [t, fields] of Object.entries(fieldNodesByField)) into[t] = { ...into[t], ...fields }
    return out
  }
  extensions['stitchingInfo'] = { mergedTypes: {}, subschemaMap: new Map(), fieldNodesByType: {}, fieldNodesByField, dynamicSelectionSetsByField: {} }
  return new GraphQLSchema({ ...out.toConfig(), extensions })
}
