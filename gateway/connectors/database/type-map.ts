/**
 * Column type -> GraphQL scalar, per engine (issue 3 §2, the README's "Type mapping" table). Pure.
 *
 * | Database type | SQLite (declared type) | PostgreSQL | MySQL / MariaDB | GraphQL |
 * |---|---|---|---|---|
 * | integer types | `int`, `integer`, `tinyint`, `smallint`, `mediumint`, `int2`; else any type containing `INT` (affinity) | `smallint`, `integer`, `int2`, `int4`, `smallserial`, `serial` | `tinyint` (not `tinyint(1)`), `smallint`, `mediumint`, `int`, `year`; unsigned too (`int unsigned` above 2^31-1 is refused when read) | Int |
 * | bigint | `bigint`, `int8`, `unsigned big int` | `bigint`, `int8`, `bigserial` | `bigint`, `bigint unsigned`, `serial` | BigInt (string) |
 * | float, real, double | `real`, `float`, `double`, `double precision`; else `REAL`/`FLOA`/`DOUB` (affinity) | `real`, `float4`, `double precision`, `float8` | `float`, `double`, `real` | Float |
 * | decimal, numeric | `decimal`, `numeric` | `numeric`, `decimal` | `decimal`, `numeric`, `fixed` | Decimal (string) |
 * | boolean | `boolean`, `bool` | `boolean`, `bool` | `tinyint(1)`, `bool`, `boolean` | Boolean |
 * | text types | any type containing `CHAR`, `CLOB` or `TEXT`; `uuid`, `citext` | `text`, `varchar`, `character varying`, `char`, `character`, `bpchar`, `name`, `citext`, `uuid`, `xml`, `inet`, `cidr`, `macaddr`, `macaddr8`, `money`, `bit`, `varbit` | `char`, `varchar`, `tinytext` … `longtext`, `set(…)` | String |
 * | date, time, timestamp | `date`, `datetime`, `timestamp`, `time` (stored as ISO text) | `date`, `time`, `timetz`, `timestamp`, `timestamptz` (with or without time zone) | `date`, `datetime`, `timestamp`, `time` | DateTime (ISO 8601 UTC) |
 * | json | `json`, `jsonb` | `json`, `jsonb` | `json` (MariaDB: `longtext` with a `json_valid` check) | JSON |
 * | binary | `blob` or no type… see below; `bytea`, `binary`, `varbinary` | `bytea` | `binary`, `varbinary`, `tinyblob` … `longblob`, `bit` | Bytes (base64) |
 * | enum types | — | `CREATE TYPE … AS ENUM` (set by introspection) | inline `enum(…)` | Enum |
 * | anything else | e.g. `weird_type`, or no declared type | e.g. `point`, `tsvector`, `interval` | e.g. `geometry` | String, `unknownType: true` |
 *
 * SQLite follows its type-affinity rules (sqlite.org/datatype3.html §3.1) for declared types that are
 * not named above: `INT` -> Int, `CHAR`/`CLOB`/`TEXT` -> String, `BLOB` -> Bytes,
 * `REAL`/`FLOA`/`DOUB` -> Float; a type with NUMERIC affinity that is not named above (`weird_type`) is
 * unknown. A column with no declared type (typical of view expressions) is unknown as well.
 *
 * PostgreSQL arrays (`text[]`, `integer[]`, `numeric(6,2)[]`…) map to a GraphQL list of their
 * element's type (`list: true`); arrays of unknown, JSON or bytea elements to a list of String
 * (`unknownType: true`, read as `text[]`).
 *
 * PostgreSQL `money` maps to String because the engine formats it with a currency symbol.
 */
import type { Dialect, ScalarKind } from './model.js'

/** The result of {@link mapColumnType}. */
export interface ColumnTypeMapping {
  scalar: ScalarKind
  /** True when the type was not recognised and fell back to `String`. */
  unknownType?: boolean
  /** True for a PostgreSQL array type: a list of `scalar`. */
  list?: boolean
}

