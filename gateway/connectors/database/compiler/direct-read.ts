/**
 * The direct-JSON read compiler: like read.ts, one SQL statement per root field, but the statement
 * produces the field's FINAL JSON text, byte for byte what GraphQL execution would serialise
 * (`JSON.stringify` of graphql-js' result): keys are response keys (aliases) in selection order,
 * `__typename` is the public type name, and every scalar is formatted in SQL the way the gateway's
 * scalars print it (DateTime `2026-11-20T09:00:00.000Z`, BigInt and Decimal as strings, enums by name).
 *
 * Where, orderBy, cursor, take/skip and distinct are read.ts' own ({@link compileList} with this
 * file's {@link ListEmitter}). Only the JSON builders differ:
 * - SQLite builds with `json_object` / `json_group_array` (compact output); values are SQL values,
 *   JSON literals (`true`) carry the JSON subtype via `json()`;
 * - PostgreSQL and MariaDB have no compact JSON renderer (`json_build_object` prints `"a" : 1`,
 *   `JSON_OBJECT` prints `"a": 1`), so the text is concatenated: every value expression is already
 *   JSON text (`to_json(c)::text`, `JSON_QUOTE(c)`), objects are `'{"k":' || v || '}'`, lists
 *   `string_agg` / `GROUP_CONCAT`.
 *
 * Exactness rule: whenever GraphQL execution would raise an error for a stored value (a NULL in a
 * non-null field, an Int out of 32-bit range, a DateTime text that does not parse, an unknown enum
 * value, a missing many-to-one row), or the SQL cannot be sure to print the same text (a Float with
 * more than 15 significant digits), the statement raises an error itself (`json('!…')` on SQLite,
 * `'!…'::json` on PostgreSQL, a BIGINT UNSIGNED overflow on MariaDB), so that the caller falls back
 * to GraphQL execution. Column kinds that cannot be printed exactly at all make the compiler throw
 * {@link DirectUnsupported} (the plan is then null): JSON columns everywhere (JS re-formats numbers
 * and escapes), Bytes on SQLite (no base64), Float on MariaDB, time-of-day types, unknown types
 * mapped to String on PostgreSQL/MariaDB, MySQL 8 (`flavor: 'mysql'`, untested here).
 */
import { Kind, getNamedType, isNonNullType, type FieldNode, type FragmentDefinitionNode, type GraphQLObjectType, type SelectionSetNode } from 'graphql'
import { isUnsignedInt, mapColumnType, normalizeDataType, sqliteTextAffinity } from '../type-map.js'
import { readArgs } from './args.js'
import type { SqlDialect } from './dialect.js'
import { raw, sql, type Frag } from './frag.js'
import { andRowFilter, collectFields, compileCounts, compileList, joinCond, newAlias, partitionOf, type Ctx, type ListEmitter, type ObjectSql } from './read.js'
import type { Model, ScalarField } from './registry.js'

/** Thrown while compiling when the selection cannot be produced exactly in SQL. */
export class DirectUnsupported extends Error {}

function unsupported(why: string): never {
  throw new DirectUnsupported(why)
}

/** A literal SQL string. */
function lit(s: string): string {
  return `'${s.replace(/'/g, "''")}'`
}

/**
 * A JSON string value whose text is `"` + the text of the SQL expression `quoted` + `"` (PostgreSQL
 * only: the two quotes are written into the neighbouring key literals, issue 30).
 */
interface Quoted {
  readonly quoted: string
}

/** The JSON text of a value: an SQL expression of that text, or a {@link Quoted} string. */
type JsonText = string | Quoted

