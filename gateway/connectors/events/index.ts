/**
 * The events connector (README "Events (message brokers)"): a message broker — NATS (with
 * JetStream), AMQP 0-9-1 (RabbitMQ), MQTT or Redis pub/sub — served as a subschema whose SDL maps
 * root fields to subjects with three directives, named after WunderGraph Cosmo's EDFS directives
 * (`@edfs__natsSubscribe`, `@edfs__natsPublish`, `@edfs__natsRequest`) without their prefix:
 *
 * - `Subscription` field `@subscribe(subjects: [...], filter, durable, stream, consumer, exchange)`
 *   (`durable`: a JetStream durable consumer or an AMQP durable queue, fanned out through a Redis
 *   cluster when the gateway has one):
 *   every message on the subjects whose JSON body is a value of the field's type is an event;
 * - `Mutation` field `@publish(subject, stream, payload, exchange)`: publishes its arguments (or the
 *   argument named by `payload`) as JSON and returns a `PublishAck`;
 * - `Query` field `@request(subject, timeoutMs)` (NATS only): request–reply.
 *
 * `{args.<name>}` in a subject is replaced by the argument's value, which must be one subject token
 * (letters, digits, `_`, `-`, `:`, `@`; at most 128 characters): a value that would add a separator or
 * a wildcard is refused (`TRB_ERR_GRAPHQL_FIELD`). A message that is too large, not JSON or not of
 * the field's type is logged and counted (`tributary_events_rejected_total`), never sent.
 *
 * The directives are read from the SDL and removed from the schema served (they never reach the
 * composed schema). Links (compose/links.ts) complete the payload's entities from other sources: each
 * event is one execution, so a link's batch gathers the parents of one event.
 */
import {
  Kind,
  getNamedType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  parse,
  visit,
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLField,
  type GraphQLOutputType,
  type ValueNode,
} from 'graphql'
import { makeExecutableSchema } from '@graphql-tools/schema'
import type { ConnectorContext, LocalSubschema } from '../types.js'
import { sharedScalars } from '../../scalars.js'
import { EventsSlowSubscriberError, GraphQLFieldError, GraphQLLimitError, SourceLoadError, UpstreamError, isTributaryError } from '../../errors.js'
import { countRejectedEvent } from '../../observability/probes.js'
import type { Cluster } from '../../cluster/index.js'
import { EventQueue, OVERFLOW } from './queue.js'
import { createBroker, subjectMatches, type BrokerClient, type BrokerKind, type BrokerMessage, type BrokerSubscription } from './brokers.js'

export { subjectMatches, type BrokerKind } from './brokers.js'
export { EventQueue, OVERFLOW } from './queue.js'

/** Default of {@link EventsSourceOptions.maxPayloadBytes}: 1 MiB. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576
/** Default of {@link EventsSourceOptions.maxBufferedEvents}. */
export const DEFAULT_MAX_BUFFERED_EVENTS = 1000
/** Default `timeoutMs` of `@request`, in milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000
/** Longest `timeoutMs` a `@request` may declare, in milliseconds. */
export const MAX_REQUEST_TIMEOUT_MS = 60_000

/** Options of an events data source. */
export interface EventsSourceOptions {
  /** `nats`, `amqp`, `mqtt` or `redis`. */
  broker: BrokerKind
  /** The broker's URL: `nats://127.0.0.1:4222`, `amqp://guest:guest@127.0.0.1:5672`, `mqtt://127.0.0.1:1883`, `redis://127.0.0.1:6379`. */
  url: string
  /** SDL with `@subscribe`, `@publish` and `@request` on root fields. A `PublishAck` type is added when the SDL uses it without declaring it. */
  schema: string
  /** Largest message body received or published, in bytes. Default 1 MiB (1048576). */
  maxPayloadBytes?: number
  /** Most events waiting for one slow subscriber; one more ends its subscription with `TRB_ERR_EVENTS_SLOW_SUBSCRIBER`. Default 1000. */
  maxBufferedEvents?: number
  /** How long an operation waits for the broker connection, in milliseconds; then `TRB_ERR_UPSTREAM_UNAVAILABLE`. Default 5000. */
  connectTimeoutMs?: number
  /** Longest delay between two reconnect attempts (exponential backoff from 100 ms, ±20 % jitter), in milliseconds. Default 5000. */
  maxReconnectDelayMs?: number
}

