/**
 * Helpers shared by the per-engine introspection queries: stable sorting, name synthesis and the
 * final assembly of {@link TableInfo}s. Pure.
 */
import { MAX_COMMENT_LENGTH, type EnumInfo, type TableInfo, type UniqueConstraintInfo } from '../model.js'

/** Tables the gateway never exposes (SQLite internals, Knex's migration bookkeeping and the event-trigger outbox, gateway/events/). */
export const INTERNAL_TABLES: ReadonlySet<string> = new Set(['knex_migrations', 'knex_migrations_lock', 'tributary_event_log', 'tributary_event_dead_letter'])

/** True for a table the introspection skips: `sqlite_%` and {@link INTERNAL_TABLES}. */
export function isInternalTable(name: string): boolean {
  return INTERNAL_TABLES.has(name) || name.toLowerCase().startsWith('sqlite_')
}

/** Code-point comparison: the same order on every machine and locale. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** One table as the engine queries assemble it, before sorting and clean-up: the shape of {@link TableInfo}. */
export type RawTable = TableInfo

/**
 * A table or column comment as the document keeps it: trimmed, `undefined` when empty or absent, cut
 * to {@link MAX_COMMENT_LENGTH} characters (the last one replaced by `…`) when longer.
 */
export function normalizeComment(comment: string | null | undefined): string | undefined {
  const s = (comment ?? '').trim()
  if (s === '') return undefined
  return s.length > MAX_COMMENT_LENGTH ? `${s.slice(0, MAX_COMMENT_LENGTH - 1).trimEnd()}…` : s
}

/** Normalises a referential action to upper-case words (`NO ACTION`, `CASCADE`, `SET NULL`…). */
export function normalizeAction(action: string | null | undefined): string | undefined {
  if (action === null || action === undefined || action === '') return undefined
  return action.toUpperCase().replace(/_/g, ' ').trim()
}

/**
 * Finishes tables: drops unique constraints that repeat the primary key or another constraint's
 * column set, drops foreign keys to tables outside the document, sorts constraints and foreign keys
 * by name and tables by name.
 */
export function finishTables(tables: RawTable[]): TableInfo[] {
  const names = new Set(tables.map((t) => t.name))
  const out: TableInfo[] = []
  for (const t of tables) {
    const seen = new Set<string>()
    if (t.primaryKey.length > 0) seen.add(t.primaryKey.join('\u0000'))
    const uniques: UniqueConstraintInfo[] = []
    for (const u of [...t.uniqueConstraints].sort((a, b) => compareNames(a.name, b.name))) {
      if (u.columns.length === 0) continue
      const key = u.columns.join('\u0000')
      if (seen.has(key)) continue
      seen.add(key)
      uniques.push({ name: u.name, columns: [...u.columns] })
    }
    const fks = t.foreignKeys
      .filter((fk) => names.has(fk.referencedTable) && fk.columns.length > 0 && fk.columns.length === fk.referencedColumns.length)
      .sort((a, b) => compareNames(a.name, b.name))
    out.push({
      name: t.name,
      kind: t.kind,
      columns: t.columns,
      primaryKey: t.primaryKey,
      uniqueConstraints: uniques,
      foreignKeys: fks,
      ...(t.insertsRedirected ? { insertsRedirected: true } : {}),
      ...(t.foreign ? { foreign: true } : {}),
      ...(t.comment !== undefined ? { comment: t.comment } : {}),
      ...(t.fullText?.length ? { fullText: [...t.fullText].sort((a, b) => compareNames(a.name, b.name)) } : {}),
    })
  }
  return out.sort((a, b) => compareNames(a.name, b.name))
}

/** Sorts enums by name and drops duplicates (first wins). */
export function finishEnums(enums: EnumInfo[]): EnumInfo[] {
  const byName = new Map<string, EnumInfo>()
  for (const e of enums) if (!byName.has(e.name)) byName.set(e.name, e)
  return [...byName.values()].sort((a, b) => compareNames(a.name, b.name))
}

/** Groups rows by a key, keeping first-seen order. */
export function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const r of rows) {
    const k = key(r)
    const list = m.get(k)
    if (list) list.push(r)
    else m.set(k, [r])
  }
  return m
}