/** Engine-specific pieces of the direct-JSON SQL. */
interface DirectDialect {
  /** A JSON string constant (for `__typename`). */
  str(value: string): string
  /** The JSON null in this dialect's value domain. */
  readonly nullValue: string
  /** An expression that raises an error when evaluated; `seed` is a column reference of the row, so that it is not folded as a constant. */
  fail(seed: string): string
  /** A JSON object of `[key, value]` pairs, keys in order. */
  object(pairs: readonly (readonly [string, JsonText])[]): string
  /** The SQL expression of a value's JSON text ({@link Quoted} values are made only by dialects whose `object` folds them). */
  text(v: JsonText): string
  /** True when `scalar` may return {@link Quoted} values that `guarded` keeps as such. */
  readonly foldsQuotes: boolean
  /** A JSON array aggregate, `[]` on no rows. */
  arrayAgg(expr: string, orderBy: readonly string[], limit?: string): string
  /**
   * The branches that print a non-null value of column `c`: `[condition, value]`, tried in order;
   * a value that matches none raises an error. A single branch with condition `null` is unconditional
   * (its value is NULL exactly when `c` is NULL).
   * @throws DirectUnsupported when the column kind cannot be printed exactly
   */
  scalar(c: string, f: ScalarField, ctx: Ctx, enforced: boolean): [string | null, JsonText][]
  /** An SQL integer (a COUNT) as JSON text. */
  count(expr: string): string
  /**
   * True when a column the catalog reports NOT NULL never reads NULL in an ordinary table of this
   * engine (PostgreSQL: attnotnull is always enforced; SQLite lets NULL into a non-INTEGER PRIMARY
   * KEY the introspection reports non-null, MariaDB's views and non-strict modes are not trusted).
   */
  readonly enforcedNotNull: boolean
}

/**
 * `CASE` over the branches; NULL prints `nullValue` when the field is nullable, else raises.
 * `notNull`: the column never holds NULL (see {@link DirectDialect.enforcedNotNull}), so there is no
 * NULL case at all: an unconditional branch is the value alone, without the `COALESCE` around it
 * (issue 30: the check could never fire). Conditional branches keep their `ELSE` (a value outside
 * them, such as a NaN Decimal, still raises).
 */
function guarded(dd: DirectDialect, c: string, branches: [string | null, JsonText][], nullable: boolean, notNull = false): JsonText {
  // Every branch a quoted string and no NULL printed (`null` has no quotes): the quotes go outside
  // the CASE/COALESCE (whose other results raise), into the object's literals (PostgreSQL, issue 30).
  if (dd.foldsQuotes && (!nullable || notNull) && branches.length > 0 && branches.every(([, t]) => typeof t !== 'string')) {
    const inner = guarded(dd, c, branches.map(([w, t]) => [w, (t as Quoted).quoted]), nullable, notNull) as string
    return { quoted: inner }
  }
  const onNull = nullable ? dd.nullValue : dd.fail(c)
  if (branches.length === 1 && branches[0]![0] === null) {
    const v = dd.text(branches[0]![1])
    return onNull === 'NULL' || notNull ? v : `COALESCE(${v}, ${onNull})`
  }
  const whens = branches.map(([w, t]) => `WHEN ${w ?? `${c} IS NOT NULL`} THEN ${dd.text(t)}`).join(' ')
  return `CASE ${whens}${nullable && !notNull ? ` WHEN ${c} IS NULL THEN ${onNull}` : ''} ELSE ${dd.fail(c)} END`
}

/** The SQL text of a value in a dialect that never makes {@link Quoted} values. */
function plain(v: JsonText): string {
  if (typeof v !== 'string') throw new Error('a quoted JSON value in a dialect that does not fold quotes')
  return v
}

/**
 * An SQLite condition that holds exactly when the value of the SQL expression `c` is a text that
 * `gateway/scalars.ts`' `EXACT_ISO` matches — `^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$`,
 * the form `toIsoDateTime` returns unchanged (`2026-11-20T09:00:00.000Z`; days the calendar lacks, such as
 * `02-31`, included, as there) — so that the direct plan prints such a value as stored, byte for byte
 * what GraphQL prints. One GLOB with character classes fixes the shape (GLOB is case-sensitive and
 * anchored at both ends, its `.` literal), five GLOBs of `?` exclude months 00 and 13–19, days 00
 * and 32–39 and hours 24–29; `instr(c, char(0)) = 0` rejects a text with a NUL after the 24
 * characters (GLOB and `length` stop at the first NUL; `octet_length` would depend on the database's
 * encoding, 48 bytes in a UTF-16 one). About 0.3 µs per value against strftime's 0.6 (issue 30).
 * @param c an SQL expression, evaluated several times (a column reference)
 * @returns the condition's SQL text
 */
