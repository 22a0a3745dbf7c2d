/**
 * SQLite introspection: `sqlite_master` joined with the table-valued pragmas `pragma_table_info`,
 * `pragma_foreign_key_list`, `pragma_index_list` and `pragma_index_info` (sqlite.org/pragma.html),
 * one query each for the whole database. FTS5 tables (`CREATE VIRTUAL TABLE … USING fts5(…)`) are
 * models with text columns and record their full-text index (`TableInfo.fullText`, also on the
 * content table of an external-content FTS5 table); their shadow tables are left out.
 */
import type { Knex } from 'knex'
import type { ColumnInfo, EnumInfo, ForeignKeyInfo, FullTextIndexInfo } from '../model.js'
import { mapColumnType } from '../type-map.js'
import { groupBy, isInternalTable, normalizeAction, type RawTable } from './common.js'
import { sqliteDateTimeFormatOf } from '../compiler/dialect.js'

interface MasterRow { name: string; type: 'table' | 'view'; sql: string | null }
interface ColumnRow { tbl: string; cid: number; name: string; type: string | null; notnull: number; dflt_value: string | null; pk: number; hidden: number }
interface FkRow { tbl: string; id: number; seq: number; ref: string; from: string; to: string | null; on_update: string; on_delete: string }
interface IndexRow { tbl: string; idx: string; origin: string; partial: number; seqno: number; cid: number; col: string | null }

async function all<T>(knex: Knex, sql: string, bindings: readonly Knex.Value[] = []): Promise<T[]> {
  return (await knex.raw(sql, bindings)) as unknown as T[]
}

/**
 * Reads every user table and view of a SQLite database.
 * Auto-increment: an `INTEGER PRIMARY KEY` rowid alias (with or without `AUTOINCREMENT`) in a rowid table.
 * Foreign keys get the synthesised name `<table>_<columns joined by _>_fkey`; unique indexes created by
 * constraints (`sqlite_autoindex_…`) get `<table>_<columns joined by _>_key`.
 * Primary-key columns are reported NOT NULL (SQLite's legacy rule lets non-INTEGER key columns hold
 * NULL unless declared NOT NULL; the gateway treats keys as required, as Prisma does).
 * Partial and expression unique indexes are not unique constraints and are left out.
 */
