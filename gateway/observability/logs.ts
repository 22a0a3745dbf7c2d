/**
 * Request log lines carry the request id (`reqId`, fastify's) and, while tracing runs, `traceId` and
 * `spanId` (the pino mixin of `tracing.ts`).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ChildLoggerOptions } from 'pino'

type LogFn = (...args: unknown[]) => void

/**
 * A request's logger that makes `parent.child(bindings)` (bindings `{ reqId }`) on its first log
 * call. Most requests log nothing, and a pino child costs about 1 µs to make; this object costs one
 * allocation, its methods being shared on the prototype (fastify checks that they exist on every
 * request, so they must not make the child).
 */
class LazyChildLogger {
  private real: FastifyBaseLogger | undefined
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindingsOf: Record<string, unknown>,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindingsOf, this.options))
  }

  get level(): string {
    return this.real ? this.real.level : this.parent.level
  }
  set level(level: string) {
    this.logger.level = level
  }
  fatal(...args: unknown[]): void {
    ;(this.logger.fatal as LogFn)(...args)
  }
  error(...args: unknown[]): void {
    ;(this.logger.error as LogFn)(...args)
  }
  warn(...args: unknown[]): void {
    ;(this.logger.warn as LogFn)(...args)
  }
  info(...args: unknown[]): void {
    ;(this.logger.info as LogFn)(...args)
  }
  debug(...args: unknown[]): void {
    ;(this.logger.debug as LogFn)(...args)
  }
  trace(...args: unknown[]): void {
    ;(this.logger.trace as LogFn)(...args)
  }
  silent(): void {}
  child(bindings: Record<string, unknown>, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options)
  }
  isLevelEnabled(level: string): boolean {
    return ((this.real ?? this.parent) as unknown as { isLevelEnabled(level: string): boolean }).isLevelEnabled(level)
  }
  bindings(): Record<string, unknown> {
    return (this.logger as unknown as { bindings(): Record<string, unknown> }).bindings()
  }
}

/**
 * The `childLoggerFactory` of the app below debug level: a request logger whose lines carry
 * `reqId`, made only when the request logs something.
 */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Record<string, unknown>, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger
}
