/**
 * The shared response cache of `# @cache maxAge=<s> [staleWhileRevalidate=<s>]` stored queries, kept in
 * the {@link Cluster} (Redis when configured, so every instance serves the same body and ETag).
 *
 * - Key: sha256 of the operation's text, its variables (keys sorted) and the request's credential
 *   headers (`Authorization`, `Cookie`; hashed, never stored), under `kv:cache:<hash>`.
 * - An entry is fresh for `maxAge` seconds, then served stale for `staleWhileRevalidate` seconds while
 *   one instance (lock `cache:<hash>`) re-runs the query in the background; it expires after both.
 * - Tags: a query is tagged with every object, interface and union type its selection set reads
 *   (`type:todo_Todo`) and the namespace of each root field (`source:todo`). A mutation through the
 *   gateway bumps the version counter of the tags it touches: the types it returns, the model its
 *   database root field names (`todo_deleteManyTodo` → `todo_Todo`), or, when neither is known, its
 *   source. An entry stores the tag versions read before its query ran and is served only while they
 *   are unchanged, so a write invalidates every instance at once and a query racing a write is never
 *   served afterwards.
 */
import { hash as oneShotHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import {
  TypeInfo, getNamedType, isCompositeType, visit, visitWithTypeInfo,
  type DocumentNode, type GraphQLSchema, type OperationDefinitionNode,
} from 'graphql'
import type { Cluster } from './index.js'

/** A cached response. */
export interface CachedResponse {
  body: string
  etag: string
  /** When the query ran (ms since the epoch, the storing instance's clock). */
  storedAt: number
}

/** What {@link ResponseCache.lookup} found. */
export interface CacheLookup {
  readonly key: string
  /** The local copy's view of the tags when the lookup began (see {@link ResponseCache.local}). */
  readonly seen: LocalSnapshot
  /** The tag versions read with the entry: stored with a new entry. */
  readonly versions: string
  readonly entry: CachedResponse | null
  /** `fresh`: within maxAge; `stale`: within staleWhileRevalidate after it; `miss`: nothing usable. */
  readonly state: 'fresh' | 'stale' | 'miss'
}

/** Cache settings of one operation (`# @cache`). */
export interface CachePolicy {
  maxAge: number
  staleWhileRevalidate?: number
}

const DATABASE_MUTATION = /^(?:createOne|createMany|updateOne|updateMany|upsertOne|deleteOne|deleteMany)([A-Z]\w*)$/

/**
 * The tags an operation reads (query) or touches (mutation), for a schema whose namespaced root fields
 * are `<ns>_<field>`. `namespaces`: the namespaces of the sources.
 */
export function operationTags(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, namespaces: readonly string[]): string[] {
  const tags = new Set<string>()
  const nsOf = (field: string): string => namespaces.find((ns) => ns && field.startsWith(`${ns}_`)) ?? ''
  const root = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType()
  const typeInfo = new TypeInfo(schema)
  const isMutation = operation.operation === 'mutation'
  let depth = 0
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field: {
        enter(node) {
          depth++
          const type = typeInfo.getType()
          const named = type ? getNamedType(type) : undefined
          const atRoot = depth === 1 && typeInfo.getParentType() === root
          if (atRoot) {
            const name = node.name.value
            const ns = nsOf(name)
            const bare = ns ? name.slice(ns.length + 1) : name
            if (isMutation) {
              const model = DATABASE_MUTATION.exec(bare)
              if (model) tags.add(`type:${ns ? `${ns}_` : ''}${model[1]}`)
              else if (named && isCompositeType(named)) tags.add(`type:${named.name}`)
              else tags.add(`source:${ns}`)
            } else {
              tags.add(`source:${ns}`)
            }
          }
          if (!isMutation && named && isCompositeType(named)) tags.add(`type:${named.name}`)
        },
        leave() {
          depth--
        },
      },
    }),
  )
  return [...tags].sort()
}

