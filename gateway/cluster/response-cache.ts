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

  constructor(private readonly cluster: Cluster, private readonly onError: (err: unknown) => void = () => undefined) {}

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
    if (!entry || entry.versions !== versions) return { key, versions, entry: null, state: 'miss' }
    const age = Date.now() - entry.storedAt
    const state = age < policy.maxAge * 1000 ? 'fresh' : age < (policy.maxAge + (policy.staleWhileRevalidate ?? 0)) * 1000 ? 'stale' : 'miss'
    return { key, versions, entry: state === 'miss' ? null : entry, state }
  }

  /** Stores a body under a lookup's key with the versions read before its query ran. Never throws. */
  async store(lookup: CacheLookup, body: string, etag: string, policy: CachePolicy): Promise<void> {
    const ttlMs = (policy.maxAge + (policy.staleWhileRevalidate ?? 0)) * 1000
    if (ttlMs <= 0) return
    try {
      await this.cluster.set(lookup.key, JSON.stringify({ body, etag, storedAt: Date.now(), versions: lookup.versions }), ttlMs)
    } catch (err) {
      this.onError(err)
    }
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
  await cluster.incrAll(tags.map((t) => `tag:${t}`))
}

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
