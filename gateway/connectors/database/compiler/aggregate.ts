/**
 * `aggregateX` and `groupByX` (docs/architecture.md §4, Prisma semantics): `_count` (with `_all`), `_sum`,
 * `_avg`, `_min`, `_max`; `groupBy` with `by`, `where`, `having`, `orderBy` (fields and aggregates),
 * `take`, `skip`. Each compiles to one statement returning JSON rows.
 */
import type { FieldNode, GraphQLObjectType } from 'graphql'
import { DbInputError } from '../../../errors.js'
import { Leaf, NULL, isObj, sampleOf, type ArgValue } from './args.js'
import { join, raw, sql, type Frag } from './frag.js'
import { skipCheck, takeCheck } from './input-limits.js'
import {
  bound,
  collectFields,
  compileOrder,
  cursorCond,
  filteredWhere,
  listOf,
  makePost,
  newAlias,
  outputConv,
  scalarFilter,
  toPlan,
  withTiebreak,
  type Ctx,
  type Post,
  type ReadPlan,
} from './read.js'
import type { Model, ScalarField } from './registry.js'

/** The aggregate operators and which scalars each accepts. */
export const AGGREGATES = ['_count', '_avg', '_sum', '_min', '_max'] as const
/** One aggregate operator. */
export type AggregateOp = (typeof AGGREGATES)[number]

const NUMERIC = new Set(['Int', 'BigInt', 'Float', 'Decimal'])
const ORDERABLE = new Set(['Int', 'BigInt', 'Float', 'Decimal', 'String', 'DateTime', 'Enum'])

/** True when `op` applies to the field (`_count` to every field, `_sum`/`_avg` to numbers, `_min`/`_max` to ordered scalars). */
export function aggregateApplies(op: AggregateOp, f: ScalarField): boolean {
  if (op === '_count') return true
  if (f.list) return false
  if (op === '_sum' || op === '_avg') return NUMERIC.has(f.scalar)
  return ORDERABLE.has(f.scalar)
}

function aggExpr(ctx: Ctx, op: AggregateOp, colRef: string): string {
  switch (op) {
    case '_count':
      return `COUNT(${colRef})`
    case '_sum':
      return `SUM(${colRef})`
    case '_avg':
      return ctx.d.dialect === 'postgres' ? `AVG(${colRef})::float8` : ctx.d.dialect === 'mysql' ? `AVG(${colRef} * 1e0)` : `AVG(${colRef})`
    case '_min':
      return `MIN(${colRef})`
    case '_max':
      return `MAX(${colRef})`
  }
}

/** The JSON value expression of an aggregate, with exact output for Decimal/BigInt like plain fields. */
function aggOutput(ctx: Ctx, op: AggregateOp, f: ScalarField, colRef: string): { expr: string; conv: ((v: unknown) => unknown) | null } {
  const e = aggExpr(ctx, op, colRef)
  if (op === '_count' || op === '_avg') return { expr: e, conv: null }
  const nf = { ...f, nullable: true }
  if (op === '_sum' && f.scalar === 'Int' && ctx.d.dialect !== 'sqlite') {
    // PostgreSQL's sum(int) is bigint, MySQL's SUM is DECIMAL: both come out as JSON numbers.
    return { expr: e, conv: (v) => Number(v) }
  }
  return { expr: ctx.d.output(e, nf), conv: outputConv(ctx.d, f.scalar) }
}

/** Compiles the `_count {…} _sum {…}` selections into JSON pairs over alias `a`. */
function aggregatePairs(ctx: Ctx, model: Model, type: GraphQLObjectType, a: string, nodes: readonly FieldNode[]): { pairs: [string, string][]; post: Post | null } {
  const fields = collectFields(ctx, type, nodes)
  const byOp = new Map<AggregateOp, FieldNode[]>()
  for (const fnodes of fields.values()) {
    const name = fnodes[0]!.name.value as AggregateOp
    if (!(AGGREGATES as readonly string[]).includes(name)) continue
    byOp.set(name, [...(byOp.get(name) ?? []), ...fnodes])
  }
  const pairs: [string, string][] = []
  const rels: [string, boolean, Post][] = []
  const typeFields = type.getFields()
  for (const [op, onodes] of byOp) {
    const subType = typeFields[op]?.type
    const named = subType && 'ofType' in subType ? (subType as { ofType: GraphQLObjectType }).ofType : (subType as GraphQLObjectType)
    const inner = collectFields(ctx, named, onodes)
    const innerPairs: [string, string][] = []
    const convs: [string, (v: unknown) => unknown][] = []
    const seen = new Set<string>()
    for (const fnodes of inner.values()) {
      const name = fnodes[0]!.name.value
      if (seen.has(name) || name === '__typename') continue
      seen.add(name)
      if (name === '_all' && op === '_count') {
        innerPairs.push([name, 'COUNT(*)'])
        continue
      }
      const f = model.fieldMap.get(name)
      if (!f || !aggregateApplies(op, f)) continue
      const out = aggOutput(ctx, op, f, `${a}.${ctx.d.q(f.column)}`)
      innerPairs.push([name, out.expr])
      if (out.conv) convs.push([name, out.conv])
    }
    pairs.push([op, ctx.d.jsonObject(innerPairs)])
    const p = makePost(convs, [])
    if (p) rels.push([op, false, p])
  }
  return { pairs, post: makePost([], rels) }
}

