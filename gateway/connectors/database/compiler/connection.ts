/**
 * Relay connections (relay.dev/graphql/connections.htm): `<model>Connection(first, after, last,
 * before, where, orderBy)` compiled into ONE statement:
 *
 *   SELECT J('rows', (<the page: first+1 / last+1 rows after/before the cursor, as {n: node, k0…: keys}>),
 *            'total', (SELECT COUNT(*) FROM t WHERE filters),
 *            'other', (SELECT COUNT(*) FROM (SELECT 1 FROM t WHERE filters AND (cursor cond) IS NOT TRUE LIMIT 1)))
 *
 * Keyset pagination: the key is the `orderBy` fields (scalar fields only) followed by the model's
 * identity fields (its primary key), and a cursor is the opaque base64url of the JSON array
 * `[signature, key values…]` (the signature names the key fields and directions: a cursor made
 * for another order is refused). `after` keeps rows strictly after the cursor's key in the order
 * (NULLs smallest, as every engine orders them here); `last` reads the order reversed and the page
 * is turned back. `first`/`last` are at most `maxTake`; without either, the first `maxTake` rows.
 * One more row than asked tells whether another page follows; `other` tells whether rows lie on
 * the cursor's other side (`hasPreviousPage` after `after`, `hasNextPage` before `before`).
 * @throws DbInputError for a bad cursor, `first` with `last`, a negative count or one above maxTake, an `orderBy` on a relation or `_relevance`
 */
import { getNamedType, type FieldNode, type GraphQLObjectType } from 'graphql'
import { DbInputError } from '../../../errors.js'
import { Leaf, isObj, sampleOf, type ArgValue } from './args.js'
import { join, param, sql, type Frag } from './frag.js'
import { collectFields, compileObject, compileList, compileWhere, listOf, outputConv, rowFilterCond, newAlias, type Ctx, type NestedConnectionCompiler, type NestedScope, type Post } from './read.js'
import type { Model, ScalarField } from './registry.js'

/** One key term of a connection's order. */
interface KeyTerm {
  field: ScalarField
  dir: 'asc' | 'desc'
}

/** The compiled connection: its statement and how to turn its one JSON row into the `XConnection` value. */
export interface CompiledConnection {
  /** The root statement: `SELECT <expr> AS j`. */
  frag: Frag
  /** The JSON object of rows, total, other (nested: also want, cur). */
  expr: Frag
  post: Post | null
  /** Builds `{ edges, pageInfo, totalCount }` from the statement's row (after `post`) and the request's variables. */
  finish(row: Record<string, unknown>, vars: Record<string, unknown>): Record<string, unknown>
}

/** Encodes a cursor: base64url of `[signature, …values]`. */
export function encodeCursor(signature: string, values: readonly unknown[]): string {
  return Buffer.from(JSON.stringify([signature, ...values]), 'utf8').toString('base64url')
}

/**
 * Whether `v` has the JSON shape a key value of a field of kind `scalar` has: what
 * {@link encodeCursor} writes (the statement's row after `outputConv`), and what a client may give as
 * a position in that field's order (a change stream's `cursor.initialValue`). Such a value reaches
 * the statement without GraphQL's coercion: one of another shape (an object, a list, `true` for an
 * id) must be refused, not reach the driver.
 */
export function fitsKey(scalar: ScalarField['scalar'], v: unknown): boolean {
  if (v === null) return true
  switch (scalar) {
    case 'Int':
      return Number.isSafeInteger(v)
    case 'Float':
      return typeof v === 'number' && Number.isFinite(v)
    case 'BigInt':
    case 'Decimal':
      return (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= 100 && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(v))
    case 'Boolean':
      return typeof v === 'boolean' || v === 0 || v === 1
    case 'DateTime':
      return typeof v === 'string' && !Number.isNaN(Date.parse(v))
    case 'String':
    case 'Enum':
    case 'Bytes':
      return typeof v === 'string'
    default:
      return false
  }
}

/**
 * Decodes a cursor made by {@link encodeCursor} for the same key (`keys`: the kinds of its key
 * fields, in order).
 * @throws DbInputError when it is not such a cursor, or one of its values is not of its key field's shape
 */
