/**
 * The change feed of one database source (README "Database change streams"): whatever detects row
 * changes (PostgreSQL LISTEN/NOTIFY or logical replication, a changelog table polled on SQLite and MySQL/MariaDB) publishes
 * {@link RowChange}s here; the subscriptions of the source (subscriptions.ts) listen per table.
 */

/** `INSERT`, `UPDATE` or `DELETE`. */
export type ChangeOp = 'INSERT' | 'UPDATE' | 'DELETE'

/** One changed row, as the engine reports it. Values are keyed by SQL column name. */
export interface RowChange {
  /** The table's SQL name. */
  table: string
  op: ChangeOp
  /** The row's primary key after the change (before it, for a DELETE). */
  key: Record<string, unknown>
  /** UPDATE and DELETE: the primary key before the change. */
  oldKey?: Record<string, unknown>
  /**
   * DELETE: every column of the deleted row, when the engine reported it (PostgreSQL leaves it out
   * of a notification that would pass the 8000-byte NOTIFY limit). A row filter or `where` is
   * evaluated on it; without it a filtered subscriber does not get the event (fail closed).
   */
  old?: Record<string, unknown>
}

/** A listener of one table's changes: gets the changes of one batch (one poll, one burst of notifications) together. */
export type ChangeListener = (changes: RowChange[]) => void

/** Routes changes to the listeners of their table. */
export class ChangeFeed {
  private readonly listeners = new Map<string, Set<ChangeListener>>()
  /** Called to look for changes at once (after the gateway's own writes; see `poke`). */
  onPoke: () => void = () => {}
  /** Called after each new listener (PostgreSQL logical replication starts reading at the first). */
  onListen: () => void = () => {}

  /**
   * Listens to the changes of `table`.
   * @returns a function that stops listening
   */
  listen(table: string, listener: ChangeListener): () => void {
    let set = this.listeners.get(table)
    if (!set) this.listeners.set(table, (set = new Set()))
    set.add(listener)
    this.onListen()
    return () => {
      set.delete(listener)
      if (set.size === 0) this.listeners.delete(table)
    }
  }

  /** Number of listeners (all tables). */
  get size(): number {
    let n = 0
    for (const s of this.listeners.values()) n += s.size
    return n
  }

  /** Delivers changes, grouped by table, to their listeners. A listener that throws is skipped. */
  publish(changes: readonly RowChange[]): void {
    const byTable = new Map<string, RowChange[]>()
    for (const c of changes) {
      if (!this.listeners.has(c.table)) continue
      let l = byTable.get(c.table)
      if (!l) byTable.set(c.table, (l = []))
      l.push(c)
    }
    for (const [table, list] of byTable) {
      for (const listener of [...(this.listeners.get(table) ?? [])]) {
        try {
          listener(list)
        } catch {
          // a listener's failure is its own subscription's; the others still get the changes
        }
      }
    }
  }

  /** The gateway wrote to the database: look for changes now rather than at the next poll. */
  poke(): void {
    this.onPoke()
  }
}
