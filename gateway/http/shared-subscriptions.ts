/**
 * Shared subscription executions for GraphQL over WebSocket (issue 13, README "Subscriptions").
 *
 * Subscribers of one instance whose operations are the same — same schema, document text, operation
 * name, variables (after `@fromClaim`) and *sharing key* (what in the GraphQL context can change a
 * result: the token's claims and the upgrade request's headers, see app.ts) — form a {@link SharedGroup}.
 * A group runs ONE `subscribe` (one source event stream, one execution of the selection set per
 * event), formats each result's errors once, serializes the result once, and writes it to every
 * member's socket as a graphql-transport-ws `next` message carrying the member's own operation `id`:
 * `{"id":<JSON-escaped id>,"type":"next","payload":<shared payload>}`, built by concatenation (one
 * Buffer per distinct id per event, so members that chose the same id share even the Buffer).
 *
 * graphql-ws keeps driving the protocol: each member is an async iterator handed to graphql-ws as the
 * operation's stream. It yields nothing (its `next` frames are written here, synchronously, in event
 * order) and finishes when the group's stream ends (graphql-ws then sends `complete`) or rejects with
 * the stream's error (graphql-ws then sends `error`). A client `complete` or a closed socket calls the
 * member's `return()`, which removes it from its group at once; the group's stream is `return()`ed when
 * its last member leaves. The group's stream is whatever the handler's `subscribe` makes (in the gateway,
 * it ends with `TRB_ERR_AUTH_INVALID` when the token expires: the claims, `exp` included, are part of the
 * key, so every member of a group expires together).
 *
 * What a per-subscriber stream would give and a group does not: a member that joins a running group
 * sees the events from then on; a value a stream emits by itself when it starts reaches the members
 * present at that moment only. A slow socket is not waited for (its frames queue in `ws`); one whose
 * unsent frames exceed {@link SLOW_SOCKET_BYTES} is terminated.
 */
import type { ExecutionResult, FormattedExecutionResult, GraphQLError, GraphQLFormattedError, GraphQLSchema } from 'graphql'
import type { WebSocket } from 'ws'

/** What a `subscribe` function returns once awaited: a stream of results, or one result carrying the errors that prevented it. */
export type StartedSubscription = AsyncGenerator<ExecutionResult, void, void> | ExecutionResult

/** Unsent bytes of one socket (`ws` `bufferedAmount`) beyond which a member's socket is terminated instead of written to: 16 MiB. */
export const SLOW_SOCKET_BYTES = 16 * 1024 * 1024

/** Options of {@link SharedSubscriptions}. */
export interface SharedSubscriptionsOptions {
  /** Formats each error of a result, once per group and event (the handler's masking formatter). */
  formatError(err: GraphQLError): GraphQLFormattedError
  /** Called after each event was written to a group's sockets: members written to, and the milliseconds it took (execution excluded). */
  onDelivered?(members: number, ms: number): void
  /** Called when a result cannot be serialized (the group then ends with that error). */
  onSerializeError?(err: unknown): void
}

/** One subscriber of a group: a socket and its operation id. */
interface Member {
  readonly socket: WebSocket
  /** `{"id":<id>,"type":"next","payload":` */
  readonly prefix: string
  readonly group: SharedGroup
  /** Settles the pending `next()` of the member's iterator. */
  settle?: { resolve(r: IteratorResult<ExecutionResult, void>): void; reject(err: unknown): void }
  /** Set when the member ended: `null` done, else the error its `next()` rejects with. */
  ended?: { error: unknown } | null
}

/** Subscribers sharing one execution: see the module comment. */
interface SharedGroup {
  readonly key: string
  readonly byKey: Map<string, SharedGroup>
  readonly members: Set<Member>
  /** The shared stream, or the result that prevented it. */
  readonly started: Promise<StartedSubscription>
  stream?: AsyncGenerator<ExecutionResult, void, void>
  closed: boolean
  /** How the stream ended (`null` done, else its error); unset while it runs or when its members left. */
  ended?: { error: unknown } | null
}

const DONE: IteratorReturnResult<void> = { done: true, value: undefined }

/**
 * The groups of one WebSocket handler (one per schema: after a development reload, new subscribers
 * form new groups while the old ones run on).
 */
export class SharedSubscriptions {
  private readonly bySchema = new WeakMap<GraphQLSchema, Map<string, SharedGroup>>()
  /** Groups running now, all schemas together. */
  groups = 0

  constructor(private readonly options: SharedSubscriptionsOptions) {}

  /**
   * Adds the operation `id` of `socket` to the group of `key`, starting the group with `start()`
   * when there is none.
   *
   * @param key the operation's identity: document text, operation name, variables and sharing key, as one string.
   * @param start runs the subscription once for the group (the first member's execution arguments).
   * @returns the member's async iterator (give it to graphql-ws as the operation's stream; it yields
   *   nothing), or the result that prevented the stream (every member present gets it). Rejects when
   *   `start` rejects.
   */
  async join(schema: GraphQLSchema, key: string, socket: WebSocket, id: string, start: () => Promise<StartedSubscription>): Promise<StartedSubscription> {
    let byKey = this.bySchema.get(schema)
    if (!byKey) this.bySchema.set(schema, (byKey = new Map()))
    let group = byKey.get(key)
    if (!group) group = this.open(byKey, key, start)
    const started = await group.started
    if (!(Symbol.asyncIterator in started)) return started
    const member: Member = { socket, prefix: `{"id":${JSON.stringify(id)},"type":"next","payload":`, group }
    if (group.closed) {
      // The stream ended before this member's turn (an empty stream, say): it ends the same way.
      if (group.ended !== undefined) return this.iterator({ ...member, ended: group.ended })
      // Its members left and returned it: start a new one.
      return this.join(schema, key, socket, id, start)
    }
    group.members.add(member)
    return this.iterator(member)
  }