const INT = 'Int'
const BIGINT = 'BigInt'
const FLOAT = 'Float'
const DECIMAL = 'Decimal'
const BOOLEAN = 'Boolean'
const STRING = 'String'
const DATETIME = 'DateTime'
const JSON_ = 'JSON'
const BYTES = 'Bytes'

const PG: Record<string, ScalarKind> = {
  smallint: INT, integer: INT, int: INT, int2: INT, int4: INT, smallserial: INT, serial: INT, serial2: INT, serial4: INT,
  bigint: BIGINT, int8: BIGINT, bigserial: BIGINT, serial8: BIGINT,
  real: FLOAT, float4: FLOAT, 'double precision': FLOAT, float8: FLOAT, float: FLOAT,
  numeric: DECIMAL, decimal: DECIMAL,
  boolean: BOOLEAN, bool: BOOLEAN,
  text: STRING, 'character varying': STRING, varchar: STRING, character: STRING, char: STRING, bpchar: STRING,
  '"char"': STRING, name: STRING, citext: STRING, uuid: STRING, xml: STRING, inet: STRING, cidr: STRING,
  macaddr: STRING, macaddr8: STRING, money: STRING, bit: STRING, 'bit varying': STRING, varbit: STRING,
  date: DATETIME, time: DATETIME, timetz: DATETIME, 'time without time zone': DATETIME, 'time with time zone': DATETIME,
  timestamp: DATETIME, timestamptz: DATETIME, 'timestamp without time zone': DATETIME, 'timestamp with time zone': DATETIME,
  json: JSON_, jsonb: JSON_,
  bytea: BYTES,
}

const MYSQL: Record<string, ScalarKind> = {
  tinyint: INT, smallint: INT, mediumint: INT, int: INT, integer: INT, year: INT,
  bigint: BIGINT, serial: BIGINT,
  float: FLOAT, double: FLOAT, 'double precision': FLOAT, real: FLOAT,
  decimal: DECIMAL, numeric: DECIMAL, dec: DECIMAL, fixed: DECIMAL,
  bool: BOOLEAN, boolean: BOOLEAN,
  char: STRING, varchar: STRING, nchar: STRING, nvarchar: STRING, 'national char': STRING, 'national varchar': STRING,
  character: STRING, 'character varying': STRING, tinytext: STRING, text: STRING, mediumtext: STRING, longtext: STRING,
  set: STRING, uuid: STRING, inet4: STRING, inet6: STRING,
  date: DATETIME, datetime: DATETIME, timestamp: DATETIME, time: DATETIME,
  json: JSON_,
  binary: BYTES, varbinary: BYTES, tinyblob: BYTES, blob: BYTES, mediumblob: BYTES, longblob: BYTES, bit: BYTES,
}

const SQLITE: Record<string, ScalarKind> = {
  int: INT, integer: INT, tinyint: INT, smallint: INT, mediumint: INT, int2: INT,
  bigint: BIGINT, int8: BIGINT, 'unsigned big int': BIGINT,
  real: FLOAT, float: FLOAT, double: FLOAT, 'double precision': FLOAT,
  decimal: DECIMAL, numeric: DECIMAL,
  boolean: BOOLEAN, bool: BOOLEAN,
  text: STRING, uuid: STRING, citext: STRING, varchar: STRING, char: STRING, clob: STRING,
  date: DATETIME, datetime: DATETIME, timestamp: DATETIME, time: DATETIME, timestamptz: DATETIME,
  'timestamp with time zone': DATETIME, 'timestamp without time zone': DATETIME,
  json: JSON_, jsonb: JSON_,
  blob: BYTES, bytea: BYTES, binary: BYTES, varbinary: BYTES,
}

/**
 * Normalises a declared type: lower-cased, parameters `(…)` removed, whitespace collapsed.
 * `varchar(255)` -> `varchar`; `timestamp(3) with time zone` -> `timestamp with time zone`;
 * `int(10) unsigned zerofill` -> `int unsigned`.
 */
