/**
 * Event triggers (README "Event triggers"; docs/architecture.md "Event triggers"): row changes of
 * database tables delivered at least once to a webhook or a message broker.
 *
 * At start, for every database source a trigger watches: a connection of its own (a small pool), the
 * outbox tables and database triggers installed (outbox.ts), and one delivery loop per trigger. A
 * loop claims due events (a lease of `eventsDelivery.leaseMs`), delivers them concurrently, and
 * records each outcome under its claim: delivered; failed, retried after a backoff with jitter (or
 * after the delay of the webhook's `Retry-After` answer, at most the trigger's `backoff.maxMs`); or,
 * after `retries` retries (or at once for a payload over `maxPayloadBytes`), moved to the dead-letter
 * table. A loop sleeps `pollIntervalMs` when it found nothing due; on PostgreSQL a NOTIFY from the
 * trigger wakes it at once. A graceful stop aborts the deliveries under way and gives their claims
 * back; a killed process's claims run out after the lease, and another instance (or the next start)
 * delivers them again: at least once, never lost.
 */
import type { Agent } from 'undici'
import { undici } from '../undici.js'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { EventTrigger, EventsDelivery, TributaryConfig } from '../config/index.js'
import { createKnex } from '../connectors/database/connection.js'
import type { ConnectorSubschema } from '../connectors/types.js'
import { countEventDelivery, eventBacklogs } from '../observability/probes.js'
import { NOTIFY_CHANNEL, Outbox, type OutboxEvent } from './outbox.js'

export { EVENT_LOG_TABLE, DEAD_LETTER_TABLE } from './outbox.js'

/** The body of a delivery (webhook POST body, broker message), JSON. */
export interface EventPayload {
  /** The event's unique id, also sent as the `Idempotency-Key` header (webhooks) and the JetStream message id. */
  id: string
  /** The trigger's name. */
  trigger: string
  /** The database source's namespace. */
  source: string
  table: string
  op: 'insert' | 'update' | 'delete'
  /** The row before the change (column → value), null for an insert. */
  old: Record<string, unknown> | null
  /** The row after the change, null for a delete. */
  new: Record<string, unknown> | null
  /** When the database recorded the change, ISO 8601 (UTC). */
  createdAt: string
  /** This delivery's attempt number, from 1. */
  attempt: number
}

/** A data source as the deliverer needs it. */
export interface EventSourceRef {
  namespace: string
  kind: string
  subschema: ConnectorSubschema
}

/** What `/health` and the console may show of the deliverers. */
export interface EventTriggersStatus {
  /** `degraded` when a trigger's backlog is over `eventsDelivery.maxBacklog` or its database cannot be read. */
  status: 'up' | 'degraded'
  /** Undelivered events by trigger, as last counted. */
  backlog: Record<string, number>
  message?: string
}

/** The running deliverers. */
export interface EventTriggersRuntime {
  status(): EventTriggersStatus
  /** Stops every loop: deliveries under way are aborted and their claims given back; closes the connections. Idempotent. */
  stop(): Promise<void>
}

/**
 * The delay a webhook asked for in its `Retry-After` header (RFC 9110 §10.2.3): delay-seconds
 * (`120`) or an HTTP-date, in milliseconds from `now` (0 for a date in the past); undefined when the
 * header is absent or neither form.
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return Math.min(Number(value), 2 ** 31) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) || !/[A-Za-z]/.test(value) ? undefined : Math.max(0, at - now)
}

/** A webhook answer other than 2xx; `retryAfterMs` when it carried a usable `Retry-After`. */
class WebhookRefusedError extends Error {
  constructor(
    status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`the webhook answered ${status}${retryAfterMs !== undefined ? ` (Retry-After: ${Math.round(retryAfterMs / 1000)} s)` : ''}`)
  }
}

/** The delay before retry `attempt` (1-based): `min(maxMs, baseMs·2^(attempt−1))`, half fixed, half random. */
export function retryDelayMs(attempt: number, backoff: { baseMs: number; maxMs: number }): number {
  const full = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(attempt - 1, 30))
  return Math.round(full / 2 + Math.random() * (full / 2))
}

const parseRow = (text: string | null): Record<string, unknown> | null => {
  if (text === null) return null
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    return { _raw: text }
  }
}

/** The delivery body of an event. */
export function eventPayload(e: OutboxEvent, source: string): EventPayload {
  return { id: e.eventId, trigger: e.trigger, source, table: e.table, op: e.op, old: parseRow(e.oldRow), new: parseRow(e.newRow), createdAt: new Date(e.createdAt).toISOString(), attempt: e.attempts + 1 }
}