/** Entries of {@link ResponseCache}'s memos (parsed entries; keys per operation text); when full a memo starts again empty. */
const PARSED_MEMO_SIZE = 1000
/**
 * Longest variables JSON (characters) whose key is memoised, and longest stored entry (characters)
 * kept parsed: the variables are the client's, so without a bound 1000 memoised keys of 1 MiB bodies
 * would hold 1 GiB per operation. At most 1000 × 512 characters per operation text, and 1000 × 64 KiB
 * of parsed entries; longer ones are hashed or parsed on every request, as before the memos.
 */
const MAX_MEMO_VARIABLES_CHARS = 512
const MAX_MEMO_ENTRY_CHARS = 65_536

/**
 * The channel on which an instance tells the others which tags a mutation invalidated (a JSON array
 * of tags; anything else clears every local copy), published after the counters were bumped.
 */
export const INVALIDATION_CHANNEL = 'cache-invalidated'

/** Options of the in-process copy of {@link ResponseCache} (README "Caching", `pubsub.localCache*`). */
export interface LocalCacheOptions {
  /** Most bytes the copy holds (bodies, keys, ETags and a fixed 200 per entry); 0 turns it off. */
  maxBytes: number
  /** Longest time (ms) an entry is served from the copy without reading the shared store again. */
  recheckMs: number
}

/** Default {@link LocalCacheOptions} (`pubsub.localCacheBytes`, `pubsub.localCacheRecheckMs`). */
export const DEFAULT_LOCAL_CACHE: LocalCacheOptions = { maxBytes: 16 * 1024 * 1024, recheckMs: 1000 }

/** A fresh cached answer kept in the process, ready to send (see {@link ResponseCache.local}). */
export interface LocalEntry {
  /** The body as sent (UTF-8). */
  readonly body: Buffer
  readonly etag: string
  /** When the query ran (ms since the epoch). */
  readonly storedAt: number
  /** The end of its freshness (`storedAt + maxAge`): from then on the shared store decides (stale or miss). */
  readonly freshUntil: number
  /** When the shared store last confirmed it (ms since the epoch). */
  readonly confirmedAt: number
  /** Bytes counted against {@link LocalCacheOptions.maxBytes}. */
  readonly bytes: number
  readonly snapshot: LocalSnapshot
}

/** The local invalidation state of some tags at one moment: an entry stays valid while it is unchanged. */
export interface LocalSnapshot {
  readonly tags: readonly string[]
  readonly epochs: readonly number[]
  /** {@link Cluster.deliveryEpoch} then (-1: invalidations were not being received). */
  readonly delivery: number
  /** The instance's count of invalidations then (a shortcut: unchanged means every tag is unchanged). */
  invalidations: number
}

/** The response caches of this process per cluster: an invalidation reaches their local copies at once. */
const localCaches = new WeakMap<Cluster, Set<ResponseCache>>()

/** A local entry is at most this large (bytes of body): a bigger answer is only in the shared store. */
const MAX_LOCAL_ENTRY_BYTES = 1024 * 1024
/** Bytes counted per local entry beside its body, key and ETag (the objects and the map slot). */
const LOCAL_ENTRY_OVERHEAD = 200

/** The shared cache of one app. Every method catches cluster errors: a cache that is down is a miss. */
export class ResponseCache {
  /**
   * The last parsed entry per key, with the stored text it came from: a hit whose stored text is the
   * same string (in memory: the same string object, compared in O(1); from Redis: equal text) is not
   * parsed again. At most {@link PARSED_MEMO_SIZE} keys, entries of at most {@link MAX_MEMO_ENTRY_CHARS} characters.
   */
  private readonly parsed = new Map<string, { raw: string; entry: CachedResponse & { versions: string } }>()

  /**
   * Keys of requests without credentials, by operation text then variables' JSON: a hit computes no
   * hash. At most {@link PARSED_MEMO_SIZE} variables per text (then that text's map starts again);
   * requests with `Authorization` or `Cookie`, or variables longer than {@link MAX_MEMO_VARIABLES_CHARS},
   * are always hashed, so no credential is kept here and the memo's size does not follow the client's.
   */
  private readonly anonymousKeys = new Map<string, Map<string, string>>()

