/**
 * SQL building blocks of the write side (mutations.ts, nested-writes.ts): compiled statements, INSERT
 * and identity fragments. Values are bound through getters `(vars, extra)`: `vars` the request's
 * variables, `extra` values known only at run time (a key read back after an insert, a parent's key).
 */
import { DbInputError } from '../../errors.js'
import { Leaf, NULL, isObj, listLeaf, type ArgValue } from './compiler/args.js'
import { join, raw, sql, type Frag, type Getter, type Vars } from './compiler/frag.js'
import { andRowFilter, bound, compileUnique, type Ctx } from './compiler/read.js'
import type { Model, ScalarField } from './compiler/registry.js'

/**
 * Leaves whose value is already in the engine's representation (a key read back from the database):
 * bound as they are, without the GraphQL-to-SQL conversion of `SqlDialect.bindValue`.
 */
const rawLeaves = new WeakSet<Leaf>()

/** A leaf reading `extra[index]` at run time, bound unconverted (see {@link rawLeaves}). */
export function extraLeaf(index: number): Leaf {
  const leaf = new Leaf((_v, x) => x[index])
  rawLeaves.add(leaf)
  return leaf
}

/** True for a leaf made by {@link extraLeaf}. */
export function isExtraLeaf(leaf: Leaf): boolean {
  return rawLeaves.has(leaf)
}

/** The bound parameter of one value of `f`: converted by `bindValue`, unless it is an {@link extraLeaf}. */
export function valueFrag(ctx: Ctx, f: ScalarField, v: Leaf): Frag {
  return rawLeaves.has(v) ? { s: '?', p: [v.get] } : bound(v, (x) => ctx.d.bindValue(f, x, false))
}

/** A compiled statement: SQL text (engine placeholders) and its getters. */
export interface Stmt {
  text: string
  params: Getter[]
}

export function stmt(ctx: Ctx, f: Frag): Stmt {
  return { text: ctx.d.native(f.s), params: f.p }
}

export function run(s: Stmt, vars: Vars, extra: readonly unknown[] = []): unknown[] {
  return s.params.map((g) => g(vars, extra))
}

/** `[field, value]` pairs of a create data object (scalar fields only; relation inputs are ignored). */
export function createPairs(model: Model, data: ArgValue | undefined): [ScalarField, Leaf | typeof NULL][] {
  if (!isObj(data)) return []
  const out: [ScalarField, Leaf | typeof NULL][] = []
  for (const [key, v] of Object.entries(data)) {
    const f = model.fieldMap.get(key)
    if (f && (v instanceof Leaf || v === NULL)) out.push([f, v])
    else if (f?.list && Array.isArray(v)) out.push([f, listLeaf(v)])
  }
  return out
}

/**
 * The clause that skips rows conflicting with a unique or primary key, and only those: every other
 * violation (NOT NULL, CHECK, foreign key, a value too long) still fails the statement.
 * - PostgreSQL, SQLite: `ON CONFLICT DO NOTHING` (SQLite applies it to uniqueness constraints only).
 * - MySQL/MariaDB: `ON DUPLICATE KEY UPDATE c = c` (never `INSERT IGNORE`, which turns every error
 *   into a warning: truncated strings, dropped foreign keys). The update counts the skipped rows in
 *   the session variable `@trb_skipped` ({@link MYSQL_SKIPPED}), since the affected-rows count of
 *   mysql2 (CLIENT_FOUND_ROWS) is 1 for an inserted row and for a skipped one alike.
 */
export function skipDuplicatesClause(d: Ctx['d'], model: Model): string {
  if (d.dialect !== 'mysql') return ' ON CONFLICT DO NOTHING'
  const f = model.fieldMap.get(model.primaryKey[0] ?? '') ?? model.fields[0]!
  const c = d.q(f.column)
  return ` ON DUPLICATE KEY UPDATE ${c} = IF((@trb_skipped := @trb_skipped + 1) IS NULL, ${c}, ${c})`
}

/**
 * `INSERT INTO table (cols) VALUES (...), ...` for rows that all set the same fields.
 * @param opts.returning `true`: `RETURNING` the identity; a list of field names: `RETURNING` those
 *   (only where the engine has it: PostgreSQL, SQLite, MariaDB)
 */
export function insertFrag(ctx: Ctx, model: Model, rows: [ScalarField, Leaf | typeof NULL][][], opts: { returning?: boolean | readonly string[]; skipDuplicates?: boolean }): Frag {
  const d = ctx.d
  const cols = rows[0]!.map(([f]) => f)
  const tableRef = d.table(model.table)
  const prefix = 'INSERT INTO'
  const conflict = opts.skipDuplicates ? skipDuplicatesClause(d, model) : ''
  const fields = opts.returning === true ? model.identity : opts.returning || []
  const returning = fields.length > 0 && canReturn(d)
    ? ` RETURNING ${fields.map((n) => d.q(model.fieldMap.get(n)!.column)).join(', ')}`
    : ''
  if (cols.length === 0) {
    if (d.dialect === 'sqlite' && conflict) {
      // SQLite has no upsert clause after DEFAULT VALUES; a NULL into the rowid alias is the same row.
      const rowid = model.fields.find((f) => f.autoIncrement)
      if (!rowid) throw new DbInputError(`${model.name}: skipDuplicates needs at least one field in every row of this table on SQLite`)
      return raw(`${prefix} ${tableRef} (${d.q(rowid.column)}) VALUES (NULL)${conflict}${returning}`)
    }
    const body = d.dialect === 'mysql' ? `${prefix} ${tableRef} () VALUES ()` : `${prefix} ${tableRef} DEFAULT VALUES`
    return raw(`${body}${conflict}${returning}`)
  }
  const values = rows.map((row) => sql`(${join(row.map(([f, v]) => (v === NULL ? raw('NULL') : valueFrag(ctx, f, v))), ', ')})`)
  return sql`${prefix} ${tableRef} (${cols.map((f) => d.q(f.column)).join(', ')}) VALUES ${join(values, ', ')}${conflict}${returning}`
}

