/**
 * Request log lines carry the request id (`reqId`, fastify's) and, while tracing runs, `traceId` and
 * `spanId` (the pino mixin of `tracing.ts`).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ChildLoggerOptions } from 'pino'

/**
 * A request's logger: `parent.child(bindings)` (bindings `{ reqId }`), made on its first use. Most
 * requests log nothing, and a pino child costs about 1 µs to make, so the child is made only when
 * something is logged.
 */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Record<string, unknown>, options: ChildLoggerOptions): FastifyBaseLogger {
  let real: FastifyBaseLogger | undefined
  const get = (): FastifyBaseLogger => (real ??= parent.child(bindings, options))
  return new Proxy({} as FastifyBaseLogger, {
    get(_target, prop) {
      // Reading the level needs no child: it is the parent's until someone sets it.
      if (prop === 'level' && real === undefined) return parent.level
      const r = get()
      const value = Reflect.get(r, prop, r) as unknown
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(r) : value
    },
    set(_target, prop, value) {
      return Reflect.set(get(), prop, value)
    },
    has(_target, prop) {
      return Reflect.has(get(), prop)
    },
  })
}
