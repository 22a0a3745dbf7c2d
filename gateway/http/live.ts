/**
 * Live queries: `GET /operations/<Query>?live=true` with `Accept: text/event-stream`. One poller per
 * (operation, variables) is shared by every client that asks for the same thing (WunderGraph ran one
 * per client). A poller re-runs the query every interval (`# @live interval=...`, else the config's
 * `operations.liveIntervalMs`) and pushes an event only when the serialised result changed.
 */
import type { GraphQLFormattedError } from 'graphql'
import type { CompiledOperation, Variables } from '../operations/compile.js'
import { formatGraphQLErrors } from './format-error.js'
import type { GatewayHolder } from './app.js'

interface Poller {
  listeners: Set<(body: string) => void>
  last?: string
  timer: NodeJS.Timeout
  running: boolean
}

/** The shared pollers of one HTTP app. */
export class LivePollers {
  private readonly pollers = new Map<string, Poller>()

  constructor(private readonly holder: GatewayHolder) {}

  /** Number of pollers running (one per distinct operation + variables). */
  get size(): number {
    return this.pollers.size
  }

  /**
   * Adds a listener; it gets the current result at once, then every change.
   * @returns the function that removes the listener (the poller stops with its last listener).
   */
  subscribe(op: CompiledOperation, variables: Variables, listener: (body: string) => void): () => void {
    const key = `${op.name}\u0000${JSON.stringify(variables)}`
    let poller = this.pollers.get(key)
    if (!poller) {
      const interval = op.stored.directives.liveIntervalMs ?? this.holder.current.config.operations.liveIntervalMs
      const p: Poller = { listeners: new Set(), running: false, timer: setInterval(() => void this.poll(p, op, variables), interval) }
      p.timer.unref()
      this.pollers.set(key, p)
      poller = p
      void this.poll(p, op, variables)
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

  private async poll(p: Poller, op: CompiledOperation, variables: Variables): Promise<void> {
    if (p.running) return
    p.running = true
    try {
      const result = await op.execute(variables, {})
      const out: { data?: unknown; errors?: GraphQLFormattedError[] } = { data: result.data }
      if (result.errors?.length) {
        out.errors = formatGraphQLErrors(result.errors, { mode: this.holder.current.config.mode, logger: this.holder.logger }).errors
      }
      const body = JSON.stringify(out)
      if (body !== p.last) {
        p.last = body
        for (const l of p.listeners) l(body)
      }
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
