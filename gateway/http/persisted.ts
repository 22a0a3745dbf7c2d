/**
 * The allowlist of persisted operations: every stored operation, found by the sha256 (hex) of its
 * file's text, of its printed document, or by its name. In production `/graphql` and the WebSocket
 * endpoint run only these (cf. Apollo persisted queries `extensions.persistedQuery.sha256Hash`, and
 * the GraphQL-over-HTTP `documentId` proposal). With `graphql.apq` on, it also holds the documents
 * clients registered by automatic persisted queries (a bounded LRU per instance, not shared in a cluster).
 */
import { createHash } from 'node:crypto'
import { print, type DocumentNode } from 'graphql'
import type { GatewayHolder } from './gateway-holder.js'

/** sha256 of a string, hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** Lookups into the stored operations of the gateway currently served; rebuilt after every swap. */
export class PersistedOperations {
  private byKey = new Map<string, string>()
  /** The texts whose sha256 is in {@link byKey}: each stored operation's source and printed document. */
  private texts = new Set<string>()
  private version = -1

  constructor(private readonly holder: GatewayHolder) {}

  private index(): Map<string, string> {
    if (this.version !== this.holder.version) {
      this.byKey = new Map()
      this.texts = new Set()
      for (const op of this.holder.current.operations.values()) {
        if (op.stored.internal || op.stored.language !== 'graphql') continue // callable from code only; TypeScript operations are no GraphQL documents
        const printed = print(op.stored.document)
        this.texts.add(op.stored.source).add(printed)
        this.byKey.set(sha256(op.stored.source), op.stored.source)
        this.byKey.set(sha256(printed), op.stored.source)
        this.byKey.set(op.name, op.stored.source)
      }
      this.version = this.holder.version
    }
    return this.byKey
  }

  /** Documents registered by automatic persisted queries: sha256 (hex) → text, least recently used first. */
  private registered = new Map<string, string>()

  /**
   * The stored source for a hash (`sha256:` prefix allowed) or a name, else the document registered
   * under that hash by {@link register} (while `graphql.apq` is on); undefined when unknown.
   */
  source(key: string): string | undefined {
    const hash = key.replace(/^sha256:/, '')
    const stored = this.index().get(hash)
    if (stored !== undefined) return stored
    if (!this.holder.current.config.graphql.apq) return undefined
    const text = this.registered.get(hash)
    if (text !== undefined) {
      this.registered.delete(hash)
      this.registered.set(hash, text)
    }
    return text
  }

  /**
   * Registers `query` under its sha256 (Apollo automatic persisted queries), in a per-instance LRU
   * of at most `graphql.apqMaxEntries` documents; a document over `graphql.apqMaxDocumentBytes`
   * (UTF-8) is not kept. The caller has checked that `hash` is `sha256(query)` and that the
   * document is valid. Does nothing while `graphql.apq` is off.
   */
  register(hash: string, query: string): void {
    const { apq, apqMaxEntries, apqMaxDocumentBytes } = this.holder.current.config.graphql
    if (!apq || Buffer.byteLength(query) > apqMaxDocumentBytes) return
    this.registered.delete(hash)
    while (this.registered.size >= apqMaxEntries) this.registered.delete(this.registered.keys().next().value as string)
    this.registered.set(hash, query)
  }

  /** How many documents automatic persisted queries hold now. */
  get registeredCount(): number {
    return this.registered.size
  }

  /** True when `query` is byte for byte the text of a stored operation. */
  allowsText(query: string): boolean {
    // A set of the texts themselves: no sha256 per request (the index holds the same texts' hashes).
    this.index()
    return this.texts.has(query)
  }

  /** True when the printed form of `document` is that of a stored operation. */
  allowsDocument(document: DocumentNode): boolean {
    return this.index().has(sha256(print(document)))
  }

  /** True when `/graphql` must refuse anything but persisted operations. */
  get enforced(): boolean {
    const { config } = this.holder.current
    return config.mode === 'production' && !config.graphql.allowArbitraryOperationsInProduction
  }
}
