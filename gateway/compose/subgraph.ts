/**
 * Tributary as an Apollo Federation v2 subgraph (README "Tributary as a subgraph", config
 * `server.federation`): the composed gateway schema gets the subgraph fields of the Apollo
 * Federation subgraph specification (https://www.apollographql.com/docs/graphos/reference/federation/subgraph-spec):
 *
 * - `_service { sdl }`: the schema as served (namespaced names, `todo_Todo`), printed with
 *   `extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])` and
 *   `@key(fields: "…")` on every entity type: the return type of a root field tagged
 *   `extensions.tributaryEntity` ({@link ENTITY_EXTENSION}; the database connector tags `findManyX`
 *   of every model with a primary key, composite keys included);
 * - `_entities(representations: [_Any!]!): [_Entity]!`: the representations of one type are
 *   answered by ONE call of that type's tagged root field (`where: { id: { in: [...] } }`, or
 *   `{ OR: [{ a: { equals }, b: { equals } }, ...] }` for a composite key), through its own resolver
 *   with the `_entities` selection set, as links do (compose/links.ts): one SQL statement per type
 *   (per `maxTake` representations), with the row filters, type and field permissions and auth of
 *   every other path, since the call goes through the wrapped resolvers of the composed schema;
 *   merged types with a batched lookup (compose/merge.ts: string `key`, string `argsFromKeys`) are
 *   entities keyed by their `key`, answered by one call of that lookup (items in key order).
 *
 * Representations are client input: more than `maxRepresentations` fail the field with
 * `TRB_ERR_GRAPHQL_LIMIT`; one that is not an object, names no entity type, lacks a key field or has
 * one that does not coerce gets `null` and a `TRB_ERR_GRAPHQL_VALIDATION` error at its own index
 * (`['_entities', 3]`), its siblings still answered; a representation whose row does not exist (or a
 * row filter hides) is `null` without an error, as Apollo subgraphs answer.
 */
import {
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  GraphQLUnionType,
  Kind,
  OperationTypeNode,
  coerceInputValue,
  defaultFieldResolver,
  getNamedType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  parse,
  print,
  printSchema,
  valueFromASTUntyped,
  type DefinitionNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionNode,
  type TypeNode,
} from 'graphql'
import { GraphQLLimitError, GraphQLValidationError } from '../errors.js'
import { ENTITY_EXTENSION, type EntityFieldExtension } from '../connectors/types.js'
import type { MergedTypeOptions } from './merge.js'

/** Options of {@link toSubgraphSchema} (config `server.federation`). */
export interface SubgraphServeOptions {
  /** Most representations one `_entities` field accepts; more fail the field with `TRB_ERR_GRAPHQL_LIMIT`. */
  maxRepresentations: number
}

/** Default of `server.federation.maxRepresentations`. */
export const DEFAULT_MAX_REPRESENTATIONS = 1000

/** The Federation version the SDL links (`@link(url: …/federation/v2.3)`). */
export const FEDERATION_SPEC_URL = 'https://specs.apollo.dev/federation/v2.3'

/** Rows one call may return when the root field does not say (`take` without `extensions.tributary.maxTake`). */
const DEFAULT_CHUNK = 1000

/**
 * One entity type and the root field that serves it: a tagged database field (`where`, rows matched
 * back by key) or a merged type's batched lookup (`argsFromKeys`, one item per key in order).
 */
interface Entity {
  type: GraphQLObjectType
  key: readonly string[]
  field: GraphQLField<unknown, unknown>
  /** The root field's argument that carries the keys (`where`, or the merged type's `argsFromKeys`). */
  argName: string
  argType: GraphQLInputType
  /** The argument's value for these keys. */
  argOf(wanted: readonly Wanted[]): unknown
  /** Items come back one per key, in order (a merged type's lookup), rather than as rows matched by key. */
  byPosition: boolean
  /** The input type each key field's value coerces to, by key field; none: any non-null scalar. */
  keyTypes: ReadonlyMap<string, GraphQLInputType> | null
  /** Most representations per call. */
  chunk: number
  /** Synthetic root field nodes by `_entities` field node. */
  nodes: WeakMap<FieldNode, FieldNode>
  /** Synthetic operations by the request's operation. */
  operations: WeakMap<OperationDefinitionNode, OperationDefinitionNode>
  variable: string
}

