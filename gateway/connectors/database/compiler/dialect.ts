/**
 * Engine-specific SQL: identifier quoting (the same rules as knex's dialect clients), JSON builders,
 * casts for exact output (Decimal and BigInt as text, Bytes as hex), LIMIT/OFFSET, LIKE patterns and
 * the conversion of bound values. Everything else in the compiler is engine-neutral.
 */
import type { Dialect, ScalarKind } from '../model.js'
import type { ScalarField } from './registry.js'
import { toIsoDateTime } from '../../../scalars.js'
import { refuseNul } from './input-limits.js'
import { mapColumnType, sqliteTextAffinity } from '../type-map.js'

/** `mariadb` (MariaDB ≥ 10.5: `JSON_ARRAYAGG(... ORDER BY ... LIMIT)`, no outer references in derived tables) or `mysql` (MySQL ≥ 8.0.14). */
export type MysqlFlavor = 'mariadb' | 'mysql'

/** The largest LIMIT MySQL accepts, for OFFSET without LIMIT. */
const MYSQL_MAX_LIMIT = '18446744073709551615'

/** PostgreSQL's json_build_object takes at most 100 arguments: 50 pairs. */
const PG_MAX_PAIRS = 50

/** Dialect helpers bound to one engine. */
export class SqlDialect {
  constructor(
    readonly dialect: Dialect,
    readonly flavor: MysqlFlavor = 'mariadb',
    readonly pgSchema?: string,
  ) {}

