/**
 * MySQL/MariaDB change capture from the binary log (README "Database change streams",
 * `changes: { method: 'binlog' | 'triggers' | 'auto' }`).
 *
 * The gateway connects as a replica (COM_BINLOG_DUMP, with the optional package `@vlasky/zongji`,
 * loaded only when a config reads the binlog) and turns the row events of the watched tables
 * (TABLE_MAP, then WRITE_ROWS / UPDATE_ROWS / DELETE_ROWS, which MySQL and MariaDB write for
 * `binlog_format=ROW`) into {@link RowChange}s: the primary key (after the change; before it for a
 * DELETE), the old key of an UPDATE, the old row of a DELETE (BLOB columns left out, as the changelog
 * triggers do). The subscriptions re-read each key through the read compiler, so row filters,
 * `where` and permissions apply as for the other methods.
 *
 * Position: the reader starts at the current end of the binlog (changes made while the gateway was
 * not running are not sent: nobody was subscribed to them). While it runs it keeps the position of
 * the last committed transaction it read (the GTID position on MariaDB, else binlog file + offset),
 * and a lost connection (server restart, `KILL`, network) is re-opened from there with exponential
 * backoff (100 ms to `maxReconnectDelayMs`, ±20 % jitter): changes made during the outage are read
 * after the reconnect, a transaction cut in the middle read again whole (at least once). A position
 * the server no longer has (binlogs purged meanwhile) restarts at the end, with a warning.
 *
 * `auto` reads the binlog when `log_bin` is ON, `binlog_format` is ROW and the user may replicate
 * (REPLICATION SLAVE, and REPLICATION CLIENT / BINLOG MONITOR for `SHOW BINARY LOGS`), else falls
 * back to the changelog triggers (engines.ts).
 */
import { DbChangesUnavailableError } from '../../../errors.js'
import { importOptional } from '../../../optional-package.js'
import type { Model } from '../compiler/registry.js'
import { backoff, startChangelog, type EngineOptions, type EngineReader } from './engines.js'
import type { RowChange } from './feed.js'

/** How a MySQL/MariaDB source captures changes: the binary log, the changelog triggers, or whichever works (`auto`). */
export type MysqlChangeMethod = 'auto' | 'binlog' | 'triggers'

/** What the binlog reader needs besides {@link EngineOptions}. */
export interface BinlogOptions extends EngineOptions {
  /** The replica server id the gateway announces (unique among the server's replicas). */
  serverId: number
}

/** The part of `@vlasky/zongji` used here. */
interface ZongJiEvent {
  getEventName(): string
  tableId?: number
  tableMap?: Record<number, { parentSchema: string; tableName: string }>
  rows?: Record<string, unknown>[] | { before: Record<string, unknown>; after: Record<string, unknown> }[]
}
interface ZongJi {
  options: { filename?: string; position?: number }
  gtidSet: string | undefined
  on(event: 'binlog', fn: (e: ZongJiEvent) => void): void
  on(event: 'error', fn: (err: Error) => void): void
  on(event: 'ready' | 'stopped', fn: () => void): void
  start(options: Record<string, unknown>): void
  stop(): void
}
type ZongJiCtor = new (dsn: Record<string, unknown>) => ZongJi

/**
 * Why this server cannot be read through its binlog by this user, or null when it can: `log_bin`
 * OFF, `binlog_format` other than ROW, no REPLICATION SLAVE (REPLICA) privilege, no REPLICATION
 * CLIENT (BINLOG MONITOR) privilege. Privileges are read from `SHOW GRANTS` (roles not followed).
 */
