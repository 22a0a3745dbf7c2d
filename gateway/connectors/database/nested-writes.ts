/**
 * Nested writes (README "Database connector", nested writes): the relation fields of the `data` of
 * `createOneX`, `updateOneX` and `upsertOneX` write related rows, Prisma-style. In a create:
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
 * - a many-to-many shortcut (`via` a join table): `create`, `connect`, `connectOrCreate` lists; each
 *   row found or created gets a join row (an existing join row is kept).
 *
 * In an update (the `data` of `updateOneX`, `update` of `upsertOneX`, and nested `update`s) the
 * inputs are Prisma's `…UpdateManyWithout<Back>NestedInput` / `…UpdateOne[Required]Without<Back>NestedInput`:
 * to-many also `set`, `disconnect`, `delete`, `update`, `updateMany`, `deleteMany`, `upsert`
 * (each scoped to this parent: `WHERE fk = parent AND …`, set-based where the input allows);
 * to-one also `update`, `upsert`, `disconnect: true`, `delete: true`; many-to-many shortcuts all the
 * to-many ones, on the rows linked to the parent by a join row ({@link compileVia}). Disconnecting sets the foreign key to NULL: refused
 * with `TRB_ERR_DB_RELATION_REQUIRED` when it is NOT NULL (Prisma's P2014).
 *
 * Row filters: every statement that reads, changes or deletes a related row ANDs the target's filter
 * (a hidden row is not found, or not touched); a row changed by a nested `update`/`upsert`/`updateMany`
 * must still pass it afterwards (else `TRB_ERR_AUTH_FORBIDDEN`, rolled back). Creates and connects
 * into a filtered model are refused by mutations.ts unless the caller bypasses the filter.
 *
 * Nested writes nest again, at most {@link MAX_NESTED_WRITE_DEPTH} levels. Every nested item (a
 * create, a connect, an update, a `disconnect: true`…) counts one against the source's
 * `maxNestedWrites` per request, checked while compiling; the rows a `set`, `updateMany` or
 * `deleteMany` changes count too, at run time (more: `TRB_ERR_DB_INPUT`, rolled back).
 *
 * Everything runs on the request's transaction connection (request-transaction.ts): a failure
 * anywhere (a constraint, a connect target that does not exist: `TRB_ERR_DB_NOT_FOUND`) rolls the
 * whole request back on that database. The SQL of a plan depends only on the shape of the input,
 * like every mutation plan (plan-cache.ts); key values read back at run time are passed as `extra`
 * values, unconverted.
 */
import { AuthForbiddenError, DbInputError, DbNotFoundError, DbRelationRequiredError, DbUnreadableWriteError, DbValueError } from '../../errors.js'
import { isUnsignedInt } from './type-map.js'
import { Leaf, NULL, isObj, type ArgValue } from './compiler/args.js'
import { constant, join, raw, sql, type Frag, type Getter, type Vars } from './compiler/frag.js'
import { MAX_NESTED_WRITE_DEPTH } from './compiler/input-limits.js'
import { andRowFilter, compileUnique, filteredWhere, listOf, type Ctx } from './compiler/read.js'
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
  setFrag,
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
  toManys: AfterStep[]
}

/**
 * A relation write that runs after its parent row is written (to-many, one-to-one back side,
 * many-to-many): `parent` holds the values of `rel.fromFields` of the parent row.
 */
