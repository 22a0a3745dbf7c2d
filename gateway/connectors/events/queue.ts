/**
 * The per-subscriber buffer of every event subscription (broker events, index.ts; database change
 * streams, ../database/changes/): an async iterator with a bound on the events waiting for a slow
 * reader. Past the bound the buffered events are dropped and the iterator ends with one
 * {@link OVERFLOW} value, which the subscription's `resolve` turns into
 * `TRB_ERR_EVENTS_SLOW_SUBSCRIBER` (the subscription is closed with that error).
 */

/** The last value of an {@link EventQueue} that overflowed. */
export const OVERFLOW = Symbol('overflow')

/**
 * The events of one GraphQL subscription, buffered for its reader: an async iterator whose
 * `return()` (the client unsubscribed or went away) calls {@link EventQueue.onEnd}, which ends the
 * upstream subscription. More than `max` events waiting drops them and ends the iterator with one
 * {@link OVERFLOW} value.
 */
export class EventQueue implements AsyncIterableIterator<unknown> {
  private readonly items: unknown[] = []
  private waiting: ((r: IteratorResult<unknown>) => void) | undefined
  private done = false
  /** Called once when the queue ends (overflow, `return()`). */
  onEnd: () => void = () => {}
  /** @param max most events waiting for the reader */
  constructor(private readonly max: number) {}

  /** Adds one event (handed at once to a waiting reader); ignored after the end. */
  push(value: unknown): void {
    if (this.done) return
    if (this.waiting) {
      const w = this.waiting
      this.waiting = undefined
      w({ value, done: false })
      return
    }
    if (this.items.length >= this.max) {
      this.items.length = 0
      this.items.push(OVERFLOW)
      this.finish()
      return
    }
    this.items.push(value)
  }

  /** Takes the events already waiting (at most `max`), without waiting for more. */
  drain(max: number): unknown[] {
    return this.items.splice(0, Math.min(max, this.items.length))
  }

  /** True once the queue ended (its reader may still take the events left, then `done`). */
  get ended(): boolean {
    return this.done
  }

  private finish(): void {
    if (this.done) return
    this.done = true
    this.onEnd()
  }

  next(): Promise<IteratorResult<unknown>> {
    if (this.items.length > 0) return Promise.resolve({ value: this.items.shift(), done: false })
    if (this.done) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve) => (this.waiting = resolve))
  }

  return(): Promise<IteratorResult<unknown>> {
    this.items.length = 0
    this.finish()
    if (this.waiting) this.waiting({ value: undefined, done: true })
    this.waiting = undefined
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
