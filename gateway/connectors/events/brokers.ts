/**
 * The broker clients of the events connector (README "Events (message brokers)"): one small
 * interface, {@link BrokerClient}, over the official client of each broker — `nats` (NATS and
 * JetStream), `amqplib` (AMQP 0-9-1, RabbitMQ), `mqtt` (MQTT 3.1.1/5, Mosquitto) and `ioredis`
 * (Redis pub/sub). Each package is an optional peer dependency, loaded here only when a config uses
 * that broker (`optional-package.ts`).
 *
 * Every client connects in the background (the gateway starts while a broker is down; `/health`
 * shows it down) and reconnects with exponential backoff ({@link backoffMs}); broker subscriptions
 * are re-established after a reconnect (by the client library for NATS, MQTT and Redis, by this
 * module for AMQP).
 */
import type { Logger } from 'pino'
import { requireOptional } from '../../optional-package.js'
import { UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError } from '../../errors.js'

/** The brokers the events connector speaks to. */
export type BrokerKind = 'nats' | 'amqp' | 'mqtt' | 'redis'

/** One message received from a broker. */
export interface BrokerMessage {
  /** The subject (NATS), routing key (AMQP), topic (MQTT) or channel (Redis) it was published to. */
  subject: string
  /** Its body, as sent. */
  data: Uint8Array
}

/** A running broker subscription; `close()` ends it (idempotent). */
export interface BrokerSubscription {
  close(): void
}

/** What a publish returns: `success`, and for a JetStream stream the stream's acknowledgement. */
export interface PublishAck {
  success: boolean
  /** The broker kind. */
  broker: BrokerKind
  /** JetStream: the stream that stored the message. */
  stream?: string
  /** JetStream: its sequence number in the stream. */
  sequence?: number
  /** JetStream: true when the stream had already stored a message with the same id. */
  duplicate?: boolean
  /** Redis: how many subscribers received it. */
  receivers?: number
}

/** A durable consumer: a JetStream durable consumer (NATS) or a named durable queue (AMQP). */
export interface DurableOptions {
  /** NATS: the stream, created (with `subjects`) when missing. Required for NATS, unused by AMQP. */
  stream?: string
  /** The durable consumer's name (NATS) or the durable queue's name (AMQP). */
  consumer: string
  /** The subjects (routing keys) the consumer reads, in the broker's wildcard syntax. */
  subjects: string[]
  /** AMQP: the topic exchange the queue is bound to. Default `amq.topic`. */
  exchange?: string
}

/**
 * A durable consumer's message handler. Returning a promise defers the acknowledgement until it
 * settles: fulfilled acknowledges the message, rejected gives it back to the broker (redelivered
 * after {@link REDELIVERY_DELAY_MS}); returning anything else (or throwing) acknowledges at once.
 */
export type DurableHandler = (m: BrokerMessage) => void | Promise<unknown>

/** How long a message whose handler's promise rejected waits before the broker delivers it again, in milliseconds. */
export const REDELIVERY_DELAY_MS = 1000

/** The broker's connection state, for `/health`. */
export interface BrokerState {
  status: 'up' | 'down'
  message?: string
}

