/**
 * Bounds on what a client may ask of a database source (README "Security and limits"): the largest
 * `take`, a non-negative `skip`, the number of values bound to one statement, and no NUL character in
 * strings sent to PostgreSQL (which cannot store or compare it). Each refusal is a `DbInputError`
 * (400 `TRB_ERR_DB_INPUT`) naming the limit, raised while the statement is compiled (literals, list
 * lengths) or while its parameters are bound (variables), never by the engine.
 */
import { DbInputError } from '../../../errors.js'
import type { Dialect } from '../model.js'

/** Default largest `|take|` of one list (per source: `database({ maxTake })`). */
export const DEFAULT_MAX_TAKE = 1000

/**
 * Most values bound to one statement, per engine: SQLite's `SQLITE_MAX_VARIABLE_NUMBER` (32766 since
 * 3.32), and the 16-bit parameter count of the PostgreSQL and MySQL wire protocols (65535).
 */
export const MAX_BOUND_VALUES: Readonly<Record<Dialect, number>> = { sqlite: 32766, postgres: 65535, mysql: 65535 }

/** Largest number of terms joined flat by one AND/OR before they are grouped (SQLite refuses expression trees deeper than 1000). */
export const MAX_FLAT_TERMS = 64

/**
 * Returns the run-time check of a `take` value: an integer whose absolute value is at most `maxTake`.
 * @throws DbInputError when `|take| > maxTake`
 */
export function takeCheck(maxTake: number): (x: unknown) => unknown {
  return (x) => {
    if (typeof x === 'number' && Math.abs(x) > maxTake) throw new DbInputError(`take ${x} is larger than the maximum of ${maxTake} (maxTake); page with skip or cursor`)
    return x
  }
}

/**
 * Checks a `skip` value: null/undefined become 0; negative values are refused.
 * @throws DbInputError when `skip < 0`
 */
export function skipCheck(x: unknown): unknown {
  if (typeof x === 'number' && x < 0) throw new DbInputError(`skip must not be negative (got ${x})`)
  return x ?? 0
}

/**
 * Refuses a string holding U+0000 (PostgreSQL text cannot contain it).
 * @throws DbInputError
 */
export function refuseNul(s: string): void {
  if (s.includes('\u0000')) throw new DbInputError('strings must not contain the NUL character (U+0000) on PostgreSQL')
}

/**
 * Refuses a statement with more bound values than the engine accepts (long `in` lists, wide `AND`/`OR`).
 * @throws DbInputError naming the count and the maximum
 */
export function checkBoundValues(dialect: Dialect, count: number): void {
  const max = MAX_BOUND_VALUES[dialect]
  if (count > max) throw new DbInputError(`the arguments need ${count} bound values; ${dialect === 'mysql' ? 'MySQL' : dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} accepts at most ${max} in one statement (shorten in/notIn lists or AND/OR)`)
}

/**
 * Default most nested writes of one request (items of the relation inputs of `createOne`,
 * `updateOne`, `upsertOne`, and the rows `set`/`updateMany`/`deleteMany` change), on one database
 * source; per source: `database({ maxNestedWrites })`.
 */
export const DEFAULT_MAX_NESTED_WRITES = 100

/** Deepest chain of nested writes: a relation input inside a nested create inside a relation input… (the root row is level 0). */
export const MAX_NESTED_WRITE_DEPTH = 5
