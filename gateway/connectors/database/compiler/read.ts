/**
 * The read compiler: a root field's whole selection set (nested relations with their own arguments,
 * fragments, aliases) becomes ONE SQL statement that builds the result with the engine's JSON
 * functions. Also compiles `where` filters, `orderBy`, `cursor`, `distinct` and `take`/`skip`.
 *
 * Shapes of the SQL, with `J(x)` the engine's JSON object over alias `x`:
 * - root lists: `SELECT J(t0) FROM table t0 WHERE … ORDER BY … LIMIT ? OFFSET ?` (one row per result);
 * - nested lists: `(SELECT json_agg(J(t1) ORDER BY …) FROM table t1 WHERE t1.fk = t0.pk AND …)`, with a
 *   derived table for take/skip/distinct (MariaDB: `JSON_ARRAYAGG(… ORDER BY … LIMIT …)` instead);
 * - nested objects: `(SELECT J(t1) FROM table t1 WHERE t1.pk = t0.fk)`.
 */
import {
  Kind,
  getNamedType,
  isObjectType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
  type DirectiveNode,
} from 'graphql'
import { DbInputError } from '../../../errors.js'
import { toIsoDateTime } from '../../../scalars.js'
import { MAX_FLAT_TERMS, checkBoundValues, skipCheck, takeCheck } from './input-limits.js'
import { Leaf, NULL, isObj, listLeaf, readArgs, sampleOf, type ArgValue } from './args.js'
import type { SqlDialect } from './dialect.js'
import { constant, join, param, raw, sql, type Frag, type Getter, type Vars } from './frag.js'
import type { FunctionArg, FunctionModel, Model, Registry, Relation, ScalarField } from './registry.js'
import { relevanceExpr, searchCondition, searchText, type SearchSite } from './fulltext.js'
import { LINK_EXTENSION, type LinkFieldExtension } from '../../types.js'

/** Compile-time state of one plan. */
export interface Ctx {
  reg: Registry
  d: SqlDialect
  schema: GraphQLSchema
  fragments: Record<string, FragmentDefinitionNode>
  vars: Vars
  /** Next table alias number. */
  n: number
  /** Set when a row filter was compiled into the plan: its statement binds the request's identity (row-filter.ts). */
  rowFiltered?: boolean
  /** True while the row filter itself is compiled (its relation subqueries are not filtered again). */
  inRowFilter?: boolean
  /** Set when a relation filter of the request (not of a row filter) was compiled into the plan: a correlated subquery per row filtered. */
  relationFiltered?: boolean
  /**
   * Derived-table aliases of {@link compileList} whose rows are a model's: a computed field on them
   * reads the whole row from their `__row` column (set to true when one does, so that the derived
   * table projects it).
   */
  derivedRows?: Map<string, boolean>
  /** Set when a computed field (a database function of the row) was compiled into the plan: see {@link computedPlans}. */
  computed?: boolean
}

/**
 * Plans that call computed fields' functions: an error the function raises (SQLSTATE class 22 or
 * P0) is the caller's input there, `TRB_ERR_DB_VALUE` (resolvers.ts), as for function root fields.
 */
export const computedPlans = new WeakSet<ReadPlan>()

/** Fixes the JSON values of one object level of a result in place (booleans, dates, bytes...). */
export type Post = (o: Record<string, unknown>) => void

/** Where a nested connection's rows are: correlated with the parent row (connection.ts). */
export interface NestedScope {
  /** The relation's condition on the target's row alias. */
  correlate: (alias: string) => Frag
  /** The target's columns the correlation compares (a direct relation; absent through a join table). */
  partitionBy?: readonly string[]
}

/**
 * `extensions.tributary.connection` of a nested connection field (`<relation>Connection`, set by
 * build-schema.ts): compiles it into a JSON object expression of the parent's statement, with the
 * post-processing that turns it into the connection value. Kept on the field so that this module
 * does not import connection.ts (which imports it).
 */
export type NestedConnectionCompiler = (ctx: Ctx, target: Model, type: GraphQLObjectType, nodes: readonly FieldNode[], args: Record<string, ArgValue>, scope: NestedScope) => { frag: Frag; post: Post | null }

/** Extension key under which types and fields carry their SQL names. */
export const EXT = 'tributary'

/** `extensions.tributary` of a model's object type. */
export interface ModelTypeExtension {
  model: string
  table: string
}

/** Returns the model an object type stands for, through its extensions (never its name). */
export function modelOfType(reg: Registry, type: unknown): Model | undefined {
  if (!isObjectType(type)) return undefined
  const ext = (type.extensions as Record<string, unknown>)[EXT] as ModelTypeExtension | undefined
  return ext ? reg.models.get(ext.model) : undefined
}

/** A fresh table alias. */
export function newAlias(ctx: Ctx): string {
  return `t${ctx.n++}`
}

/** Wraps values that are not lists in a one-item list, dropping nulls. */
export function listOf(v: ArgValue | undefined): ArgValue[] {
  if (v === undefined || v === NULL) return []
  return (Array.isArray(v) ? v : [v]).filter((x) => x !== NULL)
}

/** A bound parameter for a leaf, converted by `conv` (at compile time for literals). */
export function bound(leaf: Leaf, conv: (v: unknown) => unknown): Frag {
  if (leaf.constant) return constant(conv(leaf.constant.value))
  const g = leaf.get
  return param((v, x) => conv(g(v, x)))
}

/**
 * Joins conditions with `op`. More than {@link MAX_FLAT_TERMS} terms are grouped into a balanced tree
 * of parentheses, so that a wide `AND`/`OR` list does not make an expression tree deeper than the
 * engine allows (SQLite: 1000).
 */
function combine(parts: Frag[], op: string): Frag {
  if (parts.length === 1) return parts[0]!
  if (parts.length > MAX_FLAT_TERMS) {
    const size = Math.ceil(parts.length / MAX_FLAT_TERMS)
    const groups: Frag[] = []
    for (let i = 0; i < parts.length; i += size) groups.push(combine(parts.slice(i, i + size), op))
    return combine(groups, op)
  }
  return join(parts.map((p) => sql`(${p})`), op)
}

function and(parts: Frag[]): Frag {
  return combine(parts, ' AND ')
}

function or(parts: Frag[]): Frag {
  return combine(parts, ' OR ')
}

function col(ctx: Ctx, alias: string, f: ScalarField): string {
  return `${alias}.${ctx.d.q(f.column)}`
}

function fieldOf(model: Model, name: string): ScalarField {
  const f = model.fieldMap.get(name)
  if (!f) throw new DbInputError(`Unknown field ${model.name}.${name}`)
  return f
}

/**
 * `target.to = source.from` for each column pair of a relation. For a many-to-many shortcut, the
 * target row's key is in the join table's rows of the source row:
 * `talias.k IN (SELECT j.target_k FROM join j WHERE j.source_k = alias.k)` (row values for compound keys).
 */
export function joinCond(ctx: Ctx, rel: Relation, model: Model, alias: string, target: Model, talias: string): string {
  if (rel.via) {
    const q = (c: string): string => ctx.d.q(c)
    const j = newAlias(ctx)
    const tcols = rel.toFields.map((f) => `${talias}.${q(fieldOf(target, f).column)}`)
    const jt = rel.via.targetColumns.map((c) => `${j}.${q(c)}`)
    const corr = rel.via.sourceColumns.map((c, i) => `${j}.${q(c)} = ${alias}.${q(fieldOf(model, rel.fromFields[i]!).column)}`).join(' AND ')
    const lhs = tcols.length === 1 ? tcols[0]! : `(${tcols.join(', ')})`
    return `${lhs} IN (SELECT ${jt.join(', ')} FROM ${ctx.d.table(rel.via.table)} AS ${j} WHERE ${corr})`
  }
  return rel.fromFields
    .map((from, i) => `${talias}.${ctx.d.q(fieldOf(target, rel.toFields[i]!).column)} = ${alias}.${ctx.d.q(fieldOf(model, from).column)}`)
    .join(' AND ')
}