/** One connection to one broker. */
export interface BrokerClient {
  readonly kind: BrokerKind
  /** The connection state right now. */
  state(): BrokerState
  /** Subscribes to the given subjects (the broker's own wildcard syntax). Resolves when the broker has the subscription. */
  subscribe(subjects: string[], onMessage: (m: BrokerMessage) => void, options: { exchange?: string }): Promise<BrokerSubscription>
  /**
   * A durable consumer (NATS JetStream, AMQP durable queue): each message is acknowledged once
   * `onMessage` returned, or once its promise settled (see {@link DurableHandler}). Consumers that
   * share the name share the messages: the broker gives each to one of them.
   */
  consumeDurable?(options: DurableOptions, onMessage: DurableHandler): Promise<BrokerSubscription>
  /**
   * Publishes one message and waits for the broker's acknowledgement where it has one (JetStream
   * `stream` publishes, AMQP publisher confirms, MQTT QoS 1 PUBACK).
   * @throws UpstreamUnavailableError when the broker is not connected within `connectTimeoutMs`
   */
  publish(subject: string, data: Uint8Array, options: { stream?: string; exchange?: string; msgId?: string }): Promise<PublishAck>
  /**
   * NATS request–reply.
   * @throws UpstreamTimeoutError (`TRB_ERR_UPSTREAM_TIMEOUT`) without a reply within `timeoutMs`;
   *   UpstreamUnavailableError when no service listens on the subject
   */
  request?(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array>
  /** Closes the connection and every subscription. Idempotent. */
  close(): Promise<void>
}

/** Options common to every client. */
export interface BrokerOptions {
  kind: BrokerKind
  url: string
  /** The source's name, for messages. */
  sourceName: string
  logger: Logger
  /** How long an operation waits for a connection before failing with `TRB_ERR_UPSTREAM_UNAVAILABLE`, in milliseconds. */
  connectTimeoutMs: number
  /** Largest reconnect delay, in milliseconds. */
  maxReconnectDelayMs: number
}

/** The delay before reconnect attempt `attempt` (0-based): 100 ms doubling up to `max`, with ±20 % jitter. */
export function backoffMs(attempt: number, max: number): number {
  const base = Math.min(max, 100 * 2 ** Math.min(attempt, 20))
  return Math.round(base * (0.8 + Math.random() * 0.4))
}

/** True when `subject` matches `pattern` in the broker's wildcard syntax. */
export function subjectMatches(kind: BrokerKind, pattern: string, subject: string): boolean {
  if (kind === 'redis') return pattern === subject
  const sep = kind === 'mqtt' ? '/' : '.'
  const one = kind === 'mqtt' ? '+' : '*'
  const rest = kind === 'nats' ? '>' : '#'
  const p = pattern.split(sep)
  const s = subject.split(sep)
  for (let i = 0; i < p.length; i++) {
    if (p[i] === rest) return kind === 'amqp' || kind === 'mqtt' ? true : s.length > i
    if (i >= s.length) return false
    if (p[i] !== one && p[i] !== s[i]) return false
  }
  return p.length === s.length
}

/** Waits for `ready` at most `ms`, else throws UpstreamUnavailableError. */
async function within<T>(ready: Promise<T>, ms: number, source: string, state: () => BrokerState): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new UpstreamUnavailableError(source, state().message ?? 'not connected')), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** A promise with its resolver outside. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** Opens a client for `options.kind`; the connection is made in the background. */
export function createBroker(options: BrokerOptions): BrokerClient {
  switch (options.kind) {
    case 'nats':
      return natsBroker(options)
    case 'amqp':
      return amqpBroker(options)
    case 'mqtt':
      return mqttBroker(options)
    case 'redis':
      return redisBroker(options)
  }
}

// ----- NATS (nats v2) -----

type Nats = typeof import('nats')

/** Calls a message handler; a throw is logged, never left to break the broker client's reader. */
function safely(o: BrokerOptions, onMessage: (m: BrokerMessage) => void, m: BrokerMessage): void {
  try {
    onMessage(m)
  } catch (err) {
    o.logger.error({ err, subject: m.subject }, 'events: message handler failed')
  }
}

/**
 * Runs a durable handler and acknowledges the message when it is done: at once, or when the promise it
 * returned fulfilled; `retry` (the broker's negative acknowledgement) when that promise rejected.
 */
function settle(o: BrokerOptions, onMessage: DurableHandler, m: BrokerMessage, ack: () => void, retry: () => void): void {
  let result: unknown
  try {
    result = onMessage(m)
  } catch (err) {
    o.logger.error({ err, subject: m.subject }, 'events: message handler failed')
  }
  if (!(result instanceof Promise)) return ack()
  result.then(ack, (err: unknown) => {
    o.logger.warn({ err, subject: m.subject }, 'events: message not handed on; the broker delivers it again')
    retry()
  })
}

