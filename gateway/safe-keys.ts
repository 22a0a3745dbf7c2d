/**
 * Defence against prototype pollution (CWE-1321). Every client-chosen key that becomes an object
 * key — query-string names and their `a[b][c]` segments, keys of JSON variables, path-param names —
 * passes through here first.
 *
 * `__proto__`, `constructor` and `prototype` are refused with a 400 `TRB_ERR_BAD_REQUEST`: no GraphQL
 * variable may use them as a query-string key, and JSON bodies are parsed with `secure-json-parse`,
 * which refuses `__proto__` and `constructor.prototype` at any depth (fastify does the same for bodies).
 */
import sjson from 'secure-json-parse'
import { BadRequestError } from './errors.js'

/** Keys that reach `Object.prototype` or a constructor when used as a property name. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype'])

/**
 * Throws when `key` is one of {@link FORBIDDEN_KEYS}.
 * @param where what the key is, for the message ("query-string key", "path parameter").
 * @throws BadRequestError (400 `TRB_ERR_BAD_REQUEST`).
 */
export function assertSafeKey(key: string, where: string): void {
  if (FORBIDDEN_KEYS.has(key)) throw new BadRequestError(`The ${where} "${key}" is not allowed`)
}

/**
 * `JSON.parse` that refuses `__proto__` keys and `constructor: { prototype }` at any depth.
 * @throws SyntaxError for malformed JSON, BadRequestError (400) for a forbidden key.
 */
export function parseJsonSafely(text: string): unknown {
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (err) {
    if (err instanceof SyntaxError && /forbidden prototype property/.test(err.message)) {
      throw new BadRequestError('JSON with a "__proto__" or "constructor.prototype" key is not allowed')
    }
    throw err
  }
}