export function decodeCursor(cursor: unknown, signature: string, keys: readonly ScalarField['scalar'][]): unknown[] {
  const bad = (): never => {
    throw new DbInputError('invalid cursor: pass a cursor (`edges.cursor`, `pageInfo.startCursor`/`endCursor`) of this connection with the same orderBy')
  }
  if (typeof cursor !== 'string' || cursor.length > 4096 || !/^[A-Za-z0-9_-]*$/.test(cursor)) return bad()
  let v: unknown
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return bad()
  }
  if (!Array.isArray(v) || v.length !== keys.length + 1 || v[0] !== signature) return bad()
  const values = v.slice(1)
  if (!values.every((x, i) => fitsKey(keys[i]!, x))) return bad()
  return values
}

const flip = (dir: 'asc' | 'desc'): 'asc' | 'desc' => (dir === 'asc' ? 'desc' : 'asc')

/** The key of the order: the `orderBy` scalar fields, then the identity fields not in it (ascending). */
function keyTerms(model: Model, orderBy: ArgValue | undefined): KeyTerm[] {
  const out: KeyTerm[] = []
  for (const item of listOf(orderBy)) {
    if (!isObj(item)) continue
    for (const [key, v] of Object.entries(item)) {
      const f = model.fieldMap.get(key)
      if (!f || f.list) throw new DbInputError(`a connection orders by the scalar fields of ${model.name} only (not \`${key}\`)`)
      const dir = sampleOf(v)
      if ((dir === 'asc' || dir === 'desc') && !out.some((t) => t.field === f)) out.push({ field: f, dir })
    }
  }
  for (const name of model.identity) {
    const f = model.fieldMap.get(name)!
    if (!out.some((t) => t.field === f)) out.push({ field: f, dir: 'asc' })
  }
  return out
}

/**
 * Rows strictly after the key values of a cursor in the order `terms` (NULL is the smallest value):
 * `(c1 > v1 OR (c1 = v1 AND (c2 > v2 …)))`, with NULL-aware forms for nullable fields (a flag
 * parameter says whether the cursor's value is NULL).
 */
function afterCond(ctx: Ctx, alias: string, terms: KeyTerm[], value: (i: number) => Frag, isNull: (i: number) => Frag): Frag {
  const build = (i: number): Frag => {
    const { field: f, dir } = terms[i]!
    const c = `${alias}.${ctx.d.q(f.column)}`
    const op = dir === 'asc' ? '>' : '<'
    let beyond: Frag
    let same: Frag
    if (f.nullable) {
      beyond = dir === 'asc' ? sql`((${isNull(i)} = 1 AND ${c} IS NOT NULL) OR ${c} > ${value(i)})` : sql`(${c} < ${value(i)} OR (${isNull(i)} = 0 AND ${c} IS NULL))`
      same = sql`((${isNull(i)} = 1 AND ${c} IS NULL) OR ${c} = ${value(i)})`
    } else {
      beyond = sql`${c} ${op} ${value(i)}`
      same = sql`${c} = ${value(i)}`
    }
    if (i === terms.length - 1) return beyond
    return sql`(${beyond} OR (${same} AND ${build(i + 1)}))`
  }
  return build(0)
}

/**
 * Compiles `<model>Connection` (see the file header).
 * @param nodes the connection field's nodes; `type` its `XConnection` type
 */
