/**
 * The result budget of one request: the database text a request may pull into the gateway before
 * it is parsed. `server.maxResponseBytes` bounds the body sent; without this budget, a document of
 * 30 aliases over large tables would still read and parse every result in full (hundreds of MB of
 * heap) before that last guard refused it. The HTTP layer puts a budget on each request's context
 * (`context.resultBudget`); database resolvers charge the JSON text each statement returns
 * (SQLite and MariaDB/MySQL return it as text; PostgreSQL rows arrive parsed and are measured only
 * by the final response guard; SQLite worker processes drop an oversized result before sending it,
 * see `maxChars` in sqlite-workers.ts), and the statement that overdraws it fails with 400
 * `TRB_ERR_GRAPHQL_LIMIT` at its path, before its text is parsed.
 */
import { GraphQLLimitError } from './errors.js'

/** Bytes (UTF-16 units of JSON text, a lower bound of UTF-8 bytes) a request may still read. */
export interface ResultBudget {
  /** The limit: `server.maxResponseBytes`. */
  readonly max: number
  /** Units charged so far. */
  used: number
}

/** A fresh budget of `max` units for one request. */
export function resultBudget(max: number): ResultBudget {
  return { max, used: 0 }
}

/**
 * Charges `units` to the budget of `context` (a resolver context carrying `resultBudget`; contexts
 * without one are not limited). Throws `GraphQLLimitError` (400 `TRB_ERR_GRAPHQL_LIMIT`) when the
 * request's results exceed the limit.
 */
export function chargeResult(context: unknown, units: number): void {
  const budget = (context as { resultBudget?: ResultBudget } | null | undefined)?.resultBudget
  if (!budget) return
  budget.used += units
  if (budget.used > budget.max) {
    throw new GraphQLLimitError(`The results of this request exceed ${budget.max} bytes (server.maxResponseBytes); ask for less`)
  }
}

/** What is left of the budget of `context` (undefined when it has none): the most a statement may return. */
export function resultRoom(context: unknown): number | undefined {
  const budget = (context as { resultBudget?: ResultBudget } | null | undefined)?.resultBudget
  return budget ? Math.max(0, budget.max - budget.used) : undefined
}

/** Total length of the JSON text rows of a statement (rows that arrive parsed count 0). */
export function textLength(rows: readonly unknown[]): number {
  let n = 0
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]
    if (typeof r === 'string') n += r.length
  }
  return n
}
