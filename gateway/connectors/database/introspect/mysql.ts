/**
 * MySQL / MariaDB introspection from `information_schema` (TABLES, COLUMNS, STATISTICS,
 * KEY_COLUMN_USAGE, REFERENTIAL_CONSTRAINTS, CHECK_CONSTRAINTS). One database at a time. `FULLTEXT`
 * indexes (STATISTICS.INDEX_TYPE) become `TableInfo.fullText`.
 */
import type { Knex } from 'knex'
import type { ColumnInfo, EnumInfo, ForeignKeyInfo, FullTextIndexInfo, FunctionInfo, UniqueConstraintInfo } from '../model.js'
import { mapColumnType } from '../type-map.js'
import { groupBy, isInternalTable, normalizeAction, normalizeComment, type RawTable } from './common.js'

interface TableRow { name: string; table_type: string; comment: string | null }
interface ColumnRow { tbl: string; name: string; column_type: string; is_nullable: string; column_default: string | null; extra: string; comment: string | null }
interface IndexRow { tbl: string; idx: string; non_unique: number | string; seq: number; col: string | null }
interface FkRow { tbl: string; name: string; col: string; ref_table: string; ref_col: string; ref_schema: string; on_delete: string | null; on_update: string | null }
interface CheckRow { tbl: string; clause: string }

async function rows<T>(knex: Knex, sql: string, bindings: readonly Knex.Value[] = []): Promise<T[]> {
  return ((await knex.raw(sql, bindings)) as unknown as [T[], unknown])[0]
}

/**
 * Parses the values of a MySQL `enum('a','b''c')` column type. Quotes inside values are doubled
 * (`''`); backslash escapes are resolved.
 */
export function parseMysqlEnumValues(columnType: string): string[] {
  const m = /^enum\s*\((.*)\)\s*$/is.exec(columnType.trim())
  if (!m) return []
  const body = m[1]!
  const values: string[] = []
  let i = 0
  while (i < body.length) {
    while (i < body.length && (body[i] === ',' || body[i] === ' ')) i++
    if (body[i] !== "'") break
    i++
    let v = ''
    for (; i < body.length; i++) {
      const ch = body[i]!
      if (ch === '\\' && i + 1 < body.length) { v += body[++i]; continue }
      if (ch === "'") {
        if (body[i + 1] === "'") { v += "'"; i++; continue }
        i++
        break
      }
      v += ch
    }
    values.push(v)
  }
  return values
}

/**
 * The columns a MySQL/MariaDB trigger body assigns: `SET NEW.col = …` (and further `, NEW.col = …`
 * of the same SET). Names as written, without backquotes.
 */