/** The entity types of `schema`: the return types of the root fields tagged {@link ENTITY_EXTENSION}. */
function findEntities(schema: GraphQLSchema): Map<string, Entity> {
  const out = new Map<string, Entity>()
  for (const field of Object.values(schema.getQueryType()?.getFields() ?? {})) {
    const ext = field.extensions?.[ENTITY_EXTENSION] as EntityFieldExtension | undefined
    if (!ext) continue
    const type = getNamedType(field.type)
    const where = field.args.find((a) => a.name === 'where')?.type
    if (!isObjectType(type) || out.has(type.name) || !where || !isInputObjectType(where)) continue
    const keyTypes = new Map<string, GraphQLInputType>()
    for (const k of ext.key) {
      const filter = where.getFields()[k]?.type
      const equals = filter && isInputObjectType(filter) ? filter.getFields()['equals']?.type : undefined
      if (equals) keyTypes.set(k, equals)
    }
    if (keyTypes.size !== ext.key.length) continue
    const take = field.args.find((a) => a.name === 'take')?.extensions?.['tributary'] as { maxTake?: number } | undefined
    const key = ext.key
    out.set(type.name, {
      type,
      key,
      field,
      argName: 'where',
      argType: where,
      argOf: (wanted) =>
        key.length === 1 ? { [key[0]!]: { in: wanted.map((w) => w.values[0]) } } : { OR: wanted.map((w) => Object.fromEntries(key.map((k, j) => [k, { equals: w.values[j] }]))) },
      byPosition: false,
      keyTypes,
      chunk: Math.max(1, take?.maxTake ?? DEFAULT_CHUNK),
      nodes: new WeakMap(),
      operations: new WeakMap(),
      variable: `__entities_${type.name}`,
    })
  }
  return out
}

/**
 * The subgraph SDL of `schema` (without the subgraph fields themselves): its printed SDL with the
 * `@link` schema extension and `@key(fields: …)` on every entity type.
 */
export function subgraphSdl(schema: GraphQLSchema, entities: ReadonlyMap<string, { key: readonly string[] }>): string {
  const doc = parse(printSchema(schema), { noLocation: true })
  const definitions: DefinitionNode[] = doc.definitions.map((d) => {
    if (d.kind !== Kind.OBJECT_TYPE_DEFINITION || !entities.has(d.name.value)) return d
    const fields = entities.get(d.name.value)!.key.join(' ')
    const key = { kind: Kind.DIRECTIVE, name: { kind: Kind.NAME, value: 'key' }, arguments: [{ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'fields' }, value: { kind: Kind.STRING, value: fields } }] } as const
    return { ...d, directives: [...(d.directives ?? []), key] }
  })
  const link = `extend schema @link(url: "${FEDERATION_SPEC_URL}", import: ["@key"])`
  return `${link}\n\n${print({ ...doc, definitions })}\n`
}

/** `_Any`: a representation, any JSON object (`{ __typename, ...key }`). */
const AnyScalar = new GraphQLScalarType({
  name: '_Any',
  description: 'An entity representation: `{ __typename, ...key fields }` (Apollo Federation).',
  parseValue: (v) => v,
  parseLiteral: (ast, vars) => valueFromASTUntyped(ast, vars),
  serialize: (v) => v,
})

function typeNode(type: GraphQLInputType): TypeNode {
  if (isNonNullType(type)) return { kind: Kind.NON_NULL_TYPE, type: typeNode(type.ofType) as never }
  if (isListType(type)) return { kind: Kind.LIST_TYPE, type: typeNode(type.ofType) }
  return { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: type.name } }
}

/**
 * The selections of the `_entities` field that apply to `typeName`: fields (`__typename`), inline
 * fragments on it, spreads of fragments on it, and the contents of fragments on `_Entity` itself.
 */