/** `aggregateX(where, orderBy, cursor, take, skip)`: one row, one JSON object. */
export function compileAggregate(ctx: Ctx, model: Model, type: GraphQLObjectType, nodes: readonly FieldNode[], args: Record<string, ArgValue>): ReadPlan {
  const d = ctx.d
  const tableRef = d.table(model.table)
  const take = args['take'] instanceof Leaf ? (args['take'] as Leaf) : undefined
  const skip = args['skip'] instanceof Leaf ? (args['skip'] as Leaf) : undefined
  const hasCursor = args['cursor'] !== undefined && args['cursor'] !== NULL
  if (!take && !skip && !hasCursor) {
    const a = newAlias(ctx)
    const { pairs, post } = aggregatePairs(ctx, model, type, a, nodes)
    const w = filteredWhere(ctx, model, a, args['where'])
    return toPlan(ctx, sql`SELECT ${d.jsonObject(pairs)} AS j FROM ${tableRef} AS ${a}${w ? sql` WHERE ${w}` : ''}`, post)
  }
  // Window first (where, order, cursor, take, skip), aggregate over it: reuse the list compiler's logic on all columns.
  const s = newAlias(ctx)
  const { pairs, post } = aggregatePairs(ctx, model, type, s, nodes)
  const r = newAlias(ctx)
  const conds: Frag[] = []
  const w = filteredWhere(ctx, model, r, args['where'])
  if (w) conds.push(w)
  const terms = withTiebreak(ctx, model, compileOrder(ctx, model, args['orderBy']))
  if (hasCursor) {
    // Same semantics as findMany's cursor.
    conds.push(cursorCond(ctx, model, r, args['cursor']!, terms))
  }
  const order = terms.map((t) => {
    const b = t.build(r)
    return { s: d.orderTerm(b.s, t.dir), p: b.p }
  })
  const cols = model.fields.map((f) => `${r}.${d.q(f.column)}`).join(', ')
  const limits: Frag[] = []
  const checkTake = takeCheck(ctx.reg.maxTake)
  if (take) limits.push(bound(take, (x) => (typeof x === 'number' ? Math.abs(checkTake(x) as number) : x)))
  if (skip) limits.push(bound(skip, skipCheck))
  const inner = sql`SELECT ${cols} FROM ${tableRef} AS ${r}${conds.length ? sql` WHERE ${join(conds.map((c) => sql`(${c})`), ' AND ')}` : ''}${
    order.length ? sql` ORDER BY ${join(order, ', ')}` : ''
  }${{ s: d.limitOffset(take !== undefined, skip !== undefined), p: limits.flatMap((l) => l.p) }}`
  return toPlan(ctx, sql`SELECT ${d.jsonObject(pairs)} AS j FROM (${inner}) AS ${s}`, post)
}

/** Compiles one `having` level (`XScalarWhereWithAggregatesInput`). */
function compileHaving(ctx: Ctx, model: Model, a: string, h: ArgValue | undefined): Frag | null {
  if (!isObj(h)) return null
  const parts: Frag[] = []
  for (const [key, val] of Object.entries(h)) {
    if (key === 'AND' || key === 'OR' || key === 'NOT') {
      const xs = listOf(val).map((x) => compileHaving(ctx, model, a, x))
      if (key === 'AND') {
        const ok = xs.filter((x): x is Frag => x !== null)
        if (ok.length) parts.push(join(ok.map((x) => sql`(${x})`), ' AND '))
      } else if (key === 'OR') {
        if (xs.length === 0) parts.push(raw('1=0'))
        else parts.push(join(xs.map((x) => sql`(${x ?? raw('1=1')})`), ' OR '))
      } else for (const x of xs) if (x) parts.push(sql`NOT (${x})`)
      continue
    }
    const f = model.fieldMap.get(key)
    if (!f || !isObj(val)) continue
    const colRef = `${a}.${ctx.d.q(f.column)}`
    const plain = scalarFilter(ctx, { expr: ctx.d.compareExpr(colRef, f), scalar: f.scalar, dataType: f.dataType }, val)
    if (plain) parts.push(plain)
    for (const op of AGGREGATES) {
      const sub = val[op]
      if (sub === undefined || !aggregateApplies(op, f)) continue
      const scalar = op === '_count' ? 'Int' : op === '_avg' ? 'Float' : f.scalar
      const expr = aggExpr(ctx, op, colRef)
      const c = scalarFilter(ctx, { expr: scalar === f.scalar ? ctx.d.compareExpr(expr, f) : expr, scalar, dataType: f.dataType }, sub)
      if (c) parts.push(c)
    }
  }
  return parts.length ? join(parts.map((p) => sql`(${p})`), ' AND ') : null
}

