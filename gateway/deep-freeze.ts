/**
 * Deep freezing of configuration and of values shared between requests (the resolved config;
 * the variables `/operations/*` remembers per query string before fastify).
 */

/**
 * Freezes `value` and, recursively, the arrays and plain objects (prototype `Object.prototype` or
 * null) it holds; functions and class instances (resolvers, migrations, Buffers, Dates) are left as
 * they are. Already frozen values are not walked again.
 * @returns `value` itself.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value as Record<string, unknown>)) {
      if (v !== null && typeof v === 'object' && (Array.isArray(v) || isPlain(v))) deepFreeze(v)
    }
  }
  return value
}

function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown
  return proto === Object.prototype || proto === null
}
