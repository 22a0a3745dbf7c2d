/**
 * Subscriptions of federation subgraphs (README "Apollo Federation subgraphs" → "Subscriptions").
 *
 * The stitched supergraph schema delegates a `Subscription` root field to the subgraph that owns it
 * with a `subscription` operation; the executor made here sends that operation over the subgraph's
 * subscription transport, and the stitched schema resolves each event's entity fields from the other
 * subgraphs (through `_entities`, over HTTP) as for a query.
 *
 * Transports, per subgraph (`subscriptions: { url, protocol }`):
 * - `graphql-ws` (default; URL default: the subgraph's URL with `http` → `ws`): the GraphQL over
 *   WebSocket protocol (`graphql-transport-ws`) with the `graphql-ws` client. Subscriptions whose
 *   request headers are equal share one socket (multiplexed); the socket closes when its last
 *   subscription ends. The headers go on the upgrade request and as `connectionParams.headers`.
 * - `sse` (URL default: the subgraph's URL): GraphQL over Server-Sent Events, one POST with
 *   `accept: text/event-stream` per subscription ("distinct connections" mode of graphql-sse, as GraphQL
 *   Yoga and Hive Gateway serve it), with `@graphql-tools/executor-http`.
 *
 * Closing the client's subscription returns the stream, which completes the upstream subscription
 * (graphql-ws `complete` message, or the SSE request aborted). When the subgraph ends the
 * subscription with errors, they reach the client as the subgraph sent them (marked
 * `extensions.upstream`, masked in production); when the connection fails or closes, the client gets
 * one last event carrying a `TRB_ERR_UPSTREAM` error and the stream completes.
 */
import { print, type GraphQLError } from 'graphql'
import type { ExecutionRequest, ExecutionResult, Executor } from '@graphql-tools/utils'
import { Repeater } from '@graphql-yoga/subscription'
import type { Client } from 'graphql-ws'
import { UpstreamError } from '../../errors.js'
import { mapNetworkError } from '../rest/request.js'
import { withUpstreamDetails } from '../upstream-details.js'

/** How the gateway reaches one subgraph's subscriptions. */
export interface SubgraphSubscriptionOptions {
  /**
   * The subscription endpoint. Default: for `graphql-ws` the subgraph's `url` with `http(s)` replaced
   * by `ws(s)`; for `sse` the subgraph's `url`. `ws(s)://` for `graphql-ws`, `http(s)://` for `sse`.
   */
  url?: string
  /** The transport: `graphql-ws` (GraphQL over WebSocket, default) or `sse` (GraphQL over Server-Sent Events). */
  protocol?: 'graphql-ws' | 'sse'
}

/** A subgraph's subscription executor and its cleanup. */
export interface SubscriptionTransport {
  /** Runs a `subscription` request: an async iterable of results, or one result with the errors that prevented it. */
  executor: Executor
  /** Closes every open upstream subscription and socket. Idempotent. */
  close(): Promise<void>
}

/** Events buffered for a client that reads slower than the subgraph sends; one more ends the subscription with an error. */
export const MAX_BUFFERED_EVENTS = 1000

/**
 * Creates the subscription transport of subgraph `name` (`<source>/<subgraph>` in errors).
 * @param httpUrl the subgraph's HTTP URL (the default of `options.url`)
 * @param headersOf the headers a request carries (static, rendered templates, forwarded), from its context
 * @param timeoutMs graphql-ws: the longest wait for the WebSocket handshake and for `connection_ack`, in milliseconds
 */
export function createSubscriptionTransport(
  name: string,
  httpUrl: string,
  options: SubgraphSubscriptionOptions | undefined,
  headersOf: (context: unknown) => Record<string, string>,
  timeoutMs: number,
  connectionInit?: ConnectionInit,
): SubscriptionTransport {
  const protocol = options?.protocol ?? 'graphql-ws'
  if (protocol === 'sse') return sseTransport(name, options?.url ?? httpUrl, headersOf, connectionInit)
  return wsTransport(name, options?.url ?? httpUrl.replace(/^http/, 'ws'), headersOf, timeoutMs, connectionInit)
}

