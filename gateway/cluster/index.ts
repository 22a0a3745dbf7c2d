/**
 * What several gateway instances share (README "Running several instances"): pub/sub channels,
 * expiring locks (to elect one producer or one poller cluster-wide), counters and a small key-value
 * store for the response cache. Two implementations of one {@link Cluster} interface:
 *
 * - `redis`: through ioredis (one connection for commands, one for subscriptions) when `pubsub.redisUrl`
 *   (or `REDIS_URL`) is set. Every key and channel is prefixed with `pubsub.keyPrefix`, so deployments
 *   (and test runs) sharing one Redis never see each other.
 * - `memory`: the same operations inside the process, used when no Redis is configured. Callers run the
 *   same code either way.
 *
 * Locks are `SET key token NX PX ttl` (token: this instance's random id), renewed by the holder and
 * released only by it (compare-and-delete in Lua), so a dead holder's lock expires after `lockTtlMs`.
 */
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { requireOptional } from '../optional-package.js'
import type { Logger } from 'pino'

/** Options of {@link createCluster}. */
export interface ClusterOptions {
  /** `redis://[user:pass@]host:port[/db]`; none: in memory. */
  redisUrl?: string | null
  /** Prefix of every key and channel, e.g. `tributary:`. */
  keyPrefix: string
  /** Lifetime of the locks callers take, in milliseconds (exposed as {@link Cluster.lockTtlMs}). Default 2000. */
  lockTtlMs?: number
  /** Most values the memory store keeps (the oldest go first). Default 10000. */
  maxEntries?: number
  /** Timeout of one Redis command, in milliseconds: a slower command fails (and a cache read counts as a miss). */
  commandTimeoutMs: number
  logger?: Pick<Logger, 'warn' | 'error'>
}

/** The shared state of a set of gateway instances. Every method but `subscribe` may reject when Redis is down. */
export interface Cluster {
  readonly kind: 'memory' | 'redis'
  /** This process' random id (the token of the locks it holds). */
  readonly instanceId: string
  /** The lock lifetime of the deployment (`pubsub.lockTtlMs`): holders renew every quarter of it. */
  readonly lockTtlMs: number
  /** Sends `message` to every subscriber of `channel`, on every instance (this one included). */
  publish(channel: string, message: string): Promise<void>
  /** Calls `listener` with each message of `channel` until the returned function is called. */
  subscribe(channel: string, listener: (message: string) => void): () => void
  /**
   * Resolves once the channel's subscription of this instance is in place (Redis answered SUBSCRIBE):
   * a message published from then on reaches this instance's listeners. Never rejects (a failed
   * SUBSCRIBE is logged and resolves too). Memory: at once.
   */
  subscribed(channel: string): Promise<void>
  /**
   * A number that stays the same while this instance's subscriptions have received every message
   * published since: it changes when the subscriber connection is lost (what was published meanwhile
   * is lost), and is -1 until the channels are subscribed again on the new connection. Memory: 0.
   */
  deliveryEpoch(): number
  /**
   * Takes the lock `name` for `ttlMs` milliseconds, or extends it when this instance holds it.
   * @returns true when this instance holds the lock afterwards.
   */
  acquire(name: string, ttlMs: number): Promise<boolean>
  /** Releases the lock `name` if this instance holds it (another holder's lock is left alone). */
  release(name: string): Promise<void>
  /**
   * Adds one to the counter `name` and returns the new value. A counter that does not exist (never
   * used, or lost: a Redis restarted empty) first starts at `floor` (default 0), atomically (Redis:
   * `SET NX` then `INCR` in one script), so its first value is `floor + 1`. Counters never expire.
   */
  incr(name: string, floor?: number): Promise<number>
  /** Adds one to each counter and returns nothing (tag invalidation). */
  incrAll(names: readonly string[]): Promise<void>
  /** Reads values (`kv:<key>`, set by {@link set}) and counters (`counter:<name>`) in one round trip; a missing one is null. */
  mget(keys: readonly string[]): Promise<(string | null)[]>
  /** Stores `value` under `key` for `ttlMs` milliseconds. */
  set(key: string, value: string, ttlMs: number): Promise<void>
  /** Whether the store answers within `timeoutMs` (memory: always). */
  ping(timeoutMs: number): Promise<boolean>
  /** Closes the connections; later calls reject. */
  close(): Promise<void>
}

/**
 * Creates the {@link Cluster} of this process: Redis when `redisUrl` is set, else in memory. Redis
 * connects in the background.
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when `redisUrl` is set and the optional
 *   `ioredis` package is not installed; nothing else.
 */
export function createCluster(options: ClusterOptions): Cluster {
  const cluster = options.redisUrl ? new RedisCluster(options.redisUrl, options) : new MemoryCluster(options.maxEntries ?? 10_000)
  cluster.lockTtlMs = options.lockTtlMs ?? 2000
  return cluster
}