/** {@link ListOptions.partitionBy} of a to-many relation: the target's key columns of a direct relation; none through a join table. */
export function partitionOf(rel: Relation, target: Model): { partitionBy?: string[] } {
  return rel.via ? {} : { partitionBy: rel.toFields.map((f) => fieldOf(target, f).column) }
}

// ---------------------------------------------------------------------------------------------
// row filters

/**
 * The row filter of `model` (config `permissions.<Type>.filter`, row-filter.ts) on the rows aliased
 * `alias`, or null when the model has none. Every statement that reads or writes rows of the model
 * ANDs it: root lists, nested lists and objects, `_count`, relation filters, relation order terms,
 * cursors, aggregates and the mutations' statements. With `bypassRoles` it is `(? = 1 OR (filter))`,
 * the flag bound per request. Marks `ctx.rowFiltered`.
 */
export function rowFilterCond(ctx: Ctx, model: Model, alias: string): Frag | null {
  const rf = ctx.reg.rowFilters.get(model.name)
  if (!rf || ctx.inRowFilter) return null
  ctx.rowFiltered = true
  ctx.inRowFilter = true
  let w: Frag | null
  try {
    w = compileWhere(ctx, model, alias, rf.where)
  } finally {
    ctx.inRowFilter = false
  }
  if (rf.bypass) return sql`(${param(rf.bypass)} = 1 OR (${w ?? raw('1=1')}))`
  return w
}

/**
 * `cond AND (row filter of model on alias)`: the condition of a subquery over the model's table
 * (a join condition, a unique key), with the filter when the model has one.
 */
export function andRowFilter(ctx: Ctx, model: Model, alias: string, cond: string | Frag): Frag {
  const f = rowFilterCond(ctx, model, alias)
  const c = typeof cond === 'string' ? raw(cond) : cond
  return f ? sql`${c} AND (${f})` : c
}

/**
 * The model's row filter AND the client's `where` on `alias` (either may be absent): what aggregates,
 * `updateMany` and `deleteMany` put after `WHERE`. Null when both are absent.
 */
export function filteredWhere(ctx: Ctx, model: Model, alias: string, where: ArgValue | undefined): Frag | null {
  const f = rowFilterCond(ctx, model, alias)
  const w = compileWhere(ctx, model, alias, where)
  return f && w ? sql`(${f}) AND (${w})` : (f ?? w)
}

// ---------------------------------------------------------------------------------------------
// where

/** What a scalar filter tests: an SQL expression and the scalar kind of its values. */
export interface FilterTarget {
  expr: string
  scalar: ScalarField['scalar']
  dataType: string
  /** SQLite DateTime: the column's stored format (bound values are written in it). */
  dateTimeFormat?: string
  /** A model's column (not an aggregate): where `search` finds its full-text index (fulltext.ts). */
  site?: SearchSite
}

const COMPARE: Record<string, string> = { lt: '<', lte: '<=', gt: '>', gte: '>=' }

/**
 * Compiles a scalar filter (`IntFilter`, `StringFilter`...; docs/architecture.md §4) on one expression.
 * `equals: null` is `IS NULL`, `not: null` is `IS NOT NULL`, `in: []` matches nothing.
 */
export function scalarFilter(ctx: Ctx, tgt: FilterTarget, val: ArgValue, inheritedInsensitive = false): Frag | null {
  const d = ctx.d
  if (val === NULL) return raw(`${tgt.expr} IS NULL`)
  if (val instanceof Leaf) return scalarFilter(ctx, tgt, { equals: val }, inheritedInsensitive)
  if (!isObj(val)) return null
  const mode = val['mode']
  const insensitive = mode !== undefined ? sampleOf(mode) === 'insensitive' : inheritedInsensitive
  const isString = tgt.scalar === 'String'
  const ci = insensitive && isString
  if (ci && tgt.dataType === 'tsvector') throw new DbInputError('`mode: insensitive` does not apply to a tsvector column: filter it with `search` (full-text search)')
  const conv = (v: unknown): unknown => (v === null || v === undefined ? null : d.bindValue(tgt, v, true))
  let lhs = tgt.expr
  let rhs = '?'
  if (tgt.scalar === 'JSON') {
    if (d.dialect === 'postgres') {
      lhs = `${lhs}::jsonb`
      rhs = '?::jsonb'
    } else if (d.dialect === 'sqlite') {
      lhs = `json(${lhs})`
      rhs = 'json(?)'
    } else {
      lhs = `JSON_COMPACT(${lhs})`
      rhs = 'JSON_COMPACT(?)'
    }
  }
  const cmp = (op: string, leaf: Leaf): Frag => {
    const p = bound(leaf, conv)
    const text = isString ? d.stringCompare(lhs, op, ci, rhs) : `${lhs} ${op} ${rhs}`
    return { s: text, p: p.p }
  }
  const parts: Frag[] = []
  for (const [op, v] of Object.entries(val)) {
    switch (op) {
      case 'equals':
        if (v === NULL) parts.push(raw(`${tgt.expr} IS NULL`))
        else if (v instanceof Leaf) parts.push(cmp('=', v))
        break
      case 'in':
      case 'notIn': {
        const items = listOf(v).filter((x): x is Leaf => x instanceof Leaf)
        if (items.length === 0) {
          if (op === 'in') parts.push(raw('1=0'))
          break
        }
        const ps = items.map((leaf) => {
          const p = bound(leaf, conv)
          const text = ci ? `LOWER(${rhs})` : isString && d.dialect === 'mysql' ? `BINARY ${rhs}` : rhs
          return { s: text, p: p.p }
        })
        const left = ci ? `LOWER(${lhs})` : lhs
        parts.push(sql`${left} ${op === 'in' ? 'IN' : 'NOT IN'} (${join(ps, ', ')})`)
        break
      }
      case 'lt':
      case 'lte':
      case 'gt':
      case 'gte':
        if (v instanceof Leaf) parts.push(cmp(COMPARE[op]!, v))
        break
      case 'search':
        if (v instanceof Leaf) parts.push(searchCondition(d, lhs, tgt.dataType, tgt.site, bound(v, searchText)))
        break
      case 'contains':
      case 'startsWith':
      case 'endsWith':
        if (tgt.dataType === 'tsvector') throw new DbInputError(`\`${op}\` does not apply to a tsvector column: filter it with \`search\` (full-text search)`)
        if (v instanceof Leaf) {
          const kind = op
          const p = bound(v, (x) => (x === null || x === undefined ? null : d.likePattern(String(x), kind, ci)))
          parts.push({ s: d.like(lhs, ci), p: p.p })
        }
        break
      case 'not':
        if (v === NULL) parts.push(raw(`${tgt.expr} IS NOT NULL`))
        else {
          const inner = scalarFilter(ctx, tgt, v, insensitive)
          if (inner) parts.push(sql`NOT (${inner})`)
        }
        break
      default:
        break
    }
  }
  return parts.length ? and(parts) : null
}

/**
 * A bound list value: the list's items (leaves) read at run time into one array, converted item by
 * item for column `f`; NULL items stay null.
 */