/** `groupByX(by!, where, having, orderBy, take, skip)`: one JSON row per group. */
export function compileGroupBy(ctx: Ctx, model: Model, type: GraphQLObjectType, nodes: readonly FieldNode[], args: Record<string, ArgValue>): ReadPlan {
  const d = ctx.d
  const a = newAlias(ctx)
  const by = listOf(args['by'])
    .map((v) => sampleOf(v))
    .filter((v): v is string => typeof v === 'string' && model.fieldMap.has(v))
  if (by.length === 0) throw new DbInputError(`groupBy${model.name} needs at least one field in \`by\``)
  const byFields = by.map((n) => model.fieldMap.get(n)!)
  const fields = collectFields(ctx, type, nodes)
  const pairs: [string, string][] = []
  const convs: [string, (v: unknown) => unknown][] = []
  const seen = new Set<string>()
  for (const fnodes of fields.values()) {
    const name = fnodes[0]!.name.value
    const f = model.fieldMap.get(name)
    if (!f || seen.has(name)) continue
    seen.add(name)
    if (!by.includes(name)) throw new DbInputError(`groupBy${model.name}: field \`${name}\` is selected but not in \`by\``)
    pairs.push([name, d.output(`${a}.${d.q(f.column)}`, f)])
    const conv = outputConv(d, f.scalar, f.list)
    if (conv) convs.push([name, conv])
  }
  const agg = aggregatePairs(ctx, model, type, a, nodes)
  const rels: [string, boolean, Post][] = []
  const post = makePost(convs, rels)
  const aggPost = agg.post
  const allPairs = [...pairs, ...agg.pairs]
  const w = filteredWhere(ctx, model, a, args['where'])
  const having = compileHaving(ctx, model, a, args['having'])
  // orderBy: [{ field: asc }, { _count: { field: desc } }]
  const order: Frag[] = []
  for (const item of listOf(args['orderBy'])) {
    if (!isObj(item)) continue
    for (const [key, v] of Object.entries(item)) {
      const f = model.fieldMap.get(key)
      if (f) {
        const dir = sampleOf(v)
        if (dir !== 'asc' && dir !== 'desc') continue
        if (!by.includes(key)) throw new DbInputError(`groupBy${model.name}: cannot order by \`${key}\`, which is not in \`by\``)
        order.push(raw(d.orderTerm(`${a}.${d.q(f.column)}`, dir)))
      } else if ((AGGREGATES as readonly string[]).includes(key) && isObj(v)) {
        for (const [fname, dv] of Object.entries(v)) {
          const af = model.fieldMap.get(fname)
          const dir = sampleOf(dv)
          if (!af || (dir !== 'asc' && dir !== 'desc') || !aggregateApplies(key as AggregateOp, af)) continue
          order.push(raw(d.orderTerm(aggExpr(ctx, key as AggregateOp, `${a}.${d.q(af.column)}`), dir)))
        }
      }
    }
  }
  for (const f of byFields) if (!order.some((o) => o.s.startsWith(`${a}.${d.q(f.column)} `))) order.push(raw(d.orderTerm(`${a}.${d.q(f.column)}`, 'asc')))
  const max = ctx.reg.maxTake
  // Without take, at most maxTake groups (as every list).
  const take = args['take'] instanceof Leaf ? (args['take'] as Leaf) : new Leaf(() => max, { value: max }, max)
  const skip = args['skip'] instanceof Leaf ? (args['skip'] as Leaf) : undefined
  const limits: Frag[] = []
  const checkTake = takeCheck(ctx.reg.maxTake)
  if (take) {
    limits.push(
      bound(take, (x) => {
        if (typeof x === 'number' && x < 0) throw new DbInputError(`groupBy${model.name}: take must not be negative (got ${x})`)
        return checkTake(x)
      }),
    )
  }
  if (skip) limits.push(bound(skip, skipCheck))
  const text = sql`SELECT ${d.jsonObject(allPairs)} AS j FROM ${d.table(model.table)} AS ${a}${w ? sql` WHERE ${w}` : ''} GROUP BY ${byFields
    .map((f) => `${a}.${d.q(f.column)}`)
    .join(', ')}${having ? sql` HAVING ${having}` : ''} ORDER BY ${join(order, ', ')}${{
    s: d.limitOffset(take !== undefined, skip !== undefined),
    p: limits.flatMap((l) => l.p),
  }}`
  const finalPost: Post | null = post && aggPost ? (o) => (post(o), aggPost(o)) : (post ?? aggPost)
  return toPlan(ctx, text, finalPost)
}