  private open(byKey: Map<string, SharedGroup>, key: string, start: () => Promise<StartedSubscription>): SharedGroup {
    const group: SharedGroup = {
      key, byKey, members: new Set(), closed: false,
      started: start().then(
        (started) => {
          if (Symbol.asyncIterator in started) {
            group.stream = started
            void this.pump(group, started)
          } else {
            this.forget(group)
          }
          return started
        },
        (err: unknown) => {
          this.forget(group)
          throw err
        },
      ),
    }
    byKey.set(key, group)
    this.groups++
    return group
  }

  /** Removes the group from the table (new subscribers then start a new one). */
  private forget(group: SharedGroup): void {
    if (group.closed) return
    group.closed = true
    this.groups--
    if (group.byKey.get(group.key) === group) group.byKey.delete(group.key)
  }

  /** Reads the group's stream until it ends, writing each result to every member. One pending promise per group. */
  private async pump(group: SharedGroup, stream: AsyncGenerator<ExecutionResult, void, void>): Promise<void> {
    let error: { error: unknown } | null = null
    try {
      for (;;) {
        const next = await stream.next()
        if (next.done || group.closed) break
        this.deliver(group, next.value)
      }
    } catch (err) {
      error = { error: err }
    }
    if (!group.closed) group.ended = error
    this.forget(group)
    for (const member of group.members) this.end(member, error)
    group.members.clear()
  }

  /** Formats and serializes `result` once and writes it to every member with an open socket. */
  private deliver(group: SharedGroup, result: ExecutionResult): void {
    const begin = performance.now()
    let payload: string
    try {
      const formatted: FormattedExecutionResult = result.errors
        ? ({ ...result, errors: result.errors.map((e) => this.options.formatError(e)) } as FormattedExecutionResult)
        : (result as FormattedExecutionResult)
      payload = JSON.stringify(formatted) + '}'
    } catch (err) {
      // A value JSON cannot represent (a BigInt, a cycle): the group ends with the error.
      this.options.onSerializeError?.(err)
      throw err
    }
    let lastPrefix = ''
    let frame: Buffer | undefined
    let written = 0
    for (const member of group.members) {
      const socket = member.socket
      if (socket.readyState !== 1 /* OPEN */) continue
      if (socket.bufferedAmount > SLOW_SOCKET_BYTES) {
        socket.terminate()
        continue
      }
      if (frame === undefined || member.prefix !== lastPrefix) {
        lastPrefix = member.prefix
        frame = Buffer.from(lastPrefix + payload, 'utf8')
      }
      // A Buffer is sent as is (no per-socket string conversion); `binary: false` keeps it a text frame.
      socket.send(frame, { binary: false })
      written++
    }
    this.options.onDelivered?.(written, performance.now() - begin)
  }

  /** Ends a member: its pending `next()` resolves done (or rejects with the stream's error). */
  private end(member: Member, ended: { error: unknown } | null): void {
    if (member.ended !== undefined) return
    member.ended = ended
    const settle = member.settle
    member.settle = undefined
    if (!settle) return
    if (ended) settle.reject(ended.error)
    else settle.resolve(DONE)
  }

  /** Removes a member from its group; the group's stream is returned when it was the last. */
  private leave(member: Member): void {
    this.end(member, null)
    const group = member.group
    if (!group.members.delete(member) || group.members.size > 0 || group.closed) return
    this.forget(group)
    // Not awaited: an async generator's return() waits for its pending next() (the next event).
    void group.stream?.return(undefined).catch(() => undefined)
  }

  /** The member's stream for graphql-ws: yields nothing, finishes with the group. */
  private iterator(member: Member): AsyncGenerator<ExecutionResult, void, void> {
    const leave = (): Promise<IteratorReturnResult<void>> => {
      this.leave(member)
      return Promise.resolve(DONE)
    }
    const iterator: AsyncGenerator<ExecutionResult, void, void> = {
      next: () => {
        const ended = member.ended
        if (ended === null) return Promise.resolve(DONE)
        if (ended !== undefined) return Promise.reject(ended.error)
        return new Promise<IteratorResult<ExecutionResult, void>>((resolve, reject) => (member.settle = { resolve, reject }))
      },
      return: leave,
      throw: async (err: unknown) => {
        this.leave(member)
        throw err
      },
      [Symbol.asyncIterator]: () => iterator,
    }
    return iterator
  }
}

/**
 * Handshake headers that differ between the WebSocket connections of one client (`Sec-WebSocket-Key`
 * is random per connection) and that no resolver or header template can use: left out of
 * {@link sharingKey}.
 */
const HANDSHAKE_HEADERS = new Set(['sec-websocket-key', 'sec-websocket-extensions', 'sec-websocket-version', 'sec-websocket-protocol', 'connection', 'upgrade'])

/**
 * The gateway's sharing key of a WebSocket operation: the token's claims (`null` when anonymous; `exp`
 * included, so a group expires as one) and every header of the upgrade request but the handshake ones,
 * sorted by name (header templates and `forwardHeaders` may send any of them upstream). Subscribers
 * with different cookies or `Authorization` headers therefore never share.
 *
 * @param claims the verified token's claims, or null.
 * @param headers the upgrade request's headers (Node's lower-cased names).
 * @returns a JSON string.
 */
export function sharingKey(claims: Readonly<Record<string, unknown>> | null, headers: Readonly<Record<string, string | string[] | undefined>>): string {
  const kept: [string, string | string[] | undefined][] = []
  for (const name of Object.keys(headers).sort()) if (!HANDSHAKE_HEADERS.has(name)) kept.push([name, headers[name]])
  return JSON.stringify([claims, kept])
}