const ACK_TYPE = `
"""The broker's acknowledgement of a publish."""
type PublishAck { success: Boolean! broker: String! stream: String sequence: Float duplicate: Boolean receivers: Int }
`

interface SubscribeSpec { kind: 'subscribe'; subjects: string[]; filter?: string[]; durable: boolean; stream?: string; consumer?: string; exchange?: string }
interface PublishSpec { kind: 'publish'; subject: string; stream?: string; payload?: string; exchange?: string }
interface RequestSpec { kind: 'request'; subject: string; timeoutMs: number }
type FieldSpec = SubscribeSpec | PublishSpec | RequestSpec

/** A directive argument's constant value as plain JS. */
function constValue(node: ValueNode): unknown {
  switch (node.kind) {
    case Kind.STRING: case Kind.ENUM: return node.value
    case Kind.INT: return Number(node.value)
    case Kind.BOOLEAN: return node.value
    case Kind.LIST: return node.values.map(constValue)
    case Kind.NULL: return null
    default: return undefined
  }
}

function directiveArgs(d: ConstDirectiveNode): Record<string, unknown> {
  return Object.fromEntries((d.arguments ?? []).map((a) => [a.name.value, constValue(a.value)]))
}

const TOKEN = /^[A-Za-z0-9_\-:@]{1,128}$/
const PLACEHOLDER = /\{args\.([_A-Za-z][_0-9A-Za-z]*)\}/g

/** The argument names a subject template uses. */
function templateArgs(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!)
}

/**
 * Fills `{args.x}` in a subject.
 * @throws GraphQLFieldError when a value is missing or is not one subject token
 */
function render(template: string, args: Record<string, unknown>, field: string): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const v = args[name]
    const text = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : ''
    if (!TOKEN.test(text)) throw new GraphQLFieldError(`${field}: argument ${name} must be one subject token (letters, digits, _ - : @; 1 to 128 characters)`)
    return text
  })
}

/** The NATS wildcard form of a template (`orders.{args.id}` → `orders.*`), for a durable consumer that serves every argument value. */
function wildcard(template: string): string {
  return template.replace(PLACEHOLDER, '*')
}

/**
 * Checks that `value` is a value of the GraphQL output type `type` (objects: every non-null field
 * present and each present field of its type; fields the type lacks are allowed and never sent).
 * @returns null when it is, else where and why not
 */
export function payloadMismatch(type: GraphQLOutputType, value: unknown, path = '$'): string | null {
  if (isNonNullType(type)) {
    if (value === null || value === undefined) return `${path} is null`
    return payloadMismatch(type.ofType, value, path)
  }
  if (value === null || value === undefined) return null
  if (isListType(type)) {
    if (!Array.isArray(value)) return `${path} is not a list`
    for (let i = 0; i < value.length; i++) {
      const m = payloadMismatch(type.ofType, value[i], `${path}[${i}]`)
      if (m) return m
    }
    return null
  }
  if (isObjectType(type)) {
    if (typeof value !== 'object' || Array.isArray(value)) return `${path} is not an object`
    for (const f of Object.values(type.getFields())) {
      if (f.extensions?.['tributaryLink']) continue
      const m = payloadMismatch(f.type, (value as Record<string, unknown>)[f.name], `${path}.${f.name}`)
      if (m) return m
    }
    return null
  }
  if (isEnumType(type)) return typeof value === 'string' && type.getValue(value) ? null : `${path} is not a ${type.name}`
  if (isScalarType(type)) {
    switch (type.name) {
      case 'Int': return Number.isInteger(value) && Math.abs(value as number) <= 2147483647 ? null : `${path} is not an Int`
      case 'Float': return typeof value === 'number' && Number.isFinite(value) ? null : `${path} is not a Float`
      case 'String': return typeof value === 'string' ? null : `${path} is not a String`
      case 'Boolean': return typeof value === 'boolean' ? null : `${path} is not a Boolean`
      case 'ID': return typeof value === 'string' || Number.isInteger(value) ? null : `${path} is not an ID`
      default:
        try {
          type.parseValue(value)
          return null
        } catch {
          return `${path} is not a ${type.name}`
        }
    }
  }
  return `${path}: abstract types are not supported in payloads`
}