export async function introspectSqlite(knex: Knex): Promise<{ tables: RawTable[]; enums: EnumInfo[] }> {
  const all0 = await all<MasterRow>(knex, `select name, type, sql from sqlite_master where type in ('table', 'view') order by name`)
  const fts = new Map<string, Fts5Args>()
  for (const m of all0) {
    const args = m.sql ? fts5Args(m.sql) : null
    if (args) fts.set(m.name, args)
  }
  // An FTS5 table's shadow tables (`<name>_data`, `_idx`, `_content`, `_docsize`, `_config`) are its storage, not models.
  const shadows = new Set([...fts.keys()].flatMap((n) => FTS5_SHADOWS.map((x) => `${n}_${x}`.toLowerCase())))
  const master = all0.filter((m) => !isInternalTable(m.name) && !shadows.has(m.name.toLowerCase()))
  const wanted = new Set(master.map((m) => m.name))

  let columnRows: ColumnRow[]
  try {
    // table_xinfo lists generated columns too (hidden 2: virtual, 3: stored); 1 is a virtual table's hidden column.
    columnRows = await all<ColumnRow>(knex, `select m.name as tbl, p.cid as cid, p.name as name, p.type as type, p."notnull" as "notnull", p.dflt_value as dflt_value, p.pk as pk, p.hidden as hidden
      from sqlite_master m join pragma_table_xinfo(m.name) p where m.type in ('table', 'view') and p.hidden <> 1 order by m.name, p.cid`)
  } catch {
    // One broken view makes the joined query fail: read table by table and skip what cannot be read.
    columnRows = []
    for (const m of master) {
      try {
        const rows = await all<Omit<ColumnRow, 'tbl'>>(knex, `select cid, name, type, "notnull", dflt_value, pk, hidden from pragma_table_xinfo(?) where hidden <> 1 order by cid`, [m.name])
        for (const r of rows) columnRows.push({ ...r, tbl: m.name })
      } catch {
        wanted.delete(m.name)
      }
    }
  }
  const fkRows = await all<FkRow>(knex, `select m.name as tbl, f.id as id, f.seq as seq, f."table" as ref, f."from" as "from", f."to" as "to", f.on_update as on_update, f.on_delete as on_delete
    from sqlite_master m join pragma_foreign_key_list(m.name) f where m.type = 'table' order by m.name, f.id, f.seq`)
  const indexRows = await all<IndexRow>(knex, `select m.name as tbl, il.name as idx, il.origin as origin, il.partial as partial, ii.seqno as seqno, ii.cid as cid, ii.name as col
    from sqlite_master m join pragma_index_list(m.name) il join pragma_index_info(il.name) ii
    where m.type = 'table' and il."unique" = 1 order by m.name, il.name, ii.seqno`)

  const columnsByTable = groupBy(columnRows, (r) => r.tbl)
  const fksByTable = groupBy(fkRows, (r) => r.tbl)
  const indexesByTable = groupBy(indexRows, (r) => r.tbl)
  const byLowerName = new Map(master.map((m) => [m.name.toLowerCase(), m.name]))

  const pkOf = (table: string): string[] =>
    (columnsByTable.get(table) ?? []).filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)

  const tables: RawTable[] = []
  for (const m of master) {
    if (!wanted.has(m.name)) continue
    const cols = columnsByTable.get(m.name) ?? []
    const primaryKey = m.type === 'table' ? pkOf(m.name) : []
    const withoutRowid = m.sql !== null && /\)\s*without\s+rowid\s*[;,]?\s*(strict\s*)?$/i.test(m.sql.trim())
    const columns: ColumnInfo[] = cols.map((c) => {
      const dataType = (c.type ?? '').toLowerCase().trim()
      const mapping = mapColumnType('sqlite', dataType)
      const rowidAlias = m.type === 'table' && !withoutRowid && primaryKey.length === 1 && c.pk === 1 && dataType === 'integer'
      const isPk = m.type === 'table' && c.pk > 0
      const col: ColumnInfo = {
        name: c.name,
        dataType,
        scalar: mapping.scalar,
        nullable: !(c.notnull || isPk),
        default: c.dflt_value ?? null,
        autoIncrement: rowidAlias,
      }
      if (mapping.unknownType) col.unknownType = true
      if (c.hidden === 2 || c.hidden === 3) col.generated = true
      if (fts.has(m.name) && dataType === '') {
        // FTS5 columns have no declared type: they hold text.
        col.dataType = 'text'
        delete col.unknownType
      }
      return col
    })

    const foreignKeys: ForeignKeyInfo[] = []
    for (const rows of groupBy(fksByTable.get(m.name) ?? [], (r) => String(r.id)).values()) {
      const referencedTable = byLowerName.get(rows[0]!.ref.toLowerCase()) ?? rows[0]!.ref
      const colsFrom = rows.map((r) => r.from)
      let colsTo = rows.map((r) => r.to)
      if (colsTo.some((c) => c === null)) colsTo = pkOf(referencedTable)
      const fk: ForeignKeyInfo = {
        name: `${m.name}_${colsFrom.join('_')}_fkey`,
        columns: colsFrom,
        referencedTable,
        referencedColumns: colsTo as string[],
      }
      const onDelete = normalizeAction(rows[0]!.on_delete)
      const onUpdate = normalizeAction(rows[0]!.on_update)
      if (onDelete) fk.onDelete = onDelete
      if (onUpdate) fk.onUpdate = onUpdate
      foreignKeys.push(fk)
    }
    // Two foreign keys on the same columns would collide on the synthesised name: suffix the later ones.
    const fkNames = new Map<string, number>()
    for (const fk of foreignKeys) {
      const n = fkNames.get(fk.name) ?? 0
      fkNames.set(fk.name, n + 1)
      if (n > 0) fk.name = `${fk.name}${n + 1}`
    }

    const uniqueConstraints = []
    for (const rows of groupBy(indexesByTable.get(m.name) ?? [], (r) => r.idx).values()) {
      const first = rows[0]!
      if (first.origin === 'pk' || first.partial) continue
      if (rows.some((r) => r.col === null || r.cid < 0)) continue // expression index
      const columns = rows.map((r) => r.col as string)
      const name = first.idx.startsWith('sqlite_autoindex_') ? `${m.name}_${columns.join('_')}_key` : first.idx
      uniqueConstraints.push({ name, columns })
    }

    if (m.type === 'table') {
      for (const col of columns) if (col.scalar === 'DateTime') await detectDateTimeFormat(knex, m.name, col)
    }
    tables.push({ name: m.name, kind: m.type, columns, primaryKey, uniqueConstraints, foreignKeys })
  }
  addFts5Indexes(tables, fts)
  // CHECK (col IN ('a', 'b')) on a text column: an enum named `<table>_<column>`, as MySQL's inline enums.
  const enums: EnumInfo[] = []
  const enumOf = new Map<string, string>() // "table\0column" -> enum name
  for (const t of tables) {
    const m = master.find((x) => x.name === t.name)
    if (t.kind !== 'table' || !m?.sql) continue
    const checks = checkEnums(m.sql)
    for (const c of t.columns) {
      const values = checks.get(c.name.toLowerCase())
      if (!values || c.scalar !== 'String' || c.unknownType) continue
      const name = `${t.name}_${c.name}`
      c.scalar = 'Enum'
      c.enumName = name
      enums.push({ name, values })
      enumOf.set(`${t.name}\u0000${c.name}`, name)
    }
  }
  if (enumOf.size > 0) await viewEnums(knex, tables, enumOf)
  return { tables, enums }
}