export function sqliteExactIsoDateTime(c: string): string {
  return (
    `typeof(${c}) = 'text' AND ${c} GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9]Z'` +
    ` AND NOT ${c} GLOB '?????00*' AND NOT ${c} GLOB '?????1[3-9]*' AND NOT ${c} GLOB '????????00*' AND NOT ${c} GLOB '????????3[2-9]*'` +
    ` AND NOT ${c} GLOB '???????????2[4-9]*' AND instr(${c}, char(0)) = 0`
  )
}

/** Enum columns: database value -> `"Name"`; an unknown value raises (GraphQL's enum serialisation would). */
function enumBranches(dd: DirectDialect, c: string, f: ScalarField, ctx: Ctx, cast: boolean): [string | null, string][] {
  const e = ctx.reg.enums.get(f.enumName ?? '')
  if (!e) unsupported(`enum ${f.enumName ?? '?'}`)
  return [...e.values].map(([name, value]) => [`${cast ? `${c}::text` : c} = ${lit(value)}`, dd.str(name)] as [string, string])
}


class SqliteDirect implements DirectDialect {
  readonly nullValue = 'NULL'
  readonly enforcedNotNull = false
  readonly foldsQuotes = false
  text = plain
  str(value: string): string {
    return lit(value)
  }
  fail(seed: string): string {
    return `json('!' || typeof(${seed}))`
  }
  count(expr: string): string {
    return expr
  }
  object(pairs: readonly (readonly [string, JsonText])[]): string {
    return `json_object(${pairs.map(([k, e]) => `${lit(k)}, ${plain(e)}`).join(', ')})`
  }
  arrayAgg(expr: string, orderBy: readonly string[]): string {
    return `json_group_array(${expr}${orderBy.length ? ` ORDER BY ${orderBy.join(', ')}` : ''})`
  }
  scalar(c: string, f: ScalarField, ctx: Ctx): [string | null, JsonText][] {
    switch (f.scalar) {
      case 'Int':
        // GraphQL's Int is 32-bit. Text and blobs compare greater than any number, so BETWEEN
        // excludes them; a rowid alias (`INTEGER PRIMARY KEY`) is always an integer; any other Int
        // column has INTEGER affinity (its declared type contains INT), which stores integral reals
        // as integers, so a real left there is non-integral: `c = (c | 0)` excludes it.
        if (f.autoIncrement && f.dataType === 'integer') return [[`${c} BETWEEN -2147483648 AND 2147483647`, c]]
        return [[`${c} BETWEEN -2147483648 AND 2147483647 AND ${c} = (${c} | 0)`, c]]
      case 'BigInt':
        return [[`typeof(${c}) = 'integer'`, `CAST(${c} AS TEXT)`]]
      case 'Float':
        // JS prints the shortest round-trip digits. A real whose 15-significant-digit rendering reads
        // back as the same double has that rendering as its shortest form (at 15 digits the rounding
        // is unique); fixed notation in both between 1e-4 and 1e15. Anything else raises.
        return [
          [`typeof(${c}) = 'integer' AND ${c} BETWEEN -9007199254740991 AND 9007199254740991`, c],
          [`typeof(${c}) = 'real' AND abs(${c}) < 1e15 AND ${c} = CAST(${c} AS INTEGER)`, `CAST(${c} AS INTEGER)`],
          [`typeof(${c}) = 'real' AND abs(${c}) >= 1e-4 AND abs(${c}) < 1e15 AND CAST(printf('%!.15g', ${c}) AS REAL) = ${c}`, `json(printf('%!.15g', ${c}))`],
        ]
      case 'Decimal': {
        const text = f.scale !== undefined ? `printf('%.${f.scale}f', ${c})` : `CAST(${c} AS TEXT)`
        // Numbers only (text and blobs compare greater than any number), finite.
        return [[`${c} BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308`, text]]
      }
      case 'Boolean':
        // read.ts' toBool on the parsed JSON value: 1 (or 1.0), '1', 't' and 'true' are true. The
        // common 0/1 are tested first (`c = 1` is also true for 1.0, `c = 0` for 0.0 and -0.0).
        return [
          [`${c} = 1`, `json('true')`],
          [`${c} = 0`, `json('false')`],
          [`typeof(${c}) IN ('integer', 'real')`, `json('false')`],
          [`typeof(${c}) = 'text'`, `iif(${c} IN ('1', 't', 'true'), json('true'), json('false'))`],
        ]
      case 'String':
        // TEXT affinity stores numbers as text; other columns (untyped view expressions such as a
        // SUM) give numbers as text (reals with 15 significant digits, as dialect.output); a BLOB raises.
        return sqliteTextAffinity(f.dataType)
          ? [[null, c]]
          : [[`typeof(${c}) = 'text'`, c], [`typeof(${c}) = 'integer'`, `CAST(${c} AS TEXT)`], [`typeof(${c}) = 'real'`, `printf('%!.15g', ${c})`]]
      case 'DateTime': {
        // A column of epoch seconds (dateTimeFormat `unixepoch`) holds seconds, not milliseconds.
        const ms = (e: string): string => (f.dateTimeFormat === 'unixepoch' ? `(${e} * 1000)` : e)
        // Text dates (knex / CURRENT_TIMESTAMP `2026-11-21 08:01:57`, ISO strings `…T09:00:00.000Z`,
        // offsets): strftime reads them as toIsoDateTime does (UTC without a zone, fraction truncated
        // to ms); NULL from strftime (not a date) raises. Integers are epoch milliseconds.
        return [
          // The output form itself is printed as stored, as toIsoDateTime does (its EXACT_ISO), and at
          // a third of strftime's cost (issue 30).
          [sqliteExactIsoDateTime(c), c],
          // (Hour 24 is the next day's midnight for JS, not for SQLite: it raises.)
          [
            `typeof(${c}) = 'text' AND ${c} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' AND NOT ${c} GLOB '??????????[ Tt]24*'`,
            `COALESCE(strftime('%Y-%m-%dT%H:%M:%fZ', ${c}), ${this.fail(c)})`,
          ],
          [`typeof(${c}) = 'integer' AND ${ms(c)} BETWEEN 0 AND 253402300799999`, `strftime('%Y-%m-%dT%H:%M:%S', ${ms(c)} / 1000, 'unixepoch') || printf('.%03dZ', ${ms(c)} % 1000)`],
        ]
      }
      case 'Enum':
        return enumBranches(this, c, f, ctx, false)
      case 'JSON':
        return unsupported('JSON columns: JS re-formats the stored JSON text')
      case 'Bytes':
        return unsupported('Bytes on SQLite: no base64 in SQL')
    }
  }
}

