/**
 * The list of login sessions ended before their `exp` (logout, a `revalidate` that refused the user),
 * shared by every instance of a deployment (README "Cookie login with OpenID Connect" → "Logout").
 * Sessions are stateless encrypted cookies, so ending one means refusing its id (`jti`) until its
 * `exp`; this list is what every process checks.
 *
 * - **One process**: a bounded map in memory (at most `max` ids, the oldest forgotten first; expired
 *   ids are dropped when met).
 * - **Redis** (the cluster of gateway/cluster/, `pubsub.redisUrl`): a revocation is stored as the key
 *   `<prefix>kv:session-revoked:<id>` expiring with the session, and published on the channel
 *   `session-revoked`, so that every instance adds it to its own map at once (and drops the identity
 *   it cached for that cookie). A session an instance has not seen yet is looked up in Redis once
 *   when it is opened, so an instance started after the logout, or one that missed the message
 *   while Redis reconnected, refuses it too.
 * - **Workers of `--workers` without Redis**: the memory map of each worker, and the revocation is
 *   relayed to the other workers over node:cluster IPC by the primary (`relayRevocations` of this
 *   module, run by gateway/cli.ts), which also hands its list to a worker that starts later.
 */
import cluster from 'node:cluster'
import type { Cluster } from '../cluster/index.js'

/** Default of `auth.oidc.maxRevokedSessions`: ids each process remembers. */
export const DEFAULT_MAX_REVOKED_SESSIONS = 100_000

/** The pub/sub channel (under `pubsub.keyPrefix`) of revocations. */
const CHANNEL = 'session-revoked'
/** The `kv:` key (under `pubsub.keyPrefix`) of one revoked session. */
const keyOf = (id: string): string => `session-revoked:${id}`
/** The IPC message types between workers and the primary. */
const IPC_REVOKED = 'trb:session-revoked'
const IPC_ASK = 'trb:session-revoked?'
const IPC_LIST = 'trb:session-revoked-list'

/** The revocations of a deployment. */
export interface RevocationList {
  /** `memory` (this process, or workers relayed over IPC) or `redis` (every instance). */
  readonly kind: 'memory' | 'redis'
  /**
   * Ends session `id` until `exp` (seconds since the epoch) everywhere.
   * @returns once it is stored where every instance reads it (Redis), and published.
   * @throws what the cluster throws when Redis cannot store it (the local map has it already).
   */
  revoke(id: string, exp: number): Promise<void>
  /** True when this process knows `id` as revoked (synchronous, no I/O). */
  has(id: string): boolean
  /**
   * True when `id` is revoked: {@link has}, else (Redis) the shared key.
   * @throws what the cluster throws when Redis does not answer.
   */
  check(id: string): Promise<boolean>
  /** Calls `listener` with each id revoked by any instance (this one included). @returns its removal. */
  onRevoked(listener: (id: string) => void): () => void
  /** Stops listening (pub/sub, IPC). */
  close(): void
}

/** Options of {@link createRevocationList}. */
export interface RevocationListOptions {
  /** Most ids kept in this process's memory. Default {@link DEFAULT_MAX_REVOKED_SESSIONS}. */
  max?: number
  /** The deployment's shared state: revocations go through it when it is Redis. Default: none (memory). */
  cluster?: Cluster | null
  /** In a worker of `--workers` without Redis, relay revocations to the other workers over IPC. Default true. */
  relay?: boolean
}

