/**
 * The Prisma-style CRUD schema of a database (docs/architecture.md §4), built from its introspection document.
 * Pure: no I/O happens while building; the resolvers attached to the root fields run statements
 * through `options.db` when they execute.
 *
 * Every model type carries `extensions.tributary = { model, table }`, every scalar field
 * `extensions.tributary = { column }` and every relation field `extensions.tributary = { relation,
 * target }`, so that the compiler finds its tables after `compose/` renamed the types. Table and
 * column comments of the database become the `description`s of model types and their scalar fields. The root
 * query fields `findUniqueX`, `findFirstX` and `findManyX` carry `extensions.tributary = { model,
 * direct }`: their direct-JSON compiler (direct.ts).
 *
 * For config `permissions` (auth/permissions.ts), every element that reaches a model's values carries
 * `extensions.tributaryReads` (`READS_EXT`): model types `{ model }`, and the input fields of
 * where/orderBy/unique/having inputs, the values of `XScalarFieldEnum` (`by`, `distinct`), the
 * fields of aggregate and groupBy outputs and of `_count` outputs `{ model, field, target? }`; the
 * aggregate, groupBy and mutation root fields `{ model }`.
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  type GraphQLArgumentConfig,
  type GraphQLFieldConfig,
  type GraphQLFieldResolver,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLScalarType,
} from 'graphql'
import { DbValueError } from '../../errors.js'
import { BigIntScalar, BytesScalar, DateTimeScalar, DecimalScalar, JSONScalar } from '../../scalars.js'
import { aggregateApplies, AGGREGATES, type AggregateOp } from './compiler/aggregate.js'
import type { Db } from './compiler/db.js'
import { SqlDialect, type MysqlFlavor } from './compiler/dialect.js'
import { EXT, isSortableComputed } from './compiler/read.js'
import { compileNestedConnection } from './compiler/connection.js'
import { DEFAULT_MAX_NESTED_WRITES } from './compiler/input-limits.js'
import { MAX_SEARCH_CHARS, relevanceFields } from './compiler/fulltext.js'
import { buildRegistry, type FunctionModel, type Model, type Registry, type RegistryOverrides, type Relation, type ScalarField } from './compiler/registry.js'
import { compileRowFilter, type RowFilterRule } from './compiler/row-filter.js'
import { makeFunctionResolver, makeFunctionWrite } from './functions.js'
import { DEFAULT_LOOKUP_BATCH_SIZE, LookupBatcher } from './lookup-batch.js'
import { createDirectCompiler, type DirectFieldExtension, type DirectFieldKind } from './direct.js'
import type { DatabaseIntrospection, Dialect, ScalarKind } from './model.js'
import { isUnsignedInt } from './type-map.js'
import { mapDbError } from './db-errors.js'
import { makeMutationResolvers, type MutationKind } from './mutations.js'
import { writeResolver, type WriteField } from './request-transaction.js'
import { pascalCase } from './naming.js'
import { READS_EXT, type ModelRef, type ReadsTag } from '../../auth/permissions.js'
import { byResponseKey, makeQueryResolvers, makeRawResolvers, type Runtime } from './resolvers.js'
import { changeFields, type ChangeShared } from './changes/subscriptions.js'
import { ENTITY_EXTENSION, RELATION_FILTER_EXTENSION, type EntityFieldExtension } from '../types.js'

/** Options of {@link buildSchema}. */
export interface BuildSchemaOptions {
  /** The statement runner the resolvers use. Without it the schema can be printed but its resolvers throw. */
  db?: Db
  /** For `dialect: 'mysql'`: which server the SQL targets. Default `mariadb`. */
  mysqlFlavor?: MysqlFlavor
  /** Show the engine's message when a raw query fails (development mode). Default false. */
  rawErrors?: boolean
  /** Largest `|take|` of any list, nested lists included; larger values are refused (`TRB_ERR_DB_INPUT`). Default 1000. */
  maxTake?: number
  /** Most nested writes of one request (items, and rows `set`/`updateMany`/`deleteMany` change); more is refused (`TRB_ERR_DB_INPUT`). Default 100. */
  maxNestedWrites?: number
  /** PostgreSQL: most keys of one batched `findUnique` statement (lookup-batch.ts); 1 turns batching off. Default {@link DEFAULT_LOOKUP_BATCH_SIZE} (100). */
  lookupBatchSize?: number
  /** Add the raw SQL root fields `queryRaw` and `executeRaw` (the source's `rawSql` option). Default false. */
  rawSql?: boolean
  /** Unique keys and relations declared in the source's config (`uniqueKeys`, `relations`); see registry.ts. */
  overrides?: RegistryOverrides
  /**
   * Model names that will get a row filter (config `permissions`, row-filter.ts): to-one relations to
   * them are nullable, since the related row may be filtered out. Default none.
   */
  rowFiltered?: ReadonlySet<string>
  /**
   * Change streams (`database({ changes })`, changes/): adds `<Model>Changed` and `<model>Stream`
   * subscription fields for the tables in `tables` (SQL names) that have a primary key. Default none.
   */
  changes?: ChangeShared & { tables: ReadonlySet<string> }
}

const nn = <T extends GraphQLInputType | GraphQLOutputType>(t: T): GraphQLNonNull<T> => new GraphQLNonNull(t) as GraphQLNonNull<T>
const list = <T extends GraphQLInputType | GraphQLOutputType>(t: T): GraphQLList<T> => new GraphQLList(t)

/** Reads an `int unsigned` value; one above 2^31-1 (GraphQL's Int) is `TRB_ERR_DB_VALUE`, as Prisma refuses it. */
function unsignedIntResolver(m: Model, f: ScalarField): GraphQLFieldResolver<unknown, unknown> {
  return (parent) => {
    const v = (parent as Record<string, unknown>)[f.name]
    if (typeof v === 'number' && v > 2147483647) throw new DbValueError(`${m.name}.${f.name}: ${v} is above 2147483647, the largest GraphQL Int`)
    return v
  }
}

/** Scalar kinds that get number update operations. */
const NUMERIC: ReadonlySet<ScalarKind> = new Set(['Int', 'BigInt', 'Float', 'Decimal'])

/**
 * Builds the executable schema of one database.
 * @param introspection the document from `introspect()` (or its cached copy)
 * @returns a schema with Query (and Mutation when there are tables) fields per model, resolvers attached
 * @throws Error when the document is inconsistent (a key names a missing column)
 */
export function buildSchema(introspection: DatabaseIntrospection, options: BuildSchemaOptions = {}): GraphQLSchema {
  const reg = buildRegistry(introspection, options.maxTake, options.overrides)
  const d = new SqlDialect(introspection.dialect, options.mysqlFlavor ?? 'mariadb', introspection.schema)
  const rt: Runtime = {
    reg,
    d,
    db: () => {
      if (!options.db) throw new Error('this schema was built without a database connection')
      return options.db
    },
    rawErrors: options.rawErrors ?? false,
    maxNestedWrites: options.maxNestedWrites ?? DEFAULT_MAX_NESTED_WRITES,
    nestedWrites: new WeakMap(),
    lookups: new LookupBatcher(options.lookupBatchSize ?? DEFAULT_LOOKUP_BATCH_SIZE),
  }
  const schema = new SchemaBuilder(reg, rt, options.rowFiltered ?? new Set(), options.changes).build(options.rawSql === true)
  registries.set(schema, reg)
  return schema
}