  /**
   * The in-process copy: fresh entries by key, in least recently stored order, ready to send without
   * a round trip (README "Caching"). An entry is served from here only while (1) it is fresh, (2) the
   * shared store confirmed it less than `recheckMs` ago, (3) no invalidation of one of its tags was
   * seen since (a local mutation bumps the tags before and after its counters are incremented; another
   * instance's arrives on {@link INVALIDATION_CHANNEL}), and (4) this instance has been receiving
   * invalidations without a break since (the {@link Cluster.deliveryEpoch} is the same).
   */
  private readonly localEntries = new Map<string, LocalEntry>()
  private localBytesHeld = 0
  /** Local invalidation count per tag (never decreases while the app runs). */
  private readonly tagEpochs = new Map<string, number>()
  private invalidations = 0
  /** Whether the invalidation channel's subscription is confirmed (memory: at once). */
  private listening = false
  private readonly stopListening: (() => void) | undefined
  readonly localOptions: LocalCacheOptions
  /** Hits answered from the local copy before the HTTP framework saw the request (http/operations-routes.ts): a count for tests and diagnostics. */
  earlyAnswers = 0

  constructor(private readonly cluster: Cluster, private readonly onError: (err: unknown) => void = () => undefined, local: LocalCacheOptions = DEFAULT_LOCAL_CACHE) {
    this.localOptions = local
    if (local.maxBytes <= 0) return
    let set = localCaches.get(cluster)
    if (!set) localCaches.set(cluster, (set = new Set()))
    set.add(this)
    if (cluster.kind === 'memory') {
      this.listening = true
      return
    }
    this.stopListening = cluster.subscribe(INVALIDATION_CHANNEL, (message) => this.invalidated(message))
    void cluster.subscribed(INVALIDATION_CHANNEL).then(() => (this.listening = true))
  }

  /** Bytes and entries held by the in-process copy. */
  get localSize(): { bytes: number; entries: number } {
    return { bytes: this.localBytesHeld, entries: this.localEntries.size }
  }

  /** Stops receiving invalidations and drops the in-process copy (the app closes). */
  close(): void {
    this.stopListening?.()
    localCaches.get(this.cluster)?.delete(this)
    this.localEntries.clear()
    this.localBytesHeld = 0
    this.listening = false
  }

  /** A message of {@link INVALIDATION_CHANNEL}: the tags to bump, or (anything but an array of strings) all. */
  private invalidated(message: string): void {
    let tags: unknown
    try {
      tags = JSON.parse(message)
    } catch {
      tags = null
    }
    if (Array.isArray(tags) && tags.every((t) => typeof t === 'string')) this.bump(tags as string[])
    else this.clearLocal()
  }

  /** Records an invalidation of `tags`: local entries that read one of them are no longer served. */
  bump(tags: readonly string[]): void {
    for (const t of tags) this.tagEpochs.set(t, (this.tagEpochs.get(t) ?? 0) + 1)
    this.invalidations++
  }

  /** Drops every local entry. */
  clearLocal(): void {
    this.localEntries.clear()
    this.localBytesHeld = 0
    this.invalidations++
  }

  /** The local state of `tags` now, taken before the shared store is read. */
  private snapshot(tags: readonly string[]): LocalSnapshot {
    const epochs: number[] = []
    for (const t of tags) epochs.push(this.tagEpochs.get(t) ?? 0)
    return { tags, epochs, delivery: this.listening ? this.cluster.deliveryEpoch() : -1, invalidations: this.invalidations }
  }

  /** Whether nothing `snap` depends on changed since it was taken. */
  private unchanged(snap: LocalSnapshot): boolean {
    if (snap.delivery < 0 || snap.delivery !== this.cluster.deliveryEpoch()) return false
    if (snap.invalidations === this.invalidations) return true
    for (let i = 0; i < snap.tags.length; i++) if ((this.tagEpochs.get(snap.tags[i]!) ?? 0) !== snap.epochs[i]) return false
    snap.invalidations = this.invalidations
    return true
  }