/** A piece of a PostgreSQL JSON text concatenation: a constant text, or an SQL text expression. */
type Piece = { readonly lit: string } | { readonly expr: string }

/**
 * PostgreSQL builds JSON text with `||` (cheaper per row than `format`, `concat`, `array_to_string`
 * or `row_to_json`, issue 30): constant pieces are merged, so that each `||` joins a key's literal
 * and a value. A list's objects keep their first key and their closing brace out of the row's
 * expression: they are `string_agg`'s separator (`},{"k":`) and the literals around the aggregate,
 * two `||` fewer per row.
 */
class PostgresDirect implements DirectDialect {
  readonly nullValue = `'null'`
  readonly enforcedNotNull = true
  readonly foldsQuotes = true
  /** The objects `object` built, by their SQL text: first literal, middle pieces, last literal (for `arrayAgg`). */
  private readonly split = new Map<string, { head: string; body: string; tail: string }>()
  str(value: string): string {
    return lit(JSON.stringify(value))
  }
  text(v: JsonText): string {
    return typeof v === 'string' ? v : `'"' || ${v.quoted} || '"'`
  }
  fail(seed: string): string {
    return `(('!' || (${seed} IS NULL)::text)::json)::text`
  }
  count(expr: string): string {
    return `${expr}::text`
  }
  object(pairs: readonly (readonly [string, JsonText])[]): string {
    if (pairs.length === 0) return `'{}'`
    const pieces: Piece[] = []
    const add = (p: Piece): void => {
      const last = pieces[pieces.length - 1]
      if ('lit' in p && last && 'lit' in last) pieces[pieces.length - 1] = { lit: last.lit + p.lit }
      else pieces.push(p)
    }
    pairs.forEach(([k, v], i) => {
      add({ lit: `${i === 0 ? '{' : ','}${JSON.stringify(k)}:` })
      if (typeof v === 'string') add({ expr: v })
      else {
        add({ lit: '"' })
        add({ expr: v.quoted })
        add({ lit: '"' })
      }
    })
    add({ lit: '}' })
    const text = (ps: readonly Piece[]): string => ps.map((p) => ('lit' in p ? lit(p.lit) : `(${p.expr})`)).join(' || ')
    const json = `(${text(pieces)})`
    const head = pieces[0]!
    const tail = pieces[pieces.length - 1]!
    if (pieces.length > 2 && 'lit' in head && 'lit' in tail) this.split.set(json, { head: head.lit, body: text(pieces.slice(1, -1)), tail: tail.lit })
    return json
  }
  arrayAgg(expr: string, orderBy: readonly string[]): string {
    const ob = orderBy.length ? ` ORDER BY ${orderBy.join(', ')}` : ''
    const parts = this.split.get(expr)
    // `[` head body tail `,` head body tail … `]`: string_agg skips a NULL body as it skipped a NULL object.
    if (parts) return `COALESCE(${lit(`[${parts.head}`)} || string_agg(${parts.body}, ${lit(`${parts.tail},${parts.head}`)}${ob}) || ${lit(`${parts.tail}]`)}, '[]')`
    return `COALESCE('[' || string_agg(${expr}, ','${ob}) || ']', '[]')`
  }
  scalar(c: string, f: ScalarField, ctx: Ctx, enforced: boolean): [string | null, JsonText][] {
    const quoted = (e: string): Quoted => ({ quoted: e })
    if (f.list) {
      // Arrays: one dimension, no NULL item ([T!] in GraphQL); anything else raises.
      const flat = `${c} IS NOT NULL AND COALESCE(array_ndims(${c}), 1) = 1 AND CASE WHEN array_ndims(${c}) = 1 THEN array_position(${c}, NULL) IS NULL ELSE true END`
      if (mapColumnType('postgres', f.dataType).unknownType || f.scalar === 'Decimal' || f.scalar === 'BigInt') return [[flat, `to_json(${c}::text[])::text`]]
      if (f.scalar === 'Int' || f.scalar === 'String' || f.scalar === 'Boolean') return [[flat, `to_json(${c})::text`]]
      if (f.scalar === 'Enum' && [...(ctx.reg.enums.get(f.enumName ?? '')?.values ?? [])].every(([name, value]) => name === value)) {
        return [[`${flat} AND ${c}::text[] <@ ARRAY[${[...ctx.reg.enums.get(f.enumName!)!.values.values()].map(lit).join(', ')}]::text[]`, `to_json(${c})::text`]]
      }
      return unsupported(`list of ${f.scalar}`)
    }
    switch (f.scalar) {
      case 'Int':
        return [[null, `${c}::text`]]
      case 'BigInt':
        return [[null, quoted(`${c}::text`)]]
      case 'Float':
        // float4/float8 print their shortest round-trip digits, in fixed notation from 1e-4 to 1e15 (as JS).
        return [
          [`${c} = 0`, `'0'`],
          [`abs(${c}) >= 1e-4 AND abs(${c}) < 1e15`, `${c}::text`],
        ]
      case 'Decimal':
        // NaN and ±Infinity do not pass the Decimal scalar. A column with a declared precision
        // (`numeric(10,2)`) of an ordinary table holds no infinity (PostgreSQL refuses to store one), only NaN.
        if (enforced && f.scale !== undefined) return [[`${c} <> 'NaN'`, quoted(`${c}::text`)]]
        return [[`${c} > '-Infinity' AND ${c} < 'Infinity'`, quoted(`${c}::text`)]]
      case 'Boolean':
        return [[null, `CASE WHEN ${c} THEN 'true' WHEN NOT ${c} THEN 'false' END`]]
      case 'String':
        if (mapColumnType('postgres', f.dataType).unknownType) unsupported(`column type ${f.dataType}`)
        return [[null, `to_json(${c})::text`]]
      case 'DateTime': {
        const t = normalizeDataType(f.dataType)
        const fmt = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
        if (t === 'timestamptz' || t === 'timestamp with time zone') {
          return [[`${c} >= '0001-01-01 00:00:00+00' AND ${c} < '10000-01-01 00:00:00+00'`, quoted(`to_char(${c} AT TIME ZONE 'UTC', ${fmt})`)]]
        }
        if (t === 'timestamp' || t === 'timestamp without time zone') {
          return [[`${c} >= '0001-01-01 00:00:00' AND ${c} < '10000-01-01 00:00:00'`, quoted(`to_char(${c}, ${fmt})`)]]
        }
        if (t === 'date') return [[`${c} >= '0001-01-01' AND ${c} < '10000-01-01'`, quoted(`to_char(${c}, 'YYYY-MM-DD"T00:00:00.000Z"')`)]]
        return unsupported(`DateTime column of type ${f.dataType}`)
      }
      case 'Enum':
        return enumBranches(this, c, f, ctx, true)
      case 'JSON':
        return unsupported('JSON columns: JS re-formats the stored JSON text')
      case 'Bytes':
        return [[null, quoted(`replace(encode(${c}, 'base64'), chr(10), '')`)]]
    }
  }
}

