/** Test helper: a subscription over graphql-ws (the `graphql-ws` client) whose events are collected. */
import WebSocket from 'ws'
import { createClient, type Client } from 'graphql-ws'

/** What a subscription received: its results in order, whether it ended, and its error. */
export interface Received {
  events: { data?: Record<string, any> | null; errors?: { message: string; extensions?: { code?: string } }[] }[]
  done: boolean
  error: unknown
}

/**
 * Subscribes to `query` at `<url>/graphql` (`http` or `ws` base URL) on a new lazy client without
 * retries, with `connectionParams`; the client is pushed to `clients` (dispose them at teardown).
 */
export function subscribeWs(url: string, query: string, connectionParams: Record<string, unknown>, clients: Client[]): Received {
  const client = createClient({ url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, connectionParams })
  clients.push(client)
  const r: Received = { events: [], done: false, error: undefined }
  client.subscribe({ query }, {
    next: (m) => void r.events.push(m as Received['events'][number]),
    error: (e) => ((r.error = e), (r.done = true)),
    complete: () => void (r.done = true),
  })
  return r
}