export function boundList(ctx: Ctx, f: Pick<ScalarField, 'scalar' | 'dataType'>, v: ArgValue): Frag {
  return bound(listLeaf(Array.isArray(v) ? v : [v]), (x) => ctx.d.bindValue({ ...f, list: true }, x, true))
}

/**
 * Prisma's scalar-list filters on a PostgreSQL array column: `equals` (same items in the same order;
 * `equals: null` is IS NULL), `has` (`? = ANY(c)`), `hasEvery` (`c @> ?`), `hasSome` (`c && ?`),
 * `isEmpty` (`(cardinality(c) = 0) = ?`). Several operators are ANDed.
 */
function listFilter(ctx: Ctx, colRef: string, f: ScalarField, val: ArgValue): Frag | null {
  if (val === NULL) return raw(`${colRef} IS NULL`)
  if (!isObj(val)) return null
  // Unknown element types are read and compared as text[].
  const c = ctx.d.listCompareExpr(colRef, f)
  const parts: Frag[] = []
  for (const [op, v] of Object.entries(val)) {
    if (op === 'equals') parts.push(v === NULL ? raw(`${colRef} IS NULL`) : sql`${c} = ${boundList(ctx, f, v)}`)
    else if (op === 'has') {
      if (v === NULL) parts.push(raw('1=0'))
      else if (v instanceof Leaf) parts.push(sql`${bound(v, (x) => ctx.d.bindValue(f, x, true))} = ANY(${c})`)
    } else if (op === 'hasEvery' && v !== NULL) parts.push(sql`${c} @> ${boundList(ctx, f, v)}`)
    else if (op === 'hasSome' && v !== NULL) parts.push(sql`${c} && ${boundList(ctx, f, v)}`)
    else if (op === 'isEmpty' && v instanceof Leaf) parts.push(sql`(cardinality(${colRef}) = 0) = ${bound(v, (x) => x === true)}`)
  }
  return parts.length ? and(parts) : null
}

function relationFilter(ctx: Ctx, model: Model, alias: string, rel: Relation, val: ArgValue): Frag | null {
  if (!ctx.inRowFilter) ctx.relationFiltered = true
  const target = ctx.reg.models.get(rel.target)!
  const tableRef = ctx.d.table(target.table)
  /** `[NOT] EXISTS (SELECT 1 FROM target r WHERE join AND cond)`; `every` tests `(cond) IS NOT TRUE`. */
  const exists = (where: ArgValue | null, negate: boolean, condNotTrue = false): Frag | null => {
    const r = newAlias(ctx)
    const cond = where === null ? null : compileWhere(ctx, target, r, where)
    if (condNotTrue && !cond) return null
    const c = cond ? (condNotTrue ? sql` AND (${cond}) IS NOT TRUE` : sql` AND (${cond})`) : raw('')
    return sql`${negate ? 'NOT ' : ''}EXISTS (SELECT 1 FROM ${tableRef} AS ${r} WHERE ${andRowFilter(ctx, target, r, joinCond(ctx, rel, model, alias, target, r))}${c})`
  }
  const isNull = (): Frag =>
    rel.holdsKey ? raw(rel.fromFields.map((f) => `${col(ctx, alias, fieldOf(model, f))} IS NULL`).join(' OR ')) : exists(null, true)!
  if (val === NULL) return rel.kind === 'one' ? isNull() : null
  if (!isObj(val)) return null
  const parts: (Frag | null)[] = []
  for (const [op, v] of Object.entries(val)) {
    if (rel.kind === 'many') {
      const w = isObj(v) ? v : null
      if (op === 'some') parts.push(exists(w, false))
      else if (op === 'none') parts.push(exists(w, true))
      else if (op === 'every' && w) parts.push(exists(w, true, true))
    } else if (op === 'is') {
      if (v === NULL) parts.push(isNull())
      else if (isObj(v)) parts.push(exists(v, false))
    } else if (op === 'isNot') {
      if (v === NULL) parts.push(sql`NOT (${isNull()})`)
      else if (isObj(v)) parts.push(exists(v, true))
    }
  }
  const ok = parts.filter((p): p is Frag => p !== null)
  return ok.length ? and(ok) : null
}

/**
 * Compiles an `XWhereInput` on the table aliased `alias`: scalar filters, `AND`/`OR`/`NOT`
 * (Prisma semantics: `OR: []` matches nothing) and relation filters (`some every none is isNot`).
 * @returns null when the filter is empty (matches everything)
 */
export function compileWhere(ctx: Ctx, model: Model, alias: string, w: ArgValue | undefined): Frag | null {
  if (!isObj(w)) return null
  const parts: Frag[] = []
  for (const [key, val] of Object.entries(w)) {
    if (key === 'AND') {
      const xs = listOf(val).map((x) => compileWhere(ctx, model, alias, x)).filter((x): x is Frag => x !== null)
      if (xs.length) parts.push(and(xs))
    } else if (key === 'OR') {
      const items = listOf(val)
      if (items.length === 0) parts.push(raw('1=0'))
      else parts.push(or(items.map((x) => compileWhere(ctx, model, alias, x) ?? raw('1=1'))))
    } else if (key === 'NOT') {
      for (const x of listOf(val)) {
        const c = compileWhere(ctx, model, alias, x)
        if (c) parts.push(sql`NOT (${c})`)
      }
    } else {
      const f = model.fieldMap.get(key)
      if (f?.list) {
        const c = listFilter(ctx, col(ctx, alias, f), f, val)
        if (c) parts.push(c)
        continue
      }
      if (f) {
        const site: SearchSite = { field: f, model, alias, newAlias: () => newAlias(ctx) }
        const c = scalarFilter(ctx, { expr: ctx.d.compareExpr(col(ctx, alias, f), f), scalar: f.scalar, dataType: f.dataType, ...(f.dateTimeFormat ? { dateTimeFormat: f.dateTimeFormat } : {}), site }, val)
        if (c) parts.push(c)
        continue
      }
      const rel = model.relations.get(key)
      if (rel) {
        const c = relationFilter(ctx, model, alias, rel, val)
        if (c) parts.push(c)
        continue
      }
      const cf = sortableComputed(model, key)
      if (cf) {
        const c = scalarFilter(ctx, { expr: computedCall(ctx, cf, alias), scalar: cf.returns.scalar, dataType: cf.returns.dataType }, val)
        if (c) parts.push(c)
      }
    }
  }
  return parts.length ? and(parts) : null
}

/**
 * A computed field of `model` usable in `where` and `orderBy` (`isSortableComputed`), by name, or
 * undefined. It is called with the row alone, its other arguments keeping their defaults.
 */
function sortableComputed(model: Model, name: string): (FunctionModel & { returns: { kind: 'scalar' } }) | undefined {
  const cf = model.computed?.get(name)
  return cf && isSortableComputed(cf) ? cf : undefined
}

/**
 * True when a computed field may be filtered and sorted on: it returns one scalar (not a list,
 * not `SETOF`) and every argument after the row has a default (`fn(t0.*)` alone is a value).
 */
export function isSortableComputed(fn: FunctionModel): fn is FunctionModel & { returns: { kind: 'scalar' } } {
  return fn.returns.kind === 'scalar' && !fn.returns.list && !fn.returnsSet && fn.args.every((a) => a.optional)
}

/** `fn(alias.*)`: a computed field's call on the row aliased `alias`, its other arguments left to their defaults. */
function computedCall(ctx: Ctx, fn: FunctionModel, alias: string): string {
  ctx.computed = true
  return `${ctx.d.table(fn.fn)}(${alias}.*)`
}

