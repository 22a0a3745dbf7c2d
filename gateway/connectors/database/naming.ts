/**
 * GraphQL names for SQL tables, columns and foreign keys. Pure and deterministic: the same
 * introspection document always gives the same names.
 *
 * ## Naming rules (copied to the README)
 *
 * **Models and types.** One model per table or view, named after the table in PascalCase: the name is
 * split on `_`, `-`, spaces and other non-alphanumeric characters, and each part gets an upper-case
 * first letter; the rest of each part is kept (`todo` → `Todo`, `media_type` → `MediaType`,
 * `MediaType` stays `MediaType`). A name that would start with a digit gets a leading `_`.
 *
 * **Scalar fields.** Column names in camelCase: the parts are joined as above and the leading run of
 * capitals is lower-cased (`album_id` → `albumId`, `AlbumId` → `albumId`, `createdAt` stays,
 * `ID` → `id`, `URLPath` → `urlPath`).
 *
 * **Collisions.** When two tables (or two columns of one table) give the same name, each of them whose
 * raw name differs from that name uses its raw name instead (invalid characters replaced by `_`); any
 * collision left gets a numeric suffix (`_2`, `_3`...) in introspection order. Field names `_count`
 * and names starting with `__` are reserved.
 *
 * **Relations.** Every foreign key gives one field on each side:
 * - many-to-one, on the table that holds the key: for a one-column key whose column ends in `Id`,
 *   `_id` or `ID`, the column's camelCase name without that suffix (`ArtistId` → `artist`,
 *   `support_rep_id` → `supportRep`); otherwise the referenced model in camelCase (`ReportsTo` →
 *   `employee`);
 * - one-to-many, on the referenced table: the referencing model in camelCase, plural (`albums`,
 *   `invoiceLines`). When the key's columns are the referencing table's primary key or one of its
 *   unique constraints, the relation is one-to-one and the name stays singular;
 * - when the referencing table has several keys to the same table, its one-to-many names get
 *   `By` + the PascalCase many-to-one name (`messagesBySender`, `messagesByRecipient`);
 * - a relation name that collides with a scalar field or an earlier relation of the same model gets
 *   `By` + the PascalCase of its key columns' camelCase names (`employeeByReportsTo`), then a numeric
 *   suffix if needed. Many-to-one relations are named first (in foreign-key order), then one-to-many
 *   relations (by referencing table, then foreign-key order).
 * - many-to-many shortcuts through a pure join table (compiler/registry.ts `addManyToMany`): the other
 *   model in camelCase, plural (`tags`); on a collision `By` + the join model (`tagsByPostTag`), then
 *   a numeric suffix. They are named after every foreign-key relation.
 *
 * **Root fields** follow Prisma: `findUniqueX`, `findFirstX`, `findManyX`, `aggregateX`, `groupByX`,
 * `createOneX`, `createManyX`, `updateOneX`, `updateManyX`, `upsertOneX`, `deleteOneX`, `deleteManyX`
 * (docs/architecture.md §4), and compound unique keys are written `a_b: { a, b }` with the field names.
 */

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/

function splitParts(raw: string): string[] {
  return raw.split(/[^0-9A-Za-z]+/).filter((p) => p.length > 0)
}

/** Makes any string a valid GraphQL name: invalid characters become `_`, a leading digit gets `_`. */
export function sanitizeName(raw: string): string {
  let s = raw.replace(/[^_0-9A-Za-z]/g, '_')
  if (s === '') s = '_'
  if (/^[0-9]/.test(s)) s = `_${s}`
  if (s.startsWith('__')) s = `x${s}`
  return s
}

/** True when `name` is a valid GraphQL name (`/^[_A-Za-z][_0-9A-Za-z]*$/`). */
export function isGraphQLName(name: string): boolean {
  return GRAPHQL_NAME.test(name)
}

/** `media_type` → `MediaType`, `MediaType` → `MediaType`, `todo` → `Todo`. */
export function pascalCase(raw: string): string {
  const parts = splitParts(raw)
  if (parts.length === 0) return sanitizeName(raw)
  const joined = parts.map((p) => p[0]!.toUpperCase() + p.slice(1)).join('')
  return /^[0-9]/.test(joined) ? `_${joined}` : joined
}

/** `album_id` → `albumId`, `AlbumId` → `albumId`, `createdAt` → `createdAt`, `ID` → `id`, `URLPath` → `urlPath`. */
export function camelCase(raw: string): string {
  const pascal = pascalCase(raw)
  if (pascal.startsWith('_')) return pascal
  const m = /^[A-Z]+/.exec(pascal)
  if (!m) return pascal
  const run = m[0]
  if (run.length === pascal.length) return pascal.toLowerCase()
  if (run.length === 1) return pascal[0]!.toLowerCase() + pascal.slice(1)
  // "URLPath": the last capital of the run starts the next word.
  const next = pascal[run.length]
  if (next !== undefined && /[a-z]/.test(next)) return run.slice(0, -1).toLowerCase() + pascal.slice(run.length - 1)
  return run.toLowerCase() + pascal.slice(run.length)
}

/** A simple English plural: `album` → `albums`, `category` → `categories`, `box` → `boxes`. */
export function plural(word: string): string {
  if (/[^aeiou]y$/i.test(word)) return `${word.slice(0, -1)}ies`
  if (/(s|x|z|ch|sh)$/i.test(word)) return `${word}es`
  return `${word}s`
}

/** Strips an `Id` / `_id` / `ID` suffix from a column name, or returns null when there is none. */
export function stripIdSuffix(column: string): string | null {
  const m = /^(.+?)[_-]?(Id|ID|id)$/.exec(column)
  if (!m || !m[1]) return null
  // "paid" would strip to "pa": only strip when the suffix is a separate word.
  if (column.endsWith('id') && !/[_-]id$/.test(column)) return null
  return m[1]
}

/**
 * Assigns unique names to raw items by the collision rule above.
 * @param raws the raw (SQL) names, in a deterministic order
 * @param convert the preferred conversion (pascalCase / camelCase)
 * @param taken names already used in the same scope
 * @returns the GraphQL names, position by position
 */
export function assignNames(raws: readonly string[], convert: (raw: string) => string, taken: ReadonlySet<string> = new Set()): string[] {
  const preferred = raws.map((r) => sanitizeName(convert(r)))
  const counts = new Map<string, number>()
  for (const p of preferred) counts.set(p, (counts.get(p) ?? 0) + 1)
  const firstPass = raws.map((raw, i) => {
    const p = preferred[i]!
    if ((counts.get(p)! > 1 || taken.has(p)) && raw !== p) return sanitizeName(raw)
    return p
  })
  const used = new Set<string>(taken)
  return firstPass.map((name) => {
    let n = name
    let k = 2
    while (used.has(n) || n === '_count') n = `${name}_${k++}`
    used.add(n)
    return n
  })
}

/** Picks `name`, or `name_2`, `name_3`... whichever is free in `used`; adds it to `used`. */
export function uniqueIn(used: Set<string>, name: string): string {
  let n = name
  let k = 2
  while (used.has(n)) n = `${name}_${k++}`
  used.add(n)
  return n
}