  /**
   * The local copy of a fresh entry under `key` (from {@link keyFor}), when it may be served without
   * reading the shared store (see {@link localEntries}); undefined otherwise (then {@link lookup}).
   */
  local(key: string, now: number): LocalEntry | undefined {
    const e = this.localEntries.get(key)
    if (e === undefined) return undefined
    if (now < e.freshUntil && now - e.confirmedAt < this.localOptions.recheckMs && this.unchanged(e.snapshot)) return e
    this.localEntries.delete(key)
    this.localBytesHeld -= e.bytes
    return undefined
  }

  /** Keeps a fresh entry confirmed by the shared store in the local copy, unless something changed since `snap`. */
  private keepLocal(key: string, entry: CachedResponse, policy: CachePolicy, snap: LocalSnapshot): void {
    if (this.localOptions.maxBytes <= 0 || !this.unchanged(snap)) return
    const freshUntil = entry.storedAt + policy.maxAge * 1000
    const now = Date.now()
    if (freshUntil <= now || entry.body.length > MAX_LOCAL_ENTRY_BYTES) return
    const old = this.localEntries.get(key)
    // A recheck of the same stored answer keeps its bytes.
    const body = old && old.storedAt === entry.storedAt && old.etag === entry.etag ? old.body : Buffer.from(entry.body)
    const bytes = body.length + key.length + entry.etag.length + LOCAL_ENTRY_OVERHEAD
    if (bytes > this.localOptions.maxBytes) return
    if (old) {
      this.localEntries.delete(key)
      this.localBytesHeld -= old.bytes
    }
    // The oldest stored go first.
    for (const [k, e] of this.localEntries) {
      if (this.localBytesHeld + bytes <= this.localOptions.maxBytes) break
      this.localEntries.delete(k)
      this.localBytesHeld -= e.bytes
    }
    this.localEntries.set(key, { body, etag: entry.etag, storedAt: entry.storedAt, freshUntil, confirmedAt: now, bytes, snapshot: snap })
    this.localBytesHeld += bytes
  }

  /** The key of (operation text, variables) for a request without `Authorization` and `Cookie`. */
  keyFor(text: string, variables: unknown): string {
    return this.keyOf(text, variables, NO_HEADERS)
  }

  /** `cache:<sha256 (base64url) of text \0 variables (keys sorted) \0 Authorization \0 Cookie>`. */
  private keyOf(text: string, variables: unknown, headers: IncomingHttpHeaders): string {
    const vars = stableJson(variables)
    const anonymous = headers.authorization === undefined && headers.cookie === undefined && vars.length <= MAX_MEMO_VARIABLES_CHARS
    let byVars: Map<string, string> | undefined
    if (anonymous) {
      byVars = this.anonymousKeys.get(text)
      const known = byVars?.get(vars)
      if (known !== undefined) return known
    }
    // One native call over the joined parts (the same digest as updating with each part in turn).
    const key = `cache:${oneShotHash('sha256', `${text}\0${vars}\0${String(headers.authorization ?? '')}\0${String(headers.cookie ?? '')}`, 'base64url')}`
    if (anonymous) {
      if (!byVars) {
        if (this.anonymousKeys.size >= PARSED_MEMO_SIZE) this.anonymousKeys.clear()
        this.anonymousKeys.set(text, (byVars = new Map()))
      }
      if (byVars.size >= PARSED_MEMO_SIZE) byVars.clear()
      byVars.set(vars, key)
    }
    return key
  }