/** A coded `TRB_ERR_UPSTREAM` error (502) for a failed or closed subscription connection. */
function upstreamFailure(name: string, reason: string): Error {
  const err = new UpstreamError(name, reason) as Error & { code: string }
  return Object.assign(err, { extensions: { code: err.code, http: { status: 502 } } })
}

/** The subgraph's errors marked as upstream-provided (masked in production). */
function markErrors(result: ExecutionResult, name: string, path: string): ExecutionResult {
  if (!Array.isArray(result.errors)) return result
  const details = { source: name, method: 'SUBSCRIBE', path, status: 200 }
  return { ...result, errors: result.errors.map((e) => withUpstreamDetails({ ...e }, details) as GraphQLError) }
}

/** What the graphql-ws client reports through `sink.error`, as a client-facing error. */
function wsFailure(name: string, err: unknown): Error {
  const e = err as { code?: unknown; reason?: unknown; type?: unknown }
  // A CloseEvent: the socket closed before the subscription completed.
  if (typeof e?.code === 'number') return upstreamFailure(name, `the subscription socket closed (${e.code}${typeof e.reason === 'string' && e.reason ? ` ${e.reason}` : ''})`)
  if (e?.type === 'error') return upstreamFailure(name, 'the subscription socket failed')
  return mapNetworkError(err, name, 0)
}

/**
 * Turns the default connection payload (`{ headers }`) into the one sent (`hooks.global.onConnectionInit`),
 * run for each subscription with its context before its connection is chosen or opened: for
 * `graphql-ws` the result is the `connection_init` payload (subscriptions share a socket only when
 * their payloads are equal) and its `headers` those of the upgrade request; for `sse` its `headers`
 * are the headers of the subscription's request.
 */
export type ConnectionInit = (url: string, payload: Record<string, unknown>, context: unknown) => Promise<Record<string, unknown>>

/** The string-valued entries of a connection payload's `headers` (lower-case names), or `fallback` when it has no `headers` object. */
function payloadHeaders(payload: Record<string, unknown>, fallback: Record<string, string>): Record<string, string> {
  const h = payload.headers
  if (h === null || typeof h !== 'object' || Array.isArray(h)) return fallback
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) if (typeof v === 'string') out[k.toLowerCase()] = v
  return out
}

/** The connection payload of one subscription: `{ headers }`, or the hook's. */
async function connectionPayload(url: string, headers: Record<string, string>, context: unknown, connectionInit: ConnectionInit | undefined): Promise<Record<string, unknown>> {
  return connectionInit ? connectionInit(url, { headers }, context) : { headers }
}