/** The models of a schema {@link buildSchema} built (empty for another schema). */
export function modelsOf(schema: GraphQLSchema): Model[] {
  return [...(registries.get(schema)?.models.values() ?? [])]
}

/** The registry of each schema {@link buildSchema} built (row filters are installed into it). */
const registries = new WeakMap<GraphQLSchema, Registry>()

/**
 * Installs row filters (row-filter.ts) into the registry of a schema {@link buildSchema} built.
 * @param rules keyed by model (GraphQL type) name
 * @returns the keys that name no model of the schema (nothing installed for them)
 * @throws ConfigInvalidError naming the path of a filter that does not fit its model
 */
export function installRowFilters(schema: GraphQLSchema, rules: ReadonlyMap<string, RowFilterRule>): string[] {
  const reg = registries.get(schema)
  const unknown: string[] = []
  for (const [name, rule] of rules) {
    const model = reg?.models.get(name)
    const where = schema.getType(`${name}WhereInput`)
    if (!reg || !model || !(where instanceof GraphQLInputObjectType)) {
      unknown.push(name)
      continue
    }
    reg.rowFilters.set(name, compileRowFilter(name, where, rule))
  }
  return unknown
}

/** The description of `StringFilter.search` per engine (fulltext.ts). */
const SEARCH_DESCRIPTIONS: Record<Dialect, string> = {
  postgres: 'Full-text search (PostgreSQL `websearch_to_tsquery` syntax: words, "phrases", `or`, `-word`): a `tsvector` column is matched as it is, a text column through `to_tsvector`.',
  mysql: 'Full-text search (`MATCH(col) AGAINST(search IN BOOLEAN MODE)`: `+word -word "phrase" word*`), on a column with a FULLTEXT index of its own; elsewhere TRB_ERR_DB_INPUT.',
  sqlite: 'Full-text search (FTS5 query syntax: words, "phrases", `AND OR NOT`, `word*`), on a column an FTS5 table indexes; elsewhere TRB_ERR_DB_INPUT.',
}

class SchemaBuilder {
  private readonly sortOrder = new GraphQLEnumType({ name: 'SortOrder', values: { asc: { value: 'asc' }, desc: { value: 'desc' } } })
  private readonly queryMode = new GraphQLEnumType({
    name: 'QueryMode',
    description: '`insensitive` compares strings case-insensitively (ASCII on SQLite).',
    values: { default: { value: 'default' }, insensitive: { value: 'insensitive' } },
  })
  private readonly affectedRows = new GraphQLObjectType({ name: 'AffectedRowsOutput', fields: { count: { type: nn(GraphQLInt) } } })
  private readonly relationAggregateOrder = new GraphQLInputObjectType({ name: 'OrderByRelationAggregateInput', fields: () => ({ _count: { type: this.sortOrder } }) })
  private readonly enums = new Map<string, GraphQLEnumType>()
  private readonly filters = new Map<string, GraphQLInputObjectType>()
  private readonly aggFilters = new Map<string, GraphQLInputObjectType>()
  private readonly updateOps = new Map<string, GraphQLInputObjectType>()
  private readonly objects = new Map<string, GraphQLObjectType>()
  private readonly whereInputs = new Map<string, GraphQLInputObjectType>()
  private readonly uniqueInputs = new Map<string, GraphQLInputObjectType | null>()
  private readonly orderInputs = new Map<string, GraphQLInputObjectType>()
  private readonly fieldEnums = new Map<string, GraphQLEnumType>()
  private readonly relationFilters = new Map<string, GraphQLInputObjectType>()
  private readonly listRelationFilters = new Map<string, GraphQLInputObjectType>()
  private readonly countOutputs = new Map<string, GraphQLObjectType | null>()
  /** Each model's identity for `permissions` (READS_EXT), by model name. */
  private readonly refs = new Map<string, ModelRef>()
  /** Create inputs with relation fields and the nested-write inputs, by name (they refer to each other). */
  private readonly nestedInputs = new Map<string, GraphQLInputObjectType>()
  /** `XConnection` types and their arguments, by model name (root and nested connection fields share them). */
  private readonly connections = new Map<string, { type: GraphQLObjectType; args: GraphQLFieldConfigArgumentMap }>()

  constructor(
    private readonly reg: Registry,
    private readonly rt: Runtime,
    private readonly rowFiltered: ReadonlySet<string>,
    private readonly changes?: ChangeShared & { tables: ReadonlySet<string> },
  ) {
    for (const e of reg.enums.values()) {
      this.enums.set(
        e.name,
        new GraphQLEnumType({ name: e.name, values: Object.fromEntries([...e.values].map(([name, value]) => [name, { value }])) }),
      )
    }
  }

  private model(name: string): Model {
    return this.reg.models.get(name)!
  }

  /**
   * `extensions` of an element that reaches the values of `field` of `m` (or its rows), and the rows
   * of `target` (auth/permissions.ts READS_EXT).
   */
  private reads(m: Model, field?: string, target?: Model): { [READS_EXT]: ReadsTag } {
    const ref = (x: Model): ModelRef => {
      let r = this.refs.get(x.name)
      if (!r) this.refs.set(x.name, (r = Object.freeze({ name: x.name })))
      return r
    }
    return { [READS_EXT]: { model: ref(m), ...(field !== undefined ? { field } : {}), ...(target ? { target: ref(target) } : {}) } }
  }

  /** The `extensions` of the input or output field of `m` named after a relation `r`: it reaches `r`'s target. */
  private readsRelation(m: Model, r: Relation): { [READS_EXT]: ReadsTag } {
    return this.reads(m, r.name, this.model(r.target))
  }

  /** The GraphQL type of a scalar field's values. */
  private scalarType(f: Pick<ScalarField, 'scalar' | 'enumName'>): GraphQLScalarType | GraphQLEnumType {
    switch (f.scalar) {
      case 'Int':
        return GraphQLInt
      case 'BigInt':
        return BigIntScalar
      case 'Float':
        return GraphQLFloat
      case 'Decimal':
        return DecimalScalar
      case 'Boolean':
        return GraphQLBoolean
      case 'DateTime':
        return DateTimeScalar
      case 'JSON':
        return JSONScalar
      case 'Bytes':
        return BytesScalar
      case 'Enum':
        return this.enums.get(f.enumName!)!
      default:
        return GraphQLString
    }
  }

  private kindName(f: Pick<ScalarField, 'scalar' | 'enumName'>): string {
    if (f.scalar === 'Enum') return `Enum${f.enumName}`
    if (f.scalar === 'Boolean') return 'Bool'
    if (f.scalar === 'JSON') return 'Json'
    return f.scalar
  }

  /** The input/output type of a field's value: the scalar, or `[scalar!]` for an array column. */
  private valueType(f: Pick<ScalarField, 'scalar' | 'enumName' | 'list'>): GraphQLScalarType | GraphQLEnumType | GraphQLList<GraphQLNonNull<GraphQLScalarType | GraphQLEnumType>> {
    const v = this.scalarType(f)
    return f.list ? list(nn(v)) : v
  }