/** The shadow tables FTS5 creates for a table `x`: `x_data`, `x_idx`… (sqlite.org/fts5.html §9). */
const FTS5_SHADOWS = ['data', 'idx', 'content', 'docsize', 'config']

/** What {@link fts5Args} reads from `CREATE VIRTUAL TABLE … USING fts5(…)`. */
export interface Fts5Args {
  /** Column names in declaration order, with whether each is `UNINDEXED`. */
  columns: { name: string; unindexed: boolean }[]
  /** `content='t'`: the external content table; `''` for a contentless table; absent: the table keeps its own content. */
  content?: string
  /** `content_rowid='c'`: the content table's column the FTS5 rowid stands for; default `rowid`. */
  contentRowid?: string
}

/** Where a left-to-right scan of SQL text is: inside which quote (`'`, `"`, `` ` ``, `[…]`) and how deep in parentheses. */
interface SqlScan {
  quote: string | null
  depth: number
}

/** Advances `scan` over `ch`; true when `ch` is outside quoted text and neither a quote nor a parenthesis. */
function scanSql(scan: SqlScan, ch: string): boolean {
  if (scan.quote) {
    if (ch === scan.quote) scan.quote = null
    return false
  }
  if (ch === "'" || ch === '"' || ch === '`') scan.quote = ch
  else if (ch === '[') scan.quote = ']'
  else if (ch === '(') scan.depth++
  else if (ch === ')') scan.depth--
  else return true
  return false
}

/** Splits the text between the outer parentheses on top-level commas, skipping quoted text. */
function splitArgs(text: string): string[] {
  const out: string[] = []
  let cur = ''
  const scan: SqlScan = { quote: null, depth: 0 }
  for (const ch of text) {
    if (scanSql(scan, ch) && ch === ',' && scan.depth === 0) {
      out.push(cur.trim())
      cur = ''
      continue
    }
    cur += ch
  }
  if (cur.trim() !== '') out.push(cur.trim())
  return out
}

/** An identifier or string as SQLite reads it: quotes removed and doubled quotes undone. */
function unquote(s: string): string {
  const t = s.trim()
  const q = t[0]
  if ((q === "'" || q === '"' || q === '`') && t.endsWith(q)) return t.slice(1, -1).split(q + q).join(q)
  if (q === '[' && t.endsWith(']')) return t.slice(1, -1)
  return t
}