function natsBroker(o: BrokerOptions): BrokerClient {
  const lib = requireOptional<Nats>('nats', `events source '${o.sourceName}' (broker nats)`)
  let state: BrokerState = { status: 'down', message: 'connecting' }
  let closed = false
  let attempt = 0
  const ready = deferred<import('nats').NatsConnection>()
  let nc: import('nats').NatsConnection | undefined
  const url = o.url.replace(/^nats:\/\//, '')

  const open = async (): Promise<void> => {
    while (!closed) {
      try {
        nc = await lib.connect({
          servers: url,
          name: `tributary:${o.sourceName}`,
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectDelayHandler: () => backoffMs(attempt++, o.maxReconnectDelayMs),
          timeout: o.connectTimeoutMs,
        })
        break
      } catch (err) {
        state = { status: 'down', message: (err as Error).message }
        await new Promise((r) => setTimeout(r, backoffMs(attempt++, o.maxReconnectDelayMs)))
      }
    }
    if (!nc) return
    if (closed) return void nc.close()
    attempt = 0
    state = { status: 'up' }
    ready.resolve(nc)
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') {
          if (state.status === 'up') o.logger.warn({ broker: 'nats' }, 'events: NATS connection lost; reconnecting')
          state = { status: 'down', message: 'reconnecting' }
        } else if (s.type === 'reconnect') {
          attempt = 0
          state = { status: 'up' }
          o.logger.info({ broker: 'nats' }, 'events: NATS reconnected')
        }
      }
    })().catch(() => {})
    void nc.closed().then(() => {
      if (!closed) state = { status: 'down', message: 'connection closed' }
    })
  }
  void open()
  const conn = () => within(ready.promise, o.connectTimeoutMs, o.sourceName, () => state)

  const ensureStream = async (c: import('nats').NatsConnection, stream: string, subjects: string[]) => {
    const jsm = await c.jetstreamManager()
    try {
      await jsm.streams.info(stream)
    } catch {
      await jsm.streams.add({ name: stream, subjects })
    }
    return jsm
  }

  return {
    kind: 'nats',
    state: () => state,
    async subscribe(subjects, onMessage) {
      const c = await conn()
      const subs = subjects.map((subject) =>
        c.subscribe(subject, { callback: (err, msg) => void (!err && safely(o, onMessage, { subject: msg.subject, data: msg.data })) }),
      )
      await c.flush()
      return { close: () => subs.forEach((s) => s.unsubscribe()) }
    },
    async consumeDurable(d, onMessage) {
      const c = await conn()
      const streamName = d.stream!
      const jsm = await ensureStream(c, streamName, d.subjects)
      try {
        await jsm.consumers.info(streamName, d.consumer)
      } catch {
        await jsm.consumers.add(streamName, {
          durable_name: d.consumer,
          ack_policy: lib.AckPolicy.Explicit,
          deliver_policy: lib.DeliverPolicy.New,
          ...(d.subjects.length === 1 ? { filter_subject: d.subjects[0] } : { filter_subjects: d.subjects }),
        })
      }
      const consumer = await c.jetstream().consumers.get(streamName, d.consumer)
      const messages = await consumer.consume({ max_messages: 256 })
      let stopped = false
      void (async () => {
        for await (const m of messages) {
          settle(o, onMessage, { subject: m.subject, data: m.data }, () => m.ack(), () => m.nak(REDELIVERY_DELAY_MS))
          if (stopped) break
        }
      })().catch((err: unknown) => o.logger.warn({ err, broker: 'nats' }, 'events: durable consumer stopped'))
      return {
        close: () => {
          if (stopped) return
          stopped = true
          void messages.close().catch(() => {})
        },
      }
    },
    async publish(subject, data, options) {
      const c = await conn()
      if (options.stream) {
        try {
          // `msgId` (an event trigger's event id): the stream stores a message id once within its duplicate window.
          const ack = await c.jetstream().publish(subject, data, { expect: { streamName: options.stream }, ...(options.msgId ? { msgID: options.msgId } : {}) })
          return { success: true, broker: 'nats', stream: ack.stream, sequence: ack.seq, duplicate: ack.duplicate }
        } catch (err) {
          if ((err as { code?: string }).code === lib.ErrorCode.NoResponders) throw new UpstreamUnavailableError(o.sourceName, `no JetStream stream stores ${subject}`)
          throw new UpstreamError(o.sourceName, `JetStream did not acknowledge the message: ${(err as Error).message}`)
        }
      }
      c.publish(subject, data)
      await c.flush()
      return { success: true, broker: 'nats' }
    },
    async request(subject, data, timeoutMs) {
      const c = await conn()
      try {
        const reply = await c.request(subject, data, { timeout: timeoutMs })
        return reply.data
      } catch (err) {
        const code = (err as { code?: string }).code
        if (code === lib.ErrorCode.Timeout) throw new UpstreamTimeoutError(o.sourceName, String(timeoutMs))
        if (code === lib.ErrorCode.NoResponders) throw new UpstreamUnavailableError(o.sourceName, `no service answers on ${subject}`)
        throw new UpstreamError(o.sourceName, (err as Error).message)
      }
    },
    async close() {
      if (closed) return
      closed = true
      if (nc) await nc.drain().catch(() => nc!.close())
    },
  }
}

