/**
 * Nested writes (README "Database connector", nested writes): the relation fields of the `data` of
 * `createOneX`, `updateOneX` and `upsertOneX` create or connect related rows, Prisma-style:
 *
 * - a to-one relation whose foreign key this table holds (`Album.artist`):
 *   `{ create: {…} }`, `{ connect: <unique where> }` or `{ connectOrCreate: { where, create } }`,
 *   exactly one. The related row is found or created FIRST; its referenced key fills this row's
 *   foreign key (on update: replaces it).
 * - a relation whose foreign key the other table holds (`Artist.albums`, or a one-to-one back side):
 *   `{ create: [...], connect: [...], connectOrCreate: [...] }` (single objects on a one-to-one side).
 *   Run AFTER this row is written: created rows get this row's key in their foreign key, connected
 *   rows have their foreign key set to it (`UPDATE`).
 *
 * Nested creates nest again, at most {@link MAX_NESTED_WRITE_DEPTH} levels. Every nested item
 * (a create, a connect, a connectOrCreate) counts one against the source's `maxNestedWrites` per
 * request. Many-to-many shortcuts (`via` a join table) take no nested writes.
 *
 * Everything runs on the request's transaction connection (request-transaction.ts): a failure
 * anywhere (a constraint, a connect target that does not exist: `TRB_ERR_DB_NOT_FOUND`) rolls the
 * whole request back on that database. The SQL of a plan depends only on the shape of the input,
 * like every mutation plan (plan-cache.ts); key values read back at run time are passed as `extra`
 * values, unconverted.
 */
import { DbInputError, DbNotFoundError, DbUnreadableWriteError, DbValueError } from '../../errors.js'
import { isUnsignedInt } from './type-map.js'
import { Leaf, NULL, isObj, type ArgValue } from './compiler/args.js'
import { constant, join, raw, sql, type Frag, type Getter, type Vars } from './compiler/frag.js'
import { MAX_NESTED_WRITE_DEPTH } from './compiler/input-limits.js'
import { listOf, type Ctx } from './compiler/read.js'
import type { Model, Relation, ScalarField } from './compiler/registry.js'
import type { Runtime } from './resolvers.js'
import {
  canReturn,
  createPairs,
  extraLeaf,
  isExtraLeaf,
  fieldValues,
  identityOf,
  identitySelect,
  identityWhere,
  insertFrag,
  run,
  selectByIdentity,
  stmt,
  whereLabel,
  type Stmt,
} from './write-sql.js'

/** Field name → value as the engine returned it. */
type Values = Record<string, unknown>

/** Counts the nested items of one mutation field while it compiles. */
export interface NestedBudget {
  /** Nested items so far. */
  rows: number
  /** The source's `maxNestedWrites`. */
  max: number
}

/** A row to insert, with the to-one rows it needs first and the to-many rows written after it. */
export interface CreateRowPlan {
  model: Model
  toOnes: ToOnePlan[]
  /** Redirected PostgreSQL tables: draws the auto-increment keys the data leaves out, one column each. */
  prefetch: Stmt | null
  /** `extra` = [injected parent key values…, to-one key values…, drawn keys…]. */
  insert: Stmt
  /** Per identity field: its value from the data, the parent or a drawn key (null: the engine's insert id). */
  fromData: (Getter | null)[]
  /** True when the INSERT returns the `want` columns. */
  returning: boolean
  /** The fields this row's caller and its to-many writes need (identity first). */
  want: string[]
  /** Reads `want` by identity when the INSERT could not return them. */
  reread: Stmt | null
  toManys: ToManyPlan[]
}

/** Finds or creates the row a to-one relation points to; yields the values of `rel.toFields`. */
interface ToOnePlan {
  rel: Relation
  target: Model
  /** connect / connectOrCreate: `SELECT rel.toFields FROM target WHERE <unique>`. */
  find: Stmt | null
  label: string
  create: CreateRowPlan | null
}

/** Rows a to-many (or one-to-one back side) relation creates or connects. */
export interface ToManyPlan {
  rel: Relation
  target: Model
  items: { find: Stmt | null; label: string; create: CreateRowPlan | null }[]
  /** `UPDATE target SET rel.toFields = extra[0…] WHERE identity = extra[k…]` for connected rows. */
  link: Stmt | null
}