/** Creates the revocation list of a process (see the module comment). */
export function createRevocationList(options: RevocationListOptions = {}): RevocationList {
  const max = options.max ?? DEFAULT_MAX_REVOKED_SESSIONS
  const shared = options.cluster?.kind === 'redis' ? options.cluster : null
  const relay = !shared && options.relay !== false && cluster.isWorker && typeof process.send === 'function'
  const revoked = new Map<string, number>()
  const listeners = new Set<(id: string) => void>()
  const cleanups: (() => void)[] = []

  /** Adds to the local map; true when it was not there yet. */
  function remember(id: string, exp: number): boolean {
    if (typeof id !== 'string' || id === '' || !Number.isFinite(exp) || exp * 1000 <= Date.now()) return false
    if (revoked.has(id)) return false
    if (revoked.size >= max) revoked.delete(revoked.keys().next().value as string)
    revoked.set(id, exp)
    for (const l of [...listeners]) l(id)
    return true
  }

  function has(id: string): boolean {
    const exp = revoked.get(id)
    if (exp === undefined) return false
    if (exp * 1000 > Date.now()) return true
    revoked.delete(id)
    return false
  }

  const parse = (message: string): { id: string; exp: number } | null => {
    try {
      const m = JSON.parse(message) as { id?: unknown; exp?: unknown }
      return typeof m.id === 'string' && typeof m.exp === 'number' ? { id: m.id, exp: m.exp } : null
    } catch {
      return null
    }
  }

  if (shared) {
    cleanups.push(shared.subscribe(CHANNEL, (message) => {
      const m = parse(message)
      if (m) remember(m.id, m.exp)
    }))
  } else if (relay) {
    // Workers without Redis: the primary relays each revocation to the other workers.
    const onMessage = (m: unknown): void => {
      const msg = m as { type?: unknown; id?: unknown; exp?: unknown; entries?: unknown } | null
      if (msg?.type === IPC_REVOKED) remember(msg.id as string, msg.exp as number)
      else if (msg?.type === IPC_LIST && Array.isArray(msg.entries)) for (const [id, exp] of msg.entries as [string, number][]) remember(id, exp)
    }
    process.on('message', onMessage)
    cleanups.push(() => process.off('message', onMessage))
    process.send!({ type: IPC_ASK })
  }

  return {
    kind: shared ? 'redis' : 'memory',
    async revoke(id, exp) {
      remember(id, exp)
      if (shared) {
        const ttlMs = exp * 1000 - Date.now()
        if (ttlMs <= 0) return
        await shared.set(keyOf(id), '1', ttlMs)
        await shared.publish(CHANNEL, JSON.stringify({ id, exp }))
      } else if (relay) {
        process.send!({ type: IPC_REVOKED, id, exp })
      }
    },
    has,
    async check(id) {
      if (has(id)) return true
      if (!shared) return false
      const [value] = await shared.mget([`kv:${keyOf(id)}`])
      return value !== null && value !== undefined
    },
    onRevoked(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    close() {
      for (const c of cleanups.splice(0)) c()
      listeners.clear()
    },
  }
}

/** A worker as {@link relayRevocations} needs it (node:cluster `Worker`). */
interface RelayWorker {
  send(message: unknown): boolean
  on(event: 'message', listener: (message: unknown) => void): unknown
}

/**
 * Run by the primary of `--workers` for each worker it forks: relays the revocations a worker sends
 * to every other worker (without Redis each worker has its own list), and answers a starting
 * worker's request with the revocations it knows (at most `max`, the oldest forgotten first).
 * @param workers the current workers (node:cluster `cluster.workers`)
 */
export function relayRevocations(worker: RelayWorker, workers: () => Iterable<RelayWorker | undefined>, known: Map<string, number>, max = DEFAULT_MAX_REVOKED_SESSIONS): void {
  worker.on('message', (m) => {
    const msg = m as { type?: unknown; id?: unknown; exp?: unknown } | null
    if (msg?.type === IPC_ASK) {
      const now = Date.now() / 1000
      for (const [id, exp] of known) if (exp <= now) known.delete(id)
      worker.send({ type: IPC_LIST, entries: [...known] })
      return
    }
    if (msg?.type !== IPC_REVOKED || typeof msg.id !== 'string' || typeof msg.exp !== 'number') return
    if (known.size >= max) known.delete(known.keys().next().value as string)
    known.set(msg.id, msg.exp)
    for (const other of workers()) if (other && other !== worker) other.send({ type: IPC_REVOKED, id: msg.id, exp: msg.exp })
  })
}
