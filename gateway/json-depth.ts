/**
 * The depth of a JSON value, on the ground floor (docs/architecture.md §7) because both the
 * operations (`operations/compile.ts`: the depth of a stored operation's JSON variables) and the
 * HTTP layer (`http/limits.ts`: `graphql.maxInputDepth` on a request's variables) measure it.
 */

/**
 * Deepest nesting of objects and arrays in a JSON value (the variables of one request), walked
 * without recursion so that hostile nesting cannot overflow the stack. `{}` and `{ id: 1 }` have
 * depth 1. Stops counting once `limit` is exceeded.
 */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length) {
    const [v, d] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (d > max) max = d
    if (max > limit) return max
    for (const key in v as Record<string, unknown>) stack.push([(v as Record<string, unknown>)[key], d + 1])
  }
  return max
}
