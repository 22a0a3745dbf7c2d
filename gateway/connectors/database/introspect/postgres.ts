/**
 * PostgreSQL introspection from `pg_catalog` (postgresql.org/docs/current/catalogs.html): `pg_class`,
 * `pg_attribute`, `pg_attrdef`, `pg_constraint`, `pg_index`, `pg_type`, `pg_enum`. One schema at a time.
 */
import type { Knex } from 'knex'
import type { ColumnInfo, EnumInfo, ForeignKeyInfo, UniqueConstraintInfo } from '../model.js'
import { mapColumnType } from '../type-map.js'
import { groupBy, isInternalTable, normalizeAction, type RawTable } from './common.js'

interface TableRow { oid: string; name: string; relkind: string; redirected: boolean }
interface ColumnRow {
  relid: string; attnum: number; name: string; data_type: string; typtype: string; type_name: string
  type_schema: string; notnull: boolean; default_expr: string | null; identity: string; generated: string
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
        or exists (select 1 from pg_catalog.pg_inherits i where i.inhparent = c.oid))) as redirected
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
      a.attidentity::text as identity, a.attgenerated::text as generated
    from pg_catalog.pg_attribute a
      join pg_catalog.pg_type t on t.oid = a.atttypid
      join pg_catalog.pg_namespace tn on tn.oid = t.typnamespace
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
  for (const c of columnRows) if (c.typtype === 'e') enumTypes.set(`${c.type_schema}.${c.type_name}`, c.type_name)
  const enums = await readEnums(knex, schema, [...enumTypes.keys()])

  const colsBy = groupBy(columnRows, (r) => String(r.relid))
  const consBy = groupBy(constraintRows, (r) => String(r.relid))
  const idxBy = groupBy(indexRows, (r) => String(r.relid))

  const out: RawTable[] = []
  for (const t of tables) {
    const kind = t.relkind === 'v' || t.relkind === 'm' ? 'view' : 'table'
    const columns: ColumnInfo[] = (colsBy.get(String(t.oid)) ?? []).map((c) => {
      const isEnum = c.typtype === 'e'
      const dataType = isEnum ? c.type_name : c.data_type.toLowerCase()
      const mapping = isEnum ? { scalar: 'Enum' as const } : mapColumnType('postgres', dataType)
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
    out.push({ name: t.name, kind, columns, primaryKey, uniqueConstraints, foreignKeys, ...(t.redirected ? { insertsRedirected: true } : {}) })
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
