/**
 * The plain-JSON introspection document of a SQL database. `introspect()` produces it (I/O);
 * `buildSchema()` consumes it (pure). It is cached as `generated/sources/<name>.introspection.json`.
 */

/** The SQL engines the database connector speaks. Chosen by the URL scheme: `sqlite:`, `postgres://`, `mysql://`. */
export type Dialect = 'sqlite' | 'postgres' | 'mysql'

/** The GraphQL scalar a column maps to. `Enum` columns name their enum in {@link ColumnInfo.enumName}. */
export type ScalarKind =
  | 'Int'
  | 'BigInt'
  | 'Float'
  | 'Decimal'
  | 'Boolean'
  | 'String'
  | 'DateTime'
  | 'JSON'
  | 'Bytes'
  | 'Enum'

/** One column. */
export interface ColumnInfo {
  /** The column's name in the database, unchanged. */
  name: string
  /** The engine's type as declared, lower-cased (`integer`, `varchar(255)`, `tinyint(1)`, `timestamp with time zone`). */
  dataType: string
  /** The GraphQL scalar this column maps to. */
  scalar: ScalarKind
  /** True when `dataType` was not recognised and the column fell back to `String` (a startup warning). */
  unknownType?: boolean
  /** For `scalar: 'Enum'`: the name of the enum in {@link DatabaseIntrospection.enums}. */
  enumName?: string
  /** True for a PostgreSQL array column (`text[]`, `integer[]`…): a list of `scalar` values. */
  isList?: boolean
  /** True when the column accepts NULL. */
  nullable: boolean
  /** The default expression as the engine reports it, or null when there is none. */
  default: string | null
  /** True for auto-increment / serial / identity / SQLite `INTEGER PRIMARY KEY` columns. */
  autoIncrement: boolean
  /**
   * True when only the database writes the column: a generated column (`GENERATED ALWAYS AS (…)`,
   * stored or virtual) or a PostgreSQL `GENERATED ALWAYS AS IDENTITY` column. Absent from create and
   * update inputs.
   */
  generated?: boolean
  /**
   * True when a row-level BEFORE INSERT trigger assigns the column (PostgreSQL `NEW.col :=` in a
   * PL/pgSQL function or `tsvector_update_trigger`; MySQL `SET NEW.col = …`), or the source's config
   * says so (`columns: { 'table.column': { filledByDatabase: true } }`). Optional in create inputs.
   */
  filledByTrigger?: boolean
  /**
   * SQLite DateTime columns: how the column stores its date-times, detected from its rows (or its
   * default, or a `date` type) or set in the source's config. A pattern of `YYYY MM DD HH mm ss SSS`
   * tokens with the stored separators and zone (`YYYY-MM-DD HH:mm:ss`, `YYYY-MM-DDTHH:mm:ss.SSSZ`,
   * `YYYY-MM-DD`), or `unixepoch` (integer seconds) / `unixepoch-ms` (integer milliseconds). Values
   * are written and compared in this format (so indexes serve comparisons). Absent: mixed or unknown.
   */
  dateTimeFormat?: string
  /**
   * The column's comment (PostgreSQL `COMMENT ON COLUMN`, MySQL/MariaDB `COMMENT '…'`; SQLite has
   * none), trimmed and cut to {@link MAX_COMMENT_LENGTH} characters. Absent when there is none. It
   * becomes the GraphQL field's `description`.
   */
  comment?: string
}

/** Longest table or column comment kept, in characters (UTF-16 code units); longer ones are cut and end with `…`. */
export const MAX_COMMENT_LENGTH = 1000

/** A foreign key from this table's `columns` to `referencedTable.referencedColumns`, position by position. */
export interface ForeignKeyInfo {
  /** Constraint name; SQLite has none, so `<table>_<columns joined by _>_fkey` is synthesised. */
  name: string
  columns: string[]
  referencedTable: string
  referencedColumns: string[]
  onDelete?: string
  onUpdate?: string
}

/** A unique constraint or unique index. */
export interface UniqueConstraintInfo {
  name: string
  columns: string[]
}