/**
 * The columns and options of an FTS5 table's `CREATE VIRTUAL TABLE … USING fts5(…)` statement
 * (sqlite.org/fts5.html §4: column names, `UNINDEXED`, `key = value` options); null for any other statement.
 */
export function fts5Args(createSql: string): Fts5Args | null {
  const m = /^\s*create\s+virtual\s+table\s+[\s\S]*?\busing\s+fts5\s*\(([\s\S]*)\)\s*;?\s*$/i.exec(createSql)
  if (!m) return null
  const out: Fts5Args = { columns: [] }
  for (const arg of splitArgs(m[1]!)) {
    const opt = /^([A-Za-z_]+)\s*=\s*([\s\S]*)$/.exec(arg)
    if (opt) {
      const key = opt[1]!.toLowerCase()
      if (key === 'content') out.content = unquote(opt[2]!)
      else if (key === 'content_rowid') out.contentRowid = unquote(opt[2]!)
      continue
    }
    const c = /^("(?:[^"]|"")+"|`(?:[^`]|``)+`|\[[^\]]+\]|'(?:[^']|'')+'|[^\s]+)(\s+unindexed)?\s*$/i.exec(arg)
    if (c) out.columns.push({ name: unquote(c[1]!), unindexed: c[2] !== undefined })
  }
  return out
}

/**
 * Records FTS5 indexes in `TableInfo.fullText` (model.ts): an FTS5 table indexes its own columns
 * (key `rowid`); an external-content FTS5 table (`content='film'`) also indexes its content table
 * when every indexed column exists there, through the `content_rowid` column (`rowid` by default).
 */
function addFts5Indexes(tables: RawTable[], fts: Map<string, Fts5Args>): void {
  const byLower = new Map(tables.map((t) => [t.name.toLowerCase(), t]))
  for (const [name, args] of fts) {
    const self = byLower.get(name.toLowerCase())
    const indexed = args.columns.filter((c) => !c.unindexed).map((c) => c.name)
    if (!self || indexed.length === 0) continue
    const ftsColumns = args.columns.map((c) => c.name)
    const add = (t: RawTable, info: FullTextIndexInfo): void => {
      t.fullText = [...(t.fullText ?? []), info]
    }
    add(self, { name, columns: indexed, fts5: { table: name, ftsColumns, key: 'rowid' } })
    if (!args.content) continue
    const content = byLower.get(args.content.toLowerCase())
    if (!content || content.kind !== 'table') continue
    const colOf = (c: string): string | undefined => content.columns.find((x) => x.name.toLowerCase() === c.toLowerCase())?.name
    const cols = indexed.map(colOf)
    const key = args.contentRowid ? colOf(args.contentRowid) : 'rowid'
    if (key === undefined || cols.some((c) => c === undefined)) continue
    add(content, { name, columns: cols as string[], fts5: { table: name, ftsColumns, key } })
  }
}

/** Reads one SQL string literal list `'a', 'b''c'` (quotes doubled); null when it is anything else. */
function stringList(text: string): string[] | null {
  const re = /\s*'((?:[^']|'')*)'\s*(,|$)/gy
  const out: string[] = []
  let m: RegExpExecArray | null
  let end = 0
  while ((m = re.exec(text)) !== null) {
    out.push(m[1]!.replace(/''/g, "'"))
    end = re.lastIndex
    if (m[2] === '') break
  }
  return end === text.length && out.length > 0 ? out : null
}

/**
 * The `CHECK (col IN ('a', 'b', …))` constraints of a `CREATE TABLE` statement, column-level or
 * table-level: lower-cased column name -> values. A column with two such checks keeps the first.
 * Any other CHECK shape (`col = 'a' OR …`, `lower(col) IN …`, `NOT IN`) is not an enum.
 */