// ----- AMQP 0-9-1 (amqplib) -----

/** Unacknowledged messages one AMQP durable consumer holds at once (`basic.qos` prefetch). */
const DURABLE_PREFETCH = 256

type Amqp = typeof import('amqplib')
type AmqpConnection = Awaited<ReturnType<Amqp['connect']>>
type AmqpChannel = Awaited<ReturnType<AmqpConnection['createChannel']>>
type AmqpConfirmChannel = Awaited<ReturnType<AmqpConnection['createConfirmChannel']>>

function amqpBroker(o: BrokerOptions): BrokerClient {
  const lib = requireOptional<Amqp>('amqplib', `events source '${o.sourceName}' (broker amqp)`)
  let state: BrokerState = { status: 'down', message: 'connecting' }
  let closed = false
  let attempt = 0
  let current = deferred<{ conn: AmqpConnection; consume: AmqpChannel; confirm: AmqpConfirmChannel }>()
  /** Live subscriptions, bound again after a reconnect. */
  const bindings = new Set<(consume: AmqpChannel) => Promise<void>>()

  const open = async (): Promise<void> => {
    while (!closed) {
      try {
        const conn = await lib.connect(o.url)
        const consume = await conn.createChannel()
        const confirm = await conn.createConfirmChannel()
        conn.on('error', () => {})
        conn.on('close', () => {
          if (closed) return
          o.logger.warn({ broker: 'amqp' }, 'events: AMQP connection lost; reconnecting')
          state = { status: 'down', message: 'reconnecting' }
          current = deferred()
          setTimeout(() => void open(), backoffMs(attempt++, o.maxReconnectDelayMs))
        })
        if (closed) return void conn.close().catch(() => {})
        for (const bind of bindings) await bind(consume)
        attempt = 0
        state = { status: 'up' }
        current.resolve({ conn, consume, confirm })
        return
      } catch (err) {
        state = { status: 'down', message: (err as Error).message }
        await new Promise((r) => setTimeout(r, backoffMs(attempt++, o.maxReconnectDelayMs)))
      }
    }
  }
  void open()
  const conn = () => within(current.promise, o.connectTimeoutMs, o.sourceName, () => state)

  /** Runs `start` (declare, bind, consume; returns the consumer tag) now and again after every reconnect, until closed. */
  const listen = async (start: (ch: AmqpChannel) => Promise<string>): Promise<BrokerSubscription> => {
    let tag: string | undefined
    let channel: AmqpChannel | undefined
    let ended = false
    const bind = async (ch: AmqpChannel) => {
      channel = ch
      tag = await start(ch)
      if (ended) await ch.cancel(tag).catch(() => {})
    }
    const { consume } = await conn()
    await bind(consume)
    bindings.add(bind)
    return {
      close: () => {
        if (ended) return
        ended = true
        bindings.delete(bind)
        if (tag && channel) void channel.cancel(tag).catch(() => {})
      },
    }
  }

  return {
    kind: 'amqp',
    state: () => state,
    subscribe(subjects, onMessage, options) {
      const exchange = options.exchange ?? 'amq.topic'
      return listen(async (ch) => {
        if (!exchange.startsWith('amq.')) await ch.assertExchange(exchange, 'topic', { durable: true })
        const q = await ch.assertQueue('', { exclusive: true, autoDelete: true })
        for (const key of subjects) await ch.bindQueue(q.queue, exchange, key)
        const c = await ch.consume(q.queue, (msg) => {
          if (msg) safely(o, onMessage, { subject: msg.fields.routingKey, data: msg.content })
        }, { noAck: true })
        return c.consumerTag
      })
    },
    consumeDurable(d, onMessage) {
      const exchange = d.exchange ?? 'amq.topic'
      return listen(async (ch) => {
        if (!exchange.startsWith('amq.')) await ch.assertExchange(exchange, 'topic', { durable: true })
        // A named durable queue outlives the gateway: messages routed to it while no gateway reads it wait there.
        await ch.assertQueue(d.consumer, { durable: true })
        for (const key of d.subjects) await ch.bindQueue(d.consumer, exchange, key)
        // Applies to the consumers started on this channel from now on (the exclusive ones are noAck, unaffected).
        await ch.prefetch(DURABLE_PREFETCH, false)
        const c = await ch.consume(d.consumer, (msg) => {
          if (!msg) return
          // An ack or nack on a channel that closed meanwhile throws; the broker redelivers that message anyway.
          const safe = (f: () => void) => () => { try { f() } catch { /* channel closed */ } }
          settle(o, onMessage, { subject: msg.fields.routingKey, data: msg.content }, safe(() => ch.ack(msg)), () => setTimeout(safe(() => ch.nack(msg, false, true)), REDELIVERY_DELAY_MS))
        }, { noAck: false })
        return c.consumerTag
      })
    },
    async publish(subject, data, options) {
      const { confirm } = await conn()
      const exchange = options.exchange ?? 'amq.topic'
      if (!exchange.startsWith('amq.')) await confirm.assertExchange(exchange, 'topic', { durable: true })
      await new Promise<void>((resolve, reject) => {
        confirm.publish(exchange, subject, Buffer.from(data), { contentType: 'application/json', persistent: true }, (err) =>
          err ? reject(new UpstreamError(o.sourceName, 'the broker did not confirm the message')) : resolve(),
        )
      })
      return { success: true, broker: 'amqp' }
    },
    async close() {
      if (closed) return
      closed = true
      bindings.clear()
      const c = await Promise.race([current.promise, Promise.resolve(undefined)])
      if (c) await c.conn.close().catch(() => {})
    },
  }
}