/**
 * Compiles an `XWhereUniqueInput`: equality on the primary key, a unique field, or a compound key
 * (`a_b: { a, b }`). Several keys are ANDed.
 * @throws DbInputError when no unique key is given
 */
export function compileUnique(ctx: Ctx, model: Model, alias: string, w: ArgValue | undefined): Frag {
  const parts: Frag[] = []
  const eq = (f: ScalarField, v: ArgValue): void => {
    const lhs = ctx.d.compareExpr(col(ctx, alias, f), f)
    if (v === NULL) parts.push(raw(`${lhs} IS NULL`))
    else if (v instanceof Leaf) {
      const p = bound(v, (x) => ctx.d.bindValue(f, x, true))
      parts.push({ s: `${lhs} = ?`, p: p.p })
    }
  }
  if (isObj(w)) {
    for (const [key, v] of Object.entries(w)) {
      const uk = model.uniqueKeys.find((u) => u.name === key)
      if (!uk) continue
      if (uk.fields.length === 1) eq(fieldOf(model, uk.fields[0]!), v)
      else if (isObj(v)) for (const fname of uk.fields) if (v[fname] !== undefined) eq(fieldOf(model, fname), v[fname]!)
    }
  }
  if (parts.length === 0) throw new DbInputError(`The unique filter of ${model.name} needs at least one of: ${model.uniqueKeys.map((u) => u.name).join(', ')}`)
  return and(parts)
}

// ---------------------------------------------------------------------------------------------
// orderBy, cursor

/** One ORDER BY term, buildable on any alias (the cursor compares the same terms on the cursor row). */
export interface Term {
  build(alias: string): Frag
  dir: 'asc' | 'desc'
  field?: string
  /** The term is a NOT NULL column of the model's own table (never NULL): see {@link SqlDialect.orderTerm}. */
  notNull?: boolean
}

function dirOf(v: ArgValue): 'asc' | 'desc' | null {
  const s = sampleOf(v)
  return s === 'asc' || s === 'desc' ? s : null
}

/**
 * Compiles `orderBy: [XOrderByWithRelationInput!]`: scalar fields, many-to-one relations' fields,
 * `{ relation: { _count } }` and `_relevance: { fields, search, sort }` (fulltext.ts).
 */
export function compileOrder(ctx: Ctx, model: Model, ob: ArgValue | undefined): Term[] {
  const terms: Term[] = []
  for (const item of listOf(ob)) {
    if (!isObj(item)) continue
    for (const [key, v] of Object.entries(item)) {
      if (key === '_relevance') {
        if (!isObj(v)) continue
        const dir = dirOf(v['sort'])
        const search = v['search']
        const fields = listOf(v['fields']).map(sampleOf).filter((x): x is string => typeof x === 'string')
        if (!dir || !(search instanceof Leaf)) continue
        if (fields.length === 0) throw new DbInputError('`_relevance` needs at least one field')
        terms.push({ dir, build: (a) => relevanceExpr(ctx.d, model, a, fields, bound(search, searchText), () => newAlias(ctx)) })
        continue
      }
      const f = model.fieldMap.get(key)
      if (f) {
        const dir = dirOf(v)
        if (dir) terms.push({ build: (a) => raw(col(ctx, a, f)), dir, field: key, notNull: !f.nullable })
        continue
      }
      const cf = sortableComputed(model, key)
      if (cf) {
        const dir = dirOf(v)
        if (dir) terms.push({ build: (a) => raw(computedCall(ctx, cf, a)), dir })
        continue
      }
      const rel = model.relations.get(key)
      if (!rel || !isObj(v)) continue
      const target = ctx.reg.models.get(rel.target)!
      const tableRef = ctx.d.table(target.table)
      if (rel.kind === 'one') {
        for (const nt of compileOrder(ctx, target, v)) {
          terms.push({
            dir: nt.dir,
            build: (a) => {
              const r = newAlias(ctx)
              return sql`(SELECT ${nt.build(r)} FROM ${tableRef} AS ${r} WHERE ${andRowFilter(ctx, target, r, joinCond(ctx, rel, model, a, target, r))})`
            },
          })
        }
      } else if (v['_count'] !== undefined) {
        const dir = dirOf(v['_count'])
        if (dir) {
          terms.push({
            dir,
            build: (a) => {
              const r = newAlias(ctx)
              return sql`(SELECT COUNT(*) FROM ${tableRef} AS ${r} WHERE ${andRowFilter(ctx, target, r, joinCond(ctx, rel, model, a, target, r))})`
            },
          })
        }
      }
    }
  }
  return terms
}

/** Appends the model's identity (primary key) fields, ascending, as a tie-breaker so that every engine orders alike. */
export function withTiebreak(ctx: Ctx, model: Model, terms: Term[]): Term[] {
  const out = [...terms]
  for (const name of model.identity) {
    if (out.some((t) => t.field === name)) continue
    const f = fieldOf(model, name)
    out.push({ build: (a) => raw(col(ctx, a, f)), dir: 'asc', field: name, notNull: !f.nullable })
  }
  return out
}

/** Prisma's cursor: rows from the cursor row on (inclusive), in the order of `terms`. */
export function cursorCond(ctx: Ctx, model: Model, alias: string, cursor: ArgValue, terms: Term[]): Frag {
  const tableRef = ctx.d.table(model.table)
  if (terms.length === 0) return compileUnique(ctx, model, alias, cursor)
  const cval = (t: Term): Frag => {
    const c = newAlias(ctx)
    return sql`(SELECT ${t.build(c)} FROM ${tableRef} AS ${c} WHERE ${andRowFilter(ctx, model, c, compileUnique(ctx, model, c, cursor))})`
  }
  const build = (i: number): Frag => {
    const t = terms[i]!
    const op = t.dir === 'asc' ? '>' : '<'
    if (i === terms.length - 1) return sql`${t.build(alias)} ${op}= ${cval(t)}`
    return sql`(${t.build(alias)} ${op} ${cval(t)} OR (${t.build(alias)} = ${cval(t)} AND ${build(i + 1)}))`
  }
  return build(0)
}

// ---------------------------------------------------------------------------------------------
// selection sets

function skipped(directives: readonly DirectiveNode[] | undefined): boolean {
  if (!directives) return false
  for (const d of directives) {
    const a = d.arguments?.find((x) => x.name.value === 'if')
    // A variable condition selects the field anyway: extra JSON keys are ignored by the executor.
    if (!a || a.value.kind !== Kind.BOOLEAN) continue
    if (d.name.value === 'skip' && a.value.value) return true
    if (d.name.value === 'include' && !a.value.value) return true
  }
  return false
}

/** Collects the fields of a selection set by response key, following fragments whose type condition is this model's type. */
export function collectFields(ctx: Ctx, type: GraphQLObjectType, nodes: readonly FieldNode[]): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>()
  const model = modelOfType(ctx.reg, type)
  const applies = (name: string | undefined): boolean => {
    if (name === undefined) return true
    const t = ctx.schema.getType(name)
    if (t === type) return true
    return model !== undefined && modelOfType(ctx.reg, t) === model
  }
  // A fragment is collected once per call, however often it is spread (graphql-js' CollectFields,
  // spec §6.3.2 visitedFragments): spreading the same fragment twice adds nothing, and a fragment
  // that spreads the next one twice, 30 levels deep, is not expanded 2^30 times.
  const seen = new Set<string>()
  const visit = (set: SelectionSetNode | undefined): void => {
    if (!set) return
    for (const sel of set.selections) {
      if (skipped(sel.directives)) continue
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value
        const list = out.get(key)
        if (list) list.push(sel)
        else out.set(key, [sel])
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        if (applies(sel.typeCondition?.name.value)) visit(sel.selectionSet)
      } else {
        const frag = ctx.fragments[sel.name.value]
        if (!frag || seen.has(sel.name.value)) continue
        seen.add(sel.name.value)
        if (applies(frag.typeCondition.name.value)) visit(frag.selectionSet)
      }
    }
  }
  for (const n of nodes) visit(n.selectionSet)
  return out
}