const ACQUIRE = `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`
const INCR_FROM = `redis.call('set', KEYS[1], ARGV[1], 'NX')
return redis.call('incr', KEYS[1])`

class RedisCluster implements Cluster {
  readonly kind = 'redis' as const
  readonly instanceId = randomUUID()
  lockTtlMs = 2000
  private readonly commands: Redis
  private readonly subscriber: Redis
  private readonly listeners = new Map<string, Set<(message: string) => void>>()
  /** Channel → its SUBSCRIBE, settled when Redis answered. */
  private readonly subscribing = new Map<string, Promise<void>>()
  private readonly prefix: string
  private closed = false
  /** Subscriber connections lost so far ({@link deliveryEpoch}). */
  private subscriberLosses = 0
  /** Whether the subscriber connection is up with its channels subscribed again after the last loss. */
  private subscriberUp = true

  constructor(url: string, private readonly options: ClusterOptions) {
    this.prefix = options.keyPrefix
    const common = {
      // A command fails after this long instead of waiting for a reconnection (requests never hang on Redis).
      commandTimeout: options.commandTimeoutMs,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      retryStrategy: (times: number) => Math.min(100 * times, 2000),
      lazyConnect: false,
    }
    const { Redis: RedisClient } = requireOptional<{ Redis: typeof Redis }>('ioredis', 'pubsub.redisUrl (or REDIS_URL)')
    this.commands = new RedisClient(url, common)
    // A subscriber connection runs no command with a timeout: ioredis' commandTimeout would end SUBSCRIBE.
    this.subscriber = new RedisClient(url, { ...common, commandTimeout: undefined, maxRetriesPerRequest: null })
    let warned = false
    const onError = (err: Error) => {
      if (warned || this.closed) return
      warned = true
      options.logger?.warn({ err: { message: err.message } }, 'Redis unreachable; retrying')
    }
    this.commands.on('error', onError)
    this.subscriber.on('error', onError)
    this.commands.on('ready', () => (warned = false))
    // Messages published while the subscriber is away are lost: the epoch moves, and stays -1 until
    // Redis has answered a SUBSCRIBE of every channel on the new connection (sent after ioredis' own
    // resubscription, so answered after it).
    this.subscriber.on('close', () => {
      if (this.subscriberUp) this.subscriberLosses++
      this.subscriberUp = false
    })
    this.subscriber.on('ready', () => {
      if (this.subscriberUp) return
      const losses = this.subscriberLosses
      const channels = [...this.listeners.keys()].map((c) => this.prefix + c)
      const again = channels.length ? this.subscriber.subscribe(...channels) : Promise.resolve()
      again.then(() => {
        if (this.subscriberLosses === losses && this.subscriber.status === 'ready') this.subscriberUp = true
      }, () => undefined)
    })
    this.subscriber.on('message', (channel: string, message: string) => {
      const set = this.listeners.get(channel.slice(this.prefix.length))
      if (set) for (const l of [...set]) l(message)
    })
    this.commands.defineCommand('trbAcquire', { numberOfKeys: 1, lua: ACQUIRE })
    this.commands.defineCommand('trbRelease', { numberOfKeys: 1, lua: RELEASE })
    this.commands.defineCommand('trbIncrFrom', { numberOfKeys: 1, lua: INCR_FROM })
  }

  private key(kind: string, name: string): string {
    return `${this.prefix}${kind}:${name}`
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.commands.publish(this.prefix + channel, message)
  }

  subscribe(channel: string, listener: (message: string) => void): () => void {
    let set = this.listeners.get(channel)
    if (!set) {
      this.listeners.set(channel, (set = new Set()))
      this.subscribing.set(channel, this.subscriber.subscribe(this.prefix + channel).then(
        () => undefined,
        (err: Error) => void this.options.logger?.error({ err: { message: err.message }, channel }, 'Redis SUBSCRIBE failed'),
      ))
    }
    set.add(listener)
    const own = set
    return () => {
      own.delete(listener)
      if (own.size === 0 && this.listeners.get(channel) === own) {
        this.listeners.delete(channel)
        this.subscribing.delete(channel)
        if (!this.closed) this.subscriber.unsubscribe(this.prefix + channel).catch(() => undefined)
      }
    }
  }

  subscribed(channel: string): Promise<void> {
    return this.subscribing.get(channel) ?? Promise.resolve()
  }

  deliveryEpoch(): number {
    return this.subscriberUp ? this.subscriberLosses : -1
  }

  async acquire(name: string, ttlMs: number): Promise<boolean> {
    const r = await (this.commands as unknown as { trbAcquire(k: string, t: string, ttl: number): Promise<number> }).trbAcquire(this.key('lock', name), this.instanceId, ttlMs)
    return r === 1
  }

