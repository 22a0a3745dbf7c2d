/**
 * Full-text search: the `search` string filter and the `_relevance` order term, per engine.
 *
 * | Engine | `search` on one column | `_relevance { fields, search }` (higher: more relevant) |
 * | --- | --- | --- |
 * | PostgreSQL | `col @@ websearch_to_tsquery(?)` (tsvector), `to_tsvector(col) @@ …` (text) | `ts_rank(doc, websearch_to_tsquery(?))`, doc: the tsvector fields `\|\|` `to_tsvector(concat_ws(' ', text fields))` |
 * | MySQL/MariaDB | `MATCH(col) AGAINST(? IN BOOLEAN MODE)`: a `FULLTEXT` index on that column alone | `MATCH(fields) AGAINST(? IN BOOLEAN MODE)`: a `FULLTEXT` index on exactly those fields |
 * | SQLite | `key IN (SELECT f.rowid FROM fts AS f WHERE f.col MATCH ?)`: an FTS5 table indexing the column | `COALESCE((SELECT -bm25(fts, weights) FROM fts WHERE fts MATCH ? AND rowid = key), 0)`: weight 1 on the fields, 0 elsewhere |
 *
 * The search text is always a bound parameter, at most {@link MAX_SEARCH_CHARS} characters. A query
 * the engine cannot parse (FTS5 syntax, MySQL boolean-mode syntax) is `TRB_ERR_DB_INPUT`
 * (db-errors.ts `fullTextSyntaxError`). No import of read.ts: its callers pass bound parameters.
 */
import { DbInputError } from '../../../errors.js'
import type { Dialect } from '../model.js'
import type { SqlDialect } from './dialect.js'
import { sql, type Frag } from './frag.js'
import type { FullTextIndex, Model, ScalarField } from './registry.js'

/** Longest search text accepted, in characters (UTF-16 code units); longer is `TRB_ERR_DB_INPUT`. */
export const MAX_SEARCH_CHARS = 1000

/**
 * The run-time conversion of a search text: a string of at most {@link MAX_SEARCH_CHARS} characters.
 * @throws DbInputError when it is longer
 */
export function searchText(x: unknown): unknown {
  if (x === null || x === undefined) return null
  const s = String(x)
  if (s.length > MAX_SEARCH_CHARS) throw new DbInputError(`a full-text search text has at most ${MAX_SEARCH_CHARS} characters (got ${s.length})`)
  return s
}

/** What a `search` filter needs besides the compared expression: the field, its table alias, and a fresh-alias source. */
export interface SearchSite {
  field: ScalarField
  model: Model
  alias: string
  newAlias: () => string
}

/**
 * The condition of `search` on one column, `text` being the bound search text (see the table above).
 * @param lhs the column expression the filter compares (PostgreSQL)
 * @throws DbInputError on MySQL/SQLite when the column has no full-text index of its own
 */
export function searchCondition(d: SqlDialect, lhs: string, dataType: string, site: SearchSite | undefined, text: Frag): Frag {
  if (d.dialect === 'postgres') return sql`${dataType === 'tsvector' ? lhs : `to_tsvector(${lhs})`} @@ websearch_to_tsquery(${text})`
  const ix = site?.field.fullText
  if (!site || !ix) {
    const where = site ? `${site.model.name}.${site.field.name}` : 'this column'
    throw new DbInputError(
      d.dialect === 'mysql'
        ? `\`search\` needs a FULLTEXT index on ${where} alone (MATCH … AGAINST); none exists`
        : `\`search\` needs an FTS5 table indexing ${where}; none exists`,
    )
  }
  const colRef = `${site.alias}.${d.q(site.field.column)}`
  if (d.dialect === 'mysql') return sql`MATCH(${colRef}) AGAINST(${text} IN BOOLEAN MODE)`
  const fts = ix.fts5!
  const f = site.newAlias()
  const ftsCol = fts.columns[ix.fields.indexOf(site.field.name)]!
  return sql`${site.alias}.${d.q(fts.key)} IN (SELECT ${f}.rowid FROM ${d.q(fts.table)} AS ${f} WHERE ${f}.${d.q(ftsCol)} MATCH ${text})`
}

/**
 * The fields `_relevance` may name on a model: PostgreSQL every String field; MySQL/MariaDB and
 * SQLite the fields of its full-text indexes.
 */
export function relevanceFields(dialect: Dialect, model: Model): string[] {
  if (dialect === 'postgres') return model.fields.filter((f) => f.scalar === 'String' && !f.list).map((f) => f.name)
  const out = new Set<string>()
  for (const ix of model.fullText) for (const f of ix.fields) out.add(f)
  return model.fields.filter((f) => out.has(f.name)).map((f) => f.name)
}

/**
 * The relevance expression of `_relevance { fields, search }` on the row `alias` (see the table above).
 * @throws DbInputError when no index covers the fields (MySQL: an index on exactly them; SQLite: one FTS5 table with all of them)
 */
export function relevanceExpr(d: SqlDialect, model: Model, alias: string, fields: readonly string[], text: Frag, newAlias: () => string): Frag {
  const cols = fields.map((name) => {
    const f = model.fieldMap.get(name)
    if (!f) throw new DbInputError(`Unknown field ${model.name}.${name}`)
    return f
  })
  const ref = (f: ScalarField): string => `${alias}.${d.q(f.column)}`
  if (d.dialect === 'postgres') {
    const vectors = cols.filter((f) => f.dataType === 'tsvector').map(ref)
    const texts = cols.filter((f) => f.dataType !== 'tsvector').map(ref)
    if (texts.length) vectors.push(`to_tsvector(concat_ws(' ', ${texts.join(', ')}))`)
    return sql`ts_rank(${vectors.join(' || ')}, websearch_to_tsquery(${text}))`
  }
  const want = [...new Set(fields)].sort()
  const same = (ix: FullTextIndex): boolean => ix.fields.length === want.length && [...ix.fields].sort().every((f, i) => f === want[i])
  if (d.dialect === 'mysql') {
    if (!model.fullText.some(same)) {
      throw new DbInputError(`\`_relevance\` on MySQL/MariaDB needs a FULLTEXT index on exactly ${want.map((f) => `${model.name}.${f}`).join(', ')}; the indexes are: ${model.fullText.map((ix) => `(${ix.fields.join(', ')})`).join(', ') || 'none'}`)
    }
    return sql`MATCH(${cols.map(ref).join(', ')}) AGAINST(${text} IN BOOLEAN MODE)`
  }
  const ix = model.fullText.find((x) => x.fts5 && want.every((f) => x.fields.includes(f)))
  if (!ix) throw new DbInputError(`\`_relevance\` needs one FTS5 table indexing ${want.map((f) => `${model.name}.${f}`).join(', ')}; none does`)
  const fts = ix.fts5!
  const chosen = new Set(want.map((f) => fts.columns[ix.fields.indexOf(f)]!))
  const weights = fts.ftsColumns.map((c) => (chosen.has(c) ? '1.0' : '0.0')).join(', ')
  const f = newAlias()
  const hidden = `${f}.${d.q(fts.table)}`
  return sql`COALESCE((SELECT -bm25(${hidden}, ${weights}) FROM ${d.q(fts.table)} AS ${f} WHERE ${hidden} MATCH ${text} AND ${f}.rowid = ${alias}.${d.q(fts.key)}), 0)`
}
