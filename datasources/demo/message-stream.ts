/**
 * The demo's `messageCreated` stream: ONE producer, delivered to every subscriber through a pub/sub.
 *
 * - The producer publishes one message every `intervalMs` (1 s by default) on the cluster channel
 *   `demo:messageCreated`: `{ id: String(n), content: <ISO 8601 UTC date-time> }`, `n` taken from the
 *   cluster counter `demo:messageCreated`, so ids keep increasing for the life of the deployment (across
 *   producers, failovers and restarts when the cluster is Redis). A counter that does not exist (a new
 *   deployment, a Redis that restarted empty, a memory cluster after a process restart) starts at
 *   the larger of the time in milliseconds since 1970 and the last id this process saw, so ids keep
 *   increasing across such a loss too, as long as fewer than 1000 messages a second were produced
 *   since the counter started (the demo produces one a second).
 * - It runs only while someone listens. Every instance with at least one subscriber competes for the
 *   expiring lock `demo:messageCreated` (renewed every quarter of the cluster's `lockTtlMs`); only its
 *   holder produces. The last subscriber of the holder releases the lock; a holder that dies stops
 *   renewing it, and an instance that still has subscribers takes it over within about 1.25 × `lockTtlMs`.
 * - Every subscriber on every instance reads the same channel, so all receive the same `id` and
 *   `content`. A subscriber that leaves (`return()` on its iterator, e.g. a graphql-ws `complete` or an
 *   SSE disconnect through `context.signal`) is released at once, not at the next message.
 *
 * The cluster is the gateway's (gateway/cluster: Redis with `REDIS_URL`, else in memory), handed to
 * resolvers as `context.cluster`; a stream used without one (unit tests) has its own in-memory cluster.
 * Inside an instance the messages fan out through graphql-yoga's `createPubSub` (`@graphql-yoga/subscription`).
 */
import { createPubSub } from '@graphql-yoga/subscription'
import { createCluster, type Cluster } from '../../gateway/cluster/index.js'

/** A demo message, as the schema declares it (`id: String`, `content: String`, both nullable). */
export interface Message {
  id: string | null
  content: string | null
}

/** Options of {@link createMessageStream}. */
export interface MessageStreamOptions {
  /** Milliseconds between two messages. Default 1000. */
  intervalMs?: number
  /** The cluster used when `subscribe()` gets none. Default: a new in-memory cluster. */
  cluster?: Cluster
  /** Called with each message this instance receives (the demo keeps the last 100 for `Query.messages`). */
  onMessage?: (message: Message) => void
}

/** What {@link createMessageStream} returns. */
export interface MessageStream {
  /**
   * A new subscription to the stream: an async iterator of `{ messageCreated: Message }`, for a
   * `Subscription.messageCreated.subscribe` resolver. Aborting `signal` ends it like `return()`.
   * `cluster` is the serving gateway's (`context.cluster`); default the stream's own.
   */
  subscribe(signal?: AbortSignal, cluster?: Cluster): AsyncIterableIterator<{ messageCreated: Message }>
  /** How many subscriptions are open in this process (it competes to produce while this is above 0). */
  readonly listeners: number
  /** One more than the last id this process produced or received (1 before any; ids start near `Date.now()`). */
  readonly nextId: number
  /** Whether this process holds the producer lock of some cluster (and so produces). */
  readonly producing: boolean
}

const CHANNEL = 'demo:messageCreated'

/** The stream's state for one cluster: local fan-out, listener count, election and production timers. */
interface Local {
  pubsub: ReturnType<typeof createPubSub<{ messageCreated: [Message] }>>
  listeners: number
  held: boolean
  unsubscribe?: () => void
  elect?: NodeJS.Timeout
  produce?: NodeJS.Timeout
}

/**
 * Creates the shared message stream. Nothing runs until the first `subscribe()`. Never throws; a
 * cluster error (Redis down) is retried at the next election tick.
 */
export function createMessageStream(options: MessageStreamOptions = {}): MessageStream {
  const intervalMs = options.intervalMs ?? 1000
  let ownCluster = options.cluster
  let lastId = 0
  const locals = new Map<Cluster, Local>()

  const receive = (local: Local, raw: string): void => {
    let message: Message
    try {
      message = JSON.parse(raw) as Message
    } catch {
      return
    }
    const n = Number(message.id)
    if (n > lastId) lastId = n
    options.onMessage?.(message)
    local.pubsub.publish('messageCreated', message)
  }

  const start = (cluster: Cluster, local: Local): void => {
    local.unsubscribe = cluster.subscribe(CHANNEL, (raw) => receive(local, raw))
    const elect = async (): Promise<void> => {
      try {
        const held = await cluster.acquire(CHANNEL, cluster.lockTtlMs)
        if (local.listeners === 0) {
          if (held) await cluster.release(CHANNEL)
          return
        }
        local.held = held
      } catch {
        local.held = false
      }
    }
    local.elect = setInterval(() => void elect(), Math.max(25, Math.floor(cluster.lockTtlMs / 4)))
    local.produce = setInterval(() => {
      if (!local.held) return
      cluster
        .incr(CHANNEL, Math.max(Date.now(), lastId))
        .then((n) => cluster.publish(CHANNEL, JSON.stringify({ id: String(n), content: new Date().toISOString() })))
        .catch(() => undefined)
    }, intervalMs)
    void elect()
  }

  const stop = (cluster: Cluster, local: Local): void => {
    clearInterval(local.elect)
    clearInterval(local.produce)
    local.unsubscribe?.()
    if (local.held) void cluster.release(CHANNEL).catch(() => undefined)
    local.held = false
    locals.delete(cluster)
  }

  return {
    get listeners() {
      let n = 0
      for (const l of locals.values()) n += l.listeners
      return n
    },
    get nextId() { return lastId + 1 },
    get producing() {
      for (const l of locals.values()) if (l.held) return true
      return false
    },
    subscribe(signal, given) {
      const cluster = given ?? (ownCluster ??= createCluster({ keyPrefix: '', commandTimeoutMs: 500 }))
      let local = locals.get(cluster)
      if (!local) {
        local = { pubsub: createPubSub<{ messageCreated: [Message] }>(), listeners: 0, held: false }
        locals.set(cluster, local)
      }
      const own = local
      const source = own.pubsub.subscribe('messageCreated')[Symbol.asyncIterator]()
      if (own.listeners++ === 0) start(cluster, own)
      let open = true
      const close = async (): Promise<IteratorReturnResult<undefined>> => {
        if (open) {
          open = false
          signal?.removeEventListener('abort', onAbort)
          if (--own.listeners === 0) stop(cluster, own)
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