  /** Quotes an identifier: `"name"` (SQLite, PostgreSQL) or `` `name` `` (MySQL), doubling embedded quotes. */
  q(name: string): string {
    return this.dialect === 'mysql' ? `\`${name.replace(/`/g, '``')}\`` : `"${name.replace(/"/g, '""')}"`
  }

  /** A table reference, schema-qualified on PostgreSQL. */
  table(name: string): string {
    return this.dialect === 'postgres' && this.pgSchema ? `${this.q(this.pgSchema)}.${this.q(name)}` : this.q(name)
  }

  /** A JSON object from `[key, sqlExpr]` pairs; keys are GraphQL names (safe in a string literal). */
  jsonObject(pairs: readonly (readonly [string, string])[]): string {
    const lit = (k: string): string => `'${k.replace(/'/g, "''")}'`
    if (this.dialect === 'sqlite') return `json_object(${pairs.map(([k, e]) => `${lit(k)}, ${e}`).join(', ')})`
    if (this.dialect === 'mysql') return `JSON_OBJECT(${pairs.map(([k, e]) => `${lit(k)}, ${e}`).join(', ')})`
    if (pairs.length <= PG_MAX_PAIRS) return `json_build_object(${pairs.map(([k, e]) => `${lit(k)}, ${e}`).join(', ')})`
    const chunks: string[] = []
    for (let i = 0; i < pairs.length; i += PG_MAX_PAIRS) {
      chunks.push(`json_build_object(${pairs.slice(i, i + PG_MAX_PAIRS).map(([k, e]) => `${lit(k)}, ${e}`).join(', ')})::jsonb`)
    }
    return `(${chunks.join(' || ')})::json`
  }

  /** True when a JSON aggregate accepts ORDER BY inside (all but MySQL 8). */
  get aggOrderBy(): boolean {
    return !(this.dialect === 'mysql' && this.flavor === 'mysql')
  }

  /** True when derived tables may reference columns of an enclosing query (all but MariaDB). */
  get correlatedDerived(): boolean {
    return !(this.dialect === 'mysql' && this.flavor === 'mariadb')
  }

  /** A JSON array aggregate of `expr`, `[]` on no rows. `orderBy` are `expr ASC|DESC` terms; `limit` is MariaDB's in-aggregate LIMIT. */
  jsonArrayAgg(expr: string, orderBy: readonly string[], limit = ''): string {
    const ob = orderBy.length > 0 && this.aggOrderBy ? ` ORDER BY ${orderBy.join(', ')}` : ''
    if (this.dialect === 'sqlite') return `json_group_array(${expr}${ob})`
    if (this.dialect === 'postgres') return `COALESCE(json_agg(${expr}${ob}), '[]'::json)`
    return `COALESCE(JSON_ARRAYAGG(${expr}${ob}${limit}), JSON_ARRAY())`
  }

  /**
   * An ORDER BY term with the same NULL placement on every engine: NULLs first ascending, last
   * descending. `notNull`: `expr` is a NOT NULL column, so PostgreSQL gets a plain `ASC`/`DESC`,
   * the order of its default b-tree indexes (NULLS LAST ascending): with `NULLS FIRST`, a primary-key
   * index cannot serve `ORDER BY id LIMIT n` and the whole table is scanned and sorted.
   */
  orderTerm(expr: string, dir: 'asc' | 'desc', notNull = false): string {
    if (this.dialect === 'postgres' && !notNull) return `${expr} ${dir === 'asc' ? 'ASC NULLS FIRST' : 'DESC NULLS LAST'}`
    return `${expr} ${dir === 'asc' ? 'ASC' : 'DESC'}`
  }

  /** LIMIT/OFFSET text given which of them are bound (`?`). */
  limitOffset(hasLimit: boolean, hasOffset: boolean): string {
    if (!hasLimit && !hasOffset) return ''
    if (hasLimit && hasOffset) return ' LIMIT ? OFFSET ?'
    if (hasLimit) return ' LIMIT ?'
    if (this.dialect === 'sqlite') return ' LIMIT -1 OFFSET ?'
    if (this.dialect === 'mysql') return ` LIMIT ${MYSQL_MAX_LIMIT} OFFSET ?`
    return ' OFFSET ?'
  }

  /** A PostgreSQL array column as compared by list filters: arrays of unknown element types as `text[]`. */
  listCompareExpr(colRef: string, f: Pick<ScalarField, 'dataType'>): string {
    return mapColumnType('postgres', f.dataType).unknownType ? `${colRef}::text[]` : colRef
  }

  /** The expression that puts a column into the JSON result with an exact value. */
  output(colRef: string, f: ScalarField): string {
    const d = this.dialect
    if (f.list) {
      // PostgreSQL arrays: JSON arrays; exact decimals, big integers and unknown elements as text.
      if (f.scalar === 'Decimal' || f.scalar === 'BigInt' || mapColumnType('postgres', f.dataType).unknownType) return `${colRef}::text[]`
      return colRef
    }
    const guard = (e: string): string => (f.nullable ? `CASE WHEN ${colRef} IS NULL THEN NULL ELSE ${e} END` : e)
    switch (f.scalar) {
      case 'Decimal':
        if (d === 'sqlite') return guard(f.scale !== undefined ? `printf('%.${f.scale}f', ${colRef})` : `CAST(${colRef} AS TEXT)`)
        return d === 'postgres' ? `${colRef}::text` : `CAST(${colRef} AS CHAR)`
      case 'BigInt':
        if (d === 'sqlite') return `CAST(${colRef} AS TEXT)`
        return d === 'postgres' ? `${colRef}::text` : `CAST(${colRef} AS CHAR)`
      case 'DateTime':
        // Epoch seconds are read as the epoch milliseconds every SQLite integer date-time is.
        return d === 'sqlite' && f.dateTimeFormat === 'unixepoch' ? `(${colRef} * 1000)` : colRef
      case 'String':
        // SQLite: a number in a column without TEXT affinity (an untyped view SUM) as text; a real
        // with 15 significant digits (`3417.72`, not the double's `3417.7200000000003`).
        if (d === 'sqlite' && !sqliteTextAffinity(f.dataType)) return `CASE typeof(${colRef}) WHEN 'integer' THEN CAST(${colRef} AS TEXT) WHEN 'real' THEN printf('%!.15g', ${colRef}) ELSE ${colRef} END`
        return colRef
      case 'Bytes':
        if (d === 'sqlite') return guard(`hex(${colRef})`)
        return d === 'postgres' ? `encode(${colRef}, 'hex')` : `HEX(${colRef})`
      default:
        return colRef
    }
  }

  /**
   * A column normalised for comparison. SQLite DateTime columns of a known format
   * (`dateTimeFormat`) are compared as they are, against values bound in that format, so that an
   * index on the column serves the comparison; others are compared as `YYYY-MM-DD HH:MM:SS.SSS`.
   */
  compareExpr(colRef: string, f: ScalarField): string {
    if (this.dialect === 'sqlite' && f.scalar === 'DateTime' && !f.dateTimeFormat) return `strftime('%Y-%m-%d %H:%M:%f', ${colRef})`
    return colRef
  }

  /** Converts an input value (a literal or a coerced variable) to what the driver binds for column `f`. */
  bindValue(f: Pick<ScalarField, 'scalar' | 'dataType' | 'dateTimeFormat'> & { list?: boolean }, v: unknown, forCompare: boolean): unknown {
    if (v === null || v === undefined) return null
    if (f.list && Array.isArray(v)) return v.map((x) => this.bindValue({ scalar: f.scalar, dataType: f.dataType, dateTimeFormat: f.dateTimeFormat }, x, forCompare))
    if (this.dialect === 'postgres' && typeof v === 'string') refuseNul(v)
    if (this.dialect === 'sqlite' && f.scalar === 'DateTime' && f.dateTimeFormat) return formatSqliteDateTime(new Date(toIsoDateTime(v)), f.dateTimeFormat)
    return bindScalar(this.dialect, f.scalar, f.dataType, v, forCompare)
  }

  /** A case-sensitive or insensitive LIKE test of `colRef` against one bound pattern built by {@link likePattern}. */
  like(colRef: string, insensitive: boolean): string {
    if (this.dialect === 'sqlite') return insensitive ? `${colRef} LIKE ? ESCAPE '\\'` : `${colRef} GLOB ?`
    if (this.dialect === 'postgres') return insensitive ? `${colRef} ILIKE ?` : `${colRef} LIKE ?`
    return insensitive ? `LOWER(${colRef}) LIKE LOWER(?)` : `${colRef} LIKE BINARY ?`
  }

  /** Builds the pattern for {@link like}: `kind` is contains, startsWith or endsWith. */
  likePattern(value: string, kind: 'contains' | 'startsWith' | 'endsWith', insensitive: boolean): string {
    if (this.dialect === 'postgres') refuseNul(value)
    const globbing = this.dialect === 'sqlite' && !insensitive
    const esc = globbing ? value.replace(/[*?[]/g, (c) => `[${c}]`) : value.replace(/[\\%_]/g, (c) => `\\${c}`)
    const any = globbing ? '*' : '%'
    if (kind === 'contains') return `${any}${esc}${any}`
    if (kind === 'startsWith') return `${esc}${any}`
    return `${any}${esc}`
  }

  /** Equality and ordering comparisons of strings; on MySQL the default mode is made case-sensitive with BINARY. */
  stringCompare(colRef: string, op: string, insensitive: boolean, rhs = '?'): string {
    if (insensitive) return `LOWER(${colRef}) ${op} LOWER(${rhs})`
    if (this.dialect === 'mysql') return `${colRef} ${op} BINARY ${rhs}`
    return `${colRef} ${op} ${rhs}`
  }

  /** Integer division for `divide` on Int/BigInt columns. */
  intDivide(colRef: string): string {
    if (this.dialect === 'sqlite') return `${colRef} / CAST(? AS INTEGER)`
    return this.dialect === 'mysql' ? `${colRef} DIV ?` : `${colRef} / ?`
  }

  /** Replaces `?` placeholders by `$1, $2...` on PostgreSQL. The compiler never emits `?` elsewhere. */
  native(text: string): string {
    if (this.dialect !== 'postgres') return text
    let n = 0
    return text.replace(/\?/g, () => `$${++n}`)
  }
}

