/**
 * PostgreSQL introspection from `pg_catalog` (postgresql.org/docs/current/catalogs.html): `pg_class`,
 * `pg_attribute`, `pg_attrdef`, `pg_constraint`, `pg_index`, `pg_type`, `pg_enum`, and comments
 * (`obj_description`, `col_description`). One schema at a time.
 */
import type { Knex } from 'knex'
import type { ColumnInfo, EnumInfo, ForeignKeyInfo, UniqueConstraintInfo, FunctionArgInfo, FunctionInfo, ScalarKind } from '../model.js'
import { mapColumnType } from '../type-map.js'
import { groupBy, isInternalTable, normalizeAction, normalizeComment, type RawTable } from './common.js'

interface TableRow { oid: string; name: string; relkind: string; redirected: boolean; comment: string | null }
interface ColumnRow {
  relid: string; attnum: number; name: string; data_type: string; typtype: string; type_name: string
  type_schema: string; notnull: boolean; default_expr: string | null; identity: string; generated: string
  elem_typtype: string | null; elem_name: string | null; elem_schema: string | null; comment: string | null
}
interface ConstraintRow { relid: string; name: string; contype: 'p' | 'u' | 'f'; cols: string[]; ref_table: string | null; ref_schema: string | null; ref_cols: string[] | null; on_delete: string; on_update: string }
interface IndexRow { relid: string; name: string; cols: string[] | null }
interface EnumRow { name: string; schema: string; values: string[] }
interface TriggerRow { relid: string; def: string; src: string | null }

/**
 * The columns a BEFORE INSERT trigger assigns: `tsvector_update_trigger('col', …)` (its first
 * argument) and, in a PL/pgSQL body, statements `NEW.col := …` / `NEW.col = …` (unquoted names
 * fold to lower case, as PostgreSQL folds them).
 */
export function pgTriggerAssignedColumns(triggerDef: string, source: string | null): string[] {
  const out: string[] = []
  const builtin = /tsvector_update_trigger(?:_column)?\s*\(\s*'((?:[^']|'')+)'/i.exec(triggerDef)
  if (builtin) out.push(builtin[1]!.replace(/''/g, "'"))
  const body = (source ?? '').replace(/--[^\n]*/g, ' ')
  const assign = /(?:^|;|\bBEGIN\b|\bTHEN\b|\bELSE\b|\bLOOP\b)\s*NEW\s*\.\s*("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)\s*:?=(?!=)/gi
  for (const m of body.matchAll(assign)) {
    const id = m[1]!
    out.push(id.startsWith('"') ? id.slice(1, -1).replace(/""/g, '"') : id.toLowerCase())
  }
  return out
}

async function rows<T>(knex: Knex, sql: string, bindings: readonly Knex.Value[]): Promise<T[]> {
  return ((await knex.raw(sql, bindings)) as { rows: T[] }).rows
}