/** The relation writes of an update's data: to-one keys to set, to-many rows to write after. */
export interface UpdateRelationsPlan {
  toOnes: ToOnePlan[]
  /** `fk = extra[offset + j]` assignments (offset: the identity's length), or null. */
  set: Frag | null
  toManys: ToManyPlan[]
  /** Reads the parent fields the to-many writes need, by the row's (new) identity; null when the identity holds them. */
  reread: Stmt | null
  /** The fields `reread` reads, in order. */
  want: string[]
}

const OPS = ['create', 'connect', 'connectOrCreate'] as const

/** The relation of `model` named `key` that takes nested writes (not a many-to-many shortcut), with its input. */
function relationEntries(model: Model, data: ArgValue | undefined): [Relation, { [k: string]: ArgValue }][] {
  if (!isObj(data)) return []
  const out: [Relation, { [k: string]: ArgValue }][] = []
  for (const [key, v] of Object.entries(data)) {
    const r = model.relations.get(key)
    if (r && !r.via && isObj(v)) out.push([r, v])
  }
  return out
}

function count(budget: NestedBudget, depth: number, where: string): void {
  if (depth > MAX_NESTED_WRITE_DEPTH) throw new DbInputError(`${where}: nested writes go deeper than ${MAX_NESTED_WRITE_DEPTH} levels`)
  budget.rows++
  if (budget.rows > budget.max) throw new DbInputError(`the nested writes of this field create or connect more than ${budget.max} rows (maxNestedWrites)`)
}

function field(m: Model, name: string): ScalarField {
  return m.fieldMap.get(name)!
}

/** The values of `fields` of a row keyed by column, by field name. */
function byName(m: Model, fields: readonly string[], row: Record<string, unknown>): Values {
  const vals = fieldValues(m, fields, row)
  return Object.fromEntries(fields.map((n, i) => [n, vals[i]]))
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)]
}

function needIdentity(m: Model, where: string): void {
  if (m.identity.length === 0) throw new DbInputError(`${where}: ${m.name} has no primary key or non-null unique key, nested writes need one`)
}

/**
 * Compiles the insert of one row of `model` with its nested writes.
 * @param injected fields set from the parent (`extra[0…]` at run time); absent from the data's type
 * @param parentWants fields of this row the caller needs back (a to-one parent's referenced key)
 * @param depth nesting level (0 for the root row)
 * @throws DbInputError on a bad relation input, too deep or too many nested writes
 */