/**
 * Writes a date-time in a SQLite column's stored format (see `ColumnInfo.dateTimeFormat`):
 * `unixepoch` → integer seconds (truncated), `unixepoch-ms` → integer milliseconds, else the
 * pattern with `YYYY MM DD HH mm ss SSS` replaced by the UTC fields (other characters kept); a
 * pattern ending in `ss` adds `.SSS` for a value with milliseconds.
 */
export function formatSqliteDateTime(d: Date, format: string): string | number {
  if (format === 'unixepoch') return Math.floor(d.getTime() / 1000)
  if (format === 'unixepoch-ms') return d.getTime()
  const fields: Record<string, string> = {
    YYYY: pad(d.getUTCFullYear(), 4),
    MM: pad(d.getUTCMonth() + 1),
    DD: pad(d.getUTCDate()),
    HH: pad(d.getUTCHours()),
    mm: pad(d.getUTCMinutes()),
    ss: pad(d.getUTCSeconds()),
    SSS: pad(d.getUTCMilliseconds(), 3),
  }
  // A format ending in whole seconds (`… HH:mm:ss`) gets the milliseconds only when there are some:
  // nothing is lost, stored values keep their shape, and text order stays time order ('…:30' < '…:30.5').
  const pattern = format.endsWith('ss') && d.getUTCMilliseconds() !== 0 ? `${format}.SSS` : format
  return pattern.replace(/YYYY|SSS|MM|DD|HH|mm|ss/g, (t) => fields[t]!)
}