/**
 * The listeners of a broker whose subscriptions are per connection (MQTT, Redis): one broker
 * subscription per subject (topic filter, channel), shared by every listener of it, opened with its
 * first listener and ended with its last.
 */
class SharedSubscriptions {
  /** Subject → its listeners; the connection's message handler dispatches through it. */
  readonly bySubject = new Map<string, Set<(m: BrokerMessage) => void>>()

  constructor(
    private readonly open: (subject: string) => Promise<unknown>,
    private readonly end: (subject: string) => Promise<unknown>,
  ) {}

  /** Adds a listener to each subject, subscribing at the broker to those it is the first of. */
  async add(subjects: readonly string[], onMessage: (m: BrokerMessage) => void): Promise<BrokerSubscription> {
    for (const subject of subjects) {
      let set = this.bySubject.get(subject)
      if (!set) {
        this.bySubject.set(subject, (set = new Set()))
        await this.open(subject)
      }
      set.add(onMessage)
    }
    let ended = false
    return {
      close: () => {
        if (ended) return
        ended = true
        for (const subject of subjects) {
          const set = this.bySubject.get(subject)
          if (!set) continue
          set.delete(onMessage)
          if (set.size === 0) {
            this.bySubject.delete(subject)
            void this.end(subject).catch(() => {})
          }
        }
      },
    }
  }
}


