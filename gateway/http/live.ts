/**
 * Live queries: `GET /operations/<Query>?live=true` with `Accept: text/event-stream`. One poller per
 * (operation, variables, credentials) is shared by every client that asks for the same thing
 * (WunderGraph ran one per client). A poller re-runs the query every interval (`# @live interval=...`,
 * else the config's `operations.liveIntervalMs`) and pushes an event only when the serialised result
 * changed. Clients with different `Authorization` or `Cookie` headers never share a poller, since a
 * source may forward those headers upstream and answer each caller differently.
 *
 * Across instances (gateway/cluster), the poller of a key runs on ONE of them: every instance with
 * listeners for the key competes for the expiring lock `live:<sha256 of the key>` at each interval,
 * the holder runs the query, stores the body under `kv:live:<hash>` (for listeners joining on other
 * instances) and publishes it on the channel `live:<hash>` when it changed; every instance fans the
 * channel out to its own listeners. A holder that dies stops renewing, and another instance with
 * listeners takes over within max(`pubsub.lockTtlMs`, 2 × interval) plus one interval.
 */
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { GraphQLFormattedError } from 'graphql'
import type { CompiledOperation, Variables } from '../operations/compile.js'
import { formatGraphQLErrors } from './format-error.js'
import { OperationNotFoundError, errorBody } from '../errors.js'
import type { GatewayHolder } from './gateway-holder.js'
import type { AuthInfo } from '../auth/jwt.js'
import { stableJson } from '../cluster/response-cache.js'

interface Poller {
  key: string
  name: string
  variables: Variables
  headers: IncomingHttpHeaders
  /** `context.auth` of the runs: the identity of the credentials the poller is keyed by. */
  auth: AuthInfo | null
  listeners: Set<(body: string) => void>
  /** The last body sent, `{"data":…,"errors"?:…}`. */
  last?: string
  timer: NodeJS.Timeout
  running: boolean
  /** sha256 of the key: the lock, channel and stored-body name in the cluster. */
  hash: string
  intervalMs: number
  /** Whether this instance held the poller lock at the last tick. */
  held: boolean
  unsubscribe: () => void
  /** Number of times the query ran (tests and diagnostics). */
  runs: number
}

/** What a subscriber passes besides the operation and its variables. */
export interface LiveSubscribeOptions {
  /** The request's headers: the credential headers are part of the sharing key and reach the resolvers. */
  headers?: IncomingHttpHeaders
  /** The verified identity of those credentials (`context.auth`). Default null. */
  auth?: AuthInfo | null
}

/** The shared pollers of one HTTP app. */
export class LivePollers {
  private readonly pollers = new Map<string, Poller>()

  constructor(private readonly holder: GatewayHolder) {}

  /** Number of pollers running (one per distinct operation + variables + credentials). */
  get size(): number {
    return this.pollers.size
  }

  /** Number of pollers this instance runs the query of (it holds their cluster lock). */
  get polling(): number {
    let n = 0
    for (const p of this.pollers.values()) if (p.held) n++
    return n
  }

  /** Total number of query runs of the pollers now running (to observe sharing in tests). */
  get runs(): number {
    let n = 0
    for (const p of this.pollers.values()) n += p.runs
    return n
  }

