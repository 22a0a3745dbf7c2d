/**
 * The model registry: the introspection document turned into GraphQL-named models, fields and
 * relations, with their SQL names. Built once per schema by `buildSchema`; the compiler and the
 * resolvers use it through closures, never through public type names.
 */
import type { RowFilter } from './row-filter.js'
import type { ColumnInfo, DatabaseIntrospection, Dialect, FunctionInfo, ScalarKind, TableInfo } from '../model.js'
import { DEFAULT_MAX_TAKE } from './input-limits.js'
import { assignNames, camelCase, pascalCase, plural, sanitizeName, stripIdSuffix, uniqueIn } from '../naming.js'

/** One scalar field: a column. */
export interface ScalarField {
  /** GraphQL field name. */
  name: string
  /** SQL column name. */
  column: string
  scalar: ScalarKind
  /** GraphQL enum model name (for `scalar: 'Enum'`). */
  enumName?: string
  nullable: boolean
  /** True when the column has a default, is auto-increment or is filled by a trigger: optional on create. */
  hasDefault: boolean
  /** True when only the database writes the column (generated, identity ALWAYS): absent from create and update inputs. */
  generated: boolean
  autoIncrement: boolean
  /** Declared type, lower-cased. */
  dataType: string
  /** Decimal scale from `numeric(p,s)`, when declared. */
  scale?: number
  /** SQLite DateTime: the stored format (`ColumnInfo.dateTimeFormat`), when known. */
  dateTimeFormat?: string
  /** True for a PostgreSQL array column: a list of `scalar`. */
  list?: boolean
  /**
   * PostgreSQL: the column's own `nextval(…)` default, as the catalog prints it, for a key drawn
   * before a redirected insert (a sequence need not be `OWNED BY` its column, as Sakila's is not).
   */
  nextvalDefault?: string
  /** The column's comment (`ColumnInfo.comment`): the field's GraphQL `description`. */
  comment?: string
  /**
   * MySQL/MariaDB and SQLite: the full-text index `search` uses on this column alone (a one-column
   * `FULLTEXT` index; an FTS5 table that indexes the column). Absent: `search` is refused there.
   * PostgreSQL searches every text column and does not set it.
   */
  fullText?: FullTextIndex
}

/** A full-text index of a model (`TableInfo.fullText`), with GraphQL field names. */
export interface FullTextIndex {
  name: string
  /** The model's fields it indexes, in index order. */
  fields: string[]
  /** SQLite: the FTS5 table, its columns in order, and the column of the model its rowid stands for (`rowid`: the table's own). */
  fts5?: { table: string; ftsColumns: string[]; key: string; columns: string[] }
}

/** One relation field. `fromFields` are on this model, `toFields` on the target; joined position by position. */
export interface Relation {
  name: string
  /** `one`: object field (many-to-one or one-to-one back side); `many`: list field. */
  kind: 'one' | 'many'
  target: string
  /** Field names on this model. */
  fromFields: string[]
  /** Field names on the target model. */
  toFields: string[]
  /** True when this model holds the foreign key. */
  holdsKey: boolean
  /** For `one`: true when the related row may be missing. */
  nullable: boolean
  /** The foreign key's constraint name (for a many-to-many shortcut: the join table's name). */
  foreignKey: string
  /**
   * Many-to-many shortcut through a pure join table: `fromFields` (this model) are referenced by the
   * join table's `sourceColumns`, `toFields` (the target) by its `targetColumns`, position by position.
   */
  via?: { table: string; sourceColumns: string[]; targetColumns: string[] }
}

/** A unique key: the primary key or a unique constraint. `name` is the WhereUniqueInput field. */
export interface UniqueKey {
  name: string
  fields: string[]
  /** SQL constraint name (`PRIMARY` for the primary key). */
  constraint: string
}