/** True when INSERT … RETURNING is available: PostgreSQL, SQLite, MariaDB (not MySQL). */
export function canReturn(d: Ctx['d']): boolean {
  return d.dialect !== 'mysql' || d.flavor === 'mariadb'
}

/** `alias.k1 = ? AND …` on the identity fields, bound to `extra[offset + i]` (values as the engine returned them). */
export function identityWhere(ctx: Ctx, model: Model, alias: string, offset = 0): Frag {
  return join(
    model.identity.map((n, i) => {
      const f = model.fieldMap.get(n)!
      return { s: `${alias}.${ctx.d.q(f.column)} = ?`, p: [(_v: Vars, x: readonly unknown[]) => x[offset + i]] }
    }),
    ' AND ',
  )
}

/**
 * `SELECT <fields> FROM table WHERE <unique where>` (default: the identity fields), ANDed with the
 * model's row filter when it has one (a hidden row is not found); rows are keyed by column.
 * @throws DbInputError when `where` names no unique key
 */
export function identitySelect(ctx: Ctx, model: Model, where: ArgValue | undefined, fields: readonly string[] = model.identity): Stmt {
  const tableRef = ctx.d.table(model.table)
  return stmt(ctx, sql`SELECT ${columnList(ctx, model, tableRef, fields)} FROM ${tableRef} WHERE ${andRowFilter(ctx, model, tableRef, compileUnique(ctx, model, tableRef, where))}`)
}

/** `SELECT <fields> FROM table WHERE <identity = extra[0…]>`; rows are keyed by column. */
export function selectByIdentity(ctx: Ctx, model: Model, fields: readonly string[]): Stmt {
  const tableRef = ctx.d.table(model.table)
  return stmt(ctx, sql`SELECT ${columnList(ctx, model, tableRef, fields)} FROM ${tableRef} WHERE ${identityWhere(ctx, model, tableRef)}`)
}

function columnList(ctx: Ctx, model: Model, tableRef: string, fields: readonly string[]): string {
  return fields.map((n) => `${tableRef}.${ctx.d.q(model.fieldMap.get(n)!.column)}`).join(', ')
}

/** The identity values of a row keyed by column, in identity order. */
export function identityOf(model: Model, row: Record<string, unknown>): unknown[] {
  return fieldValues(model, model.identity, row)
}

/** The values of `fields` (field names) in a row keyed by column, in order. */
export function fieldValues(model: Model, fields: readonly string[], row: Record<string, unknown>): unknown[] {
  return fields.map((n) => row[model.fieldMap.get(n)!.column])
}

/** `where { a, b }`: the keys of a unique where, for not-found messages (never values). */
export function whereLabel(model: Model, where: ArgValue | undefined): string {
  return isObj(where) ? `where { ${Object.keys(where).join(', ')} }` : 'where'
}

/**
 * `SET` assignments of an update data object: `{ field: { set | increment | decrement | multiply | divide } }`
 * (a bare value is `set`; relation fields are skipped). `setsIdentity`: the identity fields it sets, by position.
 * @throws DbInputError when an identity field takes another operation than `set`
 */
export function setFrag(ctx: Ctx, model: Model, data: ArgValue | undefined): { frag: Frag | null; setsIdentity: [number, Leaf | typeof NULL][] } {
  const d = ctx.d
  const parts: Frag[] = []
  const setsIdentity: [number, Leaf | typeof NULL][] = []
  if (isObj(data)) {
    for (const [key, ops] of Object.entries(data)) {
      const f = model.fieldMap.get(key)
      if (!f) continue
      const c = d.q(f.column)
      // A bare value is accepted as `set`.
      const o: { [k: string]: ArgValue } = isObj(ops) ? ops : { set: ops }
      const [op, v] = Object.entries(o)[0] ?? []
      if (op === undefined || v === undefined) continue
      if (v === NULL) {
        if (op === 'set') parts.push(raw(`${c} = NULL`))
        continue
      }
      if (f.list && Array.isArray(v)) {
        // PostgreSQL arrays: `set` replaces, `push` appends (array_cat keeps the column's type).
        const p = bound(listLeaf(v), (x) => d.bindValue(f, x, false))
        if (op === 'set') parts.push({ s: `${c} = ?`, p: p.p })
        else if (op === 'push') parts.push({ s: `${c} = array_cat(${c}, ?)`, p: p.p })
        continue
      }
      if (!(v instanceof Leaf)) continue
      const p = bound(v, (x) => d.bindValue(f, x, false))
      const isInt = f.scalar === 'Int' || f.scalar === 'BigInt'
      switch (op) {
        case 'set':
          parts.push({ s: `${c} = ?`, p: p.p })
          break
        case 'increment':
          parts.push({ s: `${c} = ${c} + ?`, p: p.p })
          break
        case 'decrement':
          parts.push({ s: `${c} = ${c} - ?`, p: p.p })
          break
        case 'multiply':
          parts.push({ s: `${c} = ${c} * ?`, p: p.p })
          break
        case 'divide':
          parts.push({ s: `${c} = ${isInt ? d.intDivide(c) : `${c} / ?`}`, p: p.p })
          break
        default:
          continue
      }
      const idx = model.identity.indexOf(key)
      if (idx >= 0) {
        if (op !== 'set') throw new DbInputError(`${model.name}.${key} identifies the row: only \`set\` may change it`)
        setsIdentity.push([idx, v])
      }
    }
  }
  return { frag: parts.length ? join(parts, ', ') : null, setsIdentity }
}