export function compileCreateRow(ctx: Ctx, model: Model, data: ArgValue | undefined, injected: readonly ScalarField[], parentWants: readonly string[], depth: number, budget: NestedBudget): CreateRowPlan {
  const d = ctx.d
  const pairs = createPairs(model, data)
  const set = new Set(pairs.map(([f]) => f.name))
  const claim = (f: ScalarField, what: string): void => {
    if (set.has(f.name)) throw new DbInputError(`${model.name}: \`${f.name}\` is set twice (by ${what} and by the data or another relation); give either the field or the relation`)
    set.add(f.name)
  }
  injected.forEach((f, k) => {
    claim(f, 'the parent relation')
    pairs.push([f, extraLeaf(k)])
  })
  let offset = injected.length
  const toOnes: ToOnePlan[] = []
  const toManyInputs: [Relation, { [k: string]: ArgValue }][] = []
  for (const [r, v] of relationEntries(model, data)) {
    if (!r.holdsKey) {
      toManyInputs.push([r, v])
      continue
    }
    for (const [j, name] of r.fromFields.entries()) {
      claim(field(model, name), `\`${r.name}\``)
      pairs.push([field(model, name), extraLeaf(offset + j)])
    }
    offset += r.fromFields.length
    toOnes.push(compileToOne(ctx, model, r, v, depth + 1, budget))
  }
  for (const r of model.relations.values()) {
    if (!r.holdsKey) continue
    const missing = r.fromFields.map((n) => field(model, n)).find((f) => !set.has(f.name) && !f.nullable && !f.hasDefault && !f.generated)
    if (missing) throw new DbInputError(`${model.name}: give \`${missing.name}\` or the relation \`${r.name}\``)
  }
  let prefetch: Stmt | null = null
  if (model.insertsRedirected) {
    // No RETURNING (a rule refuses it, a routing trigger returns nothing): the keys are drawn first.
    const drawn = model.identity.map((n) => field(model, n)).filter((f) => !set.has(f.name) && f.autoIncrement)
    if (drawn.length > 0) {
      const tableRef = d.table(model.table)
      // The column's own default first (its sequence need not be OWNED BY it); identities own theirs.
      const next = (f: ScalarField): Frag => (f.nextvalDefault ? raw(f.nextvalDefault) : sql`nextval(pg_get_serial_sequence(${constant(tableRef)}, ${constant(f.column)}))`)
      const p = stmt(ctx, join(drawn.map((f, k) => sql`${next(f)} AS ${d.q(`k${k}`)}`), ', '))
      prefetch = { text: `SELECT ${p.text}`, params: p.params }
      drawn.forEach((f, k) => pairs.push([f, extraLeaf(offset + k)]))
    }
  }
  const fromData = model.identity.map((n): Getter | null => {
    const pair = pairs.find(([f]) => f.name === n)
    if (!pair || pair[1] === NULL) return null
    const [f, leaf] = pair as [ScalarField, Leaf]
    // Parent keys and drawn keys are in the engine's representation already; data values are converted.
    return isExtraLeaf(leaf) ? leaf.get : (v, x) => d.bindValue(f, leaf.get(v, x), false)
  })
  const toManys = toManyInputs.map(([r, v]) => compileToMany(ctx, model, r, v, depth + 1, budget))
  const want = unique([...model.identity, ...parentWants, ...toManys.flatMap((t) => t.rel.fromFields)])
  const returning = !model.insertsRedirected && canReturn(d) && model.identity.length > 0
  if ((parentWants.length > 0 || toManys.length > 0) && model.identity.length === 0) needIdentity(model, model.name)
  const insert = stmt(ctx, insertFrag(ctx, model, [pairs], { returning: returning ? want : false }))
  // A redirected insert is always read back: a rule may write another key than the one drawn.
  const reread = !returning && (model.insertsRedirected || want.some((n) => !model.identity.includes(n))) ? selectByIdentity(ctx, model, want) : null
  return { model, toOnes, prefetch, insert, fromData, returning, want, reread, toManys }
}

/**
 * Runs a {@link CreateRowPlan}: the to-one rows, the insert, the to-many rows.
 * @param injected the parent's key values for the plan's injected fields
 * @returns the row's `want` fields (identity first)
 * @throws DbNotFoundError when a connect target does not exist; driver errors of constraint violations
 */
export async function runCreateRow(rt: Runtime, conn: unknown, plan: CreateRowPlan, vars: Vars, injected: readonly unknown[]): Promise<Values> {
  const db = rt.db()
  const model = plan.model
  const extra: unknown[] = [...injected]
  for (const t of plan.toOnes) extra.push(...(await runToOne(rt, conn, t, vars)))
  if (plan.prefetch) extra.push(...Object.values((await db.exec(conn, plan.prefetch.text, run(plan.prefetch, vars, extra))).rows[0] ?? {}))
  const res = await db.exec(conn, plan.insert.text, run(plan.insert, vars, extra))
  let values: Values
  if (plan.returning && res.rows[0]) values = byName(model, plan.want, res.rows[0])
  else {
    const id = plan.fromData.map((g, i) => (g ? g(vars, extra) : field(model, model.identity[i]!).autoIncrement ? res.insertId : null))
    values = Object.fromEntries(model.identity.map((n, i) => [n, id[i]]))
    if (plan.reread) {
      const row = (await db.exec(conn, plan.reread.text, run(plan.reread, vars, id))).rows[0]
      if (row) values = { ...values, ...byName(model, plan.want, row) }
      // Never a silent null: the statement fails, and the request's transaction is rolled back.
      else if (model.insertsRedirected) throw new DbUnreadableWriteError(model.name)
    }
  }
  checkDrawnKeys(model, values)
  for (const m of plan.toManys) await runToMany(rt, conn, m, vars, m.rel.fromFields.map((n) => values[n]))
  return values
}

const INT_MAX = 2147483647

/**
 * Refuses, before the request's transaction commits, a row whose MySQL/MariaDB `int unsigned` key
 * the database drew above 2^31-1: GraphQL's Int cannot answer it, and a committed row answered with
 * an error would be written again by a client that retries.
 * @throws DbValueError naming the model, the field and the drawn value
 */