/** One table or view. */
export interface Model {
  name: string
  table: string
  kind: 'table' | 'view'
  fields: ScalarField[]
  fieldMap: Map<string, ScalarField>
  byColumn: Map<string, ScalarField>
  relations: Map<string, Relation>
  /** Primary key field names; empty when none. */
  primaryKey: string[]
  /** Primary key first, then unique constraints. */
  uniqueKeys: UniqueKey[]
  /** Fields that identify a row: the primary key, else the first unique key whose fields are all non-null, else []. */
  identity: string[]
  /** PostgreSQL: inserts may land in another table (see `TableInfo.insertsRedirected`). */
  insertsRedirected: boolean
  /** PostgreSQL: a foreign table, whose NOT NULL columns are not enforced (`TableInfo.foreign`). */
  foreign?: boolean
  /** The table's or view's comment (`TableInfo.comment`): leads the object type's GraphQL `description`. */
  comment?: string
  /** Full-text indexes (MySQL/MariaDB `FULLTEXT`, SQLite FTS5); empty on PostgreSQL. */
  fullText: FullTextIndex[]
  /**
   * PostgreSQL computed fields (functions whose first argument is this model's row type,
   * `FunctionInfo.computedOn`), by GraphQL field name. Absent: none.
   */
  computed?: Map<string, FunctionModel>
}

/** A function argument with its GraphQL name. */
export interface FunctionArg {
  name: string
  /** SQL argument name. */
  arg: string
  scalar: ScalarKind
  enumName?: string
  list?: boolean
  dataType: string
  /** Optional in GraphQL: the function declares a default. */
  optional: boolean
}

/** A database function exposed as a root field (PostgreSQL, `functions` option). */
export interface FunctionModel {
  /** Root field name: the function name in camelCase. */
  name: string
  /** SQL function name. */
  fn: string
  /** `query` for stable and immutable functions, `mutation` for volatile ones. */
  operation: 'query' | 'mutation'
  args: FunctionArg[]
  returnsSet: boolean
  /** A model (its table or view's row type), or a scalar. */
  returns: { kind: 'model'; model: string } | { kind: 'scalar'; scalar: ScalarKind; enumName?: string; list?: boolean; dataType: string }
  /** A computed field (`Model.computed`): the model it is a field of; the row is passed first, positionally. */
  computedOn?: string
}

/** A relation declared in the source's config (`relations`), for views and databases without foreign keys. */
export interface ConfiguredRelation {
  /** `Model.field` of the side that holds the key (many-to-one), GraphQL names. */
  from: string
  /** `Model.field` of the referenced side (usually a unique key), GraphQL names. */
  to: string
}

/** Keys and relations the source's config adds to the introspected ones (`database({ uniqueKeys, relations })`). */
export interface RegistryOverrides {
  /** Unique keys by model name, each a list of field names (GraphQL names): views get `findUnique` with them. */
  uniqueKeys?: Record<string, readonly (readonly string[])[]>
  relations?: readonly ConfiguredRelation[]
}

/** A database enum with GraphQL value names. */
export interface EnumModel {
  name: string
  /** GraphQL value name → database value. */
  values: Map<string, string>
}

/** The whole registry. */
export interface Registry {
  dialect: Dialect
  /** PostgreSQL schema to qualify table names with, if any. */
  schema?: string
  models: Map<string, Model>
  enums: Map<string, EnumModel>
  /** Largest `|take|` of any list of this source (`database({ maxTake })`); see compiler/input-limits.ts. */
  maxTake: number
  /** Functions exposed as root fields, by root field name. */
  functions: Map<string, FunctionModel>
  /** Row filters by model name (config `permissions.<Type>.filter`, row-filter.ts); installed after the schema is built. */
  rowFilters: Map<string, RowFilter>
}

function scaleOf(col: ColumnInfo): number | undefined {
  const m = /\(\s*\d+\s*,\s*(\d+)\s*\)/.exec(col.dataType)
  return m ? Number(m[1]) : undefined
}

/**
 * Builds the registry from an introspection document, applying the naming rules of naming.ts.
 * @param maxTake largest `|take|` of any list (default {@link DEFAULT_MAX_TAKE})
 * @param overrides unique keys and relations from the source's config
 * @throws Error when a foreign key names a table or column that is not in the document, or when
 *   `overrides` names a model or field that does not exist (the message names it and lists the choices).
 */