/** A PostgreSQL array literal of texts, bound as one parameter (Knex would expand a JS array). */
function pgTextArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`
}

const ACTIONS: Record<string, string> = { a: 'NO ACTION', r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' }

/**
 * Reads the tables (`r`, `p`, `f`), views and materialised views (`v`, `m`) of one schema, with the enum
 * types declared in that schema or used by its columns. Declarative partitions and inheritance
 * children are skipped: their parent is read, and its rows include theirs. A table with an INSERT
 * rule or inheritance children is marked `insertsRedirected`.
 * Auto-increment: identity columns and `nextval(…)` defaults (serial).
 */
export async function introspectPostgres(knex: Knex, schema: string): Promise<{ tables: RawTable[]; enums: EnumInfo[] }> {
  const tableRows = await rows<TableRow>(knex, `
    select c.oid::bigint as oid, c.relname as name, c.relkind::text as relkind,
      (c.relkind = 'r' and (exists (select 1 from pg_catalog.pg_rewrite r where r.ev_class = c.oid and r.ev_type = '3')
        or exists (select 1 from pg_catalog.pg_inherits i where i.inhparent = c.oid))) as redirected,
      pg_catalog.obj_description(c.oid, 'pg_class') as comment
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ? and c.relkind in ('r', 'p', 'f', 'v', 'm') and not c.relispartition
      and not exists (select 1 from pg_catalog.pg_inherits i where i.inhrelid = c.oid)
    order by c.relname`, [schema])
  const tables = tableRows.filter((t) => !isInternalTable(t.name))
  if (tables.length === 0) {
    const enums = await readEnums(knex, schema, [])
    return { tables: [], enums }
  }
  const oids = `{${tables.map((t) => t.oid).join(',')}}`

  const columnRows = await rows<ColumnRow>(knex, `
    select a.attrelid::bigint as relid, a.attnum::int as attnum, a.attname as name,
      case when t.typtype = 'd' then format_type(t.typbasetype, t.typtypmod) else format_type(a.atttypid, a.atttypmod) end as data_type,
      t.typtype::text as typtype, t.typname as type_name, tn.nspname as type_schema,
      a.attnotnull as notnull, pg_get_expr(d.adbin, d.adrelid) as default_expr,
      a.attidentity::text as identity, a.attgenerated::text as generated,
      et.typtype::text as elem_typtype, et.typname as elem_name, en.nspname as elem_schema,
      pg_catalog.col_description(a.attrelid, a.attnum) as comment
    from pg_catalog.pg_attribute a
      join pg_catalog.pg_type t on t.oid = a.atttypid
      join pg_catalog.pg_namespace tn on tn.oid = t.typnamespace
      left join pg_catalog.pg_type et on t.typcategory = 'A' and et.oid = t.typelem
      left join pg_catalog.pg_namespace en on en.oid = et.typnamespace
      left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = any(?::oid[]) and a.attnum > 0 and not a.attisdropped
    order by a.attrelid, a.attnum`, [oids])

  const constraintRows = await rows<ConstraintRow>(knex, `
    select con.conrelid::bigint as relid, con.conname as name, con.contype::text as contype,
      array(select att.attname from unnest(con.conkey) with ordinality k(attnum, ord)
            join pg_catalog.pg_attribute att on att.attrelid = con.conrelid and att.attnum = k.attnum order by k.ord)::text[] as cols,
      rc.relname as ref_table, rn.nspname as ref_schema,
      case when con.contype = 'f' then array(select att.attname from unnest(con.confkey) with ordinality k(attnum, ord)
            join pg_catalog.pg_attribute att on att.attrelid = con.confrelid and att.attnum = k.attnum order by k.ord)::text[] end as ref_cols,
      con.confdeltype::text as on_delete, con.confupdtype::text as on_update
    from pg_catalog.pg_constraint con
      left join pg_catalog.pg_class rc on rc.oid = con.confrelid
      left join pg_catalog.pg_namespace rn on rn.oid = rc.relnamespace
    where con.conrelid = any(?::oid[]) and con.contype in ('p', 'u', 'f')
    order by con.conrelid, con.conname`, [oids])

  // Unique indexes that back no constraint, are not partial and have no expressions.
  const indexRows = await rows<IndexRow>(knex, `
    select i.indrelid::bigint as relid, ic.relname as name,
      array(select att.attname from unnest(i.indkey::int2[]) with ordinality k(attnum, ord)
            join pg_catalog.pg_attribute att on att.attrelid = i.indrelid and att.attnum = k.attnum order by k.ord)::text[] as cols
    from pg_catalog.pg_index i join pg_catalog.pg_class ic on ic.oid = i.indexrelid
    where i.indrelid = any(?::oid[]) and i.indisunique and not i.indisprimary and i.indpred is null and i.indexprs is null
      and not exists (select 1 from pg_catalog.pg_constraint c where c.conindid = i.indexrelid and c.contype in ('p', 'u'))
      and i.indnkeyatts = i.indnatts
    order by i.indrelid, ic.relname`, [oids])

  // Row-level BEFORE INSERT triggers (tgtype bits: 1 ROW, 2 BEFORE, 4 INSERT): the columns they assign.
  const triggerRows = await rows<TriggerRow>(knex, `
    select t.tgrelid::bigint as relid, pg_get_triggerdef(t.oid) as def, p.prosrc as src
    from pg_catalog.pg_trigger t join pg_catalog.pg_proc p on p.oid = t.tgfoid
    where t.tgrelid = any(?::oid[]) and not t.tgisinternal and t.tgenabled <> 'D' and (t.tgtype & 7) = 7`, [oids])
  const triggerFilled = new Map<string, Set<string>>()
  for (const r of triggerRows) {
    const set = triggerFilled.get(String(r.relid)) ?? new Set<string>()
    for (const c of pgTriggerAssignedColumns(r.def, r.src)) set.add(c)
    triggerFilled.set(String(r.relid), set)
  }

  const enumTypes = new Map<string, string>() // "schema.name" -> enum name
  for (const c of columnRows) {
    if (c.typtype === 'e') enumTypes.set(`${c.type_schema}.${c.type_name}`, c.type_name)
    if (c.elem_typtype === 'e') enumTypes.set(`${c.elem_schema}.${c.elem_name}`, c.elem_name!)
  }
  const enums = await readEnums(knex, schema, [...enumTypes.keys()])

  const colsBy = groupBy(columnRows, (r) => String(r.relid))
  const consBy = groupBy(constraintRows, (r) => String(r.relid))
  const idxBy = groupBy(indexRows, (r) => String(r.relid))

  const out: RawTable[] = []
  for (const t of tables) {
    const kind = t.relkind === 'v' || t.relkind === 'm' ? 'view' : 'table'
    const columns: ColumnInfo[] = (colsBy.get(String(t.oid)) ?? []).map((c) => {
      const isEnum = c.typtype === 'e'
      const isEnumArray = c.elem_typtype === 'e'
      const dataType = isEnum ? c.type_name : c.data_type.toLowerCase()
      const mapping = isEnum ? { scalar: 'Enum' as const } : isEnumArray ? { scalar: 'Enum' as const, list: true } : mapColumnType('postgres', dataType)
      const identity = c.identity === 'a' || c.identity === 'd'
      const serial = c.default_expr !== null && /^nextval\(/i.test(c.default_expr)
      const col: ColumnInfo = {
        name: c.name,
        dataType,
        scalar: mapping.scalar,
        nullable: !c.notnull,
        default: c.generated === 's' ? null : c.default_expr,
        autoIncrement: identity || serial,
      }
      // Stored generated columns and GENERATED ALWAYS identities refuse written values.
      if (c.generated === 's' || c.identity === 'a') col.generated = true
      if (triggerFilled.get(String(t.oid))?.has(c.name)) col.filledByTrigger = true
      if ('unknownType' in mapping && mapping.unknownType) col.unknownType = true
      if (isEnum) col.enumName = c.type_name
      if (isEnumArray) col.enumName = c.elem_name!
      if ('list' in mapping && mapping.list) col.isList = true
      const comment = normalizeComment(c.comment)
      if (comment !== undefined) col.comment = comment
      return col
    })
    const cons = consBy.get(String(t.oid)) ?? []
    const primaryKey = cons.find((c) => c.contype === 'p')?.cols ?? []
    const uniqueConstraints: UniqueConstraintInfo[] = cons.filter((c) => c.contype === 'u').map((c) => ({ name: c.name, columns: c.cols }))
    for (const i of idxBy.get(String(t.oid)) ?? []) if (i.cols && i.cols.length > 0) uniqueConstraints.push({ name: i.name, columns: i.cols })
    const foreignKeys: ForeignKeyInfo[] = cons
      .filter((c) => c.contype === 'f' && c.ref_schema === schema && c.ref_table !== null)
      .map((c) => {
        const fk: ForeignKeyInfo = { name: c.name, columns: c.cols, referencedTable: c.ref_table as string, referencedColumns: c.ref_cols ?? [] }
        const onDelete = normalizeAction(ACTIONS[c.on_delete])
        const onUpdate = normalizeAction(ACTIONS[c.on_update])
        if (onDelete) fk.onDelete = onDelete
        if (onUpdate) fk.onUpdate = onUpdate
        return fk
      })
    const comment = normalizeComment(t.comment)
    out.push({ name: t.name, kind, columns, primaryKey, uniqueConstraints, foreignKeys, ...(t.redirected ? { insertsRedirected: true } : {}), ...(t.relkind === 'f' ? { foreign: true } : {}), ...(comment !== undefined ? { comment } : {}) })
  }
  return { tables: out, enums }
}

/** Enum types declared in `schema`, plus those named by `extra` (`schema.name` keys, used by columns). */
async function readEnums(knex: Knex, schema: string, extra: string[]): Promise<EnumInfo[]> {
  const enumRows = await rows<EnumRow>(knex, `
    select t.typname as name, n.nspname as schema,
      array(select e.enumlabel from pg_catalog.pg_enum e where e.enumtypid = t.oid order by e.enumsortorder)::text[] as values
    from pg_catalog.pg_type t join pg_catalog.pg_namespace n on n.oid = t.typnamespace
    where t.typtype = 'e' and (n.nspname = ? or (n.nspname || '.' || t.typname) = any(?::text[]))
    order by t.typname, n.nspname`, [schema, pgTextArray(extra)])
  return enumRows.map((e) => ({ name: e.name, values: e.values }))
}

interface FunctionRow {
  name: string; volatility: 'i' | 's' | 'v'; returns_set: boolean; nargs: number; ndefaults: number
  arg_names: string[] | null; arg_modes: string[] | null; arg_types: string[]; arg_typtypes: string[]; arg_typnames: string[]
  arg_elem_typtypes: (string | null)[]; arg_elem_names: (string | null)[]
  /** Per argument: the table or view of `schema` whose row type it is, or null. */
  arg_tables: (string | null)[]
  ret_type: string; ret_typtype: string; ret_typname: string; ret_table: string | null; ret_table_schema: string | null
  ret_elem_typtype: string | null; ret_elem_name: string | null
}

/** Maps a type of a function argument or result (format_type text, typtype, element info) like a column's. */
function functionType(dataType: string, typtype: string, typname: string, elemTyptype: string | null, elemName: string | null): { scalar: ScalarKind; enumName?: string; isList?: boolean; unknownType?: boolean } {
  if (typtype === 'e') return { scalar: 'Enum', enumName: typname }
  if (elemTyptype === 'e' && elemName) return { scalar: 'Enum', enumName: elemName, isList: true }
  const m = mapColumnType('postgres', dataType)
  return { scalar: m.scalar, ...(m.list ? { isList: true } : {}), ...(m.unknownType ? { unknownType: true } : {}) }
}

/**
 * Reads the functions of `schema` for the source's `functions` option (`true`: all; a list: those
 * names). Kept: plain functions (`prokind = 'f'`, not from an extension, not overloaded) whose
 * arguments are all named IN arguments of known types, returning a table or view of `tables` (`SETOF`
 * or one row) or a known scalar (or a set of one). A stable or immutable function whose FIRST
 * argument is the row type of one of `tables` is a computed field of it (`FunctionInfo.computedOn`).
 * Left out, with the reason in `skipped`: anything else (`RETURNS TABLE (…)`, `record`, `void`,
 * `trigger`, OUT/VARIADIC arguments, overloads, a volatile function of a row type).
 * @returns the functions sorted by name, and `[name, reason]` pairs for those left out
 */
export async function introspectPgFunctions(knex: Knex, schema: string, tables: readonly string[], only?: readonly string[]): Promise<{ functions: FunctionInfo[]; skipped: [string, string][] }> {
  const fnRows = await rows<FunctionRow>(knex, `
    select p.proname as name, p.provolatile::text as volatility, p.proretset as returns_set,
      p.pronargs::int as nargs, p.pronargdefaults::int as ndefaults,
      p.proargnames::text[] as arg_names, p.proargmodes::text[] as arg_modes,
      array(select format_type(x.t, null) from unnest(p.proargtypes::oid[]) with ordinality x(t, o) order by x.o)::text[] as arg_types,
      array(select ty.typtype::text from unnest(p.proargtypes::oid[]) with ordinality x(t, o) join pg_catalog.pg_type ty on ty.oid = x.t order by x.o)::text[] as arg_typtypes,
      array(select ty.typname::text from unnest(p.proargtypes::oid[]) with ordinality x(t, o) join pg_catalog.pg_type ty on ty.oid = x.t order by x.o)::text[] as arg_typnames,
      array(select et.typtype::text from unnest(p.proargtypes::oid[]) with ordinality x(t, o) join pg_catalog.pg_type ty on ty.oid = x.t
            left join pg_catalog.pg_type et on ty.typcategory = 'A' and et.oid = ty.typelem order by x.o)::text[] as arg_elem_typtypes,
      array(select et.typname::text from unnest(p.proargtypes::oid[]) with ordinality x(t, o) join pg_catalog.pg_type ty on ty.oid = x.t
            left join pg_catalog.pg_type et on ty.typcategory = 'A' and et.oid = ty.typelem order by x.o)::text[] as arg_elem_names,
      array(select case when cn.nspname = n.nspname then c.relname::text end from unnest(p.proargtypes::oid[]) with ordinality x(t, o) join pg_catalog.pg_type ty on ty.oid = x.t
            left join pg_catalog.pg_class c on c.oid = ty.typrelid and ty.typrelid <> 0 left join pg_catalog.pg_namespace cn on cn.oid = c.relnamespace order by x.o)::text[] as arg_tables,
      format_type(p.prorettype, null) as ret_type, rt.typtype::text as ret_typtype, rt.typname as ret_typname,
      rc.relname as ret_table, rcn.nspname as ret_table_schema,
      ret.typtype::text as ret_elem_typtype, ret.typname as ret_elem_name
    from pg_catalog.pg_proc p
      join pg_catalog.pg_namespace n on n.oid = p.pronamespace
      join pg_catalog.pg_type rt on rt.oid = p.prorettype
      left join pg_catalog.pg_class rc on rc.oid = rt.typrelid
      left join pg_catalog.pg_namespace rcn on rcn.oid = rc.relnamespace
      left join pg_catalog.pg_type ret on rt.typcategory = 'A' and ret.oid = rt.typelem
    where n.nspname = ? and p.prokind = 'f'
      and not exists (select 1 from pg_catalog.pg_depend dep where dep.classid = 'pg_catalog.pg_proc'::regclass and dep.objid = p.oid and dep.deptype = 'e')
    order by p.proname, p.oid`, [schema])
  const tableSet = new Set(tables)
  const wanted = only ? new Set(only) : null
  const counts = new Map<string, number>()
  for (const r of fnRows) counts.set(r.name, (counts.get(r.name) ?? 0) + 1)
  const functions: FunctionInfo[] = []
  const skipped: [string, string][] = []
  const seen = new Set<string>()
  for (const r of fnRows) {
    if (wanted && !wanted.has(r.name)) continue
    if (seen.has(r.name)) continue
    seen.add(r.name)
    const skip = (why: string): void => void skipped.push([r.name, why])
    if (counts.get(r.name)! > 1) { skip('overloaded (several functions of that name)'); continue }
    if (r.arg_modes !== null) { skip('OUT, INOUT, TABLE or VARIADIC arguments'); continue }
    const names = (r.arg_names ?? []).slice(0, r.nargs)
    if (names.length < r.nargs || names.some((n) => !n)) { skip('an unnamed argument'); continue }
    const args: FunctionArgInfo[] = []
    let bad: string | null = null
    // A first argument of a table's row type: a computed field of that table (PostGraphile's computed columns).
    const rowTable = r.nargs > 0 ? r.arg_tables[0] ?? null : null
    const computedOn = rowTable !== null && tableSet.has(rowTable) ? { table: rowTable, rowArg: names[0]! } : undefined
    if (computedOn && r.volatility === 'v') { skip(`volatile, with a first argument of the row type ${rowTable}: computed fields are stable or immutable functions`); continue }
    for (let i = computedOn ? 1 : 0; i < r.nargs; i++) {
      const dataType = r.arg_types[i]!.toLowerCase()
      const t = functionType(dataType, r.arg_typtypes[i]!, r.arg_typnames[i]!, r.arg_elem_typtypes[i] ?? null, r.arg_elem_names[i] ?? null)
      if (t.unknownType) { bad = `argument ${names[i]} of unsupported type ${dataType}`; break }
      const a: FunctionArgInfo = { name: names[i]!, dataType, scalar: t.scalar, hasDefault: i >= r.nargs - r.ndefaults }
      if (t.enumName) a.enumName = t.enumName
      if (t.isList) a.isList = true
      args.push(a)
    }
    if (bad) { skip(bad); continue }
    let returns: FunctionInfo['returns']
    if (r.ret_table !== null && r.ret_table_schema === schema && tableSet.has(r.ret_table)) returns = { kind: 'table', table: r.ret_table }
    else if (r.ret_typtype === 'p' || r.ret_typtype === 'c') { skip(`returns ${r.ret_type}`); continue }
    else {
      const dataType = r.ret_type.toLowerCase()
      const t = functionType(dataType, r.ret_typtype, r.ret_typname, r.ret_elem_typtype, r.ret_elem_name)
      if (t.unknownType) { skip(`returns the unsupported type ${dataType}`); continue }
      returns = { kind: 'scalar', dataType, scalar: t.scalar, ...(t.enumName ? { enumName: t.enumName } : {}), ...(t.isList ? { isList: true } : {}) }
    }
    functions.push({ name: r.name, volatility: r.volatility, args, returnsSet: r.returns_set, returns, ...(computedOn ? { computedOn } : {}) })
  }
  return { functions, skipped }
}
