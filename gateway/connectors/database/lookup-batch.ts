/**
 * Batched lookups (issue 30; README "Batched lookups", docs/architecture.md §4): concurrent
 * `findUnique<Model>` lookups of the same statement, on PostgreSQL, are sent as ONE statement and
 * its rows split back, as Prisma's dataloader batches `findUnique` calls of one shape.
 *
 * Who may share a batch: lookups whose batched statement text is the same (same model, same
 * selection set, same key column: direct.ts compiles it only for a direct plan — never a row
 * filter, a request transaction or a write — whose `where` is one single-column unique key bound to
 * a non-null value) and whose other bound values are equal (their JSON text). All of them run on a
 * pooled connection of the source with the gateway's own role, as their own statements would.
 *
 * When: a lookup waits for the `setImmediate` after the event-loop turn that made it (the requests
 * whose bytes arrived in the same poll phase reach their lookup within it; a `process.nextTick` or
 * microtask would only gather the lookups of one request). A batch of {@link LookupBatcher.maxKeys}
 * lookups is sent at once, without waiting. A batch of one runs the lookup's own statement,
 * exactly as without batching.
 *
 * The statement: `SELECT __k.i::int4, __b.j FROM unnest($1::int4[]) WITH ORDINALITY AS __k(v, i)
 * CROSS JOIN LATERAL (<the lookup's own statement, its key compared with __k.v>) AS __b` — one text
 * (one prepared statement) for any batch size. Duplicate keys are sent once; rows come back with
 * their key's position in the array, so a key matches exactly the rows its own `= $1` would match
 * (the database's equality, not JavaScript's); a key without a row answers null as before.
 *
 * Per request: a client that goes away leaves the batch at once with `TRB_ERR_DB_CANCELLED`; the
 * shared statement is cancelled on the server only when every member has gone. The statement's own
 * failure (`TRB_ERR_DB_TIMEOUT`, `TRB_ERR_DB_UNAVAILABLE`, a driver error) reaches every member
 * still waiting, as the same error their own statement would have raised; a data exception
 * (SQLSTATE class 22, which one member's key or row causes) makes each member run its own statement.
 */
import { DbCancelledError } from '../../errors.js'
import type { CancelWatch, Db } from './compiler/db.js'

/** Default most lookups (keys) per batched statement. */
export const DEFAULT_LOOKUP_BATCH_SIZE = 100

/** One lookup waiting for its batch. */
interface Member {
  key: string | number
  cancel: CancelWatch | undefined
  /** Runs the lookup's own (unbatched) statement: a batch of one. */
  solo: () => Promise<unknown[]>
  resolve(rows: unknown[]): void
  reject(err: unknown): void
  /** Answered (or cancelled) already. */
  settled: boolean
}

interface Batch {
  db: Db
  text: string
  others: unknown[]
  members: Member[]
}

/** Gathers concurrent lookups of one statement into batches (one instance per database source). */
export class LookupBatcher {
  private readonly pending = new Map<string, Batch>()
  private scheduled = false

  /** @param maxKeys most lookups per statement; 1 turns batching off */
  constructor(readonly maxKeys: number) {}

  /** False when batching is off (`lookupBatchSize: 1`). */
  get enabled(): boolean {
    return this.maxKeys > 1
  }

  /**
   * Adds one lookup to the batch of its statement.
   * @param db the source's statement runner
   * @param text the batched statement (PostgreSQL, `$1` the key array, `$2…` the other values)
   * @param others the values of `$2…`, the same for every member of a batch
   * @param key the lookup's key value, as bound for the column
   * @param cancel the client's disconnect (see compiler/db.ts `cancelWatchOf`)
   * @param solo runs the lookup's own statement (when it is alone in its batch)
   * @returns the lookup's JSON rows (none when its key has no row)
   * @throws (rejects) what the statement raised, or `TRB_ERR_DB_CANCELLED` for a client gone
   */
  lookup(db: Db, text: string, others: unknown[], key: string | number, cancel: CancelWatch | undefined, solo: () => Promise<unknown[]>): Promise<unknown[]> {
    let group = text
    if (others.length > 0) {
      try {
        group = `${text}\u0000${JSON.stringify(others)}`
      } catch {
        return solo() // a value JSON cannot compare (e.g. a BigInt): not batched
      }
    }
    return new Promise<unknown[]>((resolve, reject) => {
      let batch = this.pending.get(group)
      if (!batch) {
        batch = { db, text, others, members: [] }
        this.pending.set(group, batch)
      }
      batch.members.push({ key, cancel, solo, resolve, reject, settled: false })
      if (batch.members.length >= this.maxKeys) {
        this.pending.delete(group)
        this.send(batch)
      } else if (!this.scheduled) {
        this.scheduled = true
        setImmediate(this.flush)
      }
    })
  }

  private readonly flush = (): void => {
    this.scheduled = false
    const batches = [...this.pending.values()]
    this.pending.clear()
    for (const b of batches) this.send(b)
  }

  private send(batch: Batch): void {
    const members = batch.members
    if (members.length === 1) {
      const m = members[0]!
      m.solo().then(m.resolve, m.reject)
      return
    }
    const positions = new Map<string | number, number>()
    const keys: (string | number)[] = []
    for (const m of members) {
      if (positions.has(m.key)) continue
      keys.push(m.key)
      positions.set(m.key, keys.length) // ORDINALITY counts from 1
    }
    batch.db.arrays(batch.text, [keys, ...batch.others], batchCancel(members)).then(
      (rows) => {
        const byPosition = new Array<unknown[] | undefined>(keys.length + 1)
        for (const r of rows) (byPosition[r[0] as number] ??= []).push(r[1])
        for (const m of members) {
          if (m.settled) continue
          m.settled = true
          m.resolve(byPosition[positions.get(m.key)!] ?? [])
        }
      },
      (err: unknown) => {
        // A data exception (SQLSTATE class 22: a key the column type refuses, such as a malformed
        // uuid, or a stored value the direct JSON refuses to print) belongs to one member's key or
        // row: each member runs its own statement, and gets its own answer or error as without
        // batching (nothing was written: a read). Any other failure (a timeout, the database gone)
        // is the statement's: every member gets it, the statement is not run again.
        const own = dataException(err)
        for (const m of members) {
          if (m.settled) continue
          m.settled = true
          if (own) m.solo().then(m.resolve, m.reject)
          else m.reject(err)
        }
      },
    )
  }
}

/** True for a PostgreSQL data exception (SQLSTATE class 22). */
function dataException(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('22')
}

/**
 * The disconnect watch of a batch's statement: a member whose client goes away is answered
 * `TRB_ERR_DB_CANCELLED` at once; the statement itself is cancelled when every member has gone
 * (a member without a watch never goes).
 */
function batchCancel(members: Member[]): CancelWatch {
  return (fire) => {
    let live = members.length
    const offs: (() => void)[] = []
    for (const m of members) {
      if (!m.cancel) continue
      offs.push(
        m.cancel(() => {
          if (m.settled) return
          m.settled = true
          m.reject(new DbCancelledError())
          if (--live === 0) fire()
        }),
      )
    }
    return () => {
      for (const off of offs) off()
    }
  }
}