/** A compiled object level: its JSON expression, the columns it reads from its alias, and its post-processing. */
export interface ObjectSql {
  json: Frag
  cols: Set<string>
  post: Post | null
}

const hexToBase64 = (v: unknown): unknown => (typeof v === 'string' ? Buffer.from(v, 'hex').toString('base64') : v)
const toBool = (v: unknown): unknown => (typeof v === 'boolean' ? v : v === 1 || v === '1' || v === 't' || v === 'true')
const toDate = (v: unknown): unknown => {
  try {
    return toIsoDateTime(v)
  } catch {
    return v
  }
}
const parseJson = (v: unknown): unknown => {
  if (typeof v !== 'string') return v
  try {
    return JSON.parse(v)
  } catch {
    return v
  }
}

/** The conversion a scalar (or, with `list`, each item of a list of it) needs after JSON.parse on this engine, or null. */
export function outputConv(d: SqlDialect, scalar: ScalarField['scalar'], list = false): ((v: unknown) => unknown) | null {
  if (list) {
    const item = outputConv(d, scalar)
    return item ? (v) => (Array.isArray(v) ? v.map((x) => (x === null ? x : item(x))) : v) : null
  }
  switch (scalar) {
    case 'Boolean':
      return d.dialect === 'postgres' ? null : toBool
    case 'DateTime':
      return toDate
    case 'Bytes':
      return hexToBase64
    case 'JSON':
      return d.dialect === 'postgres' ? null : parseJson
    default:
      return null
  }
}

/** Builds the in-place post-processor of one object level from its conversions and nested levels. */
export function makePost(convs: [string, (v: unknown) => unknown][], rels: [string, boolean, Post][]): Post | null {
  if (convs.length === 0 && rels.length === 0) return null
  const nc = convs.length
  const nr = rels.length
  return (o) => {
    for (let i = 0; i < nc; i++) {
      const c = convs[i]!
      const v = o[c[0]]
      if (v !== null && v !== undefined) o[c[0]] = c[1](v)
    }
    for (let i = 0; i < nr; i++) {
      const r = rels[i]!
      const v = o[r[0]]
      if (v === null || v === undefined) continue
      if (r[1]) {
        const list = v as Record<string, unknown>[]
        for (let k = 0; k < list.length; k++) r[2](list[k]!)
      } else r[2](v as Record<string, unknown>)
    }
  }
}

/**
 * Compiles one object level of the selection: scalar fields under their field names, relations
 * under their response keys (aliases), nothing for `__typename` (the executor answers it).
 */
export function compileObject(ctx: Ctx, model: Model, type: GraphQLObjectType, alias: string, nodes: readonly FieldNode[]): ObjectSql {
  const d = ctx.d
  const fields = collectFields(ctx, type, nodes)
  const pairs: [string, Frag][] = []
  const cols = new Set<string>()
  const convs: [string, (v: unknown) => unknown][] = []
  const rels: [string, boolean, Post][] = []
  const seenScalars = new Set<string>()
  const typeFields = type.getFields()
  const addScalar = (name: string, f: ScalarField) => {
    if (seenScalars.has(name)) return
    seenScalars.add(name)
    cols.add(f.column)
    pairs.push([name, raw(d.output(col(ctx, alias, f), f))])
    const conv = outputConv(d, f.scalar, f.list)
    if (conv) convs.push([name, conv])
  }
  for (const [key, fnodes] of fields) {
    const name = fnodes[0]!.name.value
    if (name === '__typename') continue
    const f = model.fieldMap.get(name)
    if (f) {
      addScalar(name, f)
      continue
    }
    const def = typeFields[name]
    const cf = model.computed?.get(name)
    if (cf && def) {
      const c = compileComputed(ctx, model, alias, cf, getNamedType(def.type), readArgs(fnodes[0]!, def.args, ctx.vars), fnodes)
      pairs.push([key, c.frag])
      if (c.conv) convs.push([key, c.conv])
      if (c.post) rels.push([key, c.list, c.post])
      continue
    }
    if (name === '_count' && def) {
      const counts = compileCounts(ctx, model, alias, getNamedType(def.type) as GraphQLObjectType, fnodes, cols)
      pairs.push([key, { s: d.jsonObject(counts.map(([k, f]) => [k, f.s] as const)), p: counts.flatMap(([, f]) => f.p) }])
      continue
    }
    const connExt = def?.extensions?.[EXT] as { relation?: string; connection?: NestedConnectionCompiler } | undefined
    if (def && connExt?.connection && connExt.relation) {
      const crel = model.relations.get(connExt.relation)!
      const target = ctx.reg.models.get(crel.target)!
      for (const from of crel.fromFields) cols.add(fieldOf(model, from).column)
      const c = connExt.connection(ctx, target, getNamedType(def.type) as GraphQLObjectType, fnodes, readArgs(fnodes[0]!, def.args, ctx.vars), {
        correlate: (a) => raw(joinCond(ctx, crel, model, alias, target, a)),
        ...partitionOf(crel, target),
      })
      pairs.push([key, c.frag])
      if (c.post) rels.push([key, false, c.post])
      continue
    }
    const rel = model.relations.get(name)
    if (!rel || !def) {
      // A link field (compose/links.ts): fetch the columns it reads, under their field names.
      const requires = (def?.extensions?.[LINK_EXTENSION] as LinkFieldExtension | undefined)?.requires ?? []
      for (const r of requires) {
        const rf = model.fieldMap.get(r)
        if (rf) addScalar(r, rf)
      }
      continue
    }
    const target = ctx.reg.models.get(rel.target)!
    const targetType = getNamedType(def.type) as GraphQLObjectType
    for (const from of rel.fromFields) cols.add(fieldOf(model, from).column)
    const r = newAlias(ctx)
    const correlate = (a: string): Frag => raw(joinCond(ctx, rel, model, alias, target, a))
    if (rel.kind === 'one') {
      const sub = compileObject(ctx, target, targetType, r, fnodes)
      pairs.push([key, sql`(SELECT ${sub.json} FROM ${d.table(target.table)} AS ${r} WHERE ${andRowFilter(ctx, target, r, correlate(r))}${d.dialect === 'postgres' ? '' : ' LIMIT 1'})`])
      if (sub.post) rels.push([key, false, sub.post])
    } else {
      const args = readArgs(fnodes[0]!, def.args, ctx.vars)
      const list = compileList(ctx, target, targetType, fnodes, args, correlate, 'agg', partitionOf(rel, target))
      pairs.push([key, sql`(${list.frag})`])
      if (list.post) rels.push([key, true, list.post])
    }
  }
  const texts = pairs.map(([k, f]) => [k, f.s] as const)
  const json: Frag = { s: d.jsonObject(texts), p: pairs.flatMap(([, f]) => f.p) }
  return { json, cols, post: makePost(convs, rels) }
}

/**
 * `_count { rel(where) … }`: one `(SELECT COUNT(*) FROM target WHERE join AND where)` per selected
 * response key (`__typename` excluded), in selection order. Adds the columns the joins read to `cols`.
 */
