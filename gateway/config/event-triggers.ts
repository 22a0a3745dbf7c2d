/**
 * The `events` (event triggers) and `eventsDelivery` sections of the config (README "Event
 * triggers"): their types, defaults and the checks JSON Schema cannot make (a trigger's source must
 * be a database source, a broker delivery's source an events source, names unique, the lease longer
 * than every webhook timeout).
 */
import { ConfigInvalidError } from '../errors.js'

/** A row change an event trigger fires on. */
export type EventTriggerOp = 'insert' | 'update' | 'delete'

/** Where a trigger's events go: an HTTP webhook, or a subject of an events (message broker) source. */
export type EventDeliveryTarget =
  | {
      /** `http(s)://…` URL the event is POSTed to as JSON. From the config only, never from a client. */
      webhook: string
    }
  | {
      /** The namespace of an `events()` data source whose broker publishes the event. */
      broker: string
      /** The subject (NATS), routing key (AMQP), topic (MQTT) or channel (Redis). */
      subject: string
      /** NATS only: the JetStream stream that must store (and acknowledge) the message; its id is the event id (`Nats-Msg-Id`, deduplicated by the stream). */
      stream?: string
    }

/** One event trigger as written in `config.ts` (README "Event triggers"). */
export interface EventTriggerInput {
  /** The trigger's name: `[A-Za-z][A-Za-z0-9_]*`, at most 40 characters, unique. Names the database triggers (`trb_evt_<name>…`) and the metric label. */
  name: string
  /** The namespace of the database source whose table is watched. */
  source: string
  /** The table (PostgreSQL: in the source's schema). */
  table: string
  /** The changes that fire it. Default all three. */
  on?: EventTriggerOp[]
  /** Where the events go. */
  deliver: EventDeliveryTarget
  /** Deliveries tried again after the first fails, before the event goes to the dead-letter table. Default 5 (0 to 100). */
  retries?: number
  /** The wait before retry n (1-based): `min(maxMs, baseMs·2^(n−1))`, half of it fixed and half random (jitter). Defaults 1000 and 60000 ms. */
  backoff?: { baseMs?: number; maxMs?: number }
  /** Extra request headers of a webhook delivery. Default none. */
  headers?: Record<string, string>
  /** Longest wait for a webhook's answer (or a broker's acknowledgement), in milliseconds. Default 10000. */
  timeoutMs?: number
}

/** One event trigger with its defaults. */
export interface EventTrigger {
  readonly name: string
  readonly source: string
  readonly table: string
  readonly on: readonly EventTriggerOp[]
  readonly deliver: Readonly<EventDeliveryTarget>
  readonly retries: number
  readonly backoff: Readonly<{ baseMs: number; maxMs: number }>
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
}

/** `eventsDelivery`: how the deliverer of every event trigger works (README "Event triggers"). */
export interface EventsDeliveryInput {
  /** How often the outbox is read for due events, in milliseconds (PostgreSQL also wakes at once on a NOTIFY from its triggers). Default 1000. */
  pollIntervalMs?: number
  /** How long a claimed event is this instance's before another may claim it (a crashed instance's events are delivered again after it), in milliseconds; more than every trigger's `timeoutMs`. Default 60000. */
  leaseMs?: number
  /** Most events claimed (and delivered concurrently) at once. Default 20. */
  batchSize?: number
  /** Largest event payload (the JSON body: the old and new rows), in bytes; a larger event goes to the dead-letter table at once. Default 1 MiB (1048576). */
  maxPayloadBytes?: number
  /** Undelivered events per trigger above which the gateway warns (log every minute, `/health`'s `events` section `degraded`); nothing is dropped. Default 100000. */
  maxBacklog?: number
  /** How long delivered events stay in `tributary_event_log` (for inspection) before they are deleted, in milliseconds. Default 86400000 (a day). */
  retainDeliveredMs?: number
}

/** The resolved `eventsDelivery`. */
export type EventsDelivery = Readonly<Required<EventsDeliveryInput>>

/** A data source as far as the trigger checks need it. */
interface SourceRef {
  kind: string
  namespace?: string
  url?: string
}

/**
 * `events` and `eventsDelivery` with their defaults.
 * @throws ConfigInvalidError for a trigger whose source is not a database source (or an in-memory
 *   SQLite one), a broker delivery whose source is not an events source, a name used twice, or a
 *   `leaseMs` not longer than a trigger's `timeoutMs`.
 */
