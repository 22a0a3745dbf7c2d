/**
 * Live queries: `GET /operations/<Query>?live=true` with `Accept: text/event-stream`. One poller per
 * (operation, variables, credentials) is shared by every client that asks for the same thing
 * (WunderGraph ran one per client). A poller re-runs the query every interval (`# @live interval=...`,
 * else the config's `operations.liveIntervalMs`) and pushes an event only when the serialised result
 * changed. Clients with different `Authorization` or `Cookie` headers never share a poller, since a
 * source may forward those headers upstream and answer each caller differently.
 */
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { GraphQLFormattedError } from 'graphql'
import type { CompiledOperation, Variables } from '../operations/compile.js'
import { formatGraphQLErrors } from './format-error.js'
import { OperationNotFoundError, errorBody } from '../errors.js'
import type { GatewayHolder } from './app.js'
import type { AuthInfo } from '../auth/jwt.js'

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
      const interval = op.stored.directives.liveIntervalMs ?? this.holder.current.config.operations.liveIntervalMs
      const p: Poller = {
        key,
        name: op.name,
        variables,
        headers: credentials,
        auth: options.auth ?? null,
        listeners: new Set(),
        running: false,
        runs: 0,
        timer: setInterval(() => void this.poll(p), Math.max(10, interval)),
      }
      p.timer.unref()
      this.pollers.set(key, p)
      poller = p
      void this.poll(p)
    } else if (poller.last !== undefined) {
      listener(poller.last)
    }
    poller.listeners.add(listener)
    const p = poller
    return () => {
      p.listeners.delete(listener)
      if (p.listeners.size === 0) {
        clearInterval(p.timer)
        if (this.pollers.get(key) === p) this.pollers.delete(key)
      }
    }
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
        const result = await op.execute(p.variables, { headers: p.headers, auth: p.auth })
        out = { data: result.data }
        if (result.errors?.length) out.errors = formatGraphQLErrors(result.errors, { mode, logger: this.holder.logger }).errors
      }
      const body = JSON.stringify(out)
      if (body !== p.last) {
        p.last = body
        for (const l of p.listeners) l(body)
      }
    } catch (err) {
      this.holder.logger.error({ err, operation: p.name }, 'live query poll failed')
    } finally {
      p.running = false
    }
  }

  /** Stops every poller. */
  close(): void {
    for (const p of this.pollers.values()) clearInterval(p.timer)
    this.pollers.clear()
  }
}

function credentialHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {}
  if (headers.authorization !== undefined) out.authorization = headers.authorization
  if (headers.cookie !== undefined) out.cookie = headers.cookie
  return out
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` share a poller. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  )
}