  async release(name: string): Promise<void> {
    await (this.commands as unknown as { trbRelease(k: string, t: string): Promise<number> }).trbRelease(this.key('lock', name), this.instanceId)
  }

  incr(name: string, floor = 0): Promise<number> {
    const key = this.key('counter', name)
    if (floor === 0) return this.commands.incr(key)
    return (this.commands as unknown as { trbIncrFrom(k: string, floor: number): Promise<number> }).trbIncrFrom(key, Math.trunc(floor))
  }

  async incrAll(names: readonly string[]): Promise<void> {
    if (!names.length) return
    const pipeline = this.commands.pipeline()
    for (const n of names) pipeline.incr(this.key('counter', n))
    const results = await pipeline.exec()
    const failed = results?.find(([err]) => err)
    if (failed) throw failed[0]
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    if (!keys.length) return []
    return this.commands.mget(...keys.map((k) => this.prefix + k))
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.commands.set(this.key('kv', key), value, 'PX', Math.max(1, Math.round(ttlMs)))
  }

  async ping(timeoutMs: number): Promise<boolean> {
    if (this.commands.status !== 'ready') return false
    let timer: NodeJS.Timeout | undefined
    try {
      return await Promise.race([
        this.commands.ping().then((r) => r === 'PONG'),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
      ])
    } catch {
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.listeners.clear()
    // QUIT only on a connection that is up: on one that is reconnecting it would wait in the offline
    // queue for ever (the subscriber's commands have no timeout), and close() would never return.
    await Promise.allSettled([this.commands, this.subscriber].filter((c) => c.status === 'ready').map((c) => c.quit()))
    this.commands.disconnect()
    this.subscriber.disconnect()
  }
}

/** The in-process implementation: one Map for locks, counters and values, and a listener table. */
class MemoryCluster implements Cluster {
  readonly kind = 'memory' as const
  readonly instanceId = randomUUID()
  lockTtlMs = 2000
  private readonly store = new Map<string, { value: string; expires: number }>()
  private readonly counters = new Map<string, number>()
  private readonly listeners = new Map<string, Set<(message: string) => void>>()
  private sweeps = 0

  constructor(private readonly maxEntries = 10_000) {}

  private read(key: string): string | null {
    const e = this.store.get(key)
    if (!e) return null
    if (e.expires <= Date.now()) {
      this.store.delete(key)
      return null
    }
    return e.value
  }

  private write(key: string, value: string, ttlMs: number): void {
    this.store.delete(key)
    this.store.set(key, { value, expires: Date.now() + ttlMs })
    if (this.store.size > this.maxEntries) this.store.delete(this.store.keys().next().value!)
    // Expired entries nobody reads again are swept every 1000 writes.
    if (++this.sweeps % 1000 === 0) {
      const now = Date.now()
      for (const [k, e] of this.store) if (e.expires <= now) this.store.delete(k)
    }
  }

  async publish(channel: string, message: string): Promise<void> {
    const set = this.listeners.get(channel)
    // Delivered on a later tick, as Redis would: a publisher never re-enters its own listeners.
    if (set) setImmediate(() => { for (const l of [...set]) l(message) })
  }

  subscribe(channel: string, listener: (message: string) => void): () => void {
    let set = this.listeners.get(channel)
    if (!set) this.listeners.set(channel, (set = new Set()))
    set.add(listener)
    const own = set
    return () => {
      own.delete(listener)
      if (own.size === 0 && this.listeners.get(channel) === own) this.listeners.delete(channel)
    }
  }

  async subscribed(): Promise<void> {}

  deliveryEpoch(): number {
    return 0
  }

  async acquire(name: string, ttlMs: number): Promise<boolean> {
    const key = `lock:${name}`
    const holder = this.read(key)
    if (holder !== null && holder !== this.instanceId) return false
    this.write(key, this.instanceId, ttlMs)
    return true
  }

  async release(name: string): Promise<void> {
    const key = `lock:${name}`
    if (this.read(key) === this.instanceId) this.store.delete(key)
  }

  async incr(name: string, floor = 0): Promise<number> {
    const n = (this.counters.get(name) ?? Math.trunc(floor)) + 1
    this.counters.set(name, n)
    return n
  }

  async incrAll(names: readonly string[]): Promise<void> {
    for (const n of names) await this.incr(n)
  }

  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    return keys.map((k) => {
      if (!k.startsWith('counter:')) return this.read(k)
      const n = this.counters.get(k.slice('counter:'.length))
      return n === undefined ? null : String(n)
    })
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.write(`kv:${key}`, value, ttlMs)
  }

  async ping(): Promise<boolean> {
    return true
  }

  async close(): Promise<void> {
    this.listeners.clear()
  }
}