function selectionsFor(typeName: string, nodes: readonly FieldNode[], info: GraphQLResolveInfo): SelectionNode[] {
  const out: SelectionNode[] = []
  const seen = new Set<string>()
  const visit = (selections: readonly SelectionNode[]): void => {
    for (const sel of selections) {
      if (sel.kind === Kind.FIELD) out.push(sel)
      else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const on = sel.typeCondition?.name.value
        if (on === typeName) out.push(sel)
        else if (on === undefined || on === '_Entity') visit(sel.selectionSet.selections)
      } else {
        const frag = info.fragments[sel.name.value]
        if (!frag) continue
        if (frag.typeCondition.name.value === typeName) out.push(sel)
        else if (frag.typeCondition.name.value === '_Entity' && !seen.has(frag.name.value)) {
          seen.add(frag.name.value)
          visit(frag.selectionSet.selections)
        }
      }
    }
  }
  for (const n of nodes) visit(n.selectionSet?.selections ?? [])
  return out
}

/** Calls the entity's root field through its resolver: `where` bound to a variable, the `_entities` selection set for the type plus its key fields. */
function callRootField(entity: Entity, argValue: unknown, context: unknown, info: GraphQLResolveInfo): unknown {
  const first = info.fieldNodes[0]!
  let node = entity.nodes.get(first)
  if (!node) {
    const keyNodes: FieldNode[] = entity.key.map((k) => ({ kind: Kind.FIELD, name: { kind: Kind.NAME, value: k } }))
    node = {
      kind: Kind.FIELD,
      name: { kind: Kind.NAME, value: entity.field.name },
      arguments: [{ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: entity.argName }, value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: entity.variable } } }],
      directives: [],
      selectionSet: { kind: Kind.SELECTION_SET, selections: [...selectionsFor(entity.type.name, info.fieldNodes, info), ...keyNodes] },
    }
    entity.nodes.set(first, node)
  }
  let operation = entity.operations.get(info.operation)
  if (!operation) {
    const def = { kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: entity.variable } }, type: typeNode(entity.argType) } as const
    operation = { ...info.operation, operation: OperationTypeNode.QUERY, variableDefinitions: [...(info.operation.variableDefinitions ?? []), def] }
    entity.operations.set(info.operation, operation)
  }
  const query = info.schema.getQueryType()!
  const resolve = entity.field.resolve ?? defaultFieldResolver
  return resolve(info.rootValue ?? {}, { [entity.argName]: argValue }, context, {
    schema: info.schema,
    fragments: info.fragments,
    rootValue: info.rootValue,
    operation,
    variableValues: { ...info.variableValues, [entity.variable]: argValue },
    fieldName: entity.field.name,
    fieldNodes: [node],
    returnType: entity.field.type,
    parentType: query,
    path: info.path,
  })
}

/** Longest quote of a coercion message (it may repeat the client's value) in an error. */
const MAX_QUOTED = 200

/** `message` cut to {@link MAX_QUOTED} characters. */
const clip = (message: string): string => (message.length > MAX_QUOTED ? `${message.slice(0, MAX_QUOTED)}…` : message)

/** A key's identity for matching rows to representations. */
function keyString(entity: Entity, values: readonly unknown[]): string {
  const fields = entity.type.getFields()
  return JSON.stringify(
    values.map((v, i) => {
      // Both sides through the key field's own serializer: a DateTime coerced from a representation
      // (a Date) and one read from a row (the column's text) compare as the same ISO string.
      const type = getNamedType(fields[entity.key[i]!]?.type)
      try {
        return String(isLeafType(type) ? type.serialize(v) : v)
      } catch {
        return String(v)
      }
    }),
  )
}

/** One distinct key of one type, and the indexes of the representations that ask for it. */
interface Wanted {
  indexes: number[]
  values: unknown[]
}

/**
 * Fetches the entities of `chunk` with one call of the entity's root field and writes each one (or
 * `null`, or the error) into `out` at its representations' indexes; records each object's type in
 * `typeOf` for `_Entity`'s `resolveType`.
 */