export async function binlogMissing(o: Pick<EngineOptions, 'knex'>): Promise<string | null> {
  const [vars] = (await o.knex.raw('SELECT @@log_bin AS log_bin, @@binlog_format AS fmt')) as [{ log_bin: unknown; fmt: unknown }[]]
  const missing: string[] = []
  const on = vars[0]?.log_bin
  if (!(on === 1 || on === '1' || on === 'ON')) missing.push('log_bin is OFF')
  if (String(vars[0]?.fmt ?? '').toUpperCase() !== 'ROW') missing.push(`binlog_format is ${String(vars[0]?.fmt ?? '?')} (ROW is needed)`)
  const [grants] = (await o.knex.raw('SHOW GRANTS')) as [Record<string, string>[]]
  const text = grants.map((g) => Object.values(g)[0] ?? '').filter((g) => /\bON \*\.\*/i.test(g)).join('\n').toUpperCase()
  const all = text.includes('ALL PRIVILEGES')
  if (!all && !/REPLICATION (SLAVE|REPLICA)\b/.test(text)) missing.push('the user has no REPLICATION SLAVE privilege')
  if (!all && !/REPLICATION CLIENT|BINLOG MONITOR|SUPER/.test(text)) missing.push('the user has no REPLICATION CLIENT (BINLOG MONITOR) privilege')
  return missing.length ? missing.join(', ') : null
}

/**
 * Starts the change capture of a MySQL/MariaDB source by `method`: `binlog` (fails when the binlog
 * cannot be read), `triggers` (the changelog of engines.ts), `auto` (binlog when
 * {@link binlogMissing} finds nothing missing, else the triggers).
 * @returns the reader and the method in use
 * @throws DbChangesUnavailableError naming what is missing (binlog settings or privileges, triggers)
 */
export async function startMysqlChanges(o: BinlogOptions, method: MysqlChangeMethod): Promise<{ reader: EngineReader; method: 'binlog' | 'triggers' }> {
  if (method === 'triggers') return { reader: await startChangelog(o), method: 'triggers' }
  const missing = await binlogMissing(o)
  if (missing === null) return { reader: await startBinlog(o), method: 'binlog' }
  if (method === 'binlog') throw new DbChangesUnavailableError(o.sourceName, `the binlog cannot be read: ${missing}`)
  try {
    return { reader: await startChangelog(o), method: 'triggers' }
  } catch (err) {
    if (!(err instanceof DbChangesUnavailableError)) throw err
    const why = err.message.replace(/^Data source .*? cannot stream changes: /, '')
    throw new DbChangesUnavailableError(o.sourceName, `the binlog cannot be read (${missing}), and ${why}`)
  }
}

/** The key columns' values of `row` (SQL names). */
function pick(m: Model, row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of m.primaryKey) {
    const c = m.fieldMap.get(f)!.column
    out[c] = row[c]
  }
  return out
}

/** How long (seconds) the visibility check of a binlog transaction waits for a row lock held by another transaction. */
const VISIBILITY_LOCK_WAIT_S = 5
/** Keys per locking read of the visibility check. */
const VISIBILITY_KEYS_PER_READ = 500
/** A transaction's changes are handed on in parts of at most this many (README "Binlog visibility"). */
const HANDOVER_PART = 500

/** How long the first connection may take before the start fails, in milliseconds. */
const FIRST_CONNECT_TIMEOUT_MS = 10_000

/**
 * Reads the binlog of the source's database from its current end, re-opening a lost connection
 * from the last position read.
 * @throws DbChangesUnavailableError when the first connection fails (privileges, network)
 * @throws PackageMissingError when `@vlasky/zongji` is not installed
 */