/** Longest `last_error` kept, in characters. */
const MAX_ERROR_LENGTH = 1000
/** How often the backlog is counted at most, in milliseconds. */
const BACKLOG_EVERY_MS = 1000
/** How often delivered events past `retainDeliveredMs` are deleted, in milliseconds. */
const PURGE_EVERY_MS = 60_000
/** Least time between two warnings of one kind (backlog over the limit, a failing database), in milliseconds. */
const WARN_EVERY_MS = 60_000

/** One trigger's delivery loop. */
class TriggerLoop {
  private wakeUp: (() => void) | undefined
  private woken = false
  /** Claims whose outcome is not recorded yet. */
  readonly open = new Set<string>()
  done: Promise<void> = Promise.resolve()

  constructor(
    readonly trigger: EventTrigger,
    private readonly db: DatabaseDeliverer,
  ) {}

  wake(): void {
    this.woken = true
    this.wakeUp?.()
  }

  start(): void {
    this.done = this.run()
  }

  private async run(): Promise<void> {
    const { db } = this
    while (!db.stopped) {
      let full = false
      try {
        full = await this.round()
      } catch (err) {
        db.warn('read', err, 'event trigger outbox unreadable; retrying')
      }
      if (db.stopped) break
      // The backlog count and the purge of old delivered events (each at most once a second/minute).
      db.counts()
      if (!full && !this.woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, db.delivery.pollIntervalMs)
          this.wakeUp = () => (clearTimeout(timer), resolve())
        })
        this.wakeUp = undefined
      }
      this.woken = false
    }
  }

  /** Claims and delivers one batch. @returns true when the batch was full (more may be due). */
  private async round(): Promise<boolean> {
    const { db, trigger } = this
    const limit = db.delivery.batchSize
    const { token, events } = await db.outbox.claim([trigger.name], limit, Date.now(), db.delivery.leaseMs)
    if (events.length === 0) return false
    this.open.add(token)
    await Promise.all(events.map((e) => this.deliverOne(e, token)))
    // Stopped: the claims left open are given back by stop().
    if (!db.stopped) this.open.delete(token)
    return events.length === limit
  }

  private async deliverOne(e: OutboxEvent, token: string): Promise<void> {
    const { db, trigger } = this
    const body = JSON.stringify(eventPayload(e, trigger.source))
    const bytes = Buffer.byteLength(body)
    try {
      if (bytes > db.delivery.maxPayloadBytes) {
        const reason = `the payload is ${bytes} bytes; eventsDelivery.maxPayloadBytes is ${db.delivery.maxPayloadBytes}`
        if (await db.outbox.deadLetter(e, token, reason, Date.now())) countEventDelivery(trigger.name, 'dead')
        db.logger.warn({ trigger: trigger.name, event: e.eventId, bytes }, 'event too large: moved to the dead-letter table')
        return
      }
      let failure: string | null = null
      let asked: number | undefined
      try {
        await db.send(trigger, e, body)
      } catch (err) {
        if (db.stopped) return
        failure = ((err as Error).message || String(err)).slice(0, MAX_ERROR_LENGTH)
        if (err instanceof WebhookRefusedError) asked = err.retryAfterMs
      }
      const now = Date.now()
      if (failure === null) {
        if (await db.outbox.delivered(e, token, now)) countEventDelivery(trigger.name, 'delivered')
        return
      }
      const attempt = e.attempts + 1
      if (attempt > trigger.retries) {
        if (await db.outbox.deadLetter(e, token, failure, now)) countEventDelivery(trigger.name, 'dead')
        db.logger.warn({ trigger: trigger.name, event: e.eventId, attempts: attempt, error: failure }, 'event not delivered: moved to the dead-letter table')
      } else {
        if (await db.outbox.failed(e, token, failure, now + (asked !== undefined ? Math.min(asked, trigger.backoff.maxMs) : retryDelayMs(attempt, trigger.backoff)))) countEventDelivery(trigger.name, 'failed')
        db.logger.debug({ trigger: trigger.name, event: e.eventId, attempt, error: failure }, 'event delivery failed; retry scheduled')
      }
    } catch (err) {
      // The outcome could not be written: the claim runs out and the event is delivered again.
      db.warn('write', err, 'event trigger outcome not recorded; the event will be delivered again')
    }
  }
}

