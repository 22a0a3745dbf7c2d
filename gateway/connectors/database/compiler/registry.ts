/**
 * The model registry: the introspection document turned into GraphQL-named models, fields and
 * relations, with their SQL names. Built once per schema by `buildSchema`; the compiler and the
 * resolvers use it through closures, never through public type names.
 */
import type { ColumnInfo, DatabaseIntrospection, Dialect, ScalarKind, TableInfo } from '../model.js'
import { DEFAULT_MAX_TAKE } from './input-limits.js'
import { assignNames, camelCase, pascalCase, plural, stripIdSuffix, uniqueIn } from '../naming.js'

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
  /** The foreign key's constraint name. */
  foreignKey: string
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
}

function scaleOf(col: ColumnInfo): number | undefined {
  const m = /\(\s*\d+\s*,\s*(\d+)\s*\)/.exec(col.dataType)
  return m ? Number(m[1]) : undefined
}

/**
 * Builds the registry from an introspection document, applying the naming rules of naming.ts.
 * @param maxTake largest `|take|` of any list (default {@link DEFAULT_MAX_TAKE})
 * @throws Error when a foreign key names a table or column that is not in the document.
 */
export function buildRegistry(doc: DatabaseIntrospection, maxTake = DEFAULT_MAX_TAKE): Registry {
  const tables = doc.tables
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
    }
    models.set(model.name, model)
    byTable.set(t.name, model)
  })
  addRelations(tables, byTable)
  return { dialect: doc.dialect, ...(doc.schema ? { schema: doc.schema } : {}), models, enums, maxTake }
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