  /** `StringListFilter`, `IntListFilter`...: Prisma's scalar-list filters `equals has hasEvery hasSome isEmpty` (PostgreSQL arrays). */
  private listFilter(f: Pick<ScalarField, 'scalar' | 'enumName'>): GraphQLInputObjectType {
    const name = `${this.kindName(f)}ListFilter`
    let t = this.filters.get(name)
    if (t) return t
    const v = this.scalarType(f)
    t = new GraphQLInputObjectType({
      name,
      fields: {
        equals: { type: list(nn(v)), description: 'The same items in the same order; `equals: null` means IS NULL.' },
        has: { type: v, description: 'The list contains this value.' },
        hasEvery: { type: list(nn(v)), description: 'The list contains every one of these values.' },
        hasSome: { type: list(nn(v)), description: 'The list contains at least one of these values.' },
        isEmpty: { type: GraphQLBoolean, description: 'The list has no items (false: at least one). A NULL list is neither.' },
      },
    })
    this.filters.set(name, t)
    return t
  }

  /** `IntFilter`, `StringFilter`, `EnumRoleFilter`...: `equals in notIn lt lte gt gte not` (+ string operators). */
  private filter(f: Pick<ScalarField, 'scalar' | 'enumName'>): GraphQLInputObjectType {
    const name = `${this.kindName(f)}Filter`
    let t = this.filters.get(name)
    if (t) return t
    const v = this.scalarType(f)
    const ops = this.filterOps(f, v)
    t = new GraphQLInputObjectType({ name, fields: () => ({ ...ops(), not: { type: t!, description: 'Negates the nested filter; `not: null` means IS NOT NULL.' } }) })
    this.filters.set(name, t)
    return t
  }

  private filterOps(f: Pick<ScalarField, 'scalar' | 'enumName'>, v: GraphQLScalarType | GraphQLEnumType): () => GraphQLInputFieldConfigMap {
    return () => {
      const fields: GraphQLInputFieldConfigMap = { equals: { type: v, description: '`equals: null` means IS NULL.' } }
      if (f.scalar === 'Boolean' || f.scalar === 'JSON') return fields
      fields['in'] = { type: list(nn(v)) }
      fields['notIn'] = { type: list(nn(v)) }
      if (f.scalar === 'Enum' || f.scalar === 'Bytes') return fields
      for (const op of ['lt', 'lte', 'gt', 'gte']) fields[op] = { type: v }
      if (f.scalar === 'String') {
        fields['contains'] = { type: GraphQLString }
        fields['startsWith'] = { type: GraphQLString }
        fields['endsWith'] = { type: GraphQLString }
        fields['mode'] = { type: this.queryMode }
        const search = SEARCH_DESCRIPTIONS[this.reg.dialect]
        if (this.reg.dialect === 'postgres' || [...this.reg.models.values()].some((m) => m.fullText.length > 0)) {
          fields['search'] = { type: GraphQLString, description: `${search} At most ${MAX_SEARCH_CHARS} characters.` }
        }
      }
      return fields
    }
  }