/** The deliverer of one database: its connection, outbox and the loops of its triggers. */
class DatabaseDeliverer {
  stopped = false
  readonly loops: TriggerLoop[]
  readonly abort = new AbortController()
  private listener: { conn: unknown; stop(): Promise<void> } | undefined
  private backlog = new Map<string, number>()
  private backlogAt = 0
  private backlogRun: Promise<void> | undefined
  private purgedAt = 0
  private readonly warned = new Map<string, number>()
  problem: string | undefined

  constructor(
    readonly knex: Knex,
    readonly outbox: Outbox,
    triggers: readonly EventTrigger[],
    readonly delivery: EventsDelivery,
    readonly logger: Logger,
    private readonly agent: Agent,
    private readonly brokers: ReadonlyMap<string, ConnectorSubschema>,
  ) {
    this.loops = triggers.map((t) => new TriggerLoop(t, this))
  }

  /** Logs `message` at most once a minute per `kind`. */
  warn(kind: string, err: unknown, message: string): void {
    this.problem = message
    const last = this.warned.get(kind) ?? 0
    if (Date.now() - last < WARN_EVERY_MS) return
    this.warned.set(kind, Date.now())
    this.logger.warn({ err: { message: (err as Error)?.message ?? String(err), code: (err as { code?: unknown })?.code } }, message)
  }

  async start(): Promise<void> {
    if (this.outbox.dialect === 'postgres') await this.listen()
    for (const loop of this.loops) loop.start()
  }

  /** PostgreSQL: LISTEN on one pooled connection; a notification wakes its trigger's loop. Polling still runs should it die. */
  private async listen(): Promise<void> {
    const client = this.knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<void> }
    const conn = (await client.acquireConnection()) as { query(sql: string): Promise<unknown>; on(e: string, f: (m: { channel: string; payload?: string }) => void): void; removeAllListeners(e: string): void }
    const onNotify = (m: { channel: string; payload?: string }) => {
      if (m.channel !== NOTIFY_CHANNEL) return
      for (const loop of this.loops) if (loop.trigger.name === m.payload) loop.wake()
    }
    conn.on('notification', onNotify)
    await conn.query(`LISTEN ${NOTIFY_CHANNEL}`)
    this.listener = {
      conn,
      stop: async () => {
        conn.removeAllListeners('notification')
        await conn.query(`UNLISTEN ${NOTIFY_CHANNEL}`).catch(() => undefined)
        await client.releaseConnection(conn).catch(() => undefined)
      },
    }
  }

  /** Sends one event to its trigger's target. @throws on a non-2xx answer, a timeout, a refused publish */
  async send(trigger: EventTrigger, e: OutboxEvent, body: string): Promise<void> {
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(trigger.timeoutMs)])
    const target = trigger.deliver
    if ('webhook' in target) {
      const res = await undici().request(target.webhook, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { ...trigger.headers, 'content-type': 'application/json', 'idempotency-key': e.eventId, 'x-tributary-trigger': trigger.name },
        body,
        signal,
        headersTimeout: trigger.timeoutMs,
        bodyTimeout: trigger.timeoutMs,
      })
      await res.body.dump().catch(() => undefined)
      // Retry-After (a 429 or 503 usually) sets the next attempt's delay, bounded by backoff.maxMs.
      if (res.statusCode < 200 || res.statusCode > 299) throw new WebhookRefusedError(res.statusCode, retryAfterMs(res.headers['retry-after']))
      return
    }
    const source = this.brokers.get(target.broker)
    const broker = source?.kind === 'local' ? source : undefined
    if (!broker?.publish) throw new Error(`the events source ${target.broker} cannot publish`)
    const publish = broker.publish(target.subject, Buffer.from(body), { ...(target.stream ? { stream: target.stream } : {}), msgId: e.eventId })
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(new Error(this.abort.signal.aborted ? 'stopped' : `no acknowledgement within ${trigger.timeoutMs} ms`))
      signal.addEventListener('abort', onAbort, { once: true })
      publish.then(
        () => (signal.removeEventListener('abort', onAbort), resolve()),
        (err: unknown) => (signal.removeEventListener('abort', onAbort), reject(err as Error)),
      )
    })
  }

  /**
   * The backlog as last counted; counts again (in the background) when older than a second. Purges
   * old delivered events once a minute. Called by the loops after each round and by the scrapes.
   */
  counts(): ReadonlyMap<string, number> {
    const now = Date.now()
    if (!this.stopped && !this.backlogRun && now - this.backlogAt >= BACKLOG_EVERY_MS) {
      this.backlogAt = now
      const names = this.loops.map((l) => l.trigger.name)
      this.backlogRun = (async () => {
        try {
          this.backlog = await this.outbox.backlog(names)
          this.problem = undefined
          const over = [...this.backlog].filter(([, n]) => n > this.delivery.maxBacklog)
          if (over.length) this.warn('backlog', new Error(over.map(([t, n]) => `${t}: ${n}`).join(', ')), `event trigger backlog over eventsDelivery.maxBacklog (${this.delivery.maxBacklog}); events are kept and delivered as the target accepts them`)
          if (now - this.purgedAt >= PURGE_EVERY_MS) {
            this.purgedAt = now
            await this.outbox.purge(names, now - this.delivery.retainDeliveredMs)
          }
        } catch (err) {
          this.warn('read', err, 'event trigger backlog not counted')
        } finally {
          this.backlogRun = undefined
        }
      })()
    }
    return this.backlog
  }

  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.abort.abort()
    for (const loop of this.loops) loop.wake()
    await Promise.all(this.loops.map((l) => l.done))
    await this.backlogRun
    const open = this.loops.flatMap((l) => [...l.open])
    await this.outbox.release(open).catch((err: unknown) => this.warn('write', err, 'event claims not given back; they run out after eventsDelivery.leaseMs'))
    await this.listener?.stop()
    await this.knex.destroy().catch(() => undefined)
  }
}