  /**
   * Adds a listener; it gets the current result at once (or as soon as the first run finishes), then
   * every change.
   * @returns the function that removes the listener (the poller stops with its last listener).
   */
  subscribe(op: CompiledOperation, variables: Variables, listener: (body: string) => void, options: LiveSubscribeOptions = {}): () => void {
    const credentials = credentialHeaders(options.headers ?? {})
    const key = `${op.name}\u0000${stableJson(variables)}\u0000${Object.keys(credentials).length ? createHash('sha256').update(stableJson(credentials)).digest('base64url') : ''}`
    let poller = this.pollers.get(key)
    if (!poller) {
      const interval = Math.max(10, op.stored.directives.liveIntervalMs ?? this.holder.current.config.operations.liveIntervalMs)
      const hash = createHash('sha256').update(key).digest('base64url')
      const cluster = this.holder.cluster
      const p: Poller = {
        key,
        name: op.name,
        variables,
        headers: credentials,
        auth: options.auth ?? null,
        listeners: new Set(),
        running: false,
        runs: 0,
        hash,
        intervalMs: interval,
        held: false,
        timer: setInterval(() => void this.tick(p), interval),
        unsubscribe: cluster.subscribe(`live:${hash}`, (body) => this.deliver(p, body)),
      }
      p.timer.unref()
      this.pollers.set(key, p)
      poller = p
      // The body the holder (maybe another instance) stored last, for a listener that joins late.
      cluster.mget([`kv:live:${hash}`]).then(([body]) => body && this.deliver(p, body), () => undefined)
      void this.tick(p)
    } else if (poller.last !== undefined) {
      listener(poller.last)
    }
    poller.listeners.add(listener)
    const p = poller
    return () => {
      p.listeners.delete(listener)
      if (p.listeners.size === 0) this.stop(p)
    }
  }

  private stop(p: Poller): void {
    clearInterval(p.timer)
    p.unsubscribe()
    if (p.held) void this.holder.cluster.release(`live:${p.hash}`).catch(() => undefined)
    p.held = false
    if (this.pollers.get(p.key) === p) this.pollers.delete(p.key)
  }

  /** Sends a body to this instance's listeners when it differs from the last one. */
  private deliver(p: Poller, body: string): void {
    if (body === p.last || p.listeners.size === 0) return
    p.last = body
    for (const l of p.listeners) l(body)
  }

  /** One interval: renew or take the poller lock; the holder runs the query. */
  private async tick(p: Poller): Promise<void> {
    const cluster = this.holder.cluster
    try {
      p.held = await cluster.acquire(`live:${p.hash}`, Math.max(cluster.lockTtlMs, 2 * p.intervalMs))
    } catch {
      p.held = false
    }
    if (p.listeners.size === 0 && this.pollers.get(p.key) !== p) {
      if (p.held) await cluster.release(`live:${p.hash}`).catch(() => undefined)
      p.held = false
      return
    }
    if (p.held) await this.poll(p)
  }

  /** Runs the query once (skipped while a run is still in flight) and fans out a changed result. */
  private async poll(p: Poller): Promise<void> {
    if (p.running) return
    p.running = true
    const { mode } = this.holder.current.config
    try {
      // The operation is looked up on every run: a development reload swaps it.
      const op = this.holder.current.operations.get(p.name)
      let out: { data?: unknown; errors?: GraphQLFormattedError[] }
      if (!op || op.kind !== 'query') {
        out = errorBody(new OperationNotFoundError(`${p.name} (no longer a stored query)`))
      } else {
        p.runs++
        const result = await op.execute(p.variables, { headers: p.headers, cluster: this.holder.cluster, auth: p.auth })
        out = { data: result.data }
        if (result.errors?.length) out.errors = formatGraphQLErrors(result.errors, { mode, logger: this.holder.logger }).errors
      }
      const body = JSON.stringify(out)
      const cluster = this.holder.cluster
      const changed = body !== p.last
      this.deliver(p, body)
      await cluster.set(`live:${p.hash}`, body, Math.max(cluster.lockTtlMs, 2 * p.intervalMs)).catch(() => undefined)
      if (changed) await cluster.publish(`live:${p.hash}`, body).catch(() => undefined)
    } catch (err) {
      this.holder.logger.error({ err, operation: p.name }, 'live query poll failed')
    } finally {
      p.running = false
    }
  }

  /** Stops every poller. */
  close(): void {
    for (const p of [...this.pollers.values()]) this.stop(p)
  }
}

function credentialHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {}
  if (headers.authorization !== undefined) out.authorization = headers.authorization
  if (headers.cookie !== undefined) out.cookie = headers.cookie
  return out
}