export interface AfterStep {
  rel: Relation
  run(rt: Runtime, conn: unknown, vars: Vars, parent: readonly unknown[]): Promise<void>
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
interface ToManyPlan {
  rel: Relation
  target: Model
  items: { find: Stmt | null; label: string; create: CreateRowPlan | null }[]
  /** `UPDATE target SET rel.toFields = extra[0…] WHERE identity = extra[k…]` for connected rows. */
  link: Stmt | null
}

/** A to-one write of an update whose foreign key this row holds; `cur` = the row's key values before the update. */
interface BeforeStep {
  /** True when its values are assigned to the row's foreign key. */
  assign: boolean
  run(rt: Runtime, conn: unknown, vars: Vars, cur: readonly unknown[]): Promise<unknown[]>
  /** Runs after the row's UPDATE (`delete: true` deletes the row it pointed to). */
  after?(rt: Runtime, conn: unknown, vars: Vars, cur: readonly unknown[]): Promise<void>
  rel: Relation
}

/** The relation writes of an update's data: to-one keys to set, to-many rows to write after. */
export interface UpdateRelationsPlan {
  toOnes: BeforeStep[]
  /** `fk = extra[offset + j]` assignments (offset: the identity's length), or null. */
  set: Frag | null
  /** Reads the row's foreign keys of `toOnes`, by identity, before the update; null when none. */
  current: Stmt | null
  toManys: AfterStep[]
  /** Reads the parent fields the to-many writes need, by the row's (new) identity; null when the identity holds them. */
  reread: Stmt | null
  /** The fields `reread` reads, in order. */
  want: string[]
}

const OPS = ['create', 'connect', 'connectOrCreate'] as const

/** The relations of `model` named in `data` (nested writes), with their inputs. */
function relationEntries(model: Model, data: ArgValue | undefined): [Relation, { [k: string]: ArgValue }][] {
  if (!isObj(data)) return []
  const out: [Relation, { [k: string]: ArgValue }][] = []
  for (const [key, v] of Object.entries(data)) {
    const r = model.relations.get(key)
    if (r && isObj(v)) out.push([r, v])
  }
  return out
}

function count(budget: NestedBudget, depth: number, where: string): void {
  if (depth > MAX_NESTED_WRITE_DEPTH) throw new DbInputError(`${where}: nested writes go deeper than ${MAX_NESTED_WRITE_DEPTH} levels`)
  budget.rows++
  if (budget.rows > budget.max) throw new DbInputError(`the nested writes of this field write more than ${budget.max} rows (maxNestedWrites)`)
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
    if (!r.holdsKey || r.via) {
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
  const toManys = toManyInputs.map(([r, v]) => (r.via ? compileVia(ctx, model, r, v, depth + 1, budget) : toManyStep(compileToMany(ctx, model, r, v, depth + 1, budget))))
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
  for (const m of plan.toManys) await m.run(rt, conn, vars, m.rel.fromFields.map((n) => values[n]))
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

function toManyStep(m: ToManyPlan): AfterStep {
  return { rel: m.rel, run: (rt, conn, vars, parent) => runToMany(rt, conn, m, vars, parent) }
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
async function runToMany(rt: Runtime, conn: unknown, m: ToManyPlan, vars: Vars, parent: readonly unknown[]): Promise<void> {
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

// ---------------------------------------------------------------------------------------------
// Updates

/** The operations of an update's relation input, in the order they run (create-side ones last). */
const MANY_UPDATE_OPS = ['set', 'disconnect', 'delete', 'update', 'updateMany', 'deleteMany', 'upsert'] as const
const ONE_UPDATE_OPS = ['create', 'connect', 'connectOrCreate', 'update', 'upsert', 'disconnect', 'delete'] as const

/** `alias.fk_j = extra[j]`: the target rows of `fks` pointing to the parent (its values in `extra[0…]`). */
function scopeFrag(ctx: Ctx, fks: readonly ScalarField[], alias: string): Frag {
  return join(fks.map((f, j) => ({ s: `${alias}.${ctx.d.q(f.column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[j]] })), ' AND ')
}

/** `[unique where AND] scope AND row filter` on the target's table (columns qualified by its table reference). */
function scopedCond(ctx: Ctx, target: Model, fks: readonly ScalarField[], where: ArgValue | undefined): Frag {
  const tr = ctx.d.table(target.table)
  const scope = scopeFrag(ctx, fks, tr)
  return andRowFilter(ctx, target, tr, where === undefined ? scope : sql`${compileUnique(ctx, target, tr, where)} AND ${scope}`)
}

/** `SELECT identity FROM target WHERE …` of {@link scopedCond}. */
function scopedSelect(ctx: Ctx, target: Model, fks: readonly ScalarField[], where: ArgValue | undefined): Stmt {
  const tr = ctx.d.table(target.table)
  return stmt(ctx, sql`SELECT ${target.identity.map((n) => `${tr}.${ctx.d.q(field(target, n).column)}`).join(', ')} FROM ${tr} WHERE ${scopedCond(ctx, target, fks, where)}`)
}

/** `UPDATE target SET fk = NULL … WHERE …` of {@link scopedCond}; refused when a key field is NOT NULL. */
function disconnectStmt(ctx: Ctx, target: Model, fks: readonly ScalarField[], where: ArgValue | undefined, label: string): Stmt {
  const required = fks.find((f) => !f.nullable)
  if (required) throw new DbRelationRequiredError(`${label}: ${target.name}.${required.name} is required (NOT NULL), its rows cannot be disconnected; delete them or connect them elsewhere`)
  const tr = ctx.d.table(target.table)
  return stmt(ctx, sql`UPDATE ${tr} SET ${fks.map((f) => `${ctx.d.q(f.column)} = NULL`).join(', ')} WHERE ${scopedCond(ctx, target, fks, where)}`)
}

/**
 * The check of rows a `set`/`disconnect` detaches from a row-filtered parent: `SELECT COUNT(*)` of the
 * visible rows whose key is NULL, before and after; fewer new ones than rows detached means a
 * detached row left the filter. Null when the target has no filter.
 */
function detachedCount(ctx: Ctx, target: Model, fks: readonly ScalarField[]): Stmt | null {
  if (!ctx.reg.rowFilters.has(target.name)) return null
  const tr = ctx.d.table(target.table)
  return stmt(ctx, sql`SELECT COUNT(*) AS n FROM ${tr} WHERE ${andRowFilter(ctx, target, tr, fks.map((f) => `${tr}.${ctx.d.q(f.column)} IS NULL`).join(' AND '))}`)
}

/** Runs a `set`/`disconnect` statement with its {@link detachedCount} check; returns the rows detached. */
async function detach(rt: Runtime, conn: unknown, s: Stmt, check: Stmt | null, vars: Vars, parent: readonly unknown[], label: string): Promise<number> {
  const db = rt.db()
  const nulls = async (): Promise<number> => Number((await db.exec(conn, check!.text, run(check!, vars))).rows[0]?.['n'] ?? 0)
  const before = check ? await nulls() : 0
  const n = (await db.exec(conn, s.text, run(s, vars, parent))).affected
  if (check && n > 0 && (await nulls()) - before < n) throw new AuthForbiddenError(`${label}: a row it disconnects does not pass its row filter once disconnected (nothing was written)`)
  return n
}

/** The update check of a nested row: `SELECT 1 … WHERE identity = extra[0…] AND row filter`; null when the model has no filter. */
function checkStmt(ctx: Ctx, model: Model): Stmt | null {
  if (!ctx.reg.rowFilters.has(model.name)) return null
  const tr = ctx.d.table(model.table)
  return stmt(ctx, sql`SELECT 1 AS ok FROM ${tr} WHERE ${andRowFilter(ctx, model, tr, identityWhere(ctx, model, tr))}`)
}

/** Prisma's run-time `true`/`false` of a `disconnect: Boolean` / `delete: Boolean` input. */
function flagOf(v: ArgValue | undefined): (vars: Vars) => boolean {
  if (v instanceof Leaf) return (vars) => v.get(vars, []) === true
  return () => false
}

/** A row of an update, by identity, with the relation writes of its data. */
export interface UpdateRowPlan {
  model: Model
  /** `extra` = [identity…, to-one key values…]; null when nothing is assigned. */
  update: Stmt | null
  setsIdentity: [number, Leaf | typeof NULL][]
  rel: UpdateRelationsPlan
  /** A nested row of a row-filtered model: its update check (see {@link checkStmt}). */
  check: Stmt | null
}

/**
 * Compiles the update of one row of `model` (by identity) and the relation writes of `data`.
 * @param without the relation back to a nested update's parent (absent from its data's type), or null
 * @param nested true for a nested row: checked against its row filter once written
 * @throws DbInputError, DbRelationRequiredError on a bad relation input, too deep or too many nested writes
 */
export function compileUpdateRow(ctx: Ctx, model: Model, data: ArgValue | undefined, depth: number, budget: NestedBudget, nested: boolean): UpdateRowPlan {
  const tr = ctx.d.table(model.table)
  const { frag, setsIdentity } = setFrag(ctx, model, data)
  const rel = compileUpdateRelations(ctx, model, data, depth, budget)
  const sets = [frag, rel.set].filter((f): f is Frag => f !== null)
  const update = sets.length ? stmt(ctx, sql`UPDATE ${tr} SET ${join(sets, ', ')} WHERE ${andRowFilter(ctx, model, tr, identityWhere(ctx, model, tr))}`) : null
  return { model, update, setsIdentity, rel, check: nested ? checkStmt(ctx, model) : null }
}

/**
 * Runs an {@link UpdateRowPlan} on the row whose identity is `id`: to-one writes, the UPDATE, the
 * writes after it, then (nested rows of a filtered model) the update check.
 * @returns the row's identity after the update
 * @throws DbNotFoundError, AuthForbiddenError (the row no longer passes its filter), driver errors
 */
export async function runUpdateRow(rt: Runtime, conn: unknown, plan: UpdateRowPlan, vars: Vars, id: unknown[]): Promise<unknown[]> {
  const model = plan.model
  const db = rt.db()
  const cur = plan.rel.current ? (await db.exec(conn, plan.rel.current.text, run(plan.rel.current, vars, id))).rows[0] ?? {} : {}
  const keys: unknown[] = []
  const curs: unknown[][] = []
  for (const t of plan.rel.toOnes) {
    const c = fieldValues(model, t.rel.fromFields, cur)
    curs.push(c)
    const v = await t.run(rt, conn, vars, c)
    if (t.assign) keys.push(...v)
  }
  if (plan.update) await db.exec(conn, plan.update.text, run(plan.update, vars, [...id, ...keys]))
  for (const [i, t] of plan.rel.toOnes.entries()) if (t.after) await t.after(rt, conn, vars, curs[i]!)
  const next = [...id]
  for (const [i, v] of plan.setsIdentity) next[i] = v === NULL ? null : rt.d.bindValue(field(model, model.identity[i]!), v.get(vars, []), false)
  if (plan.rel.toManys.length > 0) {
    let values: Values = Object.fromEntries(model.identity.map((n, i) => [n, next[i]]))
    if (plan.rel.reread) {
      const row = (await db.exec(conn, plan.rel.reread.text, run(plan.rel.reread, vars, next))).rows[0]
      if (row) values = { ...values, ...byName(model, plan.rel.want, row) }
    }
    for (const m of plan.rel.toManys) await m.run(rt, conn, vars, m.rel.fromFields.map((n) => values[n]))
  }
  if (plan.check && (await db.exec(conn, plan.check.text, run(plan.check, vars, next))).rows.length === 0) {
    throw new AuthForbiddenError(`the ${model.name} row written by a nested write does not pass its row filter (nothing was written)`)
  }
  return next
}

/**
 * Compiles the relation inputs of an update's data (`updateOne`, the `update` of `upsertOne`, a
 * nested `update`). To-one relations whose key this row holds run first and set this row's foreign
 * key (assignments read `extra[identity length + j]`); the others run after the UPDATE with this
 * row's referenced key.
 * @throws DbInputError when a relation and its foreign key field are both given, or a relation's
 *   foreign key is part of the row's identity; DbRelationRequiredError for a disconnect of a NOT NULL key
 */
export function compileUpdateRelations(ctx: Ctx, model: Model, data: ArgValue | undefined, depth: number, budget: NestedBudget): UpdateRelationsPlan {
  const toOnes: BeforeStep[] = []
  const sets: Frag[] = []
  const toManys: AfterStep[] = []
  const given = new Set(isObj(data) ? Object.keys(data).filter((k) => model.fieldMap.has(k)) : [])
  let offset = model.identity.length
  for (const [r, v] of relationEntries(model, data)) {
    if (r.via) toManys.push(compileVia(ctx, model, r, v, depth + 1, budget))
    else if (!r.holdsKey) toManys.push(compileToManyUpdate(ctx, model, r, v, depth + 1, budget))
    else {
      const step = compileToOneUpdate(ctx, model, r, v, depth + 1, budget)
      toOnes.push(step)
      if (!step.assign) continue
      for (const name of r.fromFields) {
        if (given.has(name)) throw new DbInputError(`${model.name}: \`${name}\` is set twice (by \`${r.name}\` and by the data or another relation); give either the field or the relation`)
        if (model.identity.includes(name)) throw new DbInputError(`${model.name}.${r.name}: its foreign key \`${name}\` identifies the row; set it with \`${name}: { set }\``)
        given.add(name)
      }
      const base = offset
      r.fromFields.forEach((name, j) => sets.push({ s: `${ctx.d.q(field(model, name).column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[base + j]] }))
      offset += r.fromFields.length
    }
  }
  const curFields = unique(toOnes.flatMap((t) => t.rel.fromFields))
  const current = curFields.length > 0 ? selectByIdentity(ctx, model, curFields) : null
  const want = unique(toManys.flatMap((t) => t.rel.fromFields))
  const reread = want.some((n) => !model.identity.includes(n)) ? selectByIdentity(ctx, model, want) : null
  return { toOnes, set: sets.length ? join(sets, ', ') : null, current, toManys, reread, want }
}

/** Finds a related row's identity with `find`, or fails with `TRB_ERR_DB_NOT_FOUND`. */
async function findOrFail(rt: Runtime, conn: unknown, find: Stmt, vars: Vars, extra: readonly unknown[], target: Model, label: string): Promise<unknown[]> {
  const row = (await rt.db().exec(conn, find.text, run(find, vars, extra))).rows[0]
  if (!row) throw new DbNotFoundError(target.name, label)
  return identityOf(target, row)
}

/**
 * The update input of a to-many relation (or a one-to-one back side) whose foreign key the target
 * holds: Prisma's `set`, `disconnect`, `delete`, `update`, `updateMany`, `deleteMany`, `upsert`
 * (to-one: `disconnect: true`, `delete: true`, `update: data`, `upsert`), then `create`, `connect`,
 * `connectOrCreate`. Every statement is scoped to the parent (`fk = parent`) and the target's row filter.
 */
function compileToManyUpdate(ctx: Ctx, model: Model, r: Relation, v: { [k: string]: ArgValue }, depth: number, budget: NestedBudget): AfterStep {
  const target = ctx.reg.models.get(r.target)!
  const where = `${model.name}.${r.name}`
  const many = r.kind === 'many'
  const fks = r.toFields.map((n) => field(target, n))
  const tr = ctx.d.table(target.table)
  const steps: ((rt: Runtime, conn: unknown, vars: Vars, parent: readonly unknown[]) => Promise<void>)[] = []
  /** Items of a list op (to-many) or the single input (to-one; `where` is then the scope alone). */
  const items = (op: string): ArgValue[] => (many ? listOf(v[op]) : v[op] === undefined || v[op] === NULL ? [] : [v[op]!])
  const filtered = ctx.reg.rowFilters.has(target.name)
  for (const op of MANY_UPDATE_OPS) {
    if (!many && !(ONE_UPDATE_OPS as readonly string[]).includes(op)) continue
    const list = items(op)
    if (op === 'set') {
      if (v['set'] === undefined || v['set'] === NULL) continue
      // Disconnects every (visible) row of the parent, then connects the given ones (below).
      count(budget, depth, where)
      const off = disconnectStmt(ctx, target, fks, undefined, `${where}: set`)
      const vis = detachedCount(ctx, target, fks)
      const connects = list.map((item) => {
        count(budget, depth, where)
        needIdentity(target, where)
        return { find: identitySelect(ctx, target, item), label: `${where}: set ${whereLabel(target, item)}` }
      })
      const link = linkStmt(ctx, target, fks)
      steps.push(async (rt, conn, vars, parent) => {
        const db = rt.db()
        chargeNested(rt, vars, await detach(rt, conn, off, vis, vars, parent, `${where}: set`))
        for (const c of connects) {
          const id = await findOrFail(rt, conn, c.find, vars, [], target, c.label)
          await db.exec(conn, link.text, run(link, vars, [...parent, ...id]))
        }
      })
      continue
    }
    for (const item of list) {
      count(budget, depth, where)
      const uw = many && isObj(item) && (op === 'update' || op === 'upsert') ? item['where'] : many && op !== 'updateMany' && op !== 'deleteMany' ? item : undefined
      const label = `${where}: ${op} ${many ? whereLabel(target, uw) : ''}`.trimEnd()
      if (op === 'disconnect') {
        const s = disconnectStmt(ctx, target, fks, uw, label)
        const vis = detachedCount(ctx, target, fks)
        const on = many ? () => true : flagOf(item)
        // Prisma: disconnecting a row that is not connected does nothing.
        steps.push(async (rt, conn, vars, parent) => {
          if (on(vars)) await detach(rt, conn, s, vis, vars, parent, label)
        })
      } else if (op === 'delete') {
        const s = stmt(ctx, sql`DELETE FROM ${tr} WHERE ${scopedCond(ctx, target, fks, uw)}`)
        const on = many ? () => true : flagOf(item)
        steps.push(async (rt, conn, vars, parent) => {
          if (on(vars) && (await rt.db().exec(conn, s.text, run(s, vars, parent))).affected === 0) throw new DbNotFoundError(target.name, label)
        })
      } else if (op === 'update' || op === 'upsert') {
        needIdentity(target, where)
        const find = scopedSelect(ctx, target, fks, uw)
        const dataArg = !isObj(item) ? undefined : op === 'upsert' ? item['update'] : many ? item['data'] : item
        const upd = compileUpdateRow(ctx, target, dataArg, depth, budget, true)
        const create = op === 'upsert' && isObj(item) ? compileCreateRow(ctx, target, item['create'], fks, [], depth, budget) : null
        steps.push(async (rt, conn, vars, parent) => {
          const row = (await rt.db().exec(conn, find.text, run(find, vars, parent))).rows[0]
          if (row) await runUpdateRow(rt, conn, upd, vars, identityOf(target, row))
          else if (create) await runCreateRow(rt, conn, create, vars, parent)
          else throw new DbNotFoundError(target.name, label)
        })
      } else if (op === 'updateMany' || op === 'deleteMany') {
        const sw = op === 'updateMany' && isObj(item) ? item['where'] : item
        const cond = (): Frag => {
          const w = filteredWhere(ctx, target, tr, sw)
          const scope = scopeFrag(ctx, fks, tr)
          return w ? sql`${scope} AND (${w})` : scope
        }
        if (op === 'deleteMany') {
          const s = stmt(ctx, sql`DELETE FROM ${tr} WHERE ${cond()}`)
          steps.push(async (rt, conn, vars, parent) => chargeNested(rt, vars, (await rt.db().exec(conn, s.text, run(s, vars, parent))).affected))
          continue
        }
        const { frag } = setFrag(ctx, target, isObj(item) ? item['data'] : undefined)
        if (!frag) continue
        const s = stmt(ctx, sql`UPDATE ${tr} SET ${frag} WHERE ${cond()}`)
        // The update check, set-based: the parent's visible rows may not become fewer (a changed row left the filter).
        const vis = filtered ? stmt(ctx, sql`SELECT COUNT(*) AS n FROM ${tr} WHERE ${andRowFilter(ctx, target, tr, scopeFrag(ctx, fks, tr))}`) : null
        steps.push(async (rt, conn, vars, parent) => {
          const db = rt.db()
          const before = vis ? Number((await db.exec(conn, vis.text, run(vis, vars, parent))).rows[0]?.['n'] ?? 0) : 0
          chargeNested(rt, vars, (await db.exec(conn, s.text, run(s, vars, parent))).affected)
          if (vis && Number((await db.exec(conn, vis.text, run(vis, vars, parent))).rows[0]?.['n'] ?? 0) < before) {
            throw new AuthForbiddenError(`${where}: a row changed by updateMany does not pass the row filter of ${target.name} (nothing was written)`)
          }
        })
      }
    }
  }
  const creates = toManyStep(compileToMany(ctx, model, r, v, depth, budget))
  return {
    rel: r,
    async run(rt, conn, vars, parent) {
      for (const s of steps) await s(rt, conn, vars, parent)
      await creates.run(rt, conn, vars, parent)
    },
  }
}

/** `UPDATE target SET fks = extra[0…] WHERE identity = extra[k…]`: connects a row to the parent. */
function linkStmt(ctx: Ctx, target: Model, fks: readonly ScalarField[]): Stmt {
  const tr = ctx.d.table(target.table)
  const sets = join(fks.map((f, j) => ({ s: `${ctx.d.q(f.column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[j]] })), ', ')
  return stmt(ctx, sql`UPDATE ${tr} SET ${sets} WHERE ${identityWhere(ctx, target, tr, fks.length)}`)
}

/**
 * The update input of a to-one relation whose foreign key this row holds: `create`, `connect`,
 * `connectOrCreate`, `upsert` (their key is assigned to this row), `update` (the row it points to),
 * `disconnect: true` (the key set to NULL), `delete: true` (the key set to NULL, then the row it
 * pointed to deleted). Exactly one.
 */
function compileToOneUpdate(ctx: Ctx, model: Model, r: Relation, v: { [k: string]: ArgValue }, depth: number, budget: NestedBudget): BeforeStep {
  const given = ONE_UPDATE_OPS.filter((op) => v[op] !== undefined && v[op] !== NULL)
  if (given.length !== 1) throw new DbInputError(`${model.name}.${r.name}: give exactly one of ${ONE_UPDATE_OPS.join(', ')}`)
  const op = given[0]!
  if (op === 'create' || op === 'connect' || op === 'connectOrCreate') {
    const t = compileToOne(ctx, model, r, v, depth, budget)
    return { rel: r, assign: true, run: (rt, conn, vars) => runToOne(rt, conn, t, vars) }
  }
  count(budget, depth, `${model.name}.${r.name}`)
  const target = ctx.reg.models.get(r.target)!
  const label = `${model.name}.${r.name}: ${op}`
  const tr = ctx.d.table(target.table)
  // The row this one points to: `target.toFields = cur` AND its row filter.
  const pointed = (): Frag => andRowFilter(ctx, target, tr, scopeFrag(ctx, r.toFields.map((n) => field(target, n)), tr))
  const flag = flagOf(v[op])
  const keep = (cur: readonly unknown[], on: boolean): unknown[] => (on ? cur.map(() => null) : [...cur])
  if (op === 'disconnect') {
    if (r.fromFields.some((n) => !field(model, n).nullable)) throw new DbRelationRequiredError(`${label}: ${model.name}.${r.name} is required`)
    return { rel: r, assign: true, run: async (_rt, _conn, vars, cur) => keep(cur, flag(vars)) }
  }
  if (op === 'delete') {
    if (r.fromFields.some((n) => !field(model, n).nullable)) throw new DbRelationRequiredError(`${label}: ${model.name}.${r.name} is required`)
    const del = stmt(ctx, sql`DELETE FROM ${tr} WHERE ${pointed()}`)
    return {
      rel: r,
      assign: true,
      run: async (_rt, _conn, vars, cur) => keep(cur, flag(vars)),
      async after(rt, conn, vars, cur) {
        if (!flag(vars)) return
        if (cur.some((x) => x === null || x === undefined) || (await rt.db().exec(conn, del.text, run(del, vars, cur))).affected === 0) throw new DbNotFoundError(target.name, label)
      },
    }
  }
  needIdentity(target, label)
  const item = v[op]!
  const find = stmt(ctx, sql`SELECT ${target.identity.map((n) => `${tr}.${ctx.d.q(field(target, n).column)}`).join(', ')} FROM ${tr} WHERE ${pointed()}`)
  const upd = compileUpdateRow(ctx, target, op === 'upsert' && isObj(item) ? item['update'] : item, depth, budget, true)
  const create = op === 'upsert' && isObj(item) ? compileCreateRow(ctx, target, item['create'], [], r.toFields, depth, budget) : null
  return {
    rel: r,
    assign: op === 'upsert',
    async run(rt, conn, vars, cur) {
      const row = cur.some((x) => x === null || x === undefined) ? undefined : (await rt.db().exec(conn, find.text, run(find, vars, cur))).rows[0]
      if (row) {
        await runUpdateRow(rt, conn, upd, vars, identityOf(target, row))
        return [...cur]
      }
      if (!create) throw new DbNotFoundError(target.name, label)
      const values = await runCreateRow(rt, conn, create, vars, [])
      return r.toFields.map((n) => values[n])
    },
  }
}

/**
 * A many-to-many shortcut's writes through its join table, in Prisma's order: `set` (the parent's
 * join rows deleted, then the given rows connected), `disconnect` (their join rows deleted),
 * `delete` (a linked row and all its join rows deleted), `update` (a linked row updated, nesting
 * again), `updateMany` (the linked rows matching a scalar where: one UPDATE), `deleteMany` (the
 * linked rows matching: their join rows and the rows deleted), `upsert` (a linked row updated, else
 * created and linked), then `create`, `connect`, `connectOrCreate` (a join row inserted for each row
 * found or created; one already there is kept).
 *
 * "Linked" means a join row joins it to the parent: `update`/`delete`/`upsert` never reach a row of
 * another parent (`update`/`delete`: `TRB_ERR_DB_NOT_FOUND`; `upsert`: creates). Rows hidden by the
 * target's row filter are neither found, changed nor deleted, and their join rows are left alone;
 * rows changed by `update`/`upsert`/`updateMany` must still pass the filter (`TRB_ERR_AUTH_FORBIDDEN`).
 * The rows `set`/`updateMany`/`deleteMany` change count against `maxNestedWrites`; `deleteMany`
 * counts its rows before deleting any.
 */
function compileVia(ctx: Ctx, model: Model, r: Relation, v: { [k: string]: ArgValue }, depth: number, budget: NestedBudget): AfterStep {
  const d = ctx.d
  const via = r.via!
  const target = ctx.reg.models.get(r.target)!
  const where = `${model.name}.${r.name}`
  const jt = d.table(via.table)
  const tr = d.table(target.table)
  const cols = [...via.sourceColumns, ...via.targetColumns]
  const ph = cols.map(() => '?').join(', ')
  const params = cols.map((_c, i) => (_v: Vars, x: readonly unknown[]) => x[i])
  const conflict = d.dialect === 'mysql' ? ` ON DUPLICATE KEY UPDATE ${d.q(cols[0]!)} = ${d.q(cols[0]!)}` : ' ON CONFLICT DO NOTHING'
  const link: Stmt = { text: d.native(`INSERT INTO ${jt} (${cols.map((c) => d.q(c)).join(', ')}) VALUES (${ph})${conflict}`), params }
  const src = join(via.sourceColumns.map((c, j) => ({ s: `${jt}.${d.q(c)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[j]] })), ' AND ')
  const tcol = (i: number): string => d.q(field(target, r.toFields[i]!).column)
  /** `EXISTS (the target row a join row points to, visible, [matching a unique where])`. */
  const visible = (w: ArgValue | undefined): Frag | null => {
    const a = 'trb_m2m'
    const corr = via.targetColumns.map((c, i) => `${a}.${tcol(i)} = ${jt}.${d.q(c)}`).join(' AND ')
    const cond = w === undefined ? raw(corr) : sql`${corr} AND ${compileUnique(ctx, target, a, w)}`
    const f = andRowFilter(ctx, target, a, cond)
    if (w === undefined && f === cond) return null
    return sql`EXISTS (SELECT 1 FROM ${d.table(target.table)} AS ${a} WHERE ${f})`
  }
  const unlink = (w: ArgValue | undefined): Stmt => {
    const e = visible(w)
    return stmt(ctx, e ? sql`DELETE FROM ${jt} WHERE ${src} AND ${e}` : sql`DELETE FROM ${jt} WHERE ${src}`)
  }
  /** `EXISTS (a join row from the parent, extra[0…], to this target row)`: the rows linked to the parent. */
  const linked = (): Frag => {
    const j = 'trb_j'
    const cond = [
      ...via.sourceColumns.map((c, k) => ({ s: `${j}.${d.q(c)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[k]] })),
      ...via.targetColumns.map((c, i) => `${j}.${d.q(c)} = ${tr}.${tcol(i)}`),
    ]
    return sql`EXISTS (SELECT 1 FROM ${jt} AS ${j} WHERE ${join(cond, ' AND ')})`
  }
  /** Linked, visible rows of the target (`[where AND] linked AND row filter`); `scalar`: a ScalarWhereInput, else a unique where. */
  const linkedCond = (w: ArgValue | undefined, scalar: boolean): Frag => {
    const l = linked()
    const wf = w === undefined ? null : scalar ? filteredWhere(ctx, target, tr, w) : compileUnique(ctx, target, tr, w)
    return andRowFilter(ctx, target, tr, wf ? sql`(${wf}) AND ${l}` : l)
  }
  const keyFields = unique([...target.identity, ...r.toFields])
  /** `SELECT identity, toFields FROM target WHERE linkedCond` (bounded: `deleteMany` counts the rows first). */
  const linkedSelect = (w: ArgValue | undefined, scalar: boolean): Stmt =>
    stmt(ctx, sql`SELECT ${keyFields.map((n) => `${tr}.${d.q(field(target, n).column)}`).join(', ')} FROM ${tr} WHERE ${linkedCond(w, scalar)}`)
  // Deletes a target row (identity = extra[0…], visible) after all its join rows (toFields = extra[0…]).
  const unlinkAll = stmt(ctx, join([`DELETE FROM ${jt} WHERE `, join(via.targetColumns.map((c, i) => ({ s: `${jt}.${d.q(c)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[i]] })), ' AND ')]))
  const delRow = target.identity.length > 0 ? stmt(ctx, sql`DELETE FROM ${tr} WHERE ${andRowFilter(ctx, target, tr, identityWhere(ctx, target, tr))}`) : null
  const deleteLinked = async (rt: Runtime, conn: unknown, vars: Vars, row: Record<string, unknown>): Promise<void> => {
    const db = rt.db()
    await db.exec(conn, unlinkAll.text, run(unlinkAll, vars, fieldValues(target, r.toFields, row)))
    await db.exec(conn, delRow!.text, run(delRow!, vars, identityOf(target, row)))
  }
  type Step = (rt: Runtime, conn: unknown, vars: Vars, parent: readonly unknown[]) => Promise<void>
  /** Finds (`find`) or creates a row and inserts its join row to the parent. */
  const connectStep = (op: string, item: ArgValue | undefined, counted = false): Step => {
    if (!counted) count(budget, depth, where)
    const whereArg = op === 'connect' || op === 'set' ? item : op === 'connectOrCreate' && isObj(item) ? item['where'] : undefined
    const createArg = op === 'create' ? item : op === 'connectOrCreate' && isObj(item) ? item['create'] : undefined
    const find = whereArg !== undefined ? identitySelect(ctx, target, whereArg, r.toFields) : null
    const create = createArg !== undefined ? compileCreateRow(ctx, target, createArg, [], r.toFields, depth, budget) : null
    const label = `${where}: ${op} ${whereLabel(target, whereArg)}`
    return async (rt, conn, vars, parent) => {
      const db = rt.db()
      let key: unknown[] | null = null
      if (find) {
        const row = (await db.exec(conn, find.text, run(find, vars))).rows[0]
        if (row) key = fieldValues(target, r.toFields, row)
        else if (!create) throw new DbNotFoundError(target.name, label)
      }
      if (!key) {
        const values = await runCreateRow(rt, conn, create!, vars, [])
        key = r.toFields.map((n) => values[n])
      }
      await db.exec(conn, link.text, run(link, vars, [...parent, ...key]))
    }
  }
  const steps: Step[] = []
  if (v['set'] !== undefined && v['set'] !== NULL) {
    count(budget, depth, where)
    const all = unlink(undefined)
    steps.push(async (rt, conn, vars, parent) => chargeNested(rt, vars, (await rt.db().exec(conn, all.text, run(all, vars, parent))).affected))
    for (const item of listOf(v['set'])) steps.push(connectStep('set', item))
  }
  for (const item of listOf(v['disconnect'])) {
    count(budget, depth, where)
    const s = unlink(item)
    steps.push(async (rt, conn, vars, parent) => void (await rt.db().exec(conn, s.text, run(s, vars, parent))))
  }
  for (const op of ['delete', 'update', 'updateMany', 'deleteMany', 'upsert'] as const) {
    for (const item of listOf(v[op])) {
      count(budget, depth, where)
      needIdentity(target, where)
      const uw = op === 'delete' ? item : (op === 'update' || op === 'upsert') && isObj(item) ? item['where'] : undefined
      const label = `${where}: ${op} ${whereLabel(target, uw)}`
      if (op === 'delete') {
        const find = linkedSelect(uw, false)
        steps.push(async (rt, conn, vars, parent) => {
          const row = (await rt.db().exec(conn, find.text, run(find, vars, parent))).rows[0]
          if (!row) throw new DbNotFoundError(target.name, label)
          await deleteLinked(rt, conn, vars, row)
        })
      } else if (op === 'deleteMany') {
        const find = linkedSelect(item, true)
        steps.push(async (rt, conn, vars, parent) => {
          const rows = (await rt.db().exec(conn, find.text, run(find, vars, parent))).rows
          // Counted before the first delete: a deleteMany over the limit deletes nothing.
          chargeNested(rt, vars, rows.length)
          for (const row of rows) await deleteLinked(rt, conn, vars, row)
        })
      } else if (op === 'updateMany') {
        const { frag } = setFrag(ctx, target, isObj(item) ? item['data'] : undefined)
        if (!frag) continue
        const cond = linkedCond(isObj(item) ? item['where'] : undefined, true)
        const s = stmt(ctx, sql`UPDATE ${tr} SET ${frag} WHERE ${cond}`)
        // The update check, set-based: the parent's visible linked rows may not become fewer.
        const vis = ctx.reg.rowFilters.has(target.name) ? stmt(ctx, sql`SELECT COUNT(*) AS n FROM ${tr} WHERE ${linkedCond(undefined, true)}`) : null
        steps.push(async (rt, conn, vars, parent) => {
          const db = rt.db()
          const n = async (): Promise<number> => Number((await db.exec(conn, vis!.text, run(vis!, vars, parent))).rows[0]?.['n'] ?? 0)
          const before = vis ? await n() : 0
          chargeNested(rt, vars, (await db.exec(conn, s.text, run(s, vars, parent))).affected)
          if (vis && (await n()) < before) throw new AuthForbiddenError(`${where}: a row changed by updateMany does not pass the row filter of ${target.name} (nothing was written)`)
        })
      } else {
        const find = linkedSelect(uw, false)
        const upd = compileUpdateRow(ctx, target, isObj(item) ? item[op === 'upsert' ? 'update' : 'data'] : undefined, depth, budget, true)
        const create = op === 'upsert' && isObj(item) ? connectStep('create', item['create'], true) : null
        steps.push(async (rt, conn, vars, parent) => {
          const row = (await rt.db().exec(conn, find.text, run(find, vars, parent))).rows[0]
          if (row) await runUpdateRow(rt, conn, upd, vars, identityOf(target, row))
          else if (create) await create(rt, conn, vars, parent)
          else throw new DbNotFoundError(target.name, label)
        })
      }
    }
  }
  for (const op of ['create', 'connect', 'connectOrCreate'] as const) for (const item of listOf(v[op])) steps.push(connectStep(op, item))
  return {
    rel: r,
    async run(rt, conn, vars, parent) {
      for (const s of steps) await s(rt, conn, vars, parent)
    },
  }
}

/**
 * Counts nested rows against the request's total on this source: a field's items before it runs,
 * and the rows a `set`, `updateMany` or `deleteMany` changed, as it runs.
 * @throws DbInputError when the request's nested writes pass `maxNestedWrites`
 */
export function chargeNested(rt: Runtime, vars: Vars, rows: number): void {
  if (rows === 0) return
  const total = (rt.nestedWrites.get(vars) ?? 0) + rows
  if (total > rt.maxNestedWrites) throw new DbInputError(`the nested writes of this request write more than ${rt.maxNestedWrites} rows (maxNestedWrites)`)
  rt.nestedWrites.set(vars, total)
}