/**
 * Installs the outbox and database triggers of `config.events` and starts delivering.
 * @param sources the loaded sources (events sources publish broker deliveries)
 * @returns null when the config has no event triggers (nothing is installed)
 * @throws ConfigInvalidError when a trigger's table does not exist; a database error when the
 *   outbox cannot be installed (what is already open is closed)
 */
export async function startEventTriggers(config: TributaryConfig, sources: readonly EventSourceRef[], logger: Logger, cwd: string): Promise<EventTriggersRuntime | null> {
  if (config.events.length === 0) return null
  const log = logger.child({ component: 'event-triggers' })
  const agent = new (undici().Agent)({ connections: 32 })
  const brokers = new Map(sources.filter((s) => s.kind === 'events').map((s) => [s.namespace, s.subschema] as const))
  const bySource = new Map<string, EventTrigger[]>()
  for (const t of config.events) bySource.set(t.source, [...(bySource.get(t.source) ?? []), t])
  const deliverers: DatabaseDeliverer[] = []
  const stopAll = async () => {
    await Promise.all(deliverers.map((d) => d.stop()))
    await agent.close().catch(() => undefined)
  }
  try {
    for (const [namespace, triggers] of bySource) {
      const def = config.datasources.find((d) => d.namespace === namespace && d.kind === 'database') as { url: string; schema?: string } | undefined
      if (!def) continue
      const { knex, dialect } = createKnex(def.url, { cwd, ...(def.schema ? { schema: def.schema } : {}), pool: { min: 0, max: 4 }, sqliteBusyTimeoutMs: 0, label: `event triggers of source '${namespace}'` })
      const outbox = new Outbox(knex, dialect)
      const deliverer = new DatabaseDeliverer(knex, outbox, triggers, config.eventsDelivery, log.child({ source: namespace }), agent, brokers)
      deliverers.push(deliverer)
      await outbox.install(triggers, (t) => config.events.indexOf(t))
      await deliverer.start()
      log.info({ source: namespace, triggers: triggers.map((t) => t.name) }, 'event triggers installed; delivering')
    }
  } catch (err) {
    await stopAll()
    throw err
  }
  const backlog = () => {
    const all = new Map<string, number>()
    for (const d of deliverers) for (const [t, n] of d.counts()) all.set(t, n)
    return all
  }
  eventBacklogs.add(backlog)
  let stopped = false
  return {
    status() {
      const counts = backlog()
      const over = [...counts].filter(([, n]) => n > config.eventsDelivery.maxBacklog).map(([t]) => t)
      const problem = deliverers.map((d) => d.problem).find(Boolean)
      const message = over.length ? `backlog over eventsDelivery.maxBacklog: ${over.join(', ')}` : problem
      return { status: message ? 'degraded' : 'up', backlog: Object.fromEntries(counts), ...(message ? { message } : {}) }
    },
    async stop() {
      if (stopped) return
      stopped = true
      eventBacklogs.delete(backlog)
      await stopAll()
    },
  }
}