export function compileCounts(ctx: Ctx, model: Model, alias: string, type: GraphQLObjectType, nodes: readonly FieldNode[], cols: Set<string>): [string, Frag][] {
  const out: [string, Frag][] = []
  const defs = type.getFields()
  for (const [key, fnodes] of collectFields(ctx, type, nodes)) {
    const name = fnodes[0]!.name.value
    const rel = model.relations.get(name)
    const def = defs[name]
    if (!rel || rel.kind !== 'many' || !def) continue
    for (const from of rel.fromFields) cols.add(fieldOf(model, from).column)
    const target = ctx.reg.models.get(rel.target)!
    const r = newAlias(ctx)
    const args = readArgs(fnodes[0]!, def.args, ctx.vars)
    const w = compileWhere(ctx, target, r, args['where'])
    out.push([key, sql`(SELECT COUNT(*) FROM ${ctx.d.table(target.table)} AS ${r} WHERE ${andRowFilter(ctx, target, r, joinCond(ctx, rel, model, alias, target, r))}${w ? sql` AND (${w})` : ''})`])
  }
  return out
}

/** Options of {@link compileList}. */
export interface ListOptions {
  /** An extra condition (e.g. a unique where) on the row alias. */
  extraWhere?: (alias: string) => Frag
  /** Forces LIMIT 1 (findFirst). */
  first?: boolean
  /** No ordering at all (findUnique). */
  unordered?: boolean
  /** Read the rows from this FROM item instead of the model's table (a set-returning function call; `agg` mode: a computed field's). */
  from?: Frag
  /**
   * `agg` mode: the target's columns the correlation compares with the parent's (a direct relation;
   * absent through a join table). MariaDB's `distinct` partitions its window by them.
   */
  partitionBy?: readonly string[]
  /** `take` may be one above `maxTake` (a Relay connection reads one more row than asked: connection.ts). */
  extraRow?: boolean
  /** How rows become JSON and lists become arrays; default: the normal compiler's ({@link compileObject}, `SqlDialect.jsonArrayAgg`). The direct-JSON compiler (direct-read.ts) passes its own. */
  emit?: ListEmitter
}

/** The object and array builders {@link compileList} uses. */
export interface ListEmitter {
  /** Compiles one object level of the selection on the row alias `alias`. */
  object(ctx: Ctx, model: Model, type: GraphQLObjectType, alias: string, nodes: readonly FieldNode[]): ObjectSql
  /** An aggregate of `expr` into a JSON array (`[]` on no rows), with `ORDER BY` terms and MariaDB's in-aggregate `LIMIT` text. */
  arrayAgg(expr: string, orderBy: readonly string[], limit?: string): string
}

/** The result of {@link compileList}. */
export interface CompiledList {
  frag: Frag
  post: Post | null
  /**
   * `rows` mode only: the statement is `SELECT … FROM <the model's table> AS t0 [ORDER BY …] LIMIT ?`
   * with no WHERE (no filter, cursor, correlation or unique condition), no OFFSET, no DISTINCT and
   * no other FROM item, and its last parameter is the LIMIT. Relation fields may still add
   * subqueries: the caller checks the plan's table aliases (`Ctx.n`). See `boundedReads` in
   * ../resolvers.ts.
   */
  limitOnly?: true
}

/**
 * Compiles a list of rows of `model` with `where orderBy cursor take skip distinct`. Without `take`
 * (and without `first`/`unordered`) the list is limited to the source's `maxTake` rows.
 * - `rows` mode: a full SELECT returning one JSON object per row (root fields);
 * - `agg` mode: a SELECT returning one JSON array (nested relation lists), correlated by `correlate`.
 */