export function compileConnection(ctx: Ctx, model: Model, type: GraphQLObjectType, nodes: readonly FieldNode[], args: Record<string, ArgValue>, nested?: NestedScope): CompiledConnection {
  const d = ctx.d
  if (model.identity.length === 0) throw new DbInputError(`${model.name} has no key: connections need one`)
  const given = (k: string): Leaf | undefined => (args[k] instanceof Leaf ? (args[k] as Leaf) : undefined)
  const first = given('first')
  const last = given('last')
  if (first && last) throw new DbInputError('give `first` or `last`, not both')
  const backward = last !== undefined
  const cursorLeaf = backward ? given('before') : given('after')
  if (backward ? given('after') : given('before')) throw new DbInputError(backward ? '`after` pages forward: use it with `first`' : '`before` pages backward: use it with `last`')
  const terms = keyTerms(model, args['orderBy'])
  const signature = terms.map((t) => `${t.field.name}:${t.dir}`).join(',')
  const scan = backward ? terms.map((t) => ({ ...t, dir: flip(t.dir) })) : terms
  const max = ctx.reg.maxTake
  const count = (x: unknown): number => {
    if (x === null || x === undefined) return max
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new DbInputError('`first` and `last` are integers from 0')
    if (x > max) throw new DbInputError(`\`first\`/\`last\` ${x} is larger than the maximum of ${max} (maxTake)`)
    return x
  }
  const n = first ?? last
  // One more row than asked: whether another page follows. compileList's own check allows it (extraRow).
  const take = new Leaf(n ? (v, x) => count(n.get(v, x)) + 1 : () => max + 1, n?.constant ? { value: count(n.constant.value) + 1 } : n ? undefined : { value: max + 1 }, 1)
  // The cursor's values: every parameter of the statement reads them, so the last decoded cursor is
  // kept (a cursor string always decodes to the same values).
  const keys = terms.map((k) => k.field.scalar)
  let decoded: { cursor: unknown; values: unknown[] } | undefined
  const values = (v: Record<string, unknown>, x: readonly unknown[]): unknown[] | null => {
    const c = cursorLeaf!.get(v, x)
    if (c === null || c === undefined) return null
    if (decoded?.cursor !== c) decoded = { cursor: c, values: decodeCursor(c, signature, keys) }
    return decoded.values
  }
  const value = (i: number): Frag => param((v, x) => {
    const vals = values(v, x)
    const raw0 = vals ? vals[i] : null
    return raw0 === null || raw0 === undefined ? null : d.bindValue(terms[i]!.field, raw0, true)
  })
  const isNull = (i: number): Frag => param((v, x) => {
    const vals = values(v, x)
    return vals === null || vals[i] === null || vals[i] === undefined ? 1 : 0
  })
  // With a cursor variable that is null at run time, the condition must hold: `? = 1 OR cond`.
  const noCursor = (): Frag => param((v, x) => (values(v, x) === null ? 1 : 0))
  const cursorCond = (alias: string): Frag | null => (cursorLeaf ? sql`(${noCursor()} = 1 OR ${afterCond(ctx, alias, scan, value, isNull)})` : null)
  const orderBy: ArgValue[] = scan.map((t) => ({ [t.field.name]: new Leaf(() => t.dir, { value: t.dir }, t.dir) }))

  // The node selection: edges → node.
  const edgeNodes: FieldNode[] = []
  for (const fnodes of collectFields(ctx, type, nodes).values()) if (fnodes[0]!.name.value === 'edges') edgeNodes.push(...fnodes)
  const edgeType = getNamedType(type.getFields()['edges']!.type) as GraphQLObjectType
  const nodeNodes: FieldNode[] = []
  for (const fnodes of collectFields(ctx, edgeType, edgeNodes).values()) if (fnodes[0]!.name.value === 'node') nodeNodes.push(...fnodes)
  const nodeType = getNamedType(edgeType.getFields()['node']!.type) as GraphQLObjectType
  let nodePost: Post | null = null
  const listArgs: Record<string, ArgValue> = { orderBy, take }
  if (args['where'] !== undefined) listArgs['where'] = args['where']
  const list = compileList(ctx, model, nodeType, nodeNodes, listArgs, nested?.correlate ?? null, 'agg', {
    ...(nested?.partitionBy ? { partitionBy: nested.partitionBy } : {}),
    ...(cursorLeaf ? { extraWhere: (a: string) => cursorCond(a)! } : {}),
    extraRow: true,
    emit: {
      object: (c, m, t, alias, ns) => {
        const obj = compileObject(c, m, t, alias, ns)
        nodePost = obj.post
        for (const k of terms) obj.cols.add(k.field.column)
        const keys = terms.map((k, i) => [`k${i}`, d.output(`${alias}.${d.q(k.field.column)}`, k.field)] as const)
        return { json: { s: d.jsonObject([['n', obj.json.s], ...keys]), p: obj.json.p }, cols: obj.cols, post: null }
      },
      arrayAgg: (expr, ob, limit) => d.jsonArrayAgg(expr, ob, limit),
    },
  })
  const filters = (alias: string): Frag[] => {
    const out: Frag[] = nested ? [nested.correlate(alias)] : []
    const rf = rowFilterCond(ctx, model, alias)
    if (rf) out.push(rf)
    const w = compileWhere(ctx, model, alias, args['where'])
    if (w) out.push(w)
    return out
  }
  const table = d.table(model.table)
  const ta = newAlias(ctx)
  const tf = filters(ta)
  const total = sql`(SELECT COUNT(*) FROM ${table} AS ${ta}${tf.length ? sql` WHERE ${join(tf, ' AND ')}` : ''})`
  const pairs: [string, Frag][] = [['rows', sql`(${list.frag})`], ['total', total]]
  if (cursorLeaf) {
    const oa = newAlias(ctx)
    const conds = [...filters(oa), sql`(${afterCond(ctx, oa, scan, value, isNull)}) IS NOT TRUE`]
    // Nested: EXISTS, as MariaDB's derived tables cannot see the parent row.
    const other = nested
      ? sql`(CASE WHEN EXISTS (SELECT 1 FROM ${table} AS ${oa} WHERE ${join(conds, ' AND ')}) THEN 1 ELSE 0 END)`
      : sql`(SELECT COUNT(*) FROM (SELECT 1 AS one FROM ${table} AS ${oa} WHERE ${join(conds, ' AND ')} LIMIT 1) AS ${newAlias(ctx)})`
    pairs.push(['other', other])
  }
  const hasCursor = (vars: Record<string, unknown>, x: readonly unknown[] = []): boolean => cursorLeaf !== undefined && cursorLeaf.get(vars, x) !== null && cursorLeaf.get(vars, x) !== undefined
  if (nested) {
    // A nested connection's post-processing has no variables: the page size and whether a cursor was given come with the row.
    pairs.push(['want', sql`(${param((v, x) => count(n ? n.get(v, x) : null))} + 0)`], ['cur', sql`(${param((v, x) => (hasCursor(v, x) ? 1 : 0))} + 0)`])
  }
  const expr: Frag = { s: d.jsonObject(pairs.map(([k, f]) => [k, f.s] as const)), p: pairs.flatMap(([, f]) => f.p) }
  const frag: Frag = { s: `SELECT ${expr.s} AS j`, p: expr.p }
  const convs = terms.map((k) => outputConv(d, k.field.scalar))
  const nodesPost: Post = (o) => {
    const rows = o['rows'] as Record<string, unknown>[] | null
    if (!rows || !nodePost) return
    for (const r of rows) if (r['n']) nodePost(r['n'] as Record<string, unknown>)
  }
  const finishWith = (row: Record<string, unknown>, want: number, cursorGiven: boolean): Record<string, unknown> => {
    let rows = ((row['rows'] as Record<string, unknown>[] | null) ?? []).slice()
    const more = rows.length > want
    rows = rows.slice(0, want)
    if (backward) rows.reverse()
    const other = cursorGiven && Number(row['other'] ?? 0) > 0
    const edges = rows.map((r) => ({
      cursor: encodeCursor(signature, terms.map((_, i) => {
        const v = r[`k${i}`]
        const conv = convs[i]
        return v === null || v === undefined || !conv ? (v ?? null) : conv(v)
      })),
      node: r['n'],
    }))
    return {
      edges,
      totalCount: Number(row['total'] ?? 0),
      pageInfo: {
        hasNextPage: backward ? other : more,
        hasPreviousPage: backward ? more : other,
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges[edges.length - 1]?.cursor ?? null,
      },
    }
  }
  // Nested: the parent's post turns the JSON object into the connection value in place.
  const post: Post = nested
    ? (o) => {
        nodesPost(o)
        const value = finishWith(o, Number(o['want']), Number(o['cur']) === 1)
        for (const k of Object.keys(o)) delete o[k]
        Object.assign(o, value)
      }
    : nodesPost
  return { frag, expr, post, finish: (row, vars) => finishWith(row, count(n ? n.get(vars, []) : null), hasCursor(vars)) }
}

/**
 * Compiles a nested connection, `<relation>Connection` of a parent row (see the file header): the
 * same page, `totalCount` and `other` as a root connection, each correlated with the parent row, as
 * one JSON object expression of the parent's statement (a keyset window per parent row). Its `post`
 * turns the object into `{ edges, pageInfo, totalCount }` in place.
 * @throws DbInputError as {@link compileConnection}
 */
export const compileNestedConnection: NestedConnectionCompiler = (ctx, target, type, nodes, args, scope) => {
  const c = compileConnection(ctx, target, type, nodes, args, scope)
  return { frag: c.expr, post: c.post }
}