/** The readers of one durable consumer (one per field), fed by one broker consumer while any reader runs. */
interface DurableHub {
  readers: Set<{ subjects: string[]; deliver: (value: unknown) => void }>
  running: Promise<BrokerSubscription> | undefined
  /** Cluster fan-out: ends this instance's subscription to the field's cluster channel. */
  unlisten: (() => void) | undefined
}

/** The part of the gateway's `context.cluster` (gateway/cluster) a durable field fans out through. */
type FanOut = Pick<Cluster, 'kind' | 'publish' | 'subscribe' | 'subscribed'>

/**
 * Builds the subschema of an events source.
 * @throws SourceLoadError (`TRB_ERR_SOURCE_LOAD`) when the SDL does not parse, a directive is on a
 *   field of the wrong root type, names an unknown argument, or `@request`/`durable` is used with a
 *   broker other than NATS
 */
export async function createEventsSource(options: EventsSourceOptions, context: ConnectorContext): Promise<LocalSubschema> {
  const fail = (message: string): never => {
    throw new SourceLoadError(context.sourceName, message)
  }
  const maxPayload = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES
  const maxBuffered = options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS
  const prefix = context.namespace ? `${context.namespace}_` : ''

  let doc: DocumentNode
  try {
    doc = parse(options.schema)
  } catch (err) {
    return fail((err as Error).message)
  }
  // Read the directives, then serve the SDL without them.
  const specs = new Map<string, FieldSpec>()
  for (const def of doc.definitions) {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.OBJECT_TYPE_EXTENSION) continue
    const root = def.name.value
    for (const field of def.fields ?? []) {
      const key = `${root}.${field.name.value}`
      const argNames = new Set((field.arguments ?? []).map((a) => a.name.value))
      for (const d of field.directives ?? []) {
        const name = d.name.value
        if (name !== 'subscribe' && name !== 'publish' && name !== 'request') continue
        const a = directiveArgs(d)
        const want = { subscribe: 'Subscription', publish: 'Mutation', request: 'Query' }[name]
        if (root !== want) fail(`@${name} on ${key}: it belongs on ${want} fields`)
        const subjects = name === 'subscribe' ? (a['subjects'] as string[] | undefined) ?? [] : [a['subject'] as string]
        if (subjects.length === 0 || subjects.some((s) => typeof s !== 'string' || s === '')) fail(`@${name} on ${key}: a subject is required`)
        for (const s of subjects) for (const arg of templateArgs(s)) if (!argNames.has(arg)) fail(`@${name} on ${key}: the subject ${s} names {args.${arg}}, which is not an argument of the field`)
        if (name === 'subscribe') {
          const filter = a['filter'] as string[] | undefined
          for (const f of filter ?? []) if (!argNames.has(f)) fail(`@subscribe on ${key}: filter names ${f}, which is not an argument of the field`)
          const durable = a['durable'] === true
          if (durable && options.broker !== 'nats' && options.broker !== 'amqp') fail(`@subscribe on ${key}: durable consumers need broker nats (JetStream) or amqp (a durable queue)`)
          if (durable && options.broker === 'nats' && typeof a['stream'] !== 'string') fail(`@subscribe on ${key}: durable needs stream`)
          if (typeof a['stream'] === 'string' && options.broker !== 'nats') fail(`@subscribe on ${key}: stream needs broker nats (JetStream)`)
          specs.set(key, {
            kind: 'subscribe', subjects, durable,
            ...(filter ? { filter } : {}),
            ...(typeof a['stream'] === 'string' ? { stream: a['stream'] } : {}),
            ...(typeof a['consumer'] === 'string' ? { consumer: a['consumer'] } : {}),
            ...(typeof a['exchange'] === 'string' ? { exchange: a['exchange'] } : {}),
          })
        } else if (name === 'publish') {
          const payload = a['payload'] as string | undefined
          if (payload !== undefined && !argNames.has(payload)) fail(`@publish on ${key}: payload names ${payload}, which is not an argument of the field`)
          if (typeof a['stream'] === 'string' && options.broker !== 'nats') fail(`@publish on ${key}: stream needs broker nats (JetStream)`)
          specs.set(key, {
            kind: 'publish', subject: subjects[0]!,
            ...(typeof a['stream'] === 'string' ? { stream: a['stream'] } : {}),
            ...(payload ? { payload } : {}),
            ...(typeof a['exchange'] === 'string' ? { exchange: a['exchange'] } : {}),
          })
        } else {
          if (options.broker !== 'nats') fail(`@request on ${key}: request–reply needs broker nats`)
          const timeoutMs = (a['timeoutMs'] as number | undefined) ?? DEFAULT_REQUEST_TIMEOUT_MS
          if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_REQUEST_TIMEOUT_MS) fail(`@request on ${key}: timeoutMs must be 1 to ${MAX_REQUEST_TIMEOUT_MS}`)
          specs.set(key, { kind: 'request', subject: subjects[0]!, timeoutMs })
        }
      }
    }
  }
  const stripped = visit(doc, {
    Directive: (node) => (['subscribe', 'publish', 'request'].includes(node.name.value) ? null : undefined),
  })
  const ownSdl = options.schema
  const extra = /\btype\s+PublishAck\b/.test(ownSdl) || !/\bPublishAck\b/.test(ownSdl) ? '' : ACK_TYPE
  const declared = new Set([...ownSdl.matchAll(/\bscalar\s+([_A-Za-z][_0-9A-Za-z]*)/g)].map((m) => m[1]))
  const scalarResolvers = Object.fromEntries(Object.entries(sharedScalars).filter(([name]) => declared.has(name)))

  const broker: BrokerClient = createBroker({
    kind: options.broker,
    url: options.url,
    sourceName: context.sourceName,
    logger: context.logger,
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    maxReconnectDelayMs: options.maxReconnectDelayMs ?? 5000,
  })

  /** Parses and checks one message for a field; null (logged, counted) when refused. */
  const accept = (field: GraphQLField<unknown, unknown>, fieldName: string, m: BrokerMessage): { value: unknown } | null => {
    // A subscriber's handler runs inside the broker client's reader: it must never throw there.
    const refuse = (why: string) => {
      countRejectedEvent(context.sourceName, `${prefix}${fieldName}`)
      context.logger.warn({ field: `${prefix}${fieldName}`, subject: m.subject, bytes: m.data.byteLength }, `events: message refused: ${why}`)
      return null
    }
    if (m.data.byteLength > maxPayload) return refuse(`larger than ${maxPayload} bytes (maxPayloadBytes)`)
    let value: unknown
    try {
      value = JSON.parse(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString('utf8'))
    } catch {
      return refuse('not JSON')
    }
    const mismatch = payloadMismatch(field.type, value)
    return mismatch ? refuse(`not a ${String(field.type)}: ${mismatch}`) : { value }
  }

  const passes = (filter: string[], args: Record<string, unknown>, value: unknown): boolean => {
    for (const name of filter) {
      const want = args[name]
      if (want === undefined || want === null) continue
      const got = value && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined
      if (String(got) !== String(want)) return false
    }
    return true
  }

  const hubs = new Map<string, DurableHub>()
  const consumerName = (fieldName: string, spec: SubscribeSpec) =>
    spec.consumer ?? `tributary_${prefix}${fieldName}`.replace(/[^A-Za-z0-9_-]/g, '_')

  /** Hands a message to the readers of a hub whose subjects match its subject. */
  const dispatch = (h: DurableHub, value: unknown, subject: string) => {
    for (const r of h.readers) if (r.subjects.some((s) => subjectMatches(options.broker, s, subject))) r.deliver(value)
  }

  /**
   * Starts a field's durable consumer. With a Redis cluster, a message this instance consumes is
   * published on the cluster channel `events:<broker>:<stream or exchange>:<consumer>` (acknowledged to the broker once Redis
   * took it) and every instance with readers of the field, this one included, hands it to its readers
   * from that channel; else it goes to this instance's readers directly.
   */
  const startDurable = async (h: DurableHub, field: GraphQLField<unknown, unknown>, fieldName: string, spec: SubscribeSpec, cluster: FanOut | undefined): Promise<BrokerSubscription> => {
    const durable = { consumer: consumerName(fieldName, spec), subjects: spec.subjects.map(wildcard), ...(spec.stream ? { stream: spec.stream } : {}), ...(spec.exchange ? { exchange: spec.exchange } : {}) }
    if (!cluster) {
      return broker.consumeDurable!(durable, (m) => {
        const ok = accept(field, fieldName, m)
        if (ok) dispatch(h, ok.value, m.subject)
      })
    }
    // Instances share a consumer's messages when they share its stream (exchange) and name: so do their channels.
    const channel = `events:${options.broker}:${spec.stream ?? spec.exchange ?? 'amq.topic'}:${durable.consumer}`
    h.unlisten = cluster.subscribe(channel, (raw) => {
      let event: { s: string; v: unknown }
      try {
        event = JSON.parse(raw) as { s: string; v: unknown }
      } catch {
        return
      }
      dispatch(h, event.v, event.s)
    })
    await cluster.subscribed(channel)
    return broker.consumeDurable!(durable, (m) => {
      const ok = accept(field, fieldName, m)
      return ok ? cluster.publish(channel, JSON.stringify({ s: m.subject, v: ok.value })) : undefined
    })
  }

  /** Stops a hub's consumer and its cluster channel (its last reader left, or the source closes). */
  const stopDurable = (h: DurableHub): Promise<void> => {
    const running = h.running
    h.running = undefined
    h.unlisten?.()
    h.unlisten = undefined
    return running ? running.then((s) => s.close(), () => {}) : Promise.resolve()
  }

  const subscriptionResolvers: Record<string, unknown> = {}
  const mutationResolvers: Record<string, unknown> = {}
  const queryResolvers: Record<string, unknown> = {}
  for (const [key, spec] of specs) {
    const fieldName = key.slice(key.indexOf('.') + 1)
    if (spec.kind === 'subscribe') {
      const argsInSubjects = new Set(spec.subjects.flatMap(templateArgs))
      subscriptionResolvers[fieldName] = {
        subscribe: async (_root: unknown, args: Record<string, unknown>, ctx: { cluster?: FanOut } | undefined, info: { fieldName: string; parentType: { getFields(): Record<string, GraphQLField<unknown, unknown>> } }) => {
          const field = info.parentType.getFields()[info.fieldName]!
          const subjects = spec.subjects.map((s) => render(s, args, `${prefix}${fieldName}`))
          const filter = spec.filter ?? Object.keys(args).filter((n) => !argsInSubjects.has(n))
          const queue = new EventQueue(maxBuffered)
          const deliver = (value: unknown) => {
            if (passes(filter, args, value)) queue.push(value)
          }
          if (spec.durable) {
            let hub = hubs.get(fieldName)
            if (!hub) hubs.set(fieldName, (hub = { readers: new Set(), running: undefined, unlisten: undefined }))
            const reader = { subjects, deliver }
            hub.readers.add(reader)
            const h = hub
            if (!h.running) {
              const running = (h.running = startDurable(h, field, fieldName, spec, ctx?.cluster?.kind === 'redis' ? ctx.cluster : undefined))
              // A consumer that failed to start is started again by the next subscriber.
              running.catch(() => {
                if (h.running === running) void stopDurable(h)
              })
            }
            queue.onEnd = () => {
              h.readers.delete(reader)
              if (h.readers.size === 0 && h.running) void stopDurable(h)
            }
            try {
              await h.running
            } catch (err) {
              h.readers.delete(reader)
              throw err
            }
            return queue
          }
          const sub = await broker.subscribe(subjects, (m) => {
            const ok = accept(field, fieldName, m)
            if (ok) deliver(ok.value)
          }, spec.exchange ? { exchange: spec.exchange } : {})
          queue.onEnd = () => sub.close()
          return queue
        },
        resolve: (event: unknown) => {
          if (event === OVERFLOW) throw new EventsSlowSubscriberError(String(maxBuffered))
          return event
        },
      }
    } else if (spec.kind === 'publish') {
      mutationResolvers[fieldName] = async (_root: unknown, args: Record<string, unknown>) => {
        const subject = render(spec.subject, args, `${prefix}${fieldName}`)
        const body = Buffer.from(JSON.stringify(spec.payload ? args[spec.payload] : args))
        if (body.byteLength > maxPayload) throw new GraphQLLimitError(`${prefix}${fieldName}: the message is ${body.byteLength} bytes; the maximum is ${maxPayload} (maxPayloadBytes)`)
        try {
          return await broker.publish(subject, body, { ...(spec.stream ? { stream: spec.stream } : {}), ...(spec.exchange ? { exchange: spec.exchange } : {}) })
        } catch (err) {
          // A broker client's own error (a closed connection, a refused publish) as an upstream error.
          if (isTributaryError(err)) throw err
          throw new UpstreamError(context.sourceName, `publish to ${subject} failed: ${(err as Error).message}`)
        }
      }
    } else {
      queryResolvers[fieldName] = async (_root: unknown, args: Record<string, unknown>, _ctx: unknown, info: { fieldName: string; parentType: { getFields(): Record<string, GraphQLField<unknown, unknown>> } }) => {
        const subject = render(spec.subject, args, `${prefix}${fieldName}`)
        const body = Buffer.from(JSON.stringify(args))
        if (body.byteLength > maxPayload) throw new GraphQLLimitError(`${prefix}${fieldName}: the request is ${body.byteLength} bytes; the maximum is ${maxPayload} (maxPayloadBytes)`)
        const reply = await broker.request!(subject, body, spec.timeoutMs)
        const field = info.parentType.getFields()[info.fieldName]!
        const ok = accept(field, fieldName, { subject, data: reply })
        if (!ok) throw new UpstreamError(context.sourceName, `the reply on ${subject} is not a ${String(field.type)}`)
        return ok.value
      }
    }
  }

  let schema
  try {
    schema = makeExecutableSchema({
      typeDefs: [stripped, extra].filter(Boolean),
      resolvers: [
        scalarResolvers,
        {
          ...(Object.keys(subscriptionResolvers).length ? { Subscription: subscriptionResolvers } : {}),
          ...(Object.keys(mutationResolvers).length ? { Mutation: mutationResolvers } : {}),
          ...(Object.keys(queryResolvers).length ? { Query: queryResolvers } : {}),
        },
      ] as Parameters<typeof makeExecutableSchema>[0]['resolvers'],
    })
  } catch (err) {
    await broker.close()
    return fail((err as Error).message)
  }
  for (const [key, spec] of specs) {
    if (spec.kind !== 'publish') continue
    const field = schema.getMutationType()?.getFields()[key.slice(key.indexOf('.') + 1)]
    if (!field || !isObjectType(getNamedType(field.type))) {
      await broker.close()
      fail(`@publish on ${key}: the field must return an object type such as PublishAck`)
    }
  }
  return {
    kind: 'local',
    schema,
    publish: (subject, data, publishOptions) => broker.publish(subject, data, publishOptions),
    health: async () => {
      const s = broker.state()
      return s.status === 'up' ? { status: 'up' } : { status: 'down', message: `${options.broker}: ${s.message ?? 'down'}` }
    },
    close: async () => {
      for (const hub of hubs.values()) await stopDurable(hub)
      await broker.close()
    },
  }
}