export function compileList(
  ctx: Ctx,
  model: Model,
  type: GraphQLObjectType,
  nodes: readonly FieldNode[],
  args: Record<string, ArgValue>,
  correlate: ((alias: string) => Frag) | null,
  mode: 'rows' | 'agg',
  opts: ListOptions = {},
): CompiledList {
  const d = ctx.d
  const tableRef = d.table(model.table)
  const fromRef: Frag = opts.from ?? raw(tableRef)
  let take = args['take'] instanceof Leaf ? (args['take'] as Leaf) : undefined
  const skip = args['skip'] instanceof Leaf ? (args['skip'] as Leaf) : undefined
  let negative = take !== undefined && typeof sampleOf(take) === 'number' && (sampleOf(take) as number) < 0
  if (opts.first) {
    take = new Leaf(() => 1, { value: 1 }, 1)
  } else if (take === undefined && !opts.unordered) {
    // A list without take reads at most maxTake rows (cf. PostgREST's db-max-rows), nested lists included.
    const max = ctx.reg.maxTake
    take = new Leaf(() => max, { value: max }, max)
  }
  const distinct = listOf(args['distinct'])
    .map((v) => sampleOf(v))
    .filter((v): v is string => typeof v === 'string' && model.fieldMap.has(v))
  const r = newAlias(ctx)
  const conds: Frag[] = []
  if (correlate) conds.push(correlate(r))
  const uncorrelated = conds.length
  if (opts.extraWhere) conds.push(opts.extraWhere(r))
  const rf = rowFilterCond(ctx, model, r)
  if (rf) conds.push(rf)
  const w = compileWhere(ctx, model, r, args['where'])
  if (w) conds.push(w)
  const terms = opts.unordered ? [] : withTiebreak(ctx, model, compileOrder(ctx, model, args['orderBy']))
  if (args['cursor'] !== undefined && args['cursor'] !== NULL) conds.push(cursorCond(ctx, model, r, args['cursor'], terms))
  const whereSql = conds.length ? sql` WHERE ${and(conds)}` : raw('')
  const checkTake = takeCheck(ctx.reg.maxTake + (opts.extraRow ? 1 : 0))
  const absTake = (x: unknown): unknown => (typeof x === 'number' ? Math.abs(checkTake(x) as number) : x)
  const limitParams: Frag[] = []
  if (take) limitParams.push(bound(take, absTake))
  if (skip) limitParams.push(bound(skip, skipCheck))
  const needsLimit = take !== undefined || skip !== undefined
  // PostgreSQL: a LIMIT/OFFSET fixed at compile time (a literal of the document, the default bound
  // maxTake, findFirst's 1) is written into the statement. With a parameter there, the planner
  // estimates a generic plan for 10 % of the rows, finds it dearer than the custom plans and plans
  // the named statement again on every execution (pg_prepared_statements.custom_plans); with the
  // literal the generic plan costs the same and is kept from the sixth execution on
  // (docs/architecture.md §4). A plan is compiled per document, so this adds no statement texts.
  const literals = d.dialect === 'postgres' ? limitLiterals(take, absTake, skip) : null
  const limitSql = (): Frag =>
    literals ? raw(`${literals.take !== undefined ? ` LIMIT ${literals.take}` : ''}${literals.skip !== undefined ? ` OFFSET ${literals.skip}` : ''}`) : { s: d.limitOffset(take !== undefined, skip !== undefined), p: limitParams.flatMap((p) => p.p) }
  if (mode === 'agg' && !d.correlatedDerived) {
    // MariaDB: no outer references in derived tables; LIMIT goes inside JSON_ARRAYAGG.
    if (negative) throw new DbInputError('a negative take on a nested relation list is not supported on MariaDB')
    if (distinct.length > 0) {
      if (!opts.partitionBy || !correlate) throw new DbInputError('distinct on a nested list through a join table (a many-to-many shortcut) is not supported on MariaDB')
      return mariadbDistinctList(ctx, model, type, nodes, { r, conds: conds.slice(uncorrelated), correlate, terms, distinct, partitionBy: opts.partitionBy, limit: needsLimit ? limitSql() : raw(''), opts })
    }
  }
  const objectOf = opts.emit ? opts.emit.object : compileObject
  const arrayAgg = opts.emit ? opts.emit.arrayAgg : (expr: string, ob: readonly string[], limit?: string) => d.jsonArrayAgg(expr, ob, limit)
  const simple =
    distinct.length === 0 && !negative && (mode === 'rows' || !needsLimit || !d.correlatedDerived) && (mode === 'rows' || d.aggOrderBy)
  if (simple) {
    const obj = objectOf(ctx, model, type, r, nodes)
    const order = terms.map((t) => {
      const b = t.build(r)
      return { s: d.orderTerm(b.s, t.dir, t.notNull), p: b.p }
    })
    if (mode === 'rows') {
      const ob = order.length ? sql` ORDER BY ${join(order, ', ')}` : raw('')
      const frag = sql`SELECT ${obj.json} AS j FROM ${fromRef} AS ${r}${whereSql}${ob}${limitSql()}`
      const limitOnly = conds.length === 0 && take !== undefined && skip === undefined && opts.from === undefined && !literals
      return limitOnly ? { frag, post: obj.post, limitOnly } : { frag, post: obj.post }
    }
    const aggLimit = needsLimit ? limitSql() : raw('')
    const agg = arrayAgg(obj.json.s, order.map((o) => o.s), aggLimit.s)
    return { frag: { s: `SELECT ${agg} FROM ${fromRef.s} AS ${r}${whereSql.s}`, p: [...obj.json.p, ...order.flatMap((o) => o.p), ...aggLimit.p, ...fromRef.p, ...whereSql.p] }, post: obj.post }
  }
  // Derived table: project the needed columns and the order keys, limit inside, aggregate outside.
  const s = newAlias(ctx)
  ;(ctx.derivedRows ??= new Map()).set(s, false)
  const obj = objectOf(ctx, model, type, s, nodes)
  const projections: Frag[] = [...obj.cols].map((c) => raw(`${r}.${d.q(c)}`))
  // Computed fields of the rows take the whole row: `ROW(r.*)::table` (its table's row type).
  if (ctx.derivedRows.get(s)) projections.push(raw(`ROW(${r}.*)::${tableRef} AS __row`))
  // The derived table's name of each order key. PostgreSQL: a term that is a column already
  // projected is sorted on that column rather than on a copy `__oN` (issue 30: each row of the
  // list's sort carries one column fewer). SQLite and MariaDB keep the copies.
  const keys = terms.map((t, i) => {
    const c = d.dialect === 'postgres' && t.field !== undefined ? model.fieldMap.get(t.field)?.column : undefined
    return c !== undefined && obj.cols.has(c) ? d.q(c) : `__o${i}`
  })
  terms.forEach((t, i) => {
    if (keys[i] === `__o${i}`) projections.push(sql`${t.build(r)} AS __o${String(i)}`)
  })
  if (distinct.length > 0) {
    const part = distinct.map((f) => col(ctx, r, fieldOf(model, f))).join(', ')
    const winOrder = terms.map((t) => {
      const b = t.build(r)
      return { s: d.orderTerm(b.s, t.dir, t.notNull), p: b.p }
    })
    projections.push(sql`ROW_NUMBER() OVER (PARTITION BY ${part}${winOrder.length ? sql` ORDER BY ${join(winOrder, ', ')}` : ''}) AS __rn`)
  }
  if (projections.length === 0) projections.push(raw('1 AS __one'))
  const flip = (dir: 'asc' | 'desc'): 'asc' | 'desc' => (negative ? (dir === 'asc' ? 'desc' : 'asc') : dir)
  let inner: Frag = sql`SELECT ${join(projections, ', ')} FROM ${fromRef} AS ${r}${whereSql}`
  if (distinct.length > 0) inner = sql`SELECT * FROM (${inner}) AS ${newAlias(ctx)} WHERE __rn = 1`
  const innerOrder = terms.map((t, i) => d.orderTerm(keys[i]!, flip(t.dir), t.notNull))
  const forceLimit = !d.aggOrderBy && mode === 'agg' && !needsLimit
  if (needsLimit || forceLimit || mode === 'agg') {
    if (innerOrder.length) inner = sql`${inner} ORDER BY ${innerOrder.join(', ')}`
    inner = needsLimit ? sql`${inner}${limitSql()}` : forceLimit ? sql`${inner} LIMIT 18446744073709551615` : inner
  }
  const outerOrder = terms.map((t, i) => d.orderTerm(`${s}.${keys[i]!}`, t.dir, t.notNull))
  if (mode === 'rows') {
    const ob = outerOrder.length ? ` ORDER BY ${outerOrder.join(', ')}` : ''
    return { frag: sql`SELECT ${obj.json} AS j FROM (${inner}) AS ${s}${ob}`, post: obj.post }
  }
  // PostgreSQL aggregates the rows in the order the derived table returns them: an ordered subquery
  // with a LIMIT or OFFSET is never pulled up into its parent, and a plain aggregate over it reads
  // its output in order (PostgreSQL's documented "sorted subquery" form, which PostGraphile's
  // statements use too), so the aggregate's own ORDER BY would only sort every list a second time.
  // A negative take reads the rows in reverse (flip) and keeps the aggregate's ORDER BY.
  const aggOrder = d.dialect === 'postgres' && needsLimit && !negative ? [] : outerOrder
  return { frag: { s: `SELECT ${arrayAgg(obj.json.s, aggOrder)} FROM (${inner.s}) AS ${s}`, p: [...obj.json.p, ...inner.p] }, post: obj.post }
}

/**
 * The LIMIT and OFFSET of a list as integer literals, when both are known at compile time (their
 * leaves are constants, checked by `takeConv`/{@link skipCheck} as a bound value would be), else null.
 * @throws DbInputError from the checks (a take above maxTake, a negative skip), as binding would
 */
function limitLiterals(take: Leaf | undefined, takeConv: (x: unknown) => unknown, skip: Leaf | undefined): { take?: number; skip?: number } | null {
  const lit = (leaf: Leaf | undefined, conv: (x: unknown) => unknown): number | null | undefined => {
    if (leaf === undefined) return undefined
    if (!leaf.constant) return null
    const v = conv(leaf.constant.value)
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null
  }
  const t = lit(take, takeConv)
  const s = lit(skip, skipCheck)
  if (t === null || s === null) return null
  return { ...(t !== undefined ? { take: t } : {}), ...(s !== undefined ? { skip: s } : {}) }
}

/**
 * MariaDB's `distinct` on a nested list: its derived tables cannot see the outer row, so the window
 * runs over the whole (filtered) table, partitioned by the correlation columns and the distinct
 * fields, and the correlation applies outside: `SELECT JSON_ARRAYAGG(… ORDER BY … LIMIT …) FROM
 * (SELECT r.*, order keys, ROW_NUMBER() OVER (PARTITION BY corr, distinct ORDER BY …) AS __rn FROM t
 * AS r WHERE filters) AS s WHERE corr(s) AND s.__rn = 1`: per parent, the first row of each distinct
 * value in the list's order, then take/skip, as on the other engines.
 */