/** A table or a view. Views are read-only: no mutations are generated for them. */
export interface TableInfo {
  name: string
  kind: 'table' | 'view'
  /** Columns in declaration order. */
  columns: ColumnInfo[]
  /** Primary-key columns in key order; empty when the table (or view) has none. */
  primaryKey: string[]
  /** Unique constraints other than the primary key. */
  uniqueConstraints: UniqueConstraintInfo[]
  foreignKeys: ForeignKeyInfo[]
  /**
   * PostgreSQL: an insert into this table may land in another one (the table has an INSERT rewrite
   * rule, or inheritance children that rules or triggers route rows to). `INSERT … RETURNING` and
   * the engine's row count cannot be trusted there: keys are drawn from their sequences first, and
   * `createMany` counts the rows it sent.
   */
  insertsRedirected?: boolean
  /**
   * PostgreSQL: a foreign table (relkind `f`). Its columns' NOT NULL is declared, not enforced (the
   * remote server holds the rows), so a NOT NULL column may still read NULL there.
   */
  foreign?: boolean
  /**
   * The table's or view's comment (PostgreSQL `COMMENT ON TABLE/VIEW`, MySQL/MariaDB `COMMENT='…'`),
   * like {@link ColumnInfo.comment}. It becomes the object type's `description`.
   */
  comment?: string
  /**
   * Full-text indexes over this table's columns (absent: none). MySQL/MariaDB: its `FULLTEXT`
   * indexes. SQLite: an FTS5 table indexes itself (`fts5.key` null), and an external-content FTS5
   * table (`content='film'`) whose columns all exist here indexes this table through `fts5.key`,
   * the column its `content_rowid` names (`rowid` by default). PostgreSQL: none (every text column
   * is searchable through `to_tsvector`).
   */
  fullText?: FullTextIndexInfo[]
}

/** One full-text index (see {@link TableInfo.fullText}). */
export interface FullTextIndexInfo {
  /** The index's name (MySQL) or the FTS5 table's name (SQLite). */
  name: string
  /** The columns of this table it indexes, in index order. */
  columns: string[]
  /** SQLite: the FTS5 table and how its rows meet this table's. */
  fts5?: {
    /** The FTS5 virtual table. */
    table: string
    /** Every column of the FTS5 table in declaration order (`bm25()` weights are positional). */
    ftsColumns: string[]
    /** The column of this table equal to the FTS5 table's rowid; `rowid` for the FTS5 table itself. */
    key: string
  }
}

/** A database enum type (PostgreSQL `CREATE TYPE ... AS ENUM`, MySQL inline `enum(...)`). */
export interface EnumInfo {
  name: string
  values: string[]
}

/** One argument of a {@link FunctionInfo}. */
export interface FunctionArgInfo {
  /** The argument's name in the database (functions with an unnamed argument are skipped). */
  name: string
  /** The engine's type, lower-cased (`text`, `integer`, `integer[]`). */
  dataType: string
  scalar: ScalarKind
  enumName?: string
  isList?: boolean
  /** True when the function declares a default for it: the GraphQL argument is optional. */
  hasDefault: boolean
}

/**
 * A PostgreSQL function exposed as a root field (the source's `functions` option). Stable and
 * immutable functions become Query fields, volatile ones Mutation fields.
 */
export interface FunctionInfo {
  name: string
  /** `i` immutable, `s` stable, `v` volatile (pg_proc.provolatile). */
  volatility: 'i' | 's' | 'v'
  args: FunctionArgInfo[]
  /** True for `RETURNS SETOF …` / `RETURNS TABLE`: a list. */
  returnsSet: boolean
  /** A table or view of the document (`RETURNS post`, `RETURNS SETOF post`), or a scalar type. */
  returns: { kind: 'table'; table: string } | { kind: 'scalar'; dataType: string; scalar: ScalarKind; enumName?: string; isList?: boolean }
  /**
   * A computed field (PostGraphile's computed columns): the function's FIRST argument is the row
   * type of this table or view of the document (`film_title_upper(f film)`), its name `rowArg`. The
   * function becomes a field of that model, not a root field; `args` are the OTHER arguments.
   * Only stable and immutable functions (volatile ones are left out).
   */
  computedOn?: { table: string; rowArg: string }
}

/** The whole introspection document. Tables are sorted by name so that the document is stable. */
export interface DatabaseIntrospection {
  /** Format version of this document; bump when the shape changes. */
  version: 1
  dialect: Dialect
  /** PostgreSQL schema that was introspected (`public` by default); absent for other engines. */
  schema?: string
  tables: TableInfo[]
  enums: EnumInfo[]
  /** PostgreSQL functions, when the source asked for them (`functions` option), sorted by name. */
  functions?: FunctionInfo[]
}