export function checkEnums(createSql: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  const re = /\bcheck\s*\(/gi
  while (re.exec(createSql) !== null) {
    // The body up to the matching parenthesis, skipping quoted text.
    const scan: SqlScan = { quote: null, depth: 1 }
    let i = re.lastIndex
    for (; i < createSql.length && scan.depth > 0; i++) scanSql(scan, createSql[i]!)
    const body = createSql.slice(re.lastIndex, i - 1)
    const b = /^\s*(?:"((?:[^"]|"")+)"|`((?:[^`]|``)+)`|\[([^\]]+)\]|([A-Za-z_][A-Za-z0-9_$]*))\s+in\s*\(([\s\S]*)\)\s*$/i.exec(body)
    if (!b) continue
    const column = (b[1]?.replace(/""/g, '"') ?? b[2]?.replace(/``/g, '`') ?? b[3] ?? b[4]!).toLowerCase()
    const values = stringList(b[5]!.trim())
    if (values && !out.has(column)) out.set(column, values)
  }
  return out
}

/**
 * Views expose the enum of the base column a view column reads, as the engine reports it: SQLite's
 * `sqlite3_column_table_name` / `sqlite3_column_origin_name` (better-sqlite3 `Statement.columns()`).
 * Expression columns have no origin and stay as they are.
 */
async function viewEnums(knex: Knex, tables: RawTable[], enumOf: Map<string, string>): Promise<void> {
  const views = tables.filter((t) => t.kind === 'view')
  if (views.length === 0) return
  type Conn = { prepare(sql: string): { columns(): { name: string; column: string | null; table: string | null }[] } }
  const client = knex.client as { acquireConnection(): Promise<Conn>; releaseConnection(c: Conn): Promise<void> }
  const conn = await client.acquireConnection()
  try {
    for (const v of views) {
      let cols: { name: string; column: string | null; table: string | null }[]
      try {
        cols = conn.prepare(`SELECT * FROM "${v.name.replace(/"/g, '""')}"`).columns()
      } catch {
        continue
      }
      for (const oc of cols) {
        const e = oc.table && oc.column ? enumOf.get(`${oc.table}\u0000${oc.column}`) : undefined
        const c = v.columns.find((x) => x.name === oc.name)
        if (!e || !c || (c.scalar !== 'String' && !c.unknownType)) continue
        c.scalar = 'Enum'
        c.enumName = e
        delete c.unknownType
      }
    }
  } finally {
    await client.releaseConnection(conn)
  }
}

/** How many stored values of a date-time column are read to tell its format. */
const DATE_SAMPLES = 20

/**
 * Sets `col.dateTimeFormat` (model.ts) from the column's rows: when up to {@link DATE_SAMPLES}
 * stored values all have one format, that format. A column without rows takes it from its default
 * (`CURRENT_TIMESTAMP` → `YYYY-MM-DD HH:mm:ss`, `CURRENT_DATE` → `YYYY-MM-DD`) or a `date` type.
 * Mixed or unknown values leave it unset (then values are compared through `strftime`), as do rows
 * holding dates only in a column not declared `date` (a `timestamp` keeps the time written to it).
 */
async function detectDateTimeFormat(knex: Knex, table: string, col: ColumnInfo): Promise<void> {
  const q = (n: string): string => `"${n.replace(/"/g, '""')}"`
  const samples = await all<{ v: unknown }>(knex, `select ${q(col.name)} as v from ${q(table)} where ${q(col.name)} is not null limit ${DATE_SAMPLES}`)
  let format: string | null | undefined
  if (samples.length > 0) {
    const formats = new Set(samples.map((r) => sqliteDateTimeFormatOf(r.v)))
    format = formats.size === 1 ? [...formats][0] : null
    // Dates only in a column declared TIMESTAMP/DATETIME: writing in that format would drop the time
    // of a written date-time silently; the column is treated as mixed (written with its time).
    if (format === 'YYYY-MM-DD' && !/^date\b/.test(col.dataType)) format = null
  } else {
    const def = (col.default ?? '').replace(/[()\s]/g, '').toUpperCase()
    if (def === 'CURRENT_TIMESTAMP') format = 'YYYY-MM-DD HH:mm:ss'
    else if (def === 'CURRENT_DATE' || col.dataType === 'date') format = 'YYYY-MM-DD'
  }
  if (format) col.dateTimeFormat = format
}