class MariadbDirect implements DirectDialect {
  readonly nullValue = `'null'`
  readonly enforcedNotNull = false
  readonly foldsQuotes = false
  text = plain
  str(value: string): string {
    return lit(JSON.stringify(value))
  }
  fail(seed: string): string {
    // BIGINT UNSIGNED overflow is an error, not a warning, in SELECT.
    return `CAST(~0 + (${seed} IS NULL) + 1 AS CHAR)`
  }
  count(expr: string): string {
    return `CAST(${expr} AS CHAR)`
  }
  object(pairs: readonly (readonly [string, JsonText])[]): string {
    if (pairs.length === 0) return `'{}'`
    return `CONCAT(${pairs.map(([k, e], i) => `${lit(`${i === 0 ? '{' : ','}${JSON.stringify(k)}:`)}, ${plain(e)}`).join(', ')}, '}')`
  }
  arrayAgg(expr: string, orderBy: readonly string[], limit = ''): string {
    return `COALESCE(CONCAT('[', GROUP_CONCAT(${expr}${orderBy.length ? ` ORDER BY ${orderBy.join(', ')}` : ''} SEPARATOR ','${limit}), ']'), '[]')`
  }
  scalar(c: string, f: ScalarField, ctx: Ctx): [string | null, JsonText][] {
    const quoted = (e: string): string => `CONCAT('"', ${e}, '"')`
    switch (f.scalar) {
      case 'Int':
        // `int unsigned` above 2^31-1 is not a GraphQL Int: the normal path reports TRB_ERR_DB_VALUE.
        return [[isUnsignedInt(f) ? `${c} <= 2147483647` : null, `CAST(${c} AS CHAR)`]]
      case 'BigInt':
        return [[null, quoted(`CAST(${c} AS CHAR)`)]]
      case 'Float':
        return unsupported('Float on MariaDB: its double-to-text is not JS number formatting')
      case 'Decimal':
        return [[null, quoted(`CAST(${c} AS CHAR)`)]]
      case 'Boolean':
        // read.ts' toBool: only 1 is true.
        return [[null, `CASE WHEN ${c} = 1 THEN 'true' WHEN ${c} IS NOT NULL THEN 'false' END`]]
      case 'String':
        if (mapColumnType('mysql', f.dataType).unknownType) unsupported(`column type ${f.dataType}`)
        // JSON_QUOTE escapes control characters with upper-case hex (`\u001F`), JS with lower case:
        // strings holding one of those raise.
        return [[`${c} NOT REGEXP CONCAT('[', CHAR(11 USING utf8mb4), CHAR(14 USING utf8mb4), CHAR(15 USING utf8mb4), CHAR(26 USING utf8mb4), '-', CHAR(31 USING utf8mb4), ']')`, `JSON_QUOTE(${c})`]]
      case 'DateTime': {
        const t = normalizeDataType(f.dataType)
        const valid = `MONTH(${c}) > 0 AND DAYOFMONTH(${c}) > 0`
        if (t === 'datetime' || t === 'timestamp') return [[valid, quoted(`LEFT(DATE_FORMAT(${c}, '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z'`)]]
        if (t === 'date') return [[valid, quoted(`DATE_FORMAT(${c}, '%Y-%m-%dT00:00:00.000Z')`)]]
        return unsupported(`DateTime column of type ${f.dataType}`)
      }
      case 'Enum':
        return enumBranches(this, c, f, ctx, false)
      case 'JSON':
        return unsupported('JSON columns: JS re-formats the stored JSON text')
      case 'Bytes':
        if (normalizeDataType(f.dataType).startsWith('bit')) unsupported('BIT columns')
        return [[null, quoted(`REPLACE(TO_BASE64(${c}), CHAR(10 USING ascii), '')`)]]
    }
  }
}

