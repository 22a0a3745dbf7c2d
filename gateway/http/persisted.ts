/**
 * The allowlist of persisted operations: every stored operation, found by the sha256 (hex) of its
 * file's text, of its printed document, or by its name. In production `/graphql` and the WebSocket
 * endpoint run only these (cf. Apollo persisted queries `extensions.persistedQuery.sha256Hash`, and
 * the GraphQL-over-HTTP `documentId` proposal).
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
  private version = -1

  constructor(private readonly holder: GatewayHolder) {}

  private index(): Map<string, string> {
    if (this.version !== this.holder.version) {
      this.byKey = new Map()
      for (const op of this.holder.current.operations.values()) {
        if (op.stored.internal) continue // callable from code only
        this.byKey.set(sha256(op.stored.source), op.stored.source)
        this.byKey.set(sha256(print(op.stored.document)), op.stored.source)
        this.byKey.set(op.name, op.stored.source)
      }
      this.version = this.holder.version
    }
    return this.byKey
  }

  /** The stored source for a hash (`sha256:` prefix allowed) or a name; undefined when unknown. */
  source(key: string): string | undefined {
    return this.index().get(key.replace(/^sha256:/, ''))
  }

  /** True when `query` is byte for byte the text of a stored operation. */
  allowsText(query: string): boolean {
    return this.index().has(sha256(query))
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