export async function startBinlog(o: BinlogOptions): Promise<EngineReader> {
  const { default: ZongJiClass } = await importOptional<{ default: ZongJiCtor }>('@vlasky/zongji', `the binlog change stream of source '${o.sourceName}'`)
  const [dbRows] = (await o.knex.raw('SELECT DATABASE() AS db')) as [{ db: string | null }[]]
  const database = dbRows[0]?.db
  if (!database) throw new DbChangesUnavailableError(o.sourceName, 'the URL names no database')
  const models = new Map(o.models.map((m) => [m.table, m]))
  const conn = (o.knex.client as { config: { connection: Record<string, unknown> } }).config.connection
  const dsn = { ...conn, dateStrings: true, supportBigNumbers: true, bigNumberStrings: true }
  /** Where a reconnect resumes: a MariaDB GTID position, else binlog file + offset; undefined: the end. */
  let resume: { gtidSet?: string; filename?: string; position?: number } | undefined
  let z: ZongJi | undefined
  let closed = false
  let problem: string | null = 'connecting'
  let attempt = 0
  let timer: NodeJS.Timeout | undefined
  let first: { resolve(): void; reject(err: Error): void } | undefined

  const toChanges = (e: ZongJiEvent): RowChange[] => {
    const t = e.tableMap?.[e.tableId ?? -1]
    if (!t || t.parentSchema !== database) return []
    const m = models.get(t.tableName)
    if (!m) return []
    const out: RowChange[] = []
    const fits = (v: unknown): boolean => Buffer.byteLength(JSON.stringify(v) ?? '') <= o.maxPayloadBytes
    const name = e.getEventName()
    for (const r of e.rows ?? []) {
      let c: RowChange
      if (name === 'updaterows') {
        const u = r as { before: Record<string, unknown>; after: Record<string, unknown> }
        c = { table: m.table, op: 'UPDATE', key: pick(m, u.after), oldKey: pick(m, u.before) }
      } else if (name === 'writerows') {
        c = { table: m.table, op: 'INSERT', key: pick(m, r as Record<string, unknown>) }
      } else {
        const row = r as Record<string, unknown>
        const old: Record<string, unknown> = {}
        // BLOB columns are left out of the old row, as the changelog triggers do.
        for (const f of m.fields) if (f.scalar !== 'Bytes') old[f.column] = row[f.column]
        c = { table: m.table, op: 'DELETE', key: pick(m, row), oldKey: pick(m, row), ...(fits(old) ? { old } : {}) }
      }
      if (!fits(c.key) || (c.oldKey && !fits(c.oldKey))) o.reject(`binlog row key larger than ${o.maxPayloadBytes} bytes`, { table: m.table })
      else out.push(c)
    }
    return out
  }

  /** Row changes of the transaction being read, handed on at its end (XID or COMMIT). */
  let pending: RowChange[] = []
  /** The hand-overs in binlog order: a transaction's changes are published after the previous one's. */
  let handing: Promise<void> = Promise.resolve()
  let lockReadWarned = false

  /**
   * Resolves once the changes of a transaction read from the binlog are visible to other sessions.
   * The server writes a transaction to the binlog before InnoDB commits it: a subscription that
   * re-read a key at once could read the row as it was before (an UPDATE seen with its old values).
   * A locking read of the changed keys (`LOCK IN SHARE MODE`, autocommit) waits for the writer's
   * row locks, which InnoDB releases once the commit is visible; a lock held past
   * {@link VISIBILITY_LOCK_WAIT_S} seconds (another transaction on the same rows) or a refused locking
   * read is logged and the changes are handed on anyway.
   */
  const visible = async (batch: readonly RowChange[]): Promise<void> => {
    const byTable = new Map<string, Record<string, unknown>[]>()
    for (const c of batch) {
      let keys = byTable.get(c.table)
      if (!keys) byTable.set(c.table, (keys = []))
      keys.push(c.key)
      if (c.oldKey) keys.push(c.oldKey)
    }
    try {
      await o.knex.transaction(async (trx) => {
        await trx.raw(`SET SESSION innodb_lock_wait_timeout = ${VISIBILITY_LOCK_WAIT_S}`)
        try {
          for (const [table, keys] of byTable) {
            const m = models.get(table)!
            const cols = m.primaryKey.map((f) => m.fieldMap.get(f)!.column)
            for (let i = 0; i < keys.length; i += VISIBILITY_KEYS_PER_READ) {
              const chunk = keys.slice(i, i + VISIBILITY_KEYS_PER_READ)
              const tuple = `(${cols.map(() => '?').join(', ')})`
              const sql = `SELECT 1 FROM ${o.d.q(table)} WHERE (${cols.map((c) => o.d.q(c)).join(', ')}) IN (${chunk.map(() => tuple).join(', ')}) LOCK IN SHARE MODE`
              await trx.raw(sql, chunk.flatMap((k) => cols.map((c) => k[c] as never)))
            }
          }
        } finally {
          await trx.raw('SET SESSION innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout')
        }
      })
    } catch (err) {
      if (closed) return
      if (!lockReadWarned) o.warn('database changes: could not wait for a binlog transaction to be visible; its changes are handed on at once (a subscription may read the rows as they were)', { err: (err as Error).message })
      lockReadWarned = true
    }
  }

  const schedule = (): void => {
    if (closed || timer) return
    timer = setTimeout(() => {
      timer = undefined
      connect()
    }, backoff(attempt++, o.maxReconnectDelayMs))
    timer.unref()
  }

  const connect = (): void => {
    const zj = new ZongJiClass(dsn)
    z = zj
    const remember = (): void => {
      const gtid = zj.gtidSet
      resume = gtid ? { gtidSet: gtid } : zj.options.filename ? { filename: zj.options.filename, position: zj.options.position ?? 4 } : resume
    }
    zj.on('ready', () => {
      if (z !== zj) return
      problem = null
      attempt = 0
      remember()
      first?.resolve()
    })
    // A transaction cut by a lost connection is read again whole from the remembered position.
    pending = []
    const handOn = (): void => {
      const batch = pending
      pending = []
      // The chain never rejects: a failed hand-over is logged and the next transaction's goes on.
      handing = handing
        .then(() => visible(batch))
        .then(() => {
          if (!closed) o.feed.publish(batch)
        })
        .catch((err: unknown) => o.warn('database changes: a binlog transaction could not be handed on', { err: (err as Error)?.message }))
    }
    zj.on('binlog', (e) => {
      if (z !== zj || closed) return
      const name = e.getEventName()
      if (name === 'writerows' || name === 'updaterows' || name === 'deleterows') {
        problem = null
        for (const c of toChanges(e)) pending.push(c)
        // A large transaction goes on in parts (its rows stay locked until its commit is visible, so
        // each part's locking read waits as the whole would): memory holds at most one part of it.
        if (pending.length >= HANDOVER_PART) handOn()
      } else if (name === 'xid' || name === 'query' || name === 'rotate') {
        remember()
        // XID ends a transaction of a transactional engine, a COMMIT query one of another.
        if (name !== 'rotate' && pending.length) handOn()
      }
    })
    zj.on('error', (err) => {
      if (z !== zj || closed) return
      const message = err.message
      // zongji reports some problems and reads on: an event it cannot decode (compressed
      // transactions, partial JSON updates: their rows are not seen), a table changed between its
      // row event and the metadata read. Those have no driver code; reconnecting would meet them again.
      const goesOn = (err as { code?: unknown }).code === undefined && !first && !/control connection unavailable|insufficient permissions/i.test(message)
      if (goesOn) {
        problem = `binlog: ${message}`
        return o.warn('database changes: the binlog reader skipped what it cannot read', { err: message })
      }
      z = undefined
      problem = `binlog connection lost: ${message}`
      try {
        zj.stop()
      } catch {
        // already down
      }
      if (first) return first.reject(err)
      // A position the server purged meanwhile: start again at the end.
      if (/could not find first log file|purged|1236/i.test(`${message} ${(err as { errno?: number }).errno ?? ''}`)) {
        o.warn('database changes: the binlog position to resume from is gone; reading from the current end (changes may have been missed)', { err: message })
        resume = undefined
      } else {
        o.warn('database changes: the binlog connection was lost; reconnecting', { err: message })
      }
      schedule()
    })
    zj.start({
      serverId: o.serverId,
      ...(resume ?? { startAtEnd: true }),
      includeEvents: ['tablemap', 'writerows', 'updaterows', 'deleterows', 'xid', 'query', 'rotate'],
      includeSchema: { [database]: [...models.keys()] },
    })
  }

  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${FIRST_CONNECT_TIMEOUT_MS} ms`)), FIRST_CONNECT_TIMEOUT_MS)
    first = {
      resolve: () => (clearTimeout(t), resolve()),
      reject: (err) => (clearTimeout(t), reject(err)),
    }
    connect()
  }).catch((err: Error) => {
    closed = true
    const zj = z
    z = undefined
    zj?.stop()
    throw new DbChangesUnavailableError(o.sourceName, `the binlog cannot be read: ${err.message}`)
  }).finally(() => (first = undefined))

  return {
    poke: () => {},
    problem: () => problem,
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      const zj = z
      z = undefined
      if (zj) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 1500)
          zj.on('stopped', () => (clearTimeout(t), resolve()))
          zj.stop()
        })
      }
    },
  }
}