/** The direct dialect of an engine, or null when there is none (MySQL 8). */
function directDialect(d: SqlDialect): DirectDialect | null {
  if (d.dialect === 'sqlite') return new SqliteDirect()
  if (d.dialect === 'postgres') return new PostgresDirect()
  return d.flavor === 'mariadb' ? new MariadbDirect() : null
}

/** True when a selection (fragments included) has `@skip`/`@include` whose condition is not a literal. */
export function hasVariableDirectives(node: FieldNode, fragments: Record<string, FragmentDefinitionNode>): boolean {
  const seen = new Set<string>()
  const dynamic = (n: { directives?: readonly { name: { value: string }; arguments?: readonly { value: { kind: string } }[] }[] }): boolean =>
    (n.directives ?? []).some((d) => (d.name.value === 'skip' || d.name.value === 'include') && (d.arguments ?? []).some((a) => a.value.kind !== Kind.BOOLEAN))
  const visit = (set: SelectionSetNode | undefined): boolean => {
    if (!set) return false
    for (const sel of set.selections) {
      if (dynamic(sel)) return true
      if (sel.kind === Kind.FIELD) {
        if (visit(sel.selectionSet)) return true
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        if (visit(sel.selectionSet)) return true
      } else if (!seen.has(sel.name.value)) {
        seen.add(sel.name.value)
        const frag = fragments[sel.name.value]
        if (!frag || dynamic(frag) || visit(frag.selectionSet)) return true
      }
    }
    return false
  }
  return dynamic(node) || visit(node.selectionSet)
}