export function mysqlTriggerAssignedColumns(body: string): string[] {
  const out: string[] = []
  for (const m of body.matchAll(/(?:\bSET\s+|,\s*)NEW\s*\.\s*(`(?:[^`]|``)+`|[A-Za-z0-9_$]+)\s*:?=/gi)) {
    const id = m[1]!
    out.push(id.startsWith('`') ? id.slice(1, -1).replace(/``/g, '`') : id)
  }
  return out
}

/** The synthesised name of a MySQL inline enum: `<table>_<column>` (as Prisma names them). */
export function mysqlEnumName(table: string, column: string): string {
  return `${table}_${column}`
}

/**
 * Reads the base tables and views of one database (`schema`, default `DATABASE()`), with the
 * comments of tables and columns (`TABLE_COMMENT`, `COLUMN_COMMENT`; a view's is always `VIEW`, dropped).
 * Auto-increment: `EXTRA` contains `auto_increment`. Inline enums become {@link EnumInfo}s named by
 * {@link mysqlEnumName}. MariaDB `JSON` columns (a `longtext` with a `json_valid` check) are reported
 * with `dataType: 'json'`; MariaDB's `NULL` default is reported as `null`.
 */
export async function introspectMysql(knex: Knex, schema?: string): Promise<{ tables: RawTable[]; enums: EnumInfo[] }> {
  const [dbRow] = await rows<{ db: string | null; version: string }>(knex, 'select database() as db, version() as version')
  const db = schema ?? dbRow?.db ?? null
  if (!db) return { tables: [], enums: [] }
  const mariadb = /mariadb/i.test(dbRow?.version ?? '')

  const tableRows = (await rows<TableRow>(knex, `select table_name as name, table_type as table_type, table_comment as comment from information_schema.tables
    where table_schema = ? and table_type in ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED') order by table_name`, [db]))
    .filter((t) => !isInternalTable(t.name))
  const columnRows = await rows<ColumnRow>(knex, `select table_name as tbl, column_name as name, column_type as column_type,
      is_nullable as is_nullable, column_default as column_default, extra as extra, column_comment as comment
    from information_schema.columns where table_schema = ? order by table_name, ordinal_position`, [db])
  const indexRows = await rows<IndexRow>(knex, `select table_name as tbl, index_name as idx, non_unique as non_unique, seq_in_index as seq, column_name as col
    from information_schema.statistics where table_schema = ? and non_unique = 0 order by table_name, index_name, seq_in_index`, [db])
  const fullTextRows = await rows<IndexRow>(knex, `select table_name as tbl, index_name as idx, non_unique as non_unique, seq_in_index as seq, column_name as col
    from information_schema.statistics where table_schema = ? and index_type = 'FULLTEXT' order by table_name, index_name, seq_in_index`, [db])
  const fkRows = await rows<FkRow>(knex, `select k.table_name as tbl, k.constraint_name as name, k.column_name as col,
      k.referenced_table_name as ref_table, k.referenced_column_name as ref_col, k.referenced_table_schema as ref_schema,
      r.delete_rule as on_delete, r.update_rule as on_update
    from information_schema.key_column_usage k
      left join information_schema.referential_constraints r on r.constraint_schema = k.constraint_schema and r.constraint_name = k.constraint_name and r.table_name = k.table_name
    where k.table_schema = ? and k.referenced_table_name is not null
    order by k.table_name, k.constraint_name, k.ordinal_position`, [db])
  let checkRows: CheckRow[] = []
  if (mariadb) {
    try {
      checkRows = await rows<CheckRow>(knex, `select table_name as tbl, check_clause as clause from information_schema.check_constraints where constraint_schema = ?`, [db])
    } catch {
      checkRows = []
    }
  }
  // Row-level BEFORE INSERT triggers: the columns they assign (`SET NEW.col = …`).
  const triggerFilled = new Set<string>()
  for (const r of await rows<{ tbl: string; body: string }>(knex, `select event_object_table as tbl, action_statement as body
      from information_schema.triggers where event_object_schema = ? and action_timing = 'BEFORE' and event_manipulation = 'INSERT'`, [db])) {
    for (const c of mysqlTriggerAssignedColumns(r.body)) triggerFilled.add(`${r.tbl}\u0000${c.toLowerCase()}`)
  }
  const jsonColumns = new Set<string>()
  for (const c of checkRows) {
    const m = /^json_valid\(`((?:[^`]|``)+)`\)$/i.exec(c.clause.trim())
    if (m) jsonColumns.add(`${c.tbl}\u0000${m[1]!.replace(/``/g, '`')}`)
  }

  const colsBy = groupBy(columnRows, (r) => r.tbl)
  const idxBy = groupBy(indexRows, (r) => r.tbl)
  const fkBy = groupBy(fkRows, (r) => r.tbl)
  const ftBy = groupBy(fullTextRows, (r) => r.tbl)
  const enums: EnumInfo[] = []
  const out: RawTable[] = []
  for (const t of tableRows) {
    const kind = t.table_type === 'VIEW' ? 'view' : 'table'
    const columns: ColumnInfo[] = (colsBy.get(t.name) ?? []).map((c) => {
      let dataType = c.column_type.toLowerCase().trim()
      if (mariadb && dataType === 'longtext' && jsonColumns.has(`${t.name}\u0000${c.name}`)) dataType = 'json'
      const mapping = mapColumnType('mysql', dataType)
      let def = c.column_default
      if (mariadb && def === 'NULL') def = null
      const col: ColumnInfo = {
        name: c.name,
        dataType,
        scalar: mapping.scalar,
        nullable: c.is_nullable === 'YES',
        default: def,
        autoIncrement: /auto_increment/i.test(c.extra),
      }
      if (mapping.unknownType) col.unknownType = true
      if (/\b(VIRTUAL|STORED|PERSISTENT) GENERATED\b/i.test(c.extra)) col.generated = true
      if (triggerFilled.has(`${t.name}\u0000${c.name.toLowerCase()}`)) col.filledByTrigger = true
      if (mapping.scalar === 'Enum') {
        col.enumName = mysqlEnumName(t.name, c.name)
        enums.push({ name: col.enumName, values: parseMysqlEnumValues(c.column_type) })
      }
      const comment = normalizeComment(c.comment)
      if (comment !== undefined) col.comment = comment
      return col
    })
    let primaryKey: string[] = []
    const uniqueConstraints: UniqueConstraintInfo[] = []
    for (const [idx, list] of groupBy(idxBy.get(t.name) ?? [], (r) => r.idx)) {
      if (list.some((r) => r.col === null)) continue // functional index
      const cols = list.map((r) => r.col as string)
      if (idx === 'PRIMARY') primaryKey = cols
      else uniqueConstraints.push({ name: idx, columns: cols })
    }
    const fullText: FullTextIndexInfo[] = []
    for (const [idx, list] of groupBy(ftBy.get(t.name) ?? [], (r) => r.idx)) fullText.push({ name: idx, columns: list.map((r) => r.col as string) })
    const foreignKeys: ForeignKeyInfo[] = []
    for (const [name, list] of groupBy(fkBy.get(t.name) ?? [], (r) => r.name)) {
      const first = list[0]!
      if (first.ref_schema !== db) continue
      const fk: ForeignKeyInfo = { name, columns: list.map((r) => r.col), referencedTable: first.ref_table, referencedColumns: list.map((r) => r.ref_col) }
      const onDelete = normalizeAction(first.on_delete)
      const onUpdate = normalizeAction(first.on_update)
      if (onDelete) fk.onDelete = onDelete
      if (onUpdate) fk.onUpdate = onUpdate
      foreignKeys.push(fk)
    }
    // Views cannot have comments: MySQL reports `VIEW` as a view's TABLE_COMMENT.
    const comment = kind === 'view' ? undefined : normalizeComment(t.comment)
    out.push({ name: t.name, kind, columns, primaryKey, uniqueConstraints, foreignKeys, ...(comment !== undefined ? { comment } : {}), ...(fullText.length ? { fullText } : {}) })
  }
  return mergeViewEnums(out, enums)
}

/**
 * One enum type per column lineage: MySQL reports a view column over an inline `enum(…)` column as an
 * `enum(…)` of its own, which would make a second, identical GraphQL enum. A view column's enum is
 * replaced by the base table's when their values are identical (same values, same order): the base
 * column of the same name first, else the only base enum with those values. Views over views reach
 * the base table the same way. Enums no column uses any more are dropped.
 */
export function mergeViewEnums(tables: RawTable[], enums: EnumInfo[]): { tables: RawTable[]; enums: EnumInfo[] } {
  const byName = new Map(enums.map((e) => [e.name, e]))
  const same = (a: EnumInfo, b: EnumInfo): boolean => a.values.length === b.values.length && a.values.every((v, i) => v === b.values[i])
  const base: { column: string; e: EnumInfo }[] = []
  for (const t of tables) {
    if (t.kind !== 'table') continue
    for (const c of t.columns) if (c.enumName && byName.has(c.enumName)) base.push({ column: c.name, e: byName.get(c.enumName)! })
  }
  for (const t of tables) {
    if (t.kind !== 'view') continue
    for (const c of t.columns) {
      const mine = c.enumName ? byName.get(c.enumName) : undefined
      if (!mine) continue
      const candidates = base.filter((b) => same(b.e, mine))
      const pick = candidates.find((b) => b.column === c.name) ?? (new Set(candidates.map((b) => b.e.name)).size === 1 ? candidates[0] : undefined)
      if (pick) c.enumName = pick.e.name
    }
  }
  const used = new Set(tables.flatMap((t) => t.columns.map((c) => c.enumName).filter((n): n is string => n !== undefined)))
  return { tables, enums: enums.filter((e) => used.has(e.name)) }
}

/**
 * The stored functions of one database (`information_schema.ROUTINES` with `ROUTINE_TYPE =
 * 'FUNCTION'`, their `PARAMETERS`), as root fields: `MODIFIES SQL DATA` ones are volatile (Mutation
 * fields), the others (`DETERMINISTIC`, `READS SQL DATA`, `CONTAINS SQL`, `NO SQL`) stable (Query
 * fields). MySQL functions return one scalar and take positional arguments; each is an optional
 * GraphQL argument (absent or null: SQL NULL). Left out,
 * with the reason: an argument or return type the type map does not know.
 * @param only the names to read (the source's `functions` list); all when undefined
 */
export async function introspectMysqlFunctions(knex: Knex, schema: string | undefined, only?: readonly string[]): Promise<{ functions: FunctionInfo[]; skipped: [string, string][] }> {
  const [dbRow] = await rows<{ db: string | null }>(knex, 'select database() as db')
  const db = schema ?? dbRow?.db ?? null
  if (!db) return { functions: [], skipped: [] }
  const routines = await rows<{ name: string; access: string; det: string }>(knex, `select routine_name as name, sql_data_access as access, is_deterministic as det
    from information_schema.routines where routine_schema = ? and routine_type = 'FUNCTION' order by routine_name`, [db])
  const params = await rows<{ fn: string; pos: number; name: string | null; type: string }>(knex, `select specific_name as fn, ordinal_position as pos, parameter_name as name, dtd_identifier as type
    from information_schema.parameters where specific_schema = ? and routine_type = 'FUNCTION' order by specific_name, ordinal_position`, [db])
  const byFn = groupBy(params, (p) => p.fn)
  const functions: FunctionInfo[] = []
  const skipped: [string, string][] = []
  for (const r of routines) {
    if (only && !only.includes(r.name)) continue
    const ps = byFn.get(r.name) ?? []
    const ret = ps.find((p) => Number(p.pos) === 0)
    const args = ps.filter((p) => Number(p.pos) > 0)
    const typeOf = (t: string) => {
      const dataType = t.toLowerCase().replace(/\s+(charset|collate)\s+\S+/g, '').trim()
      const m = mapColumnType('mysql', dataType)
      return m.unknownType || m.scalar === 'Enum' ? null : { dataType, scalar: m.scalar }
    }
    const rt = ret ? typeOf(ret.type) : null
    if (!rt) {
      skipped.push([r.name, `unknown return type ${ret?.type ?? '(none)'}`])
      continue
    }
    const argInfos = args.map((a) => ({ a, t: typeOf(a.type) }))
    const bad = argInfos.find((x) => !x.t || !x.a.name)
    if (bad) {
      skipped.push([r.name, `argument ${bad.a.name ?? Number(bad.a.pos)} has an unknown type ${bad.a.type}`])
      continue
    }
    functions.push({
      name: r.name,
      volatility: r.access === 'MODIFIES SQL DATA' ? 'v' : r.det === 'YES' ? 'i' : 's',
      // Every argument is optional in GraphQL: MySQL functions take NULL, and an absent argument is NULL.
      args: argInfos.map(({ a, t }) => ({ name: a.name!, dataType: t!.dataType, scalar: t!.scalar, hasDefault: true })),
      returnsSet: false,
      returns: { kind: 'scalar', dataType: rt.dataType, scalar: rt.scalar },
    })
  }
  return { functions, skipped }
}