export function buildRegistry(doc: DatabaseIntrospection, maxTake = DEFAULT_MAX_TAKE, overrides: RegistryOverrides = {}): Registry {
  // Copies: configured keys and relations are added to them.
  const tables: TableInfo[] = doc.tables.map((t) => ({ ...t, uniqueConstraints: [...t.uniqueConstraints], foreignKeys: [...t.foreignKeys] }))
  const modelNames = assignNames(tables.map((t) => t.name), pascalCase)
  const enumNames = assignNames(doc.enums.map((e) => e.name), pascalCase, new Set(modelNames))
  const enums = new Map<string, EnumModel>()
  const enumByRaw = new Map<string, string>()
  doc.enums.forEach((e, i) => {
    const valueNames = assignNames(e.values, (v) => v, new Set(['true', 'false', 'null']))
    enums.set(enumNames[i]!, { name: enumNames[i]!, values: new Map(e.values.map((v, k) => [valueNames[k]!, v])) })
    enumByRaw.set(e.name, enumNames[i]!)
  })
  const models = new Map<string, Model>()
  const byTable = new Map<string, Model>()
  applyOverrides(tables, modelNames, overrides)
  tables.forEach((t, i) => {
    const names = assignNames(t.columns.map((c) => c.name), camelCase)
    const fields: ScalarField[] = t.columns.map((c, k) => ({
      name: names[k]!,
      column: c.name,
      scalar: c.scalar === 'Enum' && !(c.enumName && enumByRaw.has(c.enumName)) ? 'String' : c.scalar,
      ...(c.scalar === 'Enum' && c.enumName && enumByRaw.has(c.enumName) ? { enumName: enumByRaw.get(c.enumName)! } : {}),
      nullable: c.nullable,
      hasDefault: c.default !== null || c.autoIncrement || c.filledByTrigger === true,
      generated: c.generated === true,
      autoIncrement: c.autoIncrement,
      dataType: c.dataType,
      ...(scaleOf(c) !== undefined ? { scale: scaleOf(c)! } : {}),
      ...(c.dateTimeFormat && doc.dialect === 'sqlite' && c.scalar === 'DateTime' ? { dateTimeFormat: c.dateTimeFormat } : {}),
      ...(c.isList ? { list: true } : {}),
      ...(doc.dialect === 'postgres' && c.default && /^nextval\(/i.test(c.default) ? { nextvalDefault: c.default } : {}),
      ...(c.comment ? { comment: c.comment } : {}),
    }))
    const byColumn = new Map(fields.map((f) => [f.column, f]))
    const col = (c: string): string => {
      const f = byColumn.get(c)
      if (!f) throw new Error(`table ${t.name} has no column ${c}`)
      return f.name
    }
    const primaryKey = t.primaryKey.map(col)
    const uniqueKeys: UniqueKey[] = []
    const keyNames = new Set<string>()
    const keyName = (fs: string[]): string => fs.join('_')
    if (primaryKey.length > 0) {
      uniqueKeys.push({ name: keyName(primaryKey), fields: primaryKey, constraint: 'PRIMARY' })
      keyNames.add(keyName(primaryKey))
    }
    for (const u of t.uniqueConstraints) {
      const fs = u.columns.map(col)
      const n = keyName(fs)
      if (keyNames.has(n)) continue
      keyNames.add(n)
      uniqueKeys.push({ name: n, fields: fs, constraint: u.name })
    }
    const fullText: FullTextIndex[] = (t.fullText ?? [])
      .filter((x) => x.columns.every((c) => byColumn.has(c)))
      .map((x) => ({
        name: x.name,
        fields: x.columns.map(col),
        ...(x.fts5 ? { fts5: { table: x.fts5.table, ftsColumns: x.fts5.ftsColumns, key: x.fts5.key, columns: x.columns } } : {}),
      }))
    for (const ix of fullText) {
      // MySQL's MATCH(col) needs an index on exactly that column; an FTS5 table matches any of its columns.
      const single = ix.fts5 ? ix.fields : ix.fields.length === 1 ? ix.fields : []
      for (const name of single) {
        const f = fields.find((x) => x.name === name)!
        if (f.scalar === 'String' && !f.fullText) f.fullText = ix
      }
    }
    const fieldMap = new Map(fields.map((f) => [f.name, f]))
    const identity = primaryKey.length > 0 ? primaryKey : (uniqueKeys.find((u) => u.fields.every((f) => !fieldMap.get(f)!.nullable))?.fields ?? [])
    const model: Model = {
      name: modelNames[i]!,
      table: t.name,
      kind: t.kind,
      fields,
      fieldMap,
      byColumn,
      relations: new Map(),
      primaryKey,
      uniqueKeys,
      identity,
      insertsRedirected: t.insertsRedirected === true,
      ...(t.foreign ? { foreign: true } : {}),
      ...(t.comment ? { comment: t.comment } : {}),
      fullText,
    }
    models.set(model.name, model)
    byTable.set(t.name, model)
  })
  addRelations(tables, byTable)
  addManyToMany(doc.tables, byTable)
  const functions = buildFunctions(doc.functions ?? [], byTable, enumByRaw, models)
  return { dialect: doc.dialect, ...(doc.schema ? { schema: doc.schema } : {}), models, enums, maxTake, functions, rowFilters: new Map() }
}

/**
 * Adds the config's unique keys (as unique constraints named `config_<fields>`) and relations (as
 * foreign keys named `config_<from>_<to>`) to the table copies, translating GraphQL model and field
 * names to tables and columns.
 * @throws Error naming the unknown model or field and the existing ones
 */
function applyOverrides(tables: TableInfo[], modelNames: string[], o: RegistryOverrides): void {
  if (!o.uniqueKeys && !o.relations) return
  const tableOf = (model: string, what: string): [TableInfo, string[]] => {
    const i = modelNames.indexOf(model)
    if (i < 0) throw new Error(`${what}: no model ${model} (models: ${modelNames.join(', ')})`)
    const t = tables[i]!
    return [t, assignNames(t.columns.map((c) => c.name), camelCase)]
  }
  const columnOf = (model: string, field: string, what: string): [TableInfo, string] => {
    const [t, names] = tableOf(model, what)
    const k = names.indexOf(field)
    if (k < 0) throw new Error(`${what}: no field ${model}.${field} (fields: ${names.join(', ')})`)
    return [t, t.columns[k]!.name]
  }
  for (const [model, keys] of Object.entries(o.uniqueKeys ?? {})) {
    for (const key of keys) {
      if (key.length === 0) throw new Error(`uniqueKeys.${model}: a key needs at least one field`)
      const cols = key.map((f) => columnOf(model, f, `uniqueKeys.${model}`)[1])
      const t = tableOf(model, 'uniqueKeys')[0]
      if (t.primaryKey.length === 0 && t.kind === 'view') {
        // A view's first declared key identifies its rows (the order tie-breaker), as a primary key
        // would: the config's author vouches for it (SQLite reports every view column nullable).
        t.primaryKey = cols
      } else t.uniqueConstraints.push({ name: `config_${cols.join('_')}`, columns: cols })
    }
  }
  for (const [i, r] of (o.relations ?? []).entries()) {
    const what = `relations[${i}]`
    const split = (s: string, side: string): [string, string] => {
      const m = /^([^.]+)\.([^.]+)$/.exec(s)
      if (!m) throw new Error(`${what}.${side}: "${s}" is not Model.field`)
      return [m[1]!, m[2]!]
    }
    const [fm, ff] = split(r.from, 'from')
    const [tm, tf] = split(r.to, 'to')
    const [ft, fc] = columnOf(fm, ff, `${what}.from`)
    const [tt, tc] = columnOf(tm, tf, `${what}.to`)
    ft.foreignKeys.push({ name: `config_${ft.name}_${fc}_${tt.name}_${tc}`, columns: [fc], referencedTable: tt.name, referencedColumns: [tc] })
  }
}

/**
 * Many-to-many shortcuts. A pure join table — exactly two foreign keys to two different tables, a
 * primary key made of exactly their columns, and no other columns but date-times — adds a list field
 * on each side: the other model in camelCase, plural (`post.tags`, `tag.posts`); on a collision
 * `By<JoinModel>` is appended, then a number. The join table keeps its own model and relations.
 */
function addManyToMany(tables: readonly TableInfo[], byTable: Map<string, Model>): void {
  for (const t of tables) {
    if (t.kind !== 'table' || t.foreignKeys.length !== 2) continue
    const [a, b] = t.foreignKeys as [TableInfo['foreignKeys'][0], TableInfo['foreignKeys'][0]]
    if (a.referencedTable === b.referencedTable) continue
    const keyCols = [...a.columns, ...b.columns]
    if (new Set(keyCols).size !== keyCols.length || t.primaryKey.length !== keyCols.length || !t.primaryKey.every((c) => keyCols.includes(c))) continue
    if (!t.columns.every((c) => keyCols.includes(c.name) || c.scalar === 'DateTime')) continue
    const join = byTable.get(t.name)!
    const ma = byTable.get(a.referencedTable)
    const mb = byTable.get(b.referencedTable)
    if (!ma || !mb) continue
    const fieldsOf = (m: Model, cols: string[]): string[] => cols.map((c) => m.byColumn.get(c)!.name)
    const add = (from: Model, fromFk: typeof a, to: Model, toFk: typeof a): void => {
      const used = new Set([...from.fields.map((f) => f.name), ...from.relations.keys(), '_count'])
      const base = plural(to.name[0]!.toLowerCase() + to.name.slice(1))
      const name = uniqueIn(used, used.has(base) ? `${base}By${join.name}` : base)
      from.relations.set(name, {
        name,
        kind: 'many',
        target: to.name,
        fromFields: fieldsOf(from, fromFk.referencedColumns),
        toFields: fieldsOf(to, toFk.referencedColumns),
        holdsKey: false,
        nullable: true,
        foreignKey: t.name,
        via: { table: t.name, sourceColumns: fromFk.columns, targetColumns: toFk.columns },
      })
    }
    add(ma, a, mb, b)
    add(mb, b, ma, a)
  }
}

/**
 * The GraphQL name of a computed field of `m` (PostGraphile's rule): the function's name without the
 * `<table>_` prefix, in camelCase (`film_title_upper` on `film` → `titleUpper`); the whole name in
 * camelCase when there is no such prefix or when the short name is already a column, a relation,
 * `_count` or an earlier computed field of the model (`filmTitle` for `film_title` beside a column
 * `title`); `_2`, `_3`… when even that is taken.
 */
function computedName(m: Model, fn: string): string {
  const used = new Set<string>([...m.fields.map((f) => f.name), ...m.relations.keys(), '_count', ...(m.computed?.keys() ?? [])])
  const prefix = `${m.table}_`
  const short = fn.startsWith(prefix) && fn.length > prefix.length ? sanitizeName(camelCase(fn.slice(prefix.length))) : null
  if (short && !used.has(short)) return short
  return uniqueIn(used, sanitizeName(camelCase(fn)))
}

/** Names the exposed functions (camelCase, unique among themselves) and resolves their return models and enums. */
function buildFunctions(fns: readonly FunctionInfo[], byTable: Map<string, Model>, enumByRaw: Map<string, string>, models: Map<string, Model>): Map<string, FunctionModel> {
  const out = new Map<string, FunctionModel>()
  const taken = new Set<string>(['queryRaw', 'executeRaw'])
  for (const m of models.values()) {
    for (const p of ['findUnique', 'findFirst', 'findMany', 'aggregate', 'groupBy', 'createOne', 'createMany', 'updateOne', 'updateMany', 'upsertOne', 'deleteOne', 'deleteMany']) taken.add(`${p}${m.name}`)
  }
  const roots = fns.filter((f) => !f.computedOn)
  const names = assignNames(roots.map((f) => f.name), camelCase, taken)
  const rootName = new Map(roots.map((f, i) => [f, names[i]!]))
  fns.forEach((f) => {
    const argNames = assignNames(f.args.map((a) => a.name), camelCase)
    const scalarOf = (s: ScalarKind, e: string | undefined): { scalar: ScalarKind; enumName?: string } =>
      s === 'Enum' ? (e && enumByRaw.has(e) ? { scalar: 'Enum', enumName: enumByRaw.get(e)! } : { scalar: 'String' }) : { scalar: s }
    const args: FunctionArg[] = f.args.map((a, k) => ({
      name: argNames[k]!,
      arg: a.name,
      ...scalarOf(a.scalar, a.enumName),
      ...(a.isList ? { list: true } : {}),
      dataType: a.dataType,
      optional: a.hasDefault,
    }))
    let returns: FunctionModel['returns']
    if (f.returns.kind === 'table') {
      const m = byTable.get(f.returns.table)
      if (!m) return
      returns = { kind: 'model', model: m.name }
    } else {
      returns = { kind: 'scalar', ...scalarOf(f.returns.scalar, f.returns.enumName), ...(f.returns.isList ? { list: true } : {}), dataType: f.returns.dataType }
    }
    if (f.computedOn) {
      const on = byTable.get(f.computedOn.table)
      if (!on) return
      const name = computedName(on, f.name)
      ;(on.computed ??= new Map()).set(name, { name, fn: f.name, operation: 'query', args, returnsSet: f.returnsSet, returns, computedOn: on.name })
      return
    }
    const name = rootName.get(f)!
    out.set(name, { name, fn: f.name, operation: f.volatility === 'v' ? 'mutation' : 'query', args, returnsSet: f.returnsSet, returns })
  })
  return out
}

function isUniqueSet(t: TableInfo, columns: string[]): boolean {
  const same = (a: string[]): boolean => a.length === columns.length && a.every((c) => columns.includes(c))
  return same(t.primaryKey) || t.uniqueConstraints.some((u) => same(u.columns))
}

function addRelations(tables: TableInfo[], byTable: Map<string, Model>): void {
  const used = new Map<string, Set<string>>()
  for (const m of byTable.values()) used.set(m.name, new Set([...m.fields.map((f) => f.name), '_count']))
  const fieldNamesOf = (m: Model, cols: string[]): string[] => cols.map((c) => {
    const f = m.byColumn.get(c)
    if (!f) throw new Error(`table ${m.table} has no column ${c}`)
    return f.name
  })
  const pascalFields = (fs: string[]): string => fs.map((f) => f[0]!.toUpperCase() + f.slice(1)).join('')
  const forwardNames = new Map<string, string>()
  // Many-to-one, in table then FK order.
  for (const t of tables) {
    const m = byTable.get(t.name)!
    const u = used.get(m.name)!
    for (const fk of t.foreignKeys) {
      const target = byTable.get(fk.referencedTable)
      if (!target) continue
      const fromFields = fieldNamesOf(m, fk.columns)
      const toFields = fieldNamesOf(target, fk.referencedColumns)
      let base: string
      const stripped = fk.columns.length === 1 ? stripIdSuffix(fk.columns[0]!) : null
      if (stripped) base = camelCase(stripped)
      else base = target.name[0]!.toLowerCase() + target.name.slice(1)
      let name = base
      if (u.has(name)) name = `${base}By${pascalFields(fromFields)}`
      name = uniqueIn(u, name)
      forwardNames.set(`${t.name}\u0000${fk.name}`, name)
      m.relations.set(name, {
        name,
        kind: 'one',
        target: target.name,
        fromFields,
        toFields,
        holdsKey: true,
        nullable: fk.columns.some((c) => m.byColumn.get(c)!.nullable),
        foreignKey: fk.name,
      })
    }
  }
  // One-to-many (or one-to-one), on the referenced side.
  for (const t of tables) {
    const m = byTable.get(t.name)!
    const counts = new Map<string, number>()
    for (const fk of t.foreignKeys) counts.set(fk.referencedTable, (counts.get(fk.referencedTable) ?? 0) + 1)
    for (const fk of t.foreignKeys) {
      const target = byTable.get(fk.referencedTable)
      if (!target) continue
      const u = used.get(target.name)!
      const oneToOne = isUniqueSet(t, fk.columns)
      const single = m.name[0]!.toLowerCase() + m.name.slice(1)
      const base = oneToOne ? single : plural(single)
      const fwd = forwardNames.get(`${t.name}\u0000${fk.name}`)!
      let name = base
      if (counts.get(fk.referencedTable)! > 1) name = `${base}By${fwd[0]!.toUpperCase()}${fwd.slice(1)}`
      if (u.has(name)) name = `${base}By${pascalFields(fieldNamesOf(m, fk.columns))}`
      name = uniqueIn(u, name)
      target.relations.set(name, {
        name,
        kind: oneToOne ? 'one' : 'many',
        target: m.name,
        fromFields: fieldNamesOf(target, fk.referencedColumns),
        toFields: fieldNamesOf(m, fk.columns),
        holdsKey: false,
        nullable: true,
        foreignKey: fk.name,
      })
    }
  }
}