/** Compiles SQL whose value is the final JSON text of a selection. */
export class DirectCompiler implements ListEmitter {
  private readonly dd: DirectDialect

  /** @throws DirectUnsupported when the engine has no direct dialect */
  constructor(d: SqlDialect) {
    const dd = directDialect(d)
    if (!dd) unsupported(`direct JSON on ${d.dialect}/${d.flavor}`)
    this.dd = dd
  }

  arrayAgg = (expr: string, orderBy: readonly string[], limit?: string): string => this.dd.arrayAgg(expr, orderBy, limit)

  /**
   * One object level: every response key in selection order (merged as GraphQL merges fields),
   * `__typename` as the public type name, scalars exactly formatted, relations as subqueries.
   * @throws DirectUnsupported
   */
  object = (ctx: Ctx, model: Model, type: GraphQLObjectType, alias: string, nodes: readonly FieldNode[]): ObjectSql => {
    const dd = this.dd
    const d = ctx.d
    const fields = collectFields(ctx, type, nodes)
    const pairs: [string, { s: JsonText; p: Frag['p'] }][] = []
    const cols = new Set<string>()
    const typeFields = type.getFields()
    // The rows of `alias` are the model's own (its table, or a derived table projecting its columns):
    // an ordinary table's NOT NULL columns read no NULL; a view's or a foreign table's may.
    const enforced = dd.enforcedNotNull && model.kind === 'table' && !model.foreign
    for (const [key, fnodes] of fields) {
      const name = fnodes[0]!.name.value
      if (name === '__typename') {
        pairs.push([key, raw(dd.str(type.name))])
        continue
      }
      const def = typeFields[name]
      if (!def) unsupported(`unknown field ${type.name}.${name}`)
      if (name === '_count') {
        const countType = getNamedType(def.type) as GraphQLObjectType
        const counts = new Map(compileCounts(ctx, model, alias, countType, fnodes, cols))
        const inner: [string, Frag][] = []
        for (const [k, sub] of collectFields(ctx, countType, fnodes)) {
          if (sub[0]!.name.value === '__typename') inner.push([k, raw(dd.str(countType.name))])
          else if (counts.has(k)) inner.push([k, { s: dd.count(counts.get(k)!.s), p: counts.get(k)!.p }])
          else unsupported(`field ${countType.name}.${sub[0]!.name.value}`)
        }
        pairs.push([key, { s: dd.object(inner.map(([k, f]) => [k, f.s] as const)), p: inner.flatMap(([, f]) => f.p) }])
        continue
      }
      const f = model.fieldMap.get(name)
      if (f) {
        cols.add(f.column)
        const c = `${alias}.${d.q(f.column)}`
        pairs.push([key, { s: guarded(dd, c, dd.scalar(c, f, ctx, enforced), !isNonNullType(def.type), enforced && !f.nullable), p: [] }])
        continue
      }
      const rel = model.relations.get(name)
      if (!rel) unsupported(`field ${type.name}.${name} is not a column or a relation`)
      const target = ctx.reg.models.get(rel.target)!
      const targetType = getNamedType(def.type) as GraphQLObjectType
      const fromCols = rel.fromFields.map((from) => model.fieldMap.get(from)!.column)
      for (const col of fromCols) cols.add(col)
      const r = newAlias(ctx)
      const correlate = (a: string): Frag => raw(joinCond(ctx, rel, model, alias, target, a))
      if (rel.kind === 'one') {
        const sub = this.object(ctx, target, targetType, r, fnodes)
        const q = sql`(SELECT ${sub.json} FROM ${d.table(target.table)} AS ${r} WHERE ${andRowFilter(ctx, target, r, correlate(r))}${d.dialect === 'postgres' ? '' : ' LIMIT 1'})`
        const seed = `${alias}.${d.q(fromCols[0]!)}`
        const onNull = isNonNullType(def.type) ? dd.fail(seed) : dd.nullValue
        pairs.push([key, onNull === 'NULL' ? q : sql`COALESCE(${q}, ${onNull})`])
      } else {
        const args = readArgs(fnodes[0]!, def.args, ctx.vars)
        const list = compileList(ctx, target, targetType, fnodes, args, correlate, 'agg', { emit: this, ...partitionOf(rel, target) })
        pairs.push([key, sql`(${list.frag})`])
      }
    }
    const json: Frag = { s: dd.object(pairs.map(([k, f]) => [k, f.s] as const)), p: pairs.flatMap(([, f]) => f.p) }
    return { json, cols, post: null }
  }
}