function mariadbDistinctList(
  ctx: Ctx,
  model: Model,
  type: GraphQLObjectType,
  nodes: readonly FieldNode[],
  l: { r: string; conds: Frag[]; correlate: (alias: string) => Frag; terms: Term[]; distinct: string[]; partitionBy: readonly string[]; limit: Frag; opts: ListOptions },
): CompiledList {
  const d = ctx.d
  const { r, terms } = l
  const s = newAlias(ctx)
  const obj = (l.opts.emit ? l.opts.emit.object : compileObject)(ctx, model, type, s, nodes)
  const part = [...l.partitionBy.map((c) => `${r}.${d.q(c)}`), ...l.distinct.map((f) => col(ctx, r, fieldOf(model, f)))].join(', ')
  const keys = terms.map((t, i) => sql`${t.build(r)} AS __o${String(i)}`)
  const winOrder = terms.map((t) => {
    const b = t.build(r)
    return { s: d.orderTerm(b.s, t.dir, t.notNull), p: b.p }
  })
  const where = l.conds.length ? sql` WHERE ${and(l.conds)}` : raw('')
  const inner = sql`SELECT ${r}.*${keys.length ? sql`, ${join(keys, ', ')}` : ''}, ROW_NUMBER() OVER (PARTITION BY ${part}${winOrder.length ? sql` ORDER BY ${join(winOrder, ', ')}` : ''}) AS __rn FROM ${d.table(model.table)} AS ${r}${where}`
  const arrayAgg = l.opts.emit ? l.opts.emit.arrayAgg : (expr: string, ob: readonly string[], limit?: string) => d.jsonArrayAgg(expr, ob, limit)
  const agg = arrayAgg(obj.json.s, terms.map((t, i) => d.orderTerm(`${s}.__o${i}`, t.dir, t.notNull)), l.limit.s)
  const corr = l.correlate(s)
  return { frag: { s: `SELECT ${agg} FROM (${inner.s}) AS ${s} WHERE ${corr.s} AND ${s}.__rn = 1`, p: [...obj.json.p, ...l.limit.p, ...inner.p, ...corr.p] }, post: obj.post }
}

/** A compiled read: one statement returning JSON rows, and how to finish its result. */
export interface ReadPlan {
  text: string
  params: Getter[]
  post: Post | null
}

/**
 * Finalises a fragment into a plan: PostgreSQL placeholders become `$n`.
 * @throws DbInputError when the statement would bind more values than the engine accepts
 */
export function toPlan(ctx: Ctx, f: Frag, post: Post | null): ReadPlan {
  checkBoundValues(ctx.d.dialect, f.p.length)
  const plan = { text: ctx.d.native(f.s), params: f.p, post }
  if (ctx.computed) computedPlans.add(plan)
  return plan
}

// ---------------------------------------------------------------------------------------------
// functions: arguments, computed fields

/**
 * The arguments of a PostgreSQL function call in named notation (`a => ?`), from a field's
 * arguments: those absent from the request keep the function's defaults, null is NULL, a list is
 * bound as one array. Every value is bound.
 */
export function namedCallArgs(ctx: Ctx, fnArgs: readonly FunctionArg[], args: Record<string, ArgValue>): Frag[] {
  const d = ctx.d
  const given: Frag[] = []
  for (const a of fnArgs) {
    const v: ArgValue | undefined = args[a.name]
    if (v === undefined) continue
    const f = { scalar: a.scalar, dataType: a.dataType, ...(a.list ? { list: true } : {}) }
    const value = v === NULL ? raw('NULL') : a.list ? boundList(ctx, f, v) : v instanceof Leaf ? bound(v, (x) => d.bindValue(f, x, false)) : raw('NULL')
    given.push(sql`${d.q(a.arg)} => ${value}`)
  }
  return given
}

/** The argument names the list arguments of a row-returning function use (a function argument of the same name wins). */
const LIST_ARGS = ['where', 'orderBy', 'take', 'skip', 'distinct']

/** `where orderBy take skip distinct` of a row-returning function's field, unless the function has an argument of that name. */
export function functionListArgs(fn: FunctionModel, args: Record<string, ArgValue>): Record<string, ArgValue> {
  const out: Record<string, ArgValue> = {}
  for (const k of LIST_ARGS) if (!fn.args.some((a) => a.name === k) && args[k] !== undefined) out[k] = args[k]!
  return out
}

/** A value of a function's result (`v`) as a scalar field, for `SqlDialect.output`. */
export function resultField(r: Extract<FunctionModel['returns'], { kind: 'scalar' }>): ScalarField {
  return { name: 'v', column: 'v', scalar: r.scalar, nullable: true, hasDefault: false, generated: false, autoIncrement: false, dataType: r.dataType, ...(r.enumName ? { enumName: r.enumName } : {}), ...(r.list ? { list: true } : {}) }
}

/**
 * A computed field of the row aliased `alias` (PostgreSQL, `Model.computed`), in the row's own
 * statement: the function gets the whole row first (`t0.*`; `s.__row` on a derived table of
 * {@link compileList}), then its other arguments in named notation, all bound.
 * - a scalar: `fn(t0.*, n => ?)` in the select list; `SETOF` a scalar: `(SELECT json_agg(x.v ORDER BY x.o) FROM fn(…) WITH ORDINALITY AS x(v, o))`;
 * - `SETOF` a model: `(SELECT json_agg(J(t1)) FROM fn(t0.*, …) AS t1 WHERE …)`, the list compiler's
 *   `where orderBy take skip distinct`, row filter and relations on the function's rows;
 * - one row of a model: `(SELECT J(t1) FROM fn(…) AS t1 WHERE NOT (t1 IS NULL) AND <row filter>)`.
 */
function compileComputed(ctx: Ctx, model: Model, alias: string, fn: FunctionModel, type: unknown, args: Record<string, ArgValue>, nodes: readonly FieldNode[]): { frag: Frag; conv: ((v: unknown) => unknown) | null; list: boolean; post: Post | null } {
  const d = ctx.d
  ctx.computed = true
  let row = `${alias}.*`
  if (ctx.derivedRows?.has(alias)) {
    ctx.derivedRows.set(alias, true)
    row = `${alias}.__row`
  }
  const call = sql`${d.table(fn.fn)}(${join([raw(row), ...namedCallArgs(ctx, fn.args, args)], ', ')})`
  if (fn.returns.kind === 'scalar') {
    const f = resultField(fn.returns)
    const conv = outputConv(d, f.scalar, f.list)
    if (!fn.returnsSet) {
      // The output expression names its value once (PostgreSQL's casts): the call goes in its place.
      const parts = d.output('\u0000', f).split('\u0000')
      const frag = parts.length === 2 ? { s: `${parts[0]}${call.s}${parts[1]}`, p: call.p } : sql`(SELECT ${raw(d.output('x.v', f))} FROM (SELECT ${call} AS v) AS x)`
      return { frag, conv, list: false, post: null }
    }
    const x = newAlias(ctx)
    return { frag: sql`(SELECT COALESCE(json_agg(${raw(d.output(`${x}.v`, f))} ORDER BY ${x}.o), '[]'::json) FROM ${call} WITH ORDINALITY AS ${x}(v, o))`, conv: conv ? (v) => (Array.isArray(v) ? v.map((i) => (i === null ? i : conv(i))) : v) : null, list: false, post: null }
  }
  const target = ctx.reg.models.get(fn.returns.model)!
  const targetType = type as GraphQLObjectType
  if (fn.returnsSet) {
    const l = compileList(ctx, target, targetType, nodes, functionListArgs(fn, args), null, 'agg', { from: call })
    return { frag: sql`(${l.frag})`, conv: null, list: true, post: l.post }
  }
  const r = newAlias(ctx)
  const sub = compileObject(ctx, target, targetType, r, nodes)
  return { frag: sql`(SELECT ${sub.json} FROM ${call} AS ${r} WHERE ${andRowFilter(ctx, target, r, `NOT (ROW(${r}.*) IS NULL)`)} LIMIT 1)`, conv: null, list: false, post: sub.post }
}