function wsTransport(name: string, url: string, headersOf: (context: unknown) => Record<string, string>, timeoutMs: number, connectionInit?: ConnectionInit): SubscriptionTransport {
  const path = new URL(url).pathname
  // One client (one lazy socket) per distinct header set; removed when its last subscription ends.
  const clients = new Map<string, { client: Client; users: number }>()
  const open = new Set<() => void>()

  async function clientFor(requestHeaders: Record<string, string>, context: unknown): Promise<{ key: string; entry: { client: Client; users: number } }> {
    // The hook runs for every subscription: one socket per distinct payload, so that what it puts
    // there for one caller (an identity) never carries another caller's subscription.
    const payload = await connectionPayload(url, requestHeaders, context, connectionInit)
    const headers = payloadHeaders(payload, requestHeaders)
    const key = JSON.stringify(payload)
    let entry = clients.get(key)
    if (!entry) {
      const [{ createClient }, { WebSocket }] = await Promise.all([import('graphql-ws'), import('ws')])
      entry = clients.get(key)
      if (!entry) {
        // The upgrade request carries the headers (ws in Node; a browser WebSocket could not).
        class HeaderSocket extends WebSocket {
          constructor(address: string, protocols?: string | string[]) {
            super(address, protocols, { headers, handshakeTimeout: timeoutMs })
          }
        }
        const client = createClient({
          url,
          webSocketImpl: HeaderSocket,
          lazy: true,
          lazyCloseTimeout: 0,
          connectionAckWaitTimeout: timeoutMs,
          retryAttempts: 0,
          connectionParams: payload,
        })
        entry = { client, users: 0 }
        clients.set(key, entry)
      }
    }
    return { key, entry }
  }

  const executor: Executor = async (req: ExecutionRequest) => {
    let chosen: Awaited<ReturnType<typeof clientFor>>
    try {
      chosen = await clientFor(headersOf(req.context), req.context)
    } catch (err) {
      // The onConnectionInit hook failed (coded by connectionInitPayload): the subscription fails with its error.
      return { errors: [err as GraphQLError] }
    }
    const { key, entry } = chosen
    entry.users++
    const release = (): void => {
      if (--entry.users === 0 && clients.get(key) === entry) {
        clients.delete(key)
        void entry.client.dispose()
      }
    }
    return new Repeater<ExecutionResult>(async (push, stop) => {
      let pending = 0
      const unsubscribe = entry.client.subscribe(
        { query: print(req.document), variables: req.variables as Record<string, unknown> | undefined, operationName: req.operationName },
        {
          next: (value) => {
            if (++pending > MAX_BUFFERED_EVENTS) return stop(upstreamFailure(name, `more than ${MAX_BUFFERED_EVENTS} events waiting for a slow client`))
            void push(markErrors(value as ExecutionResult, name, path)).then(() => void pending--)
          },
          error: (err) => {
            // `error` message of the subgraph: its GraphQL errors end the subscription.
            if (Array.isArray(err)) void push(markErrors({ errors: err as GraphQLError[] }, name, path)).then(() => stop())
            else void push({ errors: [wsFailure(name, err) as unknown as GraphQLError] }).then(() => stop())
          },
          complete: () => stop(),
        },
      )
      open.add(stop)
      await stop
      open.delete(stop)
      unsubscribe()
      release()
    })
  }

  return {
    executor,
    close: async () => {
      for (const stop of [...open]) stop()
      await Promise.all([...clients.values()].map((e) => e.client.dispose()))
      clients.clear()
    },
  }
}

function sseTransport(name: string, url: string, headersOf: (context: unknown) => Record<string, string>, connectionInit?: ConnectionInit): SubscriptionTransport {
  const path = new URL(url).pathname
  let http: Promise<Executor> | undefined
  const open = new Set<() => void>()
  // The headers onConnectionInit chose for a request (each SSE subscription is its own connection).
  const hooked = new WeakMap<object, Record<string, string>>()
  const executor: Executor = async (incoming: ExecutionRequest) => {
    http ??= import('@graphql-tools/executor-http').then(({ buildHTTPExecutor }) =>
      buildHTTPExecutor({ endpoint: url, method: 'POST', headers: (r) => (r && hooked.get(r)) ?? headersOf(r?.context) }) as Executor)
    let req = incoming
    if (connectionInit) {
      const headers = headersOf(incoming.context)
      try {
        req = { ...incoming }
        hooked.set(req, payloadHeaders(await connectionPayload(url, headers, incoming.context, connectionInit), headers))
      } catch (err) {
        return { errors: [err as GraphQLError] }
      }
    }
    const result = await (await http)(req)
    if (!isAsyncIterable(result)) {
      const r = result as ExecutionResult
      // A connection failure comes back as one result without data: coded, not the library's text.
      if (r.data == null && r.errors?.length && r.errors.every((e) => !e.path)) {
        return { errors: [upstreamFailure(name, `the subscription request failed: ${r.errors[0]!.message}`) as unknown as GraphQLError] }
      }
      return markErrors(r, name, path)
    }
    const iterator = result[Symbol.asyncIterator]()
    return new Repeater<ExecutionResult>(async (push, stop) => {
      open.add(stop)
      void (async () => {
        try {
          for (;;) {
            const next = await Promise.race([iterator.next(), stop.then(() => ({ done: true, value: undefined }))])
            if (next.done) break
            await push(markErrors(next.value as ExecutionResult, name, path))
          }
        } catch (err) {
          await push({ errors: [mapNetworkError(err, name, 0) as unknown as GraphQLError] })
        }
        stop()
      })()
      await stop
      open.delete(stop)
      // Aborts the SSE request.
      await iterator.return?.()
    })
  }
  return {
    executor,
    close: async () => {
      for (const stop of [...open]) stop()
    },
  }
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v
}