/**
 * The stored format of one SQLite date-time value (see {@link formatSqliteDateTime}), or null when it
 * is not a UTC date-time this module writes back exactly (a real, another offset, free text).
 */
export function sqliteDateTimeFormatOf(value: unknown): string | null {
  if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isInteger(value)) return null
    return Math.abs(Number(value)) < 1e11 ? 'unixepoch' : 'unixepoch-ms'
  }
  if (typeof value !== 'string') return null
  const m = /^\d{4}-\d\d-\d\d(?:([ T])\d\d:\d\d(:\d\d)?(?:\.(\d{3}))?(Z|\+00:00)?)?$/.exec(value)
  if (!m) return null
  if (m[1] === undefined) return 'YYYY-MM-DD'
  return `YYYY-MM-DD${m[1]}HH:mm${m[2] ? ':ss' : ''}${m[3] ? '.SSS' : ''}${m[4] ?? ''}`
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0')
}

function sqlDateTime(iso: string, dataType: string, forCompare: boolean, dialect: Dialect): string {
  const d = new Date(iso)
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`
  if (!forCompare || dialect !== 'sqlite') {
    if (/^date$/.test(dataType)) return date
    if (/^time\b/.test(dataType)) return time
  }
  if (dialect === 'postgres') return iso
  return `${date} ${time}`
}

/** Converts one scalar input value for the driver of `dialect`. */
export function bindScalar(dialect: Dialect, scalar: ScalarKind, dataType: string, v: unknown, forCompare: boolean): unknown {
  switch (scalar) {
    case 'Boolean':
      if (dialect === 'sqlite') return v ? 1 : 0
      return Boolean(v)
    case 'DateTime':
      return sqlDateTime(toIsoDateTime(v), dataType, forCompare, dialect)
    case 'BigInt':
      if (dialect === 'sqlite') return typeof v === 'bigint' ? v : BigInt(v as string | number)
      return String(v)
    case 'Decimal':
      // SQLite has no decimal type (NUMERIC affinity stores REAL): compare and store numbers.
      if (dialect === 'sqlite') return typeof v === 'number' ? v : Number(v)
      return typeof v === 'number' ? String(v) : v
    case 'Bytes':
      if (Buffer.isBuffer(v)) return v
      if (typeof v === 'string') return Buffer.from(v, 'base64')
      return Buffer.from(v as Uint8Array)
    case 'JSON':
      return JSON.stringify(v)
    default:
      return v
  }
}