export function resolveEventTriggers(input: EventTriggerInput[] | undefined, delivery: EventsDeliveryInput | undefined, datasources: readonly SourceRef[]): { events: EventTrigger[]; eventsDelivery: EventsDelivery } {
  const eventsDelivery: EventsDelivery = {
    pollIntervalMs: delivery?.pollIntervalMs ?? 1000,
    leaseMs: delivery?.leaseMs ?? 60_000,
    batchSize: delivery?.batchSize ?? 20,
    maxPayloadBytes: delivery?.maxPayloadBytes ?? 1_048_576,
    maxBacklog: delivery?.maxBacklog ?? 100_000,
    retainDeliveredMs: delivery?.retainDeliveredMs ?? 86_400_000,
  }
  const names = new Set<string>()
  const events = (input ?? []).map((e, i): EventTrigger => {
    const at = `events[${i}]`
    if (names.has(e.name.toLowerCase())) throw new ConfigInvalidError(`${at}.name: another trigger is named ${e.name} (names are compared without case)`)
    names.add(e.name.toLowerCase())
    const source = datasources.find((d) => d.namespace === e.source)
    if (!source || source.kind !== 'database') throw new ConfigInvalidError(`${at}.source: ${e.source} is not the namespace of a database source`)
    if (/^sqlite::memory:/.test(source.url ?? '')) throw new ConfigInvalidError(`${at}.source: an in-memory SQLite database lives in one connection; event triggers need a file`)
    if ('broker' in e.deliver) {
      const broker = e.deliver.broker
      if (!datasources.some((d) => d.namespace === broker && d.kind === 'events')) throw new ConfigInvalidError(`${at}.deliver.broker: ${broker} is not the namespace of an events source`)
    }
    const timeoutMs = e.timeoutMs ?? 10_000
    if (eventsDelivery.leaseMs <= timeoutMs) throw new ConfigInvalidError(`${at}.timeoutMs: must be less than eventsDelivery.leaseMs (${eventsDelivery.leaseMs}), or another instance could claim the event during its delivery`)
    return {
      name: e.name,
      source: e.source,
      table: e.table,
      on: [...new Set<EventTriggerOp>(e.on ?? ['insert', 'update', 'delete'])],
      deliver: { ...e.deliver },
      retries: e.retries ?? 5,
      backoff: { baseMs: e.backoff?.baseMs ?? 1000, maxMs: e.backoff?.maxMs ?? 60_000 },
      headers: { ...e.headers },
      timeoutMs,
    }
  })
  return { events, eventsDelivery }
}

/** The JSON Schema of `events` and `eventsDelivery` (gateway/config/validate.ts). */
export const eventTriggersSchema = {
  events: {
    type: 'array',
    maxItems: 1000,
    items: {
      type: 'object',
      required: ['name', 'source', 'table', 'deliver'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,39}$' },
        source: { type: 'string', minLength: 1 },
        table: { type: 'string', pattern: '^[^\\u0000]{1,63}$' },
        on: { type: 'array', minItems: 1, items: { enum: ['insert', 'update', 'delete'] } },
        deliver: {
          oneOf: [
            { type: 'object', required: ['webhook'], additionalProperties: false, properties: { webhook: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$' } } },
            {
              type: 'object',
              required: ['broker', 'subject'],
              additionalProperties: false,
              properties: { broker: { type: 'string', minLength: 1 }, subject: { type: 'string', minLength: 1 }, stream: { type: 'string', minLength: 1 } },
            },
          ],
        },
        retries: { type: 'integer', minimum: 0, maximum: 100 },
        backoff: {
          type: 'object',
          additionalProperties: false,
          properties: { baseMs: { type: 'integer', minimum: 1, maximum: 86400000 }, maxMs: { type: 'integer', minimum: 1, maximum: 86400000 } },
        },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        timeoutMs: { type: 'integer', minimum: 1, maximum: 600000 },
      },
    },
  },
  eventsDelivery: {
    type: 'object',
    additionalProperties: false,
    properties: {
      pollIntervalMs: { type: 'integer', minimum: 10, maximum: 3600000 },
      leaseMs: { type: 'integer', minimum: 100, maximum: 86400000 },
      batchSize: { type: 'integer', minimum: 1, maximum: 1000 },
      maxPayloadBytes: { type: 'integer', minimum: 1024, maximum: 67108864 },
      maxBacklog: { type: 'integer', minimum: 1 },
      retainDeliveredMs: { type: 'integer', minimum: 0 },
    },
  },
} as const