function checkDrawnKeys(model: Model, values: Values): void {
  for (const n of model.identity) {
    const f = field(model, n)
    const v = values[n]
    if (f.autoIncrement && isUnsignedInt(f) && v !== null && v !== undefined && Number(v) > INT_MAX) {
      throw new DbValueError(`${model.name}.${f.name}: the drawn key ${String(v)} is above 2147483647, the largest GraphQL Int; nothing was written`)
    }
  }
}

/** The single operation of a to-one input. */
function oneOp(model: Model, r: Relation, v: { [k: string]: ArgValue }): [string, ArgValue] {
  const given = OPS.filter((op) => v[op] !== undefined && v[op] !== NULL)
  if (given.length !== 1) throw new DbInputError(`${model.name}.${r.name}: give exactly one of ${OPS.join(', ')}`)
  return [given[0]!, v[given[0]!]!]
}

function compileToOne(ctx: Ctx, model: Model, r: Relation, v: { [k: string]: ArgValue }, depth: number, budget: NestedBudget): ToOnePlan {
  const target = ctx.reg.models.get(r.target)!
  const where = `${model.name}.${r.name}`
  const [op, value] = oneOp(model, r, v)
  count(budget, depth, where)
  const whereArg = op === 'connect' ? value : op === 'connectOrCreate' && isObj(value) ? value['where'] : undefined
  const createArg = op === 'create' ? value : op === 'connectOrCreate' && isObj(value) ? value['create'] : undefined
  return {
    rel: r,
    target,
    find: whereArg !== undefined ? identitySelect(ctx, target, whereArg, r.toFields) : null,
    label: `${where}: connect ${whereLabel(target, whereArg)}`,
    create: createArg !== undefined ? compileCreateRow(ctx, target, createArg, [], r.toFields, depth, budget) : null,
  }
}

async function runToOne(rt: Runtime, conn: unknown, t: ToOnePlan, vars: Vars): Promise<unknown[]> {
  if (t.find) {
    const row = (await rt.db().exec(conn, t.find.text, run(t.find, vars))).rows[0]
    if (row) return fieldValues(t.target, t.rel.toFields, row)
    if (!t.create) throw new DbNotFoundError(t.target.name, t.label)
  }
  const values = await runCreateRow(rt, conn, t.create!, vars, [])
  return t.rel.toFields.map((n) => values[n])
}