// ----- MQTT (mqtt v5) -----

type Mqtt = typeof import('mqtt')

function mqttBroker(o: BrokerOptions): BrokerClient {
  const lib = requireOptional<Mqtt>('mqtt', `events source '${o.sourceName}' (broker mqtt)`)
  let state: BrokerState = { status: 'down', message: 'connecting' }
  let attempt = 0
  let ready = deferred<void>()
  const client = lib.connect(o.url, { reconnectPeriod: 100, connectTimeout: o.connectTimeoutMs, resubscribe: true, clientId: `tributary-${o.sourceName}-${Math.random().toString(36).slice(2, 10)}` })
  const listeners = new SharedSubscriptions(
    (topic) => client.subscribeAsync(topic, { qos: 1 }),
    (topic) => client.unsubscribeAsync(topic),
  )
  client.on('connect', () => {
    attempt = 0
    client.options.reconnectPeriod = 100
    state = { status: 'up' }
    ready.resolve()
  })
  client.on('reconnect', () => {
    client.options.reconnectPeriod = backoffMs(++attempt, o.maxReconnectDelayMs)
  })
  client.on('close', () => {
    if (state.status === 'up') {
      o.logger.warn({ broker: 'mqtt' }, 'events: MQTT connection lost; reconnecting')
      ready = deferred()
    }
    state = { status: 'down', message: 'reconnecting' }
  })
  client.on('error', (err) => {
    state = { status: 'down', message: err.message }
  })
  client.on('message', (topic, payload) => {
    for (const [filter, set] of listeners.bySubject) {
      if (!subjectMatches('mqtt', filter, topic)) continue
      for (const l of set) safely(o, l, { subject: topic, data: payload })
    }
  })
  const conn = () => within(ready.promise, o.connectTimeoutMs, o.sourceName, () => state)

  return {
    kind: 'mqtt',
    state: () => state,
    async subscribe(subjects, onMessage) {
      await conn()
      return listeners.add(subjects, onMessage)
    },
    async publish(subject, data) {
      await conn()
      await client.publishAsync(subject, Buffer.from(data), { qos: 1 })
      return { success: true, broker: 'mqtt' }
    },
    async close() {
      await client.endAsync(true).catch(() => {})
    },
  }
}

// ----- Redis pub/sub (ioredis) -----

type IORedis = typeof import('ioredis')

function redisBroker(o: BrokerOptions): BrokerClient {
  const { Redis } = requireOptional<IORedis>('ioredis', `events source '${o.sourceName}' (broker redis)`)
  const common = {
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (times: number) => backoffMs(times - 1, o.maxReconnectDelayMs),
  }
  const pub = new Redis(o.url, common)
  const sub = new Redis(o.url, { ...common, autoResubscribe: true })
  pub.on('error', () => {})
  sub.on('error', () => {})
  const listeners = new SharedSubscriptions(
    (channel) => sub.subscribe(channel),
    (channel) => sub.unsubscribe(channel),
  )
  sub.on('messageBuffer', (channel: Buffer, message: Buffer) => {
    const name = channel.toString()
    for (const l of listeners.bySubject.get(name) ?? []) safely(o, l, { subject: name, data: message })
  })
  const state = (): BrokerState =>
    pub.status === 'ready' && sub.status === 'ready' ? { status: 'up' } : { status: 'down', message: `redis ${pub.status === 'ready' ? sub.status : pub.status}` }
  const conn = async () => {
    const end = Date.now() + o.connectTimeoutMs
    while (state().status !== 'up') {
      if (Date.now() > end) throw new UpstreamUnavailableError(o.sourceName, state().message ?? 'not connected')
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  return {
    kind: 'redis',
    state,
    async subscribe(subjects, onMessage) {
      await conn()
      return listeners.add(subjects, onMessage)
    },
    async publish(subject, data) {
      await conn()
      const receivers = await pub.publish(subject, Buffer.from(data))
      return { success: true, broker: 'redis', receivers }
    },
    async close() {
      pub.disconnect()
      sub.disconnect()
    },
  }
}
