/**
 * The demo's `messageCreated` stream: ONE producer, delivered to every subscriber through a pub/sub.
 *
 * - The producer publishes one message every `intervalMs` (1 s by default) on the topic
 *   `messageCreated`: `{ id: String(n), content: <ISO 8601 UTC date-time> }`, `n` increasing by one for
 *   the life of the process (it is not reset when the producer stops).
 * - It runs only while someone listens: the first subscriber starts the timer, the last one to leave
 *   stops it, so nothing is produced (nor counted) while nobody listens.
 * - Every subscriber reads the same topic, so two subscribers receive the same `id` and `content` in
 *   the same tick. A subscriber that leaves (`return()` on its iterator, e.g. a graphql-ws `complete`
 *   or an SSE disconnect through `context.signal`) is released at once, not at the next message.
 *
 * The pub/sub is graphql-yoga's `createPubSub` (`@graphql-yoga/subscription`): `publish(topic, payload)`
 * and `subscribe(topic)` over an `EventTarget`. Passing it an event target from
 * `@graphql-yoga/redis-event-target` fans the same messages out to every gateway instance; only one
 * instance should then produce (the listener count here is per process).
 */
import { createPubSub } from '@graphql-yoga/subscription'

/** A demo message, as the schema declares it (`id: String`, `content: String`, both nullable). */
export interface Message {
  id: string | null
  content: string | null
}

/** The pub/sub the stream publishes on: topic `messageCreated` carries a {@link Message}. */
export type MessagePubSub = ReturnType<typeof createPubSub<{ messageCreated: [Message] }>>

/** Options of {@link createMessageStream}. */
export interface MessageStreamOptions {
  /** Milliseconds between two messages. Default 1000. */
  intervalMs?: number
  /** The pub/sub to publish on and subscribe to. Default: a new in-process `createPubSub()`. */
  pubsub?: MessagePubSub
  /** Called with each message after it is published (the demo keeps the last 100 for `Query.messages`). */
  onMessage?: (message: Message) => void
}

/** What {@link createMessageStream} returns. */
export interface MessageStream {
  /**
   * A new subscription to the stream: an async iterator of `{ messageCreated: Message }`, for a
   * `Subscription.messageCreated.subscribe` resolver. Aborting `signal` ends it like `return()`.
   */
  subscribe(signal?: AbortSignal): AsyncIterableIterator<{ messageCreated: Message }>
  /** How many subscriptions are open (the producer runs while this is above 0). */
  readonly listeners: number
  /** The id the next message will carry. */
  readonly nextId: number
}

/**
 * Creates the shared message stream. Nothing runs until the first `subscribe()`. Never throws.
 */
export function createMessageStream(options: MessageStreamOptions = {}): MessageStream {
  const intervalMs = options.intervalMs ?? 1000
  const pubsub = options.pubsub ?? createPubSub<{ messageCreated: [Message] }>()
  let nextId = 1
  let listeners = 0
  let timer: NodeJS.Timeout | undefined

  const produce = (): void => {
    const message: Message = { id: String(nextId++), content: new Date().toISOString() }
    pubsub.publish('messageCreated', message)
    options.onMessage?.(message)
  }
  const acquire = (): void => {
    if (listeners++ === 0) timer = setInterval(produce, intervalMs)
  }
  const release = (): void => {
    if (--listeners === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }

  return {
    get listeners() { return listeners },
    get nextId() { return nextId },
    subscribe(signal) {
      const source = pubsub.subscribe('messageCreated')[Symbol.asyncIterator]()
      acquire()
      let open = true
      const close = async (): Promise<IteratorReturnResult<undefined>> => {
        if (open) {
          open = false
          signal?.removeEventListener('abort', onAbort)
          release()
          await source.return?.()
        }
        return { done: true, value: undefined }
      }
      const onAbort = (): void => void close()
      if (signal?.aborted) void close()
      else signal?.addEventListener('abort', onAbort, { once: true })
      const iterator: AsyncIterableIterator<{ messageCreated: Message }> = {
        async next() {
          if (!open) return { done: true, value: undefined }
          const r = await source.next()
          if (r.done || !open) return close()
          return { done: false, value: { messageCreated: r.value } }
        },
        return: close,
        async throw(err: unknown) {
          await close()
          throw err
        },
        [Symbol.asyncIterator]() { return iterator },
      }
      return iterator
    },
  }
}