function compileToMany(ctx: Ctx, model: Model, r: Relation, v: { [k: string]: ArgValue }, depth: number, budget: NestedBudget): ToManyPlan {
  const target = ctx.reg.models.get(r.target)!
  const where = `${model.name}.${r.name}`
  const fks = r.toFields.map((n) => field(target, n))
  const items: ToManyPlan['items'] = []
  for (const op of Object.keys(v)) {
    if (!(OPS as readonly string[]).includes(op)) continue
    for (const item of listOf(v[op])) {
      count(budget, depth, where)
      const whereArg = op === 'connect' ? item : op === 'connectOrCreate' && isObj(item) ? item['where'] : undefined
      const createArg = op === 'create' ? item : op === 'connectOrCreate' && isObj(item) ? item['create'] : undefined
      if (whereArg !== undefined) needIdentity(target, where)
      items.push({
        find: whereArg !== undefined ? identitySelect(ctx, target, whereArg) : null,
        label: `${where}: connect ${whereLabel(target, whereArg)}`,
        create: createArg !== undefined ? compileCreateRow(ctx, target, createArg, fks, [], depth, budget) : null,
      })
    }
  }
  let link: Stmt | null = null
  if (items.some((i) => i.find)) {
    const tableRef = ctx.d.table(target.table)
    const sets = join(fks.map((f, j) => ({ s: `${ctx.d.q(f.column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[j]] })), ', ')
    link = stmt(ctx, sql`UPDATE ${tableRef} SET ${sets} WHERE ${identityWhere(ctx, target, tableRef, fks.length)}`)
  }
  return { rel: r, target, items, link }
}

/**
 * Runs the writes of one to-many relation input.
 * @param parent the values of `rel.fromFields` of the parent row
 */
export async function runToMany(rt: Runtime, conn: unknown, m: ToManyPlan, vars: Vars, parent: readonly unknown[]): Promise<void> {
  const db = rt.db()
  for (const item of m.items) {
    if (item.find) {
      const row = (await db.exec(conn, item.find.text, run(item.find, vars))).rows[0]
      if (row) {
        await db.exec(conn, m.link!.text, run(m.link!, vars, [...parent, ...identityOf(m.target, row)]))
        continue
      }
      if (!item.create) throw new DbNotFoundError(m.target.name, item.label)
    }
    await runCreateRow(rt, conn, item.create!, vars, parent)
  }
}

/**
 * Compiles the relation inputs of an update's data (`updateOne`, the `update` of `upsertOne`).
 * To-one relations set this row's foreign key (assignments read `extra[identity length + j]`);
 * to-many relations run after the UPDATE with this row's referenced key.
 * @throws DbInputError when a relation and its foreign key field are both given, or a relation's
 *   foreign key is part of the row's identity
 */
export function compileUpdateRelations(ctx: Ctx, model: Model, data: ArgValue | undefined, budget: NestedBudget): UpdateRelationsPlan {
  const toOnes: ToOnePlan[] = []
  const sets: Frag[] = []
  const toManys: ToManyPlan[] = []
  const given = new Set(isObj(data) ? Object.keys(data).filter((k) => model.fieldMap.has(k)) : [])
  let offset = model.identity.length
  for (const [r, v] of relationEntries(model, data)) {
    if (!r.holdsKey) {
      toManys.push(compileToMany(ctx, model, r, v, 1, budget))
      continue
    }
    for (const name of r.fromFields) {
      if (given.has(name)) throw new DbInputError(`${model.name}: \`${name}\` is set twice (by \`${r.name}\` and by the data or another relation); give either the field or the relation`)
      if (model.identity.includes(name)) throw new DbInputError(`${model.name}.${r.name}: its foreign key \`${name}\` identifies the row; set it with \`${name}: { set }\``)
      given.add(name)
    }
    const base = offset
    r.fromFields.forEach((name, j) => sets.push({ s: `${ctx.d.q(field(model, name).column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[base + j]] }))
    offset += r.fromFields.length
    toOnes.push(compileToOne(ctx, model, r, v, 1, budget))
  }
  const want = unique(toManys.flatMap((t) => t.rel.fromFields))
  const reread = want.some((n) => !model.identity.includes(n)) ? selectByIdentity(ctx, model, want) : null
  return { toOnes, set: sets.length ? join(sets, ', ') : null, toManys, reread, want }
}

/** Runs the to-one part of an update's relations: the key values its `set` assignments read (after the identity). */
export async function runUpdateToOnes(rt: Runtime, conn: unknown, plan: UpdateRelationsPlan, vars: Vars): Promise<unknown[]> {
  const out: unknown[] = []
  for (const t of plan.toOnes) out.push(...(await runToOne(rt, conn, t, vars)))
  return out
}

/** Runs the to-many part of an update's relations, once the row is updated; `id` is its (new) identity. */
export async function runUpdateToManys(rt: Runtime, conn: unknown, plan: UpdateRelationsPlan, model: Model, vars: Vars, id: readonly unknown[]): Promise<void> {
  if (plan.toManys.length === 0) return
  let values: Values = Object.fromEntries(model.identity.map((n, i) => [n, id[i]]))
  if (plan.reread) {
    const row = (await rt.db().exec(conn, plan.reread.text, run(plan.reread, vars, id))).rows[0]
    if (row) values = { ...values, ...byName(model, plan.want, row) }
  }
  for (const m of plan.toManys) await runToMany(rt, conn, m, vars, m.rel.fromFields.map((n) => values[n]))
}

/**
 * Counts a field's nested items against the request's total on this source.
 * @throws DbInputError when the request's nested writes pass `maxNestedWrites`
 */
export function chargeNested(rt: Runtime, vars: Vars, rows: number): void {
  if (rows === 0) return
  const total = (rt.nestedWrites.get(vars) ?? 0) + rows
  if (total > rt.maxNestedWrites) throw new DbInputError(`the nested writes of this request create or connect more than ${rt.maxNestedWrites} rows (maxNestedWrites)`)
  rt.nestedWrites.set(vars, total)
}
