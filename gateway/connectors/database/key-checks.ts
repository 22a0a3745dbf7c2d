/**
 * Row filters on foreign keys (README "Row filters", written relations): a write that sets the key of
 * a to-one relation by its scalar fields (`createOneComment(data: { noteId: 4 })`, `updateOne`,
 * `updateMany`, `upsertOne`, `createMany`) may only point at a row of the target that the caller can
 * read. When the target type has a row filter and the caller does not bypass it, the referenced row
 * is looked up with that filter before the write, on the write's transaction connection:
 *
 * - a create (or an update that sets every field of the key with `set`) looks the values up:
 *   `SELECT 1 FROM target t WHERE t.k = ? AND (filter on t) LIMIT 1`, once per distinct key, or for
 *   the many keys of a `createMany` on a one-column key, `SELECT COUNT(DISTINCT t.k) … WHERE t.k IN
 *   (…) AND (filter on t)` per {@link KEYS_PER_LOOKUP} keys;
 * - an update that sets only some fields of a compound key checks the rows it is about to change:
 *   `SELECT 1 FROM child c WHERE <the update's rows> AND c.other IS NOT NULL AND NOT EXISTS
 *   (SELECT 1 FROM target t WHERE t.k1 = ? AND t.k2 = c.other AND (filter on t)) LIMIT 1`;
 * - a key with a null field references nothing (SQL's MATCH SIMPLE): not checked.
 *
 * A hidden row and an absent one get the same error, `TRB_ERR_DB_FOREIGN_KEY` (409) naming the
 * relation, as the engine's own constraint error does on PostgreSQL and MySQL: the answer never tells
 * whether a row the caller cannot see exists. Arithmetic (`increment`…) on such a key, and a create
 * that sets only part of a compound key, are refused with `TRB_ERR_DB_INPUT` whatever the values.
 *
 * Checked in the same transaction, before the write: the result is that of the serial order "check,
 * then write", since a concurrent change of the target row's owner commits either before the check
 * (seen) or after it (as if it had come after the write).
 */
import { DbForeignKeyError, DbInputError } from '../../errors.js'
import { Leaf, NULL, isObj, type ArgValue } from './compiler/args.js'
import { join, raw, sql, type Frag, type Getter, type Vars } from './compiler/frag.js'
import { andRowFilter, newAlias, type Ctx } from './compiler/read.js'
import type { Model, Registry, Relation, ScalarField } from './compiler/registry.js'
import { relationLabel } from './db-errors.js'
import type { Runtime } from './resolvers.js'
import { run, stmt, valueFrag, type Stmt } from './write-sql.js'

/** One relation to a row-filtered type whose key a write sets. */
type KeyCheck =
  /** `lookup` reads the keys from `extra`; `rows` holds the key getters of each written row. */
  | { kind: 'values'; label: string; bypass: Getter | null; lookup: Lookup; rows: Getter[][] }
  /** `stmt` returns a row when a row to change would point at an invisible target; `keys` are its set values. */
  | { kind: 'rows'; label: string; bypass: Getter | null; stmt: Stmt; keys: Getter[] }
  /** Refused for callers the filter applies to (`TRB_ERR_DB_INPUT`, `why`). */
  | { kind: 'refuse'; label: string; bypass: Getter | null; why: string }

/** The foreign-key checks of one write (empty when it sets no key of a relation to a filtered type). */
export type KeyChecks = readonly KeyCheck[]

/** The to-one relations of `model` that hold a key to a row-filtered type. */
function filteredRelations(reg: Registry, model: Model): [Relation, Model][] {
  if (reg.rowFilters.size === 0) return []
  const out: [Relation, Model][] = []
  for (const rel of model.relations.values()) {
    const target = reg.models.get(rel.target)
    if (rel.holdsKey && rel.kind === 'one' && !rel.via && target && reg.rowFilters.has(target.name)) out.push([rel, target])
  }
  return out
}

/** The names of the row-filtered types whose key a scalar field of `data` (a create or update input of `model`) sets: the nested-write guard of mutations.ts. */
export function keyTargets(reg: Registry, model: Model, data: { [key: string]: ArgValue }): string[] {
  return filteredRelations(reg, model).filter(([rel]) => rel.fromFields.some((f) => f in data)).map(([, t]) => t.name)
}

/** `t.k_i = <value_i>` for each key column, and the target's row filter, as a subquery body. */
function visibleTarget(ctx: Ctx, rel: Relation, target: Model, values: Frag[]): { alias: string; cond: Frag } {
  const alias = newAlias(ctx)
  const eq = join(rel.toFields.map((n, i) => sql`${alias}.${ctx.d.q(target.fieldMap.get(n)!.column)} = ${values[i]!}`), ' AND ')
  return { alias, cond: andRowFilter(ctx, target, alias, eq) }
}