async function serveChunk(entity: Entity, chunk: readonly Wanted[], out: unknown[], typeOf: WeakMap<object, string>, context: unknown, info: GraphQLResolveInfo): Promise<void> {
  const answer = (w: Wanted, value: unknown) => {
    for (const i of w.indexes) out[i] = value
  }
  let argValue: unknown
  try {
    argValue = coerceInputValue(entity.argOf(chunk), entity.argType)
  } catch (err) {
    for (const w of chunk) {
      answer(w, new GraphQLValidationError(`_entities: representations[${w.indexes[0]}]: the keys of ${entity.type.name} do not fit ${entity.field.name}(${entity.argName}:): ${clip((err as Error).message)}`))
    }
    return
  }
  try {
    const rows = await callRootField(entity, argValue, context, info)
    const items = Array.isArray(rows) ? (rows as unknown[]) : []
    for (const item of items) if (item !== null && typeof item === 'object' && !(item instanceof Error)) typeOf.set(item, entity.type.name)
    if (entity.byPosition) {
      chunk.forEach((w, j) => answer(w, items[j] ?? null))
      return
    }
    const byKey = new Map<string, unknown>()
    for (const row of items as Record<string, unknown>[]) byKey.set(keyString(entity, entity.key.map((k) => row[k])), row)
    for (const w of chunk) answer(w, byKey.get(keyString(entity, w.values)) ?? null)
  } catch (err) {
    for (const w of chunk) answer(w, err instanceof Error ? err : new Error(String(err)))
  }
}

/**
 * Validates representation `i`: an object naming an entity type with every key field, each coercing
 * to its field's type.
 * @returns the entity and its coerced key values, or the error for its index
 */
function readRepresentation(rep: unknown, i: number, entities: ReadonlyMap<string, Entity>): { entity: Entity; values: unknown[] } | Error {
  const bad = (why: string) => new GraphQLValidationError(`_entities: representations[${i}] ${why}`)
  if (rep === null || typeof rep !== 'object' || Array.isArray(rep)) return bad('is not an object')
  const typename = (rep as Record<string, unknown>)['__typename']
  if (typeof typename !== 'string') return bad('has no __typename')
  const entity = entities.get(typename)
  if (!entity) return bad(`names ${JSON.stringify(typename.slice(0, 100))}, which is not an entity type of this subgraph`)
  const values: unknown[] = []
  for (const k of entity.key) {
    const v = (rep as Record<string, unknown>)[k]
    if (v === undefined || v === null) return bad(`lacks the key field ${k} of ${typename}`)
    const type = entity.keyTypes?.get(k)
    if (!type) {
      if (typeof v === 'object') return bad(`has a key field ${k} that is not a scalar`)
      values.push(v)
      continue
    }
    try {
      values.push(coerceInputValue(v, type))
    } catch (err) {
      return bad(`has a key field ${k} that is not a valid ${String(type)}: ${clip((err as Error).message)}`)
    }
  }
  return { entity, values }
}

/** A merged type's source as {@link toSubgraphSchema} needs it: its namespace and `merge` config. */
export interface MergedEntitySource {
  namespace: string
  merge: Readonly<Record<string, MergedTypeOptions>>
}

/**
 * Adds the merged types with a batched lookup (`fieldName` + a field name or list of them as `key` +
 * a string `argsFromKeys`) to `entities`, the first such source of each type serving it. Merged
 * types resolved per object (`args`) or by functions are left out: there is no declared key.
 */