export function normalizeDataType(dataType: string): string {
  return dataType
    .toLowerCase()
    .replace(/\([^)]*\)/g, ' ')
    .replace(/\bzerofill\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
}

/**
 * Maps an engine's column type to the GraphQL scalar kind (see the table at the top of this file).
 *
 * @param dialect the engine.
 * @param dataType the type as declared or reported by the engine, any case, with parameters
 *   (`NVARCHAR(160)`, `numeric(10,2)`, `tinyint(1)`, `enum('a','b')`, `timestamp with time zone`).
 * @returns `{ scalar }`, plus `unknownType: true` when the type is not recognised (then `scalar` is
 *   `String`). Never throws. PostgreSQL enum types cannot be recognised from their name alone:
 *   `introspect()` marks them `Enum` itself.
 */
export function mapColumnType(dialect: Dialect, dataType: string): ColumnTypeMapping {
  const raw = dataType.toLowerCase().trim()
  const t = normalizeDataType(raw)
  switch (dialect) {
    case 'postgres': {
      if (t.endsWith('[]')) {
        // Arrays (any dimension) are lists of their element type; unknown, JSON and bytea elements
        // are read as text (`::text[]`).
        const e = PG[t.replace(/(\s*\[\s*\])+$/, '').trim()]
        return e && e !== JSON_ && e !== BYTES ? { scalar: e, list: true } : { scalar: STRING, list: true, unknownType: true }
      }
      const s = PG[t]
      return s ? { scalar: s } : { scalar: STRING, unknownType: true }
    }
    case 'mysql': {
      if (/^enum\s*\(/.test(raw)) return { scalar: 'Enum' }
      if (/^tinyint\s*\(\s*1\s*\)/.test(raw)) return { scalar: BOOLEAN }
      const base = t.replace(/\b(unsigned|signed)\b/g, '').replace(/\s+/g, ' ').trim()
      // INT UNSIGNED reaches 2^32-1 but is Int, as Prisma maps it: the same schema gives the same
      // GraphQL types on every engine; a stored value above 2^31-1 is refused when read (TRB_ERR_DB_VALUE).
      const s = MYSQL[base]
      return s ? { scalar: s } : { scalar: STRING, unknownType: true }
    }
    case 'sqlite': {
      if (t === '') return { scalar: STRING, unknownType: true }
      const s = SQLITE[t]
      if (s) return { scalar: s }
      // SQLite type affinity, sqlite.org/datatype3.html §3.1, in its order.
      if (t.includes('int')) return { scalar: INT }
      if (t.includes('char') || t.includes('clob') || t.includes('text')) return { scalar: STRING }
      if (t.includes('blob')) return { scalar: BYTES }
      if (t.includes('real') || t.includes('floa') || t.includes('doub')) return { scalar: FLOAT }
      if (/^(date|time)/.test(t)) return { scalar: DATETIME }
      return { scalar: STRING, unknownType: true }
    }
  }
}

/**
 * True for a MySQL/MariaDB `int unsigned` column: GraphQL Int (as Prisma maps it), whose values stop
 * at 2^31-1 while the column holds up to 2^32-1; a larger stored value is refused when read
 * (`TRB_ERR_DB_VALUE`). Smaller unsigned types fit in Int; `bigint unsigned` is BigInt.
 */
export function isUnsignedInt(f: { scalar: ScalarKind; dataType: string }): boolean {
  return f.scalar === 'Int' && /^int(eger)?\b/.test(f.dataType) && /\bunsigned\b/.test(f.dataType)
}

/** SQLite: TEXT affinity (sqlite.org/datatype3.html §3.1): no `INT`, and `CHAR`, `CLOB` or `TEXT` in the declared type. */
export function sqliteTextAffinity(dataType: string): boolean {
  const t = dataType.toLowerCase()
  return !t.includes('int') && (t.includes('char') || t.includes('clob') || t.includes('text'))
}