/** Keys of a one-column relation looked up per statement when a write sets many (`createMany`). */
export const KEYS_PER_LOOKUP = 500

/** The statements that look keys up by value (bound to `extra`). */
interface Lookup {
  /** One key, its fields in `extra[0…]`: returns a row when the target is there and visible. */
  one: Stmt
  /**
   * One-column keys: the statement counting the distinct visible targets of `n` keys in
   * `extra[0…n-1]` (`COUNT(DISTINCT k) … WHERE k IN (…)`), made once per `n`; null for compound keys.
   */
  many: ((n: number) => Stmt) | null
}

function lookupOf(ctx: Ctx, rel: Relation, target: Model): Lookup {
  const fromExtra = rel.fromFields.map((_, i): Frag => ({ s: '?', p: [(_v, x) => x[i]] }))
  const { alias, cond } = visibleTarget(ctx, rel, target, fromExtra)
  const table = ctx.d.table(target.table)
  const one = stmt(ctx, sql`SELECT 1 AS x FROM ${table} AS ${alias} WHERE ${cond} LIMIT 1`)
  if (rel.toFields.length !== 1) return { one, many: null }
  const a = newAlias(ctx)
  const col = `${a}.${ctx.d.q(target.fieldMap.get(rel.toFields[0]!)!.column)}`
  const filter = andRowFilter(ctx, target, a, raw('1 = 1'))
  const d = ctx.d
  const made = new Map<number, Stmt>()
  const many = (n: number): Stmt => {
    let s = made.get(n)
    if (!s) {
      const keys = Array.from({ length: n }, (_, i): Getter => (_v, x) => x[i])
      s = { text: d.native(`SELECT COUNT(DISTINCT ${col}) AS n FROM ${table} AS ${a} WHERE ${col} IN (${keys.map(() => '?').join(', ')}) AND ${filter.s}`), params: [...keys, ...filter.p] }
      made.set(n, s)
    }
    return s
  }
  return { one, many }
}

function base(ctx: Ctx, model: Model, rel: Relation): { label: string; bypass: Getter | null } {
  return { label: relationLabel(model, rel), bypass: ctx.reg.rowFilters.get(rel.target)!.bypass }
}

/** The getter of a bound value, converted as the INSERT or UPDATE converts it (null for `NULL`). */
function valueGetter(ctx: Ctx, f: ScalarField, v: Leaf | typeof NULL): Getter {
  return v === NULL ? () => null : valueFrag(ctx, f, v).p[0]!
}

/**
 * Checks of rows to insert (`createOne`, `createMany`, the create of `upsertOne`).
 * @param rows the scalar `[field, value]` pairs of each row (write-sql.ts `createPairs`)
 */
export function compileCreateKeyChecks(ctx: Ctx, model: Model, rows: readonly (readonly [ScalarField, Leaf | typeof NULL])[][]): KeyChecks {
  const out: KeyCheck[] = []
  for (const [rel, target] of filteredRelations(ctx.reg, model)) {
    const keyRows: Getter[][] = []
    let partial = false
    for (const pairs of rows) {
      const byName = new Map(pairs.map(([f, v]) => [f.name, [f, v] as const]))
      const set = rel.fromFields.map((n) => byName.get(n))
      if (set.every((p) => p === undefined)) continue
      if (set.some((p) => p === undefined)) partial = true
      else keyRows.push(set.map((p) => valueGetter(ctx, p![0], p![1])))
    }
    if (partial) out.push({ kind: 'refuse', ...base(ctx, model, rel), why: `${relationLabel(model, rel)}: set every field of the key or none (${rel.target} has a row filter)` })
    else if (keyRows.length > 0) out.push({ kind: 'values', ...base(ctx, model, rel), lookup: lookupOf(ctx, rel, target), rows: keyRows })
  }
  return out
}

/**
 * Checks of an update's `data` (`updateOne`, `updateMany`, the update of `upsertOne`).
 * @param rowsWhere the condition selecting the rows the update changes, on the alias it is given
 *   (its parameters read the same `vars` and `extra` as the update)
 */