function addMergedEntities(schema: GraphQLSchema, sources: readonly MergedEntitySource[], entities: Map<string, Entity>): void {
  for (const source of sources) {
    for (const [typeName, m] of Object.entries(source.merge)) {
      const type = schema.getType(typeName)
      if (entities.has(typeName) || !isObjectType(type) || !m.fieldName || typeof m.argsFromKeys !== 'string') continue
      if (typeof m.key !== 'string' && !(Array.isArray(m.key) && m.key.length > 0)) continue
      const field = schema.getQueryType()?.getFields()[source.namespace ? `${source.namespace}_${m.fieldName}` : m.fieldName]
      const argType = field?.args.find((a) => a.name === m.argsFromKeys)?.type
      if (!field || !argType) continue
      const single = typeof m.key === 'string'
      const key: string[] = single ? [m.key as string] : [...(m.key as string[])]
      entities.set(typeName, {
        type,
        key,
        field,
        argName: m.argsFromKeys,
        argType,
        argOf: (wanted) => wanted.map((w) => (single ? w.values[0] : Object.fromEntries(key.map((k, j) => [k, w.values[j]])))),
        byPosition: true,
        keyTypes: null,
        chunk: DEFAULT_CHUNK,
        nodes: new WeakMap(),
        operations: new WeakMap(),
        variable: `__entities_${typeName}`,
      })
    }
  }
}

/**
 * Adds `_service`, `_entities`, `_Any`, `_Entity` and `_Service` to the gateway schema.
 * @param schema the composed schema, links and permissions applied.
 * @param merged the sources with merged types: a merged type with a batched lookup is an entity
 *   keyed by its `key`, served by one call of its `fieldName` per `_entities` field.
 * @returns a new schema (resolvers, extensions and directives kept); without entity types only
 *   `_service` is added, as the subgraph specification says.
 */
export function toSubgraphSchema(schema: GraphQLSchema, options: SubgraphServeOptions, merged: readonly MergedEntitySource[] = []): GraphQLSchema {
  const entities = findEntities(schema)
  addMergedEntities(schema, merged, entities)
  const sdl = subgraphSdl(schema, entities)
  const typeOf = new WeakMap<object, string>()
  const service = new GraphQLObjectType({ name: '_Service', fields: { sdl: { type: GraphQLString } } })
  const config = schema.toConfig()
  const queryConfig = schema.getQueryType()!.toConfig()
  const fields: typeof queryConfig.fields = {
    ...queryConfig.fields,
    _service: { type: new GraphQLNonNull(service), description: 'The subgraph SDL (Apollo Federation).', resolve: () => ({ sdl }) },
  }
  const types = config.types.filter((t) => t !== schema.getQueryType())
  if (entities.size > 0) {
    const union = new GraphQLUnionType({
      name: '_Entity',
      types: [...entities.values()].map((e) => e.type),
      resolveType: (value) => typeOf.get(value as object),
    })
    types.push(union, AnyScalar)
    fields['_entities'] = {
      type: new GraphQLNonNull(new GraphQLList(union)),
      description: `The entities of these representations, in their order (Apollo Federation); at most ${options.maxRepresentations}.`,
      args: { representations: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(AnyScalar))) } },
      resolve: async (_root, args: { representations: unknown[] }, context, info) => {
        const reps = args.representations
        if (reps.length > options.maxRepresentations) {
          throw new GraphQLLimitError(`_entities: ${reps.length} representations, more than the maximum of ${options.maxRepresentations} (server.federation.maxRepresentations)`)
        }
        const out: unknown[] = new Array(reps.length).fill(null)
        // Distinct keys by type: a key asked twice is fetched once and answered at both indexes.
        const byType = new Map<Entity, Map<string, Wanted>>()
        reps.forEach((rep, i) => {
          const read = readRepresentation(rep, i, entities)
          if (read instanceof Error) return void (out[i] = read)
          let keys = byType.get(read.entity)
          if (!keys) byType.set(read.entity, (keys = new Map()))
          const id = keyString(read.entity, read.values)
          const known = keys.get(id)
          if (known) known.indexes.push(i)
          else keys.set(id, { indexes: [i], values: read.values })
        })
        // Types in parallel; the chunks of one type (more keys than its maxTake) one after the other.
        await Promise.all(
          [...byType].map(async ([entity, keys]) => {
            const wanted = [...keys.values()]
            for (let at = 0; at < wanted.length; at += entity.chunk) await serveChunk(entity, wanted.slice(at, at + entity.chunk), out, typeOf, context, info)
          }),
        )
        return out
      },
    }
  }
  const query = new GraphQLObjectType({ ...queryConfig, fields })
  types.push(service)
  return new GraphQLSchema({ ...config, query, types })
}