  /** `IntWithAggregatesFilter`...: a filter plus `_count _avg _sum _min _max` filters, for `having`. */
  private aggFilter(f: ScalarField): GraphQLInputObjectType {
    const name = `${this.kindName(f)}WithAggregatesFilter`
    let t = this.aggFilters.get(name)
    if (t) return t
    const ops = this.filterOps(f, this.scalarType(f))
    t = new GraphQLInputObjectType({
      name,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = { ...ops(), not: { type: this.filter(f) } }
        for (const op of AGGREGATES) {
          if (!aggregateApplies(op, f)) continue
          fields[op] = { type: op === '_count' ? this.filter({ scalar: 'Int' }) : op === '_avg' ? this.filter({ scalar: 'Float' }) : this.filter(f) }
        }
        return fields
      },
    })
    this.aggFilters.set(name, t)
    return t
  }

  /** `IntFieldUpdateOperationsInput { set increment decrement multiply divide }`, `StringFieldUpdateOperationsInput { set }`... */
  private updateOp(f: ScalarField): GraphQLInputObjectType {
    if (f.list) {
      const name = `${this.kindName(f)}ListFieldUpdateOperationsInput`
      let t = this.updateOps.get(name)
      if (t) return t
      const v = list(nn(this.scalarType(f)))
      t = new GraphQLInputObjectType({
        name,
        fields: { set: { type: v, description: 'Replaces the list.' }, push: { type: v, description: 'Appends these items (one value is a one-item list).' } },
      })
      this.updateOps.set(name, t)
      return t
    }
    const name = `${this.kindName(f)}FieldUpdateOperationsInput`
    let t = this.updateOps.get(name)
    if (t) return t
    const v = this.scalarType(f)
    const fields: GraphQLInputFieldConfigMap = { set: { type: v } }
    if (NUMERIC.has(f.scalar)) for (const op of ['increment', 'decrement', 'multiply', 'divide']) fields[op] = { type: v }
    t = new GraphQLInputObjectType({ name, fields })
    this.updateOps.set(name, t)
    return t
  }

  private fieldEnum(m: Model): GraphQLEnumType {
    let t = this.fieldEnums.get(m.name)
    if (!t) {
      t = new GraphQLEnumType({ name: `${m.name}ScalarFieldEnum`, values: Object.fromEntries(m.fields.map((f) => [f.name, { value: f.name, extensions: this.reads(m, f.name) }])) })
      this.fieldEnums.set(m.name, t)
    }
    return t
  }

  /** The computed fields of `m` that `where` and `orderBy` take (read.ts `isSortableComputed`). */
  private sortableComputed(m: Model): (FunctionModel & { returns: { kind: 'scalar' } })[] {
    return [...(m.computed?.values() ?? [])].filter(isSortableComputed)
  }

  private where(m: Model): GraphQLInputObjectType {
    let t = this.whereInputs.get(m.name)
    if (t) return t
    t = new GraphQLInputObjectType({
      name: `${m.name}WhereInput`,
      fields: () => {
        const self = this.whereInputs.get(m.name)!
        const fields: GraphQLInputFieldConfigMap = {
          AND: { type: list(nn(self)) },
          OR: { type: list(nn(self)) },
          NOT: { type: list(nn(self)) },
        }
        for (const f of m.fields) fields[f.name] = { type: f.list ? this.listFilter(f) : this.filter(f), extensions: this.reads(m, f.name) }
        for (const r of m.relations.values()) {
          fields[r.name] = { type: r.kind === 'one' ? this.relationFilter(this.model(r.target)) : this.listRelationFilter(this.model(r.target)), extensions: this.readsRelation(m, r) }
        }
        for (const fn of this.sortableComputed(m)) fields[fn.name] = { type: this.filter(fn.returns), description: `Computed: \`${fn.fn}\` of the row (its other arguments at their defaults).`, extensions: this.reads(m, fn.name) }
        return fields
      },
    })
    this.whereInputs.set(m.name, t)
    return t
  }

  private relationFilter(m: Model): GraphQLInputObjectType {
    let t = this.relationFilters.get(m.name)
    if (!t) {
      t = new GraphQLInputObjectType({
        // `CustomerList` + `RelationFilter` would collide with `Customer` + `ListRelationFilter`.
        name: m.name.endsWith('List') && this.reg.models.has(m.name.slice(0, -4)) ? `${m.name}ToOneRelationFilter` : `${m.name}RelationFilter`,
        extensions: { [RELATION_FILTER_EXTENSION]: 'one' },
        fields: () => ({ is: { type: this.where(m) }, isNot: { type: this.where(m) } }),
      })
      this.relationFilters.set(m.name, t)
    }
    return t
  }

  private listRelationFilter(m: Model): GraphQLInputObjectType {
    let t = this.listRelationFilters.get(m.name)
    if (!t) {
      t = new GraphQLInputObjectType({
        name: `${m.name}ListRelationFilter`,
        extensions: { [RELATION_FILTER_EXTENSION]: 'many' },
        fields: () => ({ every: { type: this.where(m) }, some: { type: this.where(m) }, none: { type: this.where(m) } }),
      })
      this.listRelationFilters.set(m.name, t)
    }
    return t
  }

  /** `XWhereUniqueInput`, or null when the model has no unique key. */
  private unique(m: Model): GraphQLInputObjectType | null {
    if (this.uniqueInputs.has(m.name)) return this.uniqueInputs.get(m.name)!
    if (m.uniqueKeys.length === 0) {
      this.uniqueInputs.set(m.name, null)
      return null
    }
    const fields: GraphQLInputFieldConfigMap = {}
    for (const k of m.uniqueKeys) {
      if (k.fields.length === 1) {
        fields[k.name] = { type: this.scalarType(m.fieldMap.get(k.fields[0]!)!), extensions: this.reads(m, k.fields[0]!) }
      } else {
        fields[k.name] = {
          type: new GraphQLInputObjectType({
            name: `${m.name}${pascalCase(k.name)}CompoundUniqueInput`,
            fields: Object.fromEntries(k.fields.map((fname) => [fname, { type: nn(this.scalarType(m.fieldMap.get(fname)!)), extensions: this.reads(m, fname) }])),
          }),
        }
      }
    }
    const t = new GraphQLInputObjectType({
      name: `${m.name}WhereUniqueInput`,
      description: `One of: ${m.uniqueKeys.map((k) => k.name).join(', ')}.`,
      fields,
    })
    this.uniqueInputs.set(m.name, t)
    return t
  }

  private orderBy(m: Model): GraphQLInputObjectType {
    let t = this.orderInputs.get(m.name)
    if (t) return t
    t = new GraphQLInputObjectType({
      name: `${m.name}OrderByWithRelationInput`,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {}
        for (const f of m.fields) fields[f.name] = { type: this.sortOrder, extensions: this.reads(m, f.name) }
        for (const r of m.relations.values()) {
          fields[r.name] = { type: r.kind === 'one' ? this.orderBy(this.model(r.target)) : this.relationAggregateOrder, extensions: this.readsRelation(m, r) }
        }
        for (const fn of this.sortableComputed(m)) fields[fn.name] = { type: this.sortOrder, description: `Computed: \`${fn.fn}\` of the row (its other arguments at their defaults).`, extensions: this.reads(m, fn.name) }
        const relevance = this.relevanceInput(m)
        if (relevance) fields['_relevance'] = { type: relevance, description: 'Orders by full-text relevance of `search` in `fields` (as Prisma\'s `_relevance`).' }
        return fields
      },
    })
    this.orderInputs.set(m.name, t)
    return t
  }

  /** `PageInfo` (Relay), one per source. */
  private readonly pageInfo = new GraphQLObjectType({
    name: 'PageInfo',
    fields: {
      hasNextPage: { type: nn(GraphQLBoolean), description: 'Rows follow this page in the order (with `before`: rows exist from the cursor on).' },
      hasPreviousPage: { type: nn(GraphQLBoolean), description: 'Rows precede this page in the order (with `after`: rows exist up to the cursor).' },
      startCursor: { type: GraphQLString, description: 'The first edge\'s cursor; null on an empty page.' },
      endCursor: { type: GraphQLString, description: 'The last edge\'s cursor; null on an empty page.' },
    },
  })

  /**
   * `<model>Connection(first, after, last, before, where, orderBy): XConnection!` (Relay cursor
   * connections; compiler/connection.ts): `XConnection { edges: [XEdge!]!, pageInfo, totalCount }`,
   * `XEdge { cursor, node }`.
   */
  private connectionField(m: Model, resolve: GraphQLFieldResolver<unknown, unknown>, extensions: Record<string, unknown>): GraphQLFieldConfig<unknown, unknown> {
    let c = this.connections.get(m.name)
    if (!c) {
      const max = this.reg.maxTake
      const edge = new GraphQLObjectType({
        name: `${m.name}Edge`,
        fields: () => ({ cursor: { type: nn(GraphQLString), description: 'Opaque: the row\'s orderBy key and primary key.' }, node: { type: nn(this.object(m)) } }),
      })
      const type = new GraphQLObjectType({
        name: `${m.name}Connection`,
        fields: () => ({
          edges: { type: nn(list(nn(edge))) },
          pageInfo: { type: nn(this.pageInfo) },
          totalCount: { type: nn(GraphQLInt), description: 'Rows matching `where` (and the row filter), whatever the page.' },
        }),
      })
      const count = (what: string): GraphQLArgumentConfig => ({ type: GraphQLInt, description: `${what}, from 0 to ${max} (maxTake); without first or last, the first ${max}.`, extensions: { [EXT]: { maxTake: max, minimum: 0 } } })
      c = {
        type,
        args: {
          first: count('The first rows after `after`'),
          after: { type: GraphQLString, description: 'A cursor of this connection (same orderBy): rows strictly after it.' },
          last: count('The last rows before `before`'),
          before: { type: GraphQLString, description: 'A cursor of this connection (same orderBy): rows strictly before it.' },
          where: { type: this.where(m) },
          orderBy: { type: list(nn(this.orderBy(m))), description: 'Scalar fields only (relations and `_relevance` are refused with TRB_ERR_DB_INPUT).' },
        },
      }
      this.connections.set(m.name, c)
    }
    return {
      type: nn(c.type),
      description: `Relay connection over ${m.name}: keyset pages in the order of \`orderBy\` (scalar fields; the primary key breaks ties), in one statement.`,
      args: c.args,
      resolve,
      extensions,
    }
  }

  /** `XOrderByRelevanceInput { fields: [XOrderByRelevanceFieldEnum!]!, search: String!, sort: SortOrder! }`, or null when no field of `m` is searchable (fulltext.ts). */
  private relevanceInput(m: Model): GraphQLInputObjectType | null {
    const names = relevanceFields(this.reg.dialect, m)
    if (names.length === 0) return null
    const fieldEnum = new GraphQLEnumType({
      name: `${m.name}OrderByRelevanceFieldEnum`,
      values: Object.fromEntries(names.map((f) => [f, { value: f, extensions: this.reads(m, f) }])),
    })
    const engine =
      this.reg.dialect === 'postgres'
        ? '`ts_rank` of `websearch_to_tsquery(search)`'
        : this.reg.dialect === 'mysql'
          ? '`MATCH(fields) AGAINST(search IN BOOLEAN MODE)`: a FULLTEXT index on exactly these fields'
          : '`-bm25()` of the FTS5 table indexing these fields (0 for rows it does not match)'
    return new GraphQLInputObjectType({
      name: `${m.name}OrderByRelevanceInput`,
      description: `Relevance: ${engine}.`,
      fields: {
        fields: { type: nn(list(nn(fieldEnum))), description: 'The fields searched (one value is a one-item list).' },
        search: { type: nn(GraphQLString), description: `The search text (the engine's full-text syntax), at most ${MAX_SEARCH_CHARS} characters.` },
        sort: { type: nn(this.sortOrder), description: '`desc`: most relevant first.' },
      },
    })
  }

  /**
   * A `take` argument. Its `extensions.tributary.maxTake` (the source's limit) becomes `maximum` and
   * `minimum` in the variables JSON Schema of stored operations (operations/json-schema.ts).
   * @param kind `list` (findMany, findFirst, relation lists: limited to maxTake rows without take),
   *   `groups` (groupBy: not negative, limited too) or `window` (aggregate: no limit without take)
   */
  private takeArg(kind: 'list' | 'groups' | 'window'): GraphQLArgumentConfig {
    const max = this.reg.maxTake
    const description =
      kind === 'list'
        ? `At most this many rows; negative takes from the end. At most ${max} in absolute value; without take, the first ${max} rows (maxTake).`
        : kind === 'groups'
          ? `At most this many groups, at most ${max}; without take, the first ${max} groups (maxTake).`
          : `Aggregate at most this many rows, at most ${max} in absolute value (maxTake); without take, every row.`
    return { type: GraphQLInt, description, extensions: { [EXT]: kind === 'groups' ? { maxTake: max, minimum: 0 } : { maxTake: max } } }
  }

  /** A `skip` argument: not negative. */
  private skipArg(): GraphQLArgumentConfig {
    return { type: GraphQLInt, description: 'Rows to skip; not negative.', extensions: { [EXT]: { minimum: 0 } } }
  }

  /** Arguments of lists: findMany and one-to-many relation fields. */
  private listArgs(m: Model): GraphQLFieldConfigArgumentMap {
    const args: GraphQLFieldConfigArgumentMap = {
      where: { type: this.where(m) },
      orderBy: { type: list(nn(this.orderBy(m))) },
    }
    const u = this.unique(m)
    if (u) args['cursor'] = { type: u, description: 'Start at this row (inclusive), in the order of `orderBy`.' }
    args['take'] = this.takeArg('list')
    args['skip'] = this.skipArg()
    args['distinct'] = { type: list(nn(this.fieldEnum(m))) }
    return args
  }

  /**
   * The type and arguments of a function's field (a root field, or a computed field of a model):
   * the function's arguments (required unless it declares a default), plus `where orderBy take skip
   * distinct` for a `SETOF` model (a function argument of the same name wins). Lists of rows of a
   * query field are non-null; mutation fields, single rows and scalars are nullable.
   */
  private functionField(fn: FunctionModel): { type: GraphQLOutputType; args: GraphQLFieldConfigArgumentMap } {
    const args: GraphQLFieldConfigArgumentMap = {}
    for (const a of fn.args) {
      const v = this.valueType(a)
      args[a.name] = { type: a.optional ? v : nn(v) }
    }
    let type: GraphQLOutputType
    if (fn.returns.kind === 'model') {
      const target = this.model(fn.returns.model)
      const obj = this.object(target)
      if (fn.returnsSet) {
        // Mutation fields are nullable (see `mut` above); a query's list is not.
        type = fn.operation === 'query' ? nn(list(nn(obj))) : list(nn(obj))
        // A function argument named like a list argument wins (functions.ts leaves that list argument out).
        for (const [k, v] of Object.entries(this.listArgs(target))) if (k !== 'cursor' && !(k in args)) args[k] = v
      } else type = obj
    } else {
      const v = this.valueType(fn.returns)
      type = fn.returnsSet ? list(v) : v
    }
    return { type, args }
  }

  private object(m: Model): GraphQLObjectType {
    let t = this.objects.get(m.name)
    if (t) return t
    t = new GraphQLObjectType({
      name: m.name,
      // A table comment leads; the table's name follows, as it does alone without a comment.
      description: `${m.comment ? `${m.comment}\n\n` : ''}${m.kind === 'view' ? 'View' : 'Table'} \`${m.table}\`.`,
      extensions: { [EXT]: { model: m.name, table: m.table }, ...this.reads(m) },
      fields: () => {
        const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
        for (const f of m.fields) {
          const v = this.valueType(f)
          fields[f.name] = { type: f.nullable ? v : nn(v), ...(f.comment ? { description: f.comment } : {}), extensions: { [EXT]: { column: f.column, dataType: f.dataType } } }
          if (isUnsignedInt(f)) fields[f.name]!.resolve = unsignedIntResolver(m, f)
        }
        const counts = this.countOutput(m)
        if (counts) fields['_count'] = { type: nn(counts), resolve: byResponseKey, description: 'Counts of related rows (Prisma `_count`), in the same statement.' }
        for (const r of m.relations.values()) {
          const target = this.model(r.target)
          const ext = { [EXT]: { relation: r.name, target: target.name } }
          // A related row hidden by its row filter reads as null.
          const nullable = r.nullable || this.rowFiltered.has(target.name)
          if (r.kind === 'one') fields[r.name] = { type: nullable ? this.object(target) : nn(this.object(target)), resolve: byResponseKey, extensions: ext }
          else fields[r.name] = { type: nn(list(nn(this.object(target)))), args: this.listArgs(target), resolve: byResponseKey, extensions: ext }
        }
        // Computed fields (PostgreSQL functions of the row, compiled into the same statement: read.ts).
        for (const fn of m.computed?.values() ?? []) {
          const { type, args } = this.functionField(fn)
          fields[fn.name] = { type, args, description: `Computed by the database function \`${fn.fn}\` of the row (selection only).`, resolve: byResponseKey, extensions: { [EXT]: { computed: fn.fn } } }
        }
        // Nested Relay connections (compiler/connection.ts): `<relation>Connection` beside each list relation, unless the name
        // is taken; a `permissions` rule on `'Type.<relation>'` guards it too (READS_EXT).
        for (const r of m.relations.values()) {
          const target = this.model(r.target)
          const name = `${r.name}Connection`
          if (r.kind !== 'many' || target.identity.length === 0 || fields[name] || m.relations.has(name)) continue
          fields[name] = this.connectionField(target, byResponseKey, { [EXT]: { relation: r.name, target: target.name, connection: compileNestedConnection }, ...this.readsRelation(m, r) })
          fields[name]!.description = `Relay connection over the ${target.name} rows of this row (\`${r.name}\`): keyset pages in the order of \`orderBy\` (scalar fields; the primary key breaks ties), compiled into the parent's statement.`
        }
        return fields
      },
    })
    this.objects.set(m.name, t)
    return t
  }

  /** `XCountOutputType { rel(where): Int! }` over the model's list relations, or null when it has none. */
  private countOutput(m: Model): GraphQLObjectType | null {
    if (this.countOutputs.has(m.name)) return this.countOutputs.get(m.name)!
    const rels = [...m.relations.values()].filter((r) => r.kind === 'many')
    const t =
      rels.length === 0
        ? null
        : new GraphQLObjectType({
            name: `${m.name}CountOutputType`,
            fields: () =>
              Object.fromEntries(
                rels.map((r) => [r.name, { type: nn(GraphQLInt), args: { where: { type: this.where(this.model(r.target)) } }, resolve: byResponseKey, extensions: this.readsRelation(m, r) }]),
              ),
          })
    this.countOutputs.set(m.name, t)
    return t
  }

  private aggregateTypes(m: Model): { aggregate: GraphQLObjectType; groupBy: GraphQLObjectType; orderAgg: GraphQLInputObjectType; having: GraphQLInputObjectType } {
    const outputs = new Map<AggregateOp, GraphQLObjectType>()
    const label: Record<AggregateOp, string> = { _count: 'Count', _avg: 'Avg', _sum: 'Sum', _min: 'Min', _max: 'Max' }
    for (const op of AGGREGATES) {
      const fs = m.fields.filter((f) => aggregateApplies(op, f))
      const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
      for (const f of fs) fields[f.name] = { type: op === '_count' ? nn(GraphQLInt) : op === '_avg' ? GraphQLFloat : this.scalarType(f), extensions: this.reads(m, f.name) }
      if (op === '_count') fields['_all'] = { type: nn(GraphQLInt) }
      if (Object.keys(fields).length === 0) continue
      outputs.set(op, new GraphQLObjectType({ name: `${m.name}${label[op]}AggregateOutputType`, fields }))
    }
    const aggFields = (): GraphQLFieldConfigMap<unknown, unknown> => Object.fromEntries([...outputs].map(([op, t]) => [op, { type: t }]))
    const aggregate = new GraphQLObjectType({ name: `Aggregate${m.name}`, fields: aggFields })
    const groupBy = new GraphQLObjectType({
      name: `${m.name}GroupBy`,
      fields: () => {
        const fields: GraphQLFieldConfigMap<unknown, unknown> = {}
        for (const f of m.fields) fields[f.name] = { type: this.valueType(f), extensions: this.reads(m, f.name) }
        return { ...fields, ...aggFields() }
      },
    })
    const orderAggInput = new GraphQLInputObjectType({
      name: `${m.name}OrderByAggregateInput`,
      fields: Object.fromEntries(m.fields.map((f) => [f.name, { type: this.sortOrder, extensions: this.reads(m, f.name) }])),
    })
    const orderAgg = new GraphQLInputObjectType({
      name: `${m.name}OrderByWithAggregationInput`,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {}
        for (const f of m.fields) fields[f.name] = { type: this.sortOrder, extensions: this.reads(m, f.name) }
        for (const op of AGGREGATES) fields[op] = { type: orderAggInput }
        return fields
      },
    })
    const having: GraphQLInputObjectType = new GraphQLInputObjectType({
      name: `${m.name}ScalarWhereWithAggregatesInput`,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = {
          AND: { type: list(nn(having)) },
          OR: { type: list(nn(having)) },
          NOT: { type: list(nn(having)) },
        }
        for (const f of m.fields) if (f.scalar !== 'JSON' && f.scalar !== 'Bytes' && !f.list) fields[f.name] = { type: this.aggFilter(f), extensions: this.reads(m, f.name) }
        return fields
      },
    })
    return { aggregate, groupBy, orderAgg, having }
  }

  /**
   * `XCreateInput` (nested: true, relation fields take nested writes), `XCreateManyInput` (scalars
   * only), or the create input of a row created under a relation (`without`: the relation of `m` back
   * to the parent, left out; when `m` holds its key, the key fields too, as the parent sets them).
   * A foreign key field that a relation input may fill instead is optional.
   */
  private createInput(m: Model, name: string, nested = false, without?: Relation): GraphQLInputObjectType {
    const cached = this.nestedInputs.get(name)
    if (cached) return cached
    const t = new GraphQLInputObjectType({
      name,
      fields: () => {
        const relations = nested ? this.nestedRelations(m).filter((r) => r !== without) : []
        const fillable = new Set(relations.filter((r) => r.holdsKey).flatMap((r) => r.fromFields))
        const omitted = new Set(without?.holdsKey ? without.fromFields : [])
        const fields: GraphQLInputFieldConfigMap = {}
        for (const f of m.fields) {
          if (f.generated || omitted.has(f.name)) continue
          const v = this.valueType(f)
          fields[f.name] = { type: f.nullable || f.hasDefault || fillable.has(f.name) ? v : nn(v) }
        }
        for (const r of relations) fields[r.name] = { type: this.relationWriteInput(m, r) }
        return fields
      },
    })
    if (nested) this.nestedInputs.set(name, t)
    return t
  }

  /** The relations of `m` that take nested writes: to a table with an identity and a way back (many-to-many shortcuts included). */
  private nestedRelations(m: Model): Relation[] {
    return [...m.relations.values()].filter((r) => {
      const target = this.model(r.target)
      // A to-many write needs this row's key back; a to-one write needs the target's; a join row both.
      return target.kind === 'table' && target.identity.length > 0 && (r.holdsKey || m.identity.length > 0) && this.backRelation(m, r) !== undefined
    })
  }

  /** The relation of `r`'s target that is `r` seen from the other side (same foreign key, the other holder; or the same join table). */
  private backRelation(m: Model, r: Relation): Relation | undefined {
    const back = [...this.model(r.target).relations.values()]
    if (r.via) return back.find((b) => b.via !== undefined && b.foreignKey === r.foreignKey && b.target === m.name)
    return back.find((b) => !b.via && b.foreignKey === r.foreignKey && b.holdsKey !== r.holdsKey && b.target === m.name)
  }

  /** `X` + the back relation's name in PascalCase: the `Without<Back>` of Prisma's input names. */
  private backName(m: Model, r: Relation): string {
    const back = this.backRelation(m, r)!
    return back.name[0]!.toUpperCase() + back.name.slice(1)
  }

  /** `XCreateOrConnectWithout<Back>Input { where, create }`, shared by the create and update inputs. */
  private createOrConnect(target: Model, backName: string, create: GraphQLInputObjectType, where: GraphQLInputObjectType): GraphQLInputObjectType {
    const name = `${target.name}CreateOrConnectWithout${backName}Input`
    const coc = this.nestedInputs.get(name) ?? new GraphQLInputObjectType({ name, fields: { where: { type: nn(where) }, create: { type: nn(create) } } })
    this.nestedInputs.set(name, coc)
    return coc
  }

  /** A nested input type by name, made once. */
  private nestedInput(name: string, make: () => GraphQLInputObjectType): GraphQLInputObjectType {
    const cached = this.nestedInputs.get(name)
    if (cached) return cached
    const t = make()
    this.nestedInputs.set(name, t)
    return t
  }

  /** `XScalarWhereInput`: the where of `updateMany`/`deleteMany` under a relation (scalar fields, AND/OR/NOT; no relation filters). */
  private scalarWhere(m: Model): GraphQLInputObjectType {
    const name = `${m.name}ScalarWhereInput`
    return this.nestedInput(name, () => new GraphQLInputObjectType({
      name,
      fields: () => {
        const self = this.nestedInputs.get(name)!
        const fields: GraphQLInputFieldConfigMap = { AND: { type: list(nn(self)) }, OR: { type: list(nn(self)) }, NOT: { type: list(nn(self)) } }
        for (const f of m.fields) fields[f.name] = { type: f.list ? this.listFilter(f) : this.filter(f), extensions: this.reads(m, f.name) }
        return fields
      },
    }))
  }

  /**
   * The nested-write input of relation `r` of `m` in an update's data (Prisma's):
   * `TUpdateManyWithout<Back>NestedInput` (to-many and many-to-many shortcuts: lists of `create`,
   * `connect`, `connectOrCreate`, `set`, `disconnect`, `delete`, `update`, `updateMany`,
   * `deleteMany`, `upsert`; through a shortcut they act on the rows linked by a join row), or `TUpdateOne[Required]Without<Back>NestedInput` (to-one: `create`,
   * `connect`, `connectOrCreate`, `update`, `upsert`, and `disconnect`/`delete: Boolean` unless this
   * row's key to it is NOT NULL).
   */
  private relationUpdateInput(m: Model, r: Relation): GraphQLInputObjectType {
    const target = this.model(r.target)
    const back = this.backRelation(m, r)!
    const backName = this.backName(m, r)
    const many = r.kind === 'many'
    const required = r.holdsKey && r.fromFields.some((n) => !m.fieldMap.get(n)!.nullable)
    const name = many ? `${target.name}UpdateManyWithout${backName}NestedInput` : `${target.name}UpdateOne${required ? 'Required' : ''}Without${backName}NestedInput`
    return this.nestedInput(name, () => new GraphQLInputObjectType({
      name,
      extensions: { [EXT]: { nestedWrite: true } },
      description: many
        ? `Writes to the ${target.name} rows of this row${r.via ? ` (linked through the join table ${r.via.table}; set and disconnect delete join rows, delete and deleteMany the rows and their join rows)` : ''}, in this order: set, disconnect, delete, update, updateMany, deleteMany, upsert, create, connect, connectOrCreate.`
        : `Writes to the ${target.name} of this row: exactly one operation.`,
      fields: () => {
        const create = this.createInput(target, `${target.name}CreateWithout${backName}Input`, true, back)
        const data = this.updateInput(target, `${target.name}UpdateWithout${backName}Input`, true, back)
        const where = this.unique(target)
        const wrap = (t: GraphQLInputType): GraphQLInputType => (many ? list(nn(t)) : t)
        const fields: GraphQLInputFieldConfigMap = { create: { type: wrap(create) } }
        if (where) {
          fields['connectOrCreate'] = { type: wrap(this.createOrConnect(target, backName, create, where)) }
          fields['connect'] = { type: wrap(where) }
        }
        if (many) {
          if (where) {
            fields['set'] = { type: list(nn(where)) }
            fields['disconnect'] = { type: list(nn(where)) }
          }
          if (where) {
            fields['delete'] = { type: list(nn(where)) }
            const uw = `${target.name}UpdateWithWhereUniqueWithout${backName}Input`
            fields['update'] = { type: list(nn(this.nestedInput(uw, () => new GraphQLInputObjectType({ name: uw, fields: { where: { type: nn(where) }, data: { type: nn(data) } } })))) }
            const up = `${target.name}UpsertWithWhereUniqueWithout${backName}Input`
            fields['upsert'] = { type: list(nn(this.nestedInput(up, () => new GraphQLInputObjectType({ name: up, fields: { where: { type: nn(where) }, update: { type: nn(data) }, create: { type: nn(create) } } })))) }
          }
          const um = `${target.name}UpdateManyWithWhereWithout${backName}Input`
          const umData = this.updateInput(target, `${target.name}UncheckedUpdateManyWithout${backName}Input`, false, back)
          fields['updateMany'] = { type: list(nn(this.nestedInput(um, () => new GraphQLInputObjectType({ name: um, fields: { where: { type: nn(this.scalarWhere(target)) }, data: { type: nn(umData) } } })))) }
          fields['deleteMany'] = { type: list(nn(this.scalarWhere(target))) }
          return fields
        }
        fields['update'] = { type: data }
        const up = `${target.name}UpsertWithout${backName}Input`
        fields['upsert'] = { type: this.nestedInput(up, () => new GraphQLInputObjectType({ name: up, fields: { update: { type: nn(data) }, create: { type: nn(create) } } })) }
        if (!required) {
          fields['disconnect'] = { type: GraphQLBoolean }
          fields['delete'] = { type: GraphQLBoolean }
        }
        return fields
      },
    }))
  }

  /**
   * The nested-write input of relation `r` of `m`: `TCreateNestedOneWithout<Back>Input` (`create`,
   * `connect`, `connectOrCreate`, exactly one) or `TCreateNestedManyWithout<Back>Input` (lists of each).
   */
  private relationWriteInput(m: Model, r: Relation): GraphQLInputObjectType {
    const target = this.model(r.target)
    const back = this.backRelation(m, r)!
    const backName = this.backName(m, r)
    const many = r.kind === 'many'
    const name = `${target.name}CreateNested${many ? 'Many' : 'One'}Without${backName}Input`
    const cached = this.nestedInputs.get(name)
    if (cached) return cached
    const create = this.createInput(target, `${target.name}CreateWithout${backName}Input`, true, back)
    const where = this.unique(target)
    const wrap = (t: GraphQLInputObjectType): GraphQLInputType => (many ? list(nn(t)) : t)
    const t = new GraphQLInputObjectType({
      name,
      // Left open in stored operations' JSON Schemas (operations/json-schema.ts): expanded, it would nest every related model.
      extensions: { [EXT]: { nestedWrite: true } },
      description: r.via
        ? `Rows of ${target.name} to create, connect (a row of the join table each), or connect when found and create otherwise.`
        : many
        ? `Rows of ${target.name} to create, connect (set their foreign key to this row), or connect when found and create otherwise.`
        : r.holdsKey
          ? `The ${target.name} this row points to: create it, connect an existing one, or connect when found and create otherwise. Exactly one.`
          : `The ${target.name} that points to this row: create it, connect an existing one (its foreign key is set to this row), or connect when found and create otherwise. Exactly one.`,
      fields: () => {
        const fields: GraphQLInputFieldConfigMap = { create: { type: wrap(create) } }
        if (where) {
          fields['connect'] = { type: wrap(where) }
          fields['connectOrCreate'] = { type: wrap(this.createOrConnect(target, backName, create, where)) }
        }
        return fields
      },
    })
    this.nestedInputs.set(name, t)
    return t
  }

  /**
   * `XUpdateInput` (nested: true, relation fields take nested writes), `XUpdateManyMutationInput`, or
   * the update input of a row under a relation (`without`: the relation of `m` back to the parent,
   * left out, and its key fields when `m` holds it: `XUpdateWithout<Back>Input`,
   * `XUncheckedUpdateManyWithout<Back>Input`).
   */
  private updateInput(m: Model, name: string, nested = false, without?: Relation): GraphQLInputObjectType {
    const make = (): GraphQLInputObjectType => new GraphQLInputObjectType({
      name,
      fields: () => {
        const omitted = new Set(without?.holdsKey ? without.fromFields : [])
        const fields: GraphQLInputFieldConfigMap = Object.fromEntries(m.fields.filter((f) => !f.generated && !omitted.has(f.name)).map((f) => [f.name, { type: this.updateOp(f) }]))
        if (nested) for (const r of this.nestedRelations(m)) if (r !== without) fields[r.name] = { type: this.relationUpdateInput(m, r) }
        return fields
      },
    })
    return without ? this.nestedInput(name, make) : make()
  }

  build(rawSql: boolean): GraphQLSchema {
    const query: GraphQLFieldConfigMap<unknown, unknown> = {}
    const mutation: GraphQLFieldConfigMap<unknown, unknown> = {}
    const subscription: GraphQLFieldConfigMap<unknown, unknown> = {}
    for (const m of this.reg.models.values()) {
      const obj = this.object(m)
      if (this.changes && m.kind === 'table' && m.primaryKey.length > 0 && this.changes.tables.has(m.table)) {
        Object.assign(subscription, changeFields(this.rt, m, obj, this.where(m), this.fieldEnum(m), this.changes))
      }
      const q = makeQueryResolvers(this.rt, m)
      const u = this.unique(m)
      const ext = { [EXT]: { model: m.name }, ...this.reads(m) }
      const direct = (kind: DirectFieldKind): { [EXT]: DirectFieldExtension } => ({ [EXT]: { model: m.name, kind, direct: createDirectCompiler(this.rt, m, kind) } })
      if (u) query[`findUnique${m.name}`] = { type: obj, args: { where: { type: nn(u) } }, resolve: q['findUnique'], extensions: direct('findUnique') }
      query[`findFirst${m.name}`] = { type: obj, args: this.listArgs(m), resolve: q['findFirst'], extensions: direct('findFirst') }
      // A model with a primary key is a Federation entity keyed by it (compose/subgraph.ts).
      const entity = m.primaryKey.length ? { [ENTITY_EXTENSION]: { key: m.primaryKey } satisfies EntityFieldExtension } : {}
      query[`findMany${m.name}`] = { type: nn(list(nn(obj))), args: this.listArgs(m), resolve: q['findMany'], extensions: { ...direct('findMany'), ...entity } }
      if (m.identity.length > 0) query[`${m.name[0]!.toLowerCase()}${m.name.slice(1)}Connection`] = this.connectionField(m, q['connection']!, ext)
      const agg = this.aggregateTypes(m)
      const aggArgs: GraphQLFieldConfigArgumentMap = { where: { type: this.where(m) }, orderBy: { type: list(nn(this.orderBy(m))) } }
      if (u) aggArgs['cursor'] = { type: u }
      aggArgs['take'] = this.takeArg('window')
      aggArgs['skip'] = this.skipArg()
      query[`aggregate${m.name}`] = { type: nn(agg.aggregate), args: aggArgs, resolve: q['aggregate'], extensions: ext }
      query[`groupBy${m.name}`] = {
        type: nn(list(nn(agg.groupBy))),
        args: {
          by: { type: nn(list(nn(this.fieldEnum(m)))) },
          where: { type: this.where(m) },
          having: { type: agg.having },
          orderBy: { type: list(nn(agg.orderAgg)) },
          take: this.takeArg('groups'),
          skip: this.skipArg(),
        },
        resolve: q['groupBy'],
        extensions: ext,
      }
      if (m.kind !== 'table') continue
      const bodies = makeMutationResolvers(this.rt, m)
      const mapError = (err: unknown): unknown => mapDbError(err, this.reg.dialect, this.reg, m)
      const w = Object.fromEntries(Object.entries(bodies).map(([k, body]) => [k, { rt: this.rt, body, mapError }])) as Record<MutationKind, WriteField>
      // Mutation fields are nullable: a failed field is null with its error, its neighbours keep their data.
      const mut = (kind: MutationKind, type: GraphQLOutputType, args: GraphQLFieldConfigArgumentMap): GraphQLFieldConfig<unknown, unknown> => ({
        type,
        args,
        resolve: writeResolver(w[kind]),
        extensions: { [EXT]: { model: m.name, write: w[kind] }, ...this.reads(m) },
      })
      const create = this.createInput(m, `${m.name}CreateInput`, true)
      const update = this.updateInput(m, `${m.name}UpdateInput`, true)
      mutation[`createOne${m.name}`] = mut('createOne', obj, { data: { type: nn(create) } })
      mutation[`createMany${m.name}`] = mut('createMany', this.affectedRows, {
        data: { type: nn(list(nn(this.createInput(m, `${m.name}CreateManyInput`)))) },
        skipDuplicates: { type: GraphQLBoolean, description: 'Skip rows that conflict with a unique or primary key (and only those).' },
      })
      if (u && m.identity.length > 0) mutation[`updateOne${m.name}`] = mut('updateOne', obj, { data: { type: nn(update) }, where: { type: nn(u) } })
      mutation[`updateMany${m.name}`] = mut('updateMany', this.affectedRows, { data: { type: nn(this.updateInput(m, `${m.name}UpdateManyMutationInput`)) }, where: { type: this.where(m) } })
      if (u && m.identity.length > 0) mutation[`upsertOne${m.name}`] = mut('upsertOne', obj, { where: { type: nn(u) }, create: { type: nn(create) }, update: { type: nn(update) } })
      if (u) mutation[`deleteOne${m.name}`] = mut('deleteOne', obj, { where: { type: nn(u) } })
      mutation[`deleteMany${m.name}`] = mut('deleteMany', this.affectedRows, { where: { type: this.where(m) } })
    }
    for (const fn of this.reg.functions.values()) {
      const { type, args } = this.functionField(fn)
      if (fn.operation === 'query') {
        query[fn.name] = { type, args, description: `Stable database function \`${fn.fn}\`.`, resolve: makeFunctionResolver(this.rt, fn) }
      } else {
        // In the request's transaction on this database, with its other mutation fields.
        const write = makeFunctionWrite(this.rt, fn)
        mutation[fn.name] = { type, args, description: `Volatile database function \`${fn.fn}\`.`, resolve: writeResolver(write), extensions: { [EXT]: { write } } }
      }
    }
    if (rawSql) this.addRawFields(query, mutation)
    return new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: query }),
      ...(Object.keys(mutation).length > 0 ? { mutation: new GraphQLObjectType({ name: 'Mutation', fields: mutation }) } : {}),
      ...(Object.keys(subscription).length > 0 ? { subscription: new GraphQLObjectType({ name: 'Subscription', fields: subscription }) } : {}),
    })
  }

  /** `queryRaw` and `executeRaw`: only with the source's `rawSql: true` (any SQL from any client). */
  private addRawFields(query: GraphQLFieldConfigMap<unknown, unknown>, mutation: GraphQLFieldConfigMap<unknown, unknown>): void {
    const raw = makeRawResolvers(this.rt)
    query['queryRaw'] = {
      type: JSONScalar,
      description: 'Runs a SQL query and returns its rows as a JSON array. Placeholders: `?` with `parameters` a JSON array, or `:name` with an object. Values are always bound.',
      args: { query: { type: nn(GraphQLString) }, parameters: { type: JSONScalar } },
      resolve: raw.queryRaw,
    }
    const write: WriteField = { rt: this.rt, body: raw.executeRaw, mapError: (err) => err }
    mutation['executeRaw'] = {
      type: GraphQLInt,
      description: 'Runs a SQL statement and returns the number of affected rows. Placeholders as for `queryRaw`. Runs in the request\'s transaction on this database.',
      args: { query: { type: nn(GraphQLString) }, parameters: { type: JSONScalar } },
      resolve: writeResolver(write),
      extensions: { [EXT]: { write } },
    }
  }
}