export function compileUpdateKeyChecks(ctx: Ctx, model: Model, data: ArgValue | undefined, rowsWhere: (alias: string) => Frag | null): KeyChecks {
  if (!isObj(data)) return []
  const out: KeyCheck[] = []
  for (const [rel, target] of filteredRelations(ctx.reg, model)) {
    const ops = rel.fromFields.map((n) => data[n])
    if (ops.every((o) => o === undefined)) continue
    const label = relationLabel(model, rel)
    // A bare value is `set`, as in the UPDATE (mutations.ts setFrag).
    const sets = ops.map((o) => (o === undefined ? undefined : isObj(o) ? (Object.keys(o).length === 1 && 'set' in o ? o['set'] : false) : o))
    if (sets.some((s) => s === false || Array.isArray(s) || isObj(s as ArgValue))) {
      out.push({ kind: 'refuse', ...base(ctx, model, rel), why: `${label}: only \`set\` may change a key of a relation to ${rel.target}, which has a row filter` })
      continue
    }
    const fields = rel.fromFields.map((n) => model.fieldMap.get(n)!)
    if (sets.every((s) => s !== undefined)) {
      out.push({ kind: 'values', ...base(ctx, model, rel), lookup: lookupOf(ctx, rel, target), rows: [sets.map((s, i) => valueGetter(ctx, fields[i]!, s as Leaf | typeof NULL))] })
      continue
    }
    // Part of a compound key: the other fields come from each row the update changes.
    const c = newAlias(ctx)
    const keys: Getter[] = []
    const values = sets.map((s, i): Frag => {
      if (s === undefined) return raw(`${c}.${ctx.d.q(fields[i]!.column)}`)
      const g = valueGetter(ctx, fields[i]!, s as Leaf | typeof NULL)
      keys.push(g)
      return { s: '?', p: [g] }
    })
    const notNull = fields.filter((_, i) => sets[i] === undefined).map((f) => `${c}.${ctx.d.q(f.column)} IS NOT NULL`)
    const w = rowsWhere(c)
    const { alias, cond } = visibleTarget(ctx, rel, target, values)
    const body = sql`SELECT 1 AS x FROM ${ctx.d.table(model.table)} AS ${c} WHERE ${w ? sql`(${w}) AND ` : ''}${notNull.join(' AND ')} AND NOT EXISTS (SELECT 1 FROM ${ctx.d.table(target.table)} AS ${alias} WHERE ${cond}) LIMIT 1`
    out.push({ kind: 'rows', ...base(ctx, model, rel), stmt: stmt(ctx, body), keys })
  }
  return out
}

/** A bound key value as a string that tells distinct values apart (bytes in hex, dates to the millisecond). */
function valueId(v: unknown): string {
  if (v instanceof Uint8Array) return `bytes:${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`
  if (v instanceof Date) return `date:${v.getTime()}`
  return `${typeof v}:${String(v)}`
}

/**
 * Runs the checks of one write on its transaction connection, before the write.
 * @param extra the values the update's row condition reads (the row's identity), as for the UPDATE
 * @throws DbForeignKeyError (`TRB_ERR_DB_FOREIGN_KEY`, 409) when a key points at a row the caller
 *   cannot see or at no row; DbInputError for a refused form; the row filter's 401/403 when the
 *   caller's token lacks a claim the target's filter reads
 */
export async function runKeyChecks(rt: Runtime, conn: unknown, checks: KeyChecks, vars: Vars, extra: readonly unknown[] = []): Promise<void> {
  for (const check of checks) {
    if (check.bypass && check.bypass(vars, []) === 1) continue
    if (check.kind === 'refuse') throw new DbInputError(check.why)
    if (check.kind === 'rows') {
      if (check.keys.some((g) => g(vars, extra) == null)) continue
      if ((await rt.db().exec(conn, check.stmt.text, run(check.stmt, vars, extra))).rows[0]) throw new DbForeignKeyError(check.label)
      continue
    }
    const keys = new Map<string, unknown[]>()
    for (const getters of check.rows) {
      const key = getters.map((g) => g(vars, extra))
      if (!key.some((v) => v == null)) keys.set(key.map(valueId).join('\u0000'), key)
    }
    const { one, many } = check.lookup
    if (many && keys.size > 1) {
      // Every distinct key must find its row: a count below the keys' misses one (a key the engine's
      // collation folds into another, `'A'` and `'a'`, is refused too: fails closed).
      const values = [...keys.values()].map((k) => k[0])
      for (let i = 0; i < values.length; i += KEYS_PER_LOOKUP) {
        const chunk = values.slice(i, i + KEYS_PER_LOOKUP)
        const s = many(chunk.length)
        const found = Number((await rt.db().exec(conn, s.text, run(s, vars, chunk))).rows[0]?.['n'] ?? 0)
        if (found < chunk.length) throw new DbForeignKeyError(check.label)
      }
      continue
    }
    for (const key of keys.values()) {
      if (!(await rt.db().exec(conn, one.text, run(one, vars, key))).rows[0]) throw new DbForeignKeyError(check.label)
    }
  }
}
