/**
 * Shared subscription executions for Server-Sent Events (`GET /operations/<Subscription>`), the SSE
 * counterpart of ./shared-subscriptions.ts (README "HTTP contract").
 *
 * Event streams of one stored subscription whose variables (after `@fromClaim`), token claims and
 * request headers are equal, on the same composed schema, form a group: it runs ONE `subscribe` (one
 * source event stream, one execution of the selection set per event), serializes each result once and
 * writes the same `data:` line to every member. A member that joins a running group gets the events
 * from then on. A member that leaves is removed at once; the group's `signal` is aborted and its stream
 * `return()`ed when its last member leaves; when the stream ends (or fails), every member's stream is
 * closed after the last event (or the error).
 *
 * With sharing off (`graphql.shareSubscriptions: false`), every event stream is a group of its own.
 */
import type { ExecutionResult } from 'graphql'

/** One event stream, as the group sees it (operations-routes.ts's SSE response). */
export interface EventStreamMember {
  /** Writes one `data:` event whose text is `payload` (already serialized). */
  send(payload: string): void
  /** Ends the stream (idempotent). */
  close(): void
  /** Runs `fn` once when the stream closes, whoever closes it. */
  onClose(fn: () => void): void
}

/** What starting a subscription gives: its source stream of results, or one result with the errors that prevented it. */
export type StartedEventStream = AsyncIterableIterator<ExecutionResult> | ExecutionResult

/** How a group starts its subscription and writes its events. */
export interface EventStreamSource {
  /** Starts the subscription; `signal` is aborted when the group's last member leaves. */
  start(signal: AbortSignal): Promise<StartedEventStream>
  /** One result as the text of a `data:` event (`{data, errors?}`, errors formatted). */
  format(result: ExecutionResult): string
  /** An error that ended or prevented the stream, as the text of a `data:` event (`{errors}`). */
  formatError(err: unknown): string
}

interface Group {
  readonly key: string | undefined
  readonly members: Set<EventStreamMember>
  readonly controller: AbortController
  source?: AsyncIterableIterator<ExecutionResult>
  ended: boolean
}

/** The groups of one app's event streams, by sharing key. */
export class SharedEventStreams {
  private readonly groups = new Map<string, Group>()

  /**
   * Adds `member` to the group of `key`, starting that group (with `source`) when there is none;
   * `key` undefined: a group of its own, never joined.
   */
  join(key: string | undefined, member: EventStreamMember, source: EventStreamSource): void {
    let group = key === undefined ? undefined : this.groups.get(key)
    if (!group) {
      group = { key, members: new Set(), controller: new AbortController(), ended: false }
      if (key !== undefined) this.groups.set(key, group)
      group.members.add(member)
      void this.run(group, source)
    } else {
      group.members.add(member)
    }
    const joined = group
    member.onClose(() => {
      joined.members.delete(member)
      if (joined.members.size === 0) this.stop(joined)
    })
  }

  /** Ends a group whose members all left: no one joins it any more, its subscription is released. */
  private stop(group: Group): void {
    if (group.ended) return
    group.ended = true
    if (group.key !== undefined && this.groups.get(group.key) === group) this.groups.delete(group.key)
    group.controller.abort()
    void group.source?.return?.()?.catch(() => undefined)
  }

  private async run(group: Group, source: EventStreamSource): Promise<void> {
    const broadcast = (payload: string) => {
      for (const member of group.members) member.send(payload)
    }
    try {
      let started: StartedEventStream
      try {
        started = await source.start(group.controller.signal)
      } catch (err) {
        if (!group.ended) broadcast(source.formatError(err))
        return
      }
      if (!(Symbol.asyncIterator in started)) {
        if (!group.ended) broadcast(source.format(started))
        return
      }
      group.source = started
      // Every member left while the subscription started: release it now.
      if (group.ended) {
        void started.return?.()?.catch(() => undefined)
        return
      }
      try {
        for await (const result of started) {
          if (group.ended) break
          broadcast(source.format(result))
        }
      } catch (err) {
        if (!group.ended) broadcast(source.formatError(err))
      }
    } finally {
      // No one joins a finished group; its members' streams end after the last event.
      if (group.key !== undefined && this.groups.get(group.key) === group) this.groups.delete(group.key)
      for (const member of [...group.members]) member.close()
    }
  }
}