  /**
   * Reads the entry of (operation text, variables, credentials) and the versions of `tags` in one round trip.
   * @returns null when the cluster failed (treat as a miss, store nothing).
   */
  async lookup(text: string, variables: unknown, headers: IncomingHttpHeaders, tags: readonly string[], policy: CachePolicy): Promise<CacheLookup | null> {
    const key = this.keyOf(text, variables, headers)
    const seen = this.snapshot(tags)
    const keys = [`kv:${key}`]
    for (const t of tags) keys.push(`counter:tag:${t}`)
    let values: (string | null)[]
    try {
      values = await this.cluster.mget(keys)
    } catch (err) {
      this.onError(err)
      return null
    }
    let versions = ''
    for (let i = 1; i < values.length; i++) versions += `${i > 1 ? ',' : ''}${values[i] ?? '0'}`
    const raw = values[0]
    let entry: (CachedResponse & { versions: string }) | null = null
    if (raw) {
      const memo = this.parsed.get(key)
      if (memo && memo.raw === raw) entry = memo.entry
      else {
        try {
          entry = JSON.parse(raw) as CachedResponse & { versions: string }
          if (raw.length <= MAX_MEMO_ENTRY_CHARS) {
            if (this.parsed.size >= PARSED_MEMO_SIZE) this.parsed.clear()
            this.parsed.set(key, { raw, entry })
          }
        } catch {
          entry = null
        }
      }
    }
    if (!entry || entry.versions !== versions) return { key, seen, versions, entry: null, state: 'miss' }
    const age = Date.now() - entry.storedAt
    const state = age < policy.maxAge * 1000 ? 'fresh' : age < (policy.maxAge + (policy.staleWhileRevalidate ?? 0)) * 1000 ? 'stale' : 'miss'
    if (state === 'fresh') this.keepLocal(key, entry, policy, seen)
    return { key, seen, versions, entry: state === 'miss' ? null : entry, state }
  }

  /** Stores a body under a lookup's key with the versions read before its query ran. Never throws. */
  async store(lookup: CacheLookup, body: string, etag: string, policy: CachePolicy): Promise<void> {
    const ttlMs = (policy.maxAge + (policy.staleWhileRevalidate ?? 0)) * 1000
    if (ttlMs <= 0) return
    const entry = { body, etag, storedAt: Date.now(), versions: lookup.versions }
    try {
      await this.cluster.set(lookup.key, JSON.stringify(entry), ttlMs)
    } catch (err) {
      this.onError(err)
      return
    }
    // The versions were read before the query ran: an invalidation since then keeps it out of the copy.
    this.keepLocal(lookup.key, entry, policy, lookup.seen)
  }

  /**
   * Takes the revalidation lock of a stale entry (for 10 s at most).
   * @returns true when this instance should re-run the query.
   */
  async claimRevalidation(lookup: CacheLookup): Promise<boolean> {
    try {
      return await this.cluster.acquire(lookup.key, 10_000)
    } catch (err) {
      this.onError(err)
      return false
    }
  }

  /** Releases the revalidation lock. Never throws. */
  async endRevalidation(lookup: CacheLookup): Promise<void> {
    await this.cluster.release(lookup.key).catch(this.onError)
  }

  /**
   * Invalidates every entry tagged with one of `tags`, on every instance.
   * @throws when the cluster does not answer (the caller decides whether the write still succeeds).
   */
  invalidate(tags: readonly string[]): Promise<void> {
    return invalidateTags(this.cluster, tags)
  }
}

/**
 * Invalidates the cached responses tagged with one of `tags` (from {@link operationTags} of a mutation), on every instance.
 * @throws when the cluster does not answer.
 */
export async function invalidateTags(cluster: Cluster, tags: readonly string[]): Promise<void> {
  const locals = localCaches.get(cluster)
  // The local copies stop serving these tags now, and again once the counters moved: an entry whose
  // store read raced the increments is not kept.
  if (locals) for (const c of locals) c.bump(tags)
  try {
    await cluster.incrAll(tags.map((t) => `tag:${t}`))
  } finally {
    if (locals) for (const c of locals) c.bump(tags)
  }
  // The other instances' copies: sent once the counters moved (a copy that misses it rechecks within recheckMs).
  if (cluster.kind !== 'memory' && tags.length) await cluster.publish(INVALIDATION_CHANNEL, JSON.stringify(tags))
}

const NO_HEADERS: IncomingHttpHeaders = {}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` share an entry. */
export function stableJson(value: unknown): string {
  // The common case, an object of scalars with one key (or none): JSON.stringify alone is stable.
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    let n = 0
    let flat = true
    for (const k in value as Record<string, unknown>) {
      n++
      const v = (value as Record<string, unknown>)[k]
      if (v !== null && typeof v === 'object') flat = false
    }
    if (n <= 1 && flat) return JSON.stringify(value)
  }
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  ) ?? 'null'
}
