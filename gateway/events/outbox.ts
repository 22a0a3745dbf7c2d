/**
 * The event-trigger outbox in the watched database (README "Event triggers"): the tables
 * `tributary_event_log` and `tributary_event_dead_letter`, the database triggers that write one row
 * per changed row in the writing transaction, and the statements of the deliverer (claim, ack,
 * retry, dead-letter, release, backlog, purge) on PostgreSQL, MySQL/MariaDB and SQLite.
 *
 * Times the deliverer compares (`next_attempt_at`, `locked_until`, `delivered_at`) are its own clock
 * in epoch milliseconds, bound as parameters; `created_at` is the database's clock (epoch ms).
 * A claim is a lease: `locked_by` gets a fresh token and `locked_until` now + lease, in one UPDATE
 * whose WHERE re-checks that nobody holds the row, so one claimant wins each row; every later write
 * of the row names the token, so a claimant whose lease expired (and whose row another instance
 * claimed since) changes nothing.
 */
import { randomUUID } from 'node:crypto'
import type { Knex } from 'knex'
import type { Dialect } from '../connectors/database/model.js'
import type { EventTrigger } from '../config/index.js'
import { ConfigInvalidError } from '../errors.js'

/** The outbox table. */
export const EVENT_LOG_TABLE = 'tributary_event_log'
/** The dead-letter table. */
export const DEAD_LETTER_TABLE = 'tributary_event_dead_letter'
/** The PostgreSQL NOTIFY channel the triggers signal on (the payload is the trigger's name). */
export const NOTIFY_CHANNEL = 'tributary_events'

/** One row of `tributary_event_log` as the deliverer reads it. */
export interface OutboxEvent {
  seq: number
  eventId: string
  trigger: string
  table: string
  op: 'insert' | 'update' | 'delete'
  /** The row before the change (JSON text), null for an insert. */
  oldRow: string | null
  /** The row after the change (JSON text), null for a delete. */
  newRow: string | null
  /** When the database recorded it, epoch milliseconds. */
  createdAt: number
  /** Delivery attempts made before this one. */
  attempts: number
}

const quoteId = (dialect: Dialect, name: string): string => (dialect === 'mysql' ? `\`${name.replace(/`/g, '``')}\`` : `"${name.replace(/"/g, '""')}"`)
const quoteText = (dialect: Dialect, text: string): string => `'${(dialect === 'mysql' ? text.replace(/\\/g, '\\\\') : text).replace(/'/g, "''")}'`

/** Column types per dialect: auto-increment key, short text, long text, epoch milliseconds. */
function types(dialect: Dialect): { key: string; name: string; text: string; ms: string } {
  switch (dialect) {
    case 'postgres':
      return { key: 'bigserial PRIMARY KEY', name: 'text', text: 'text', ms: 'bigint' }
    case 'mysql':
      return { key: 'bigint unsigned AUTO_INCREMENT PRIMARY KEY', name: 'varchar(191)', text: 'longtext', ms: 'bigint' }
    default:
      return { key: 'integer PRIMARY KEY AUTOINCREMENT', name: 'text', text: 'text', ms: 'integer' }
  }
}

/** SQLite: how long a statement is retried while another connection holds the write lock, in milliseconds. */
const SQLITE_BUSY_RETRY_MS = 10_000

const isBusy = (err: unknown): boolean => /SQLITE_BUSY/.test(String((err as { code?: unknown })?.code ?? ''))

/**
 * Runs `fn`; on SQLite, again after a short asynchronous wait while the database is locked (the
 * deliverer's connection has `busy_timeout = 0`: better-sqlite3 would wait synchronously, and the
 * gateway's SQLite worker processes holding a write transaction wait for this process to answer).
 */
async function unlocked<T>(dialect: Dialect, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SQLITE_BUSY_RETRY_MS
  for (;;) {
    try {
      return await fn()
    } catch (err) {
      if (dialect !== 'sqlite' || !isBusy(err) || Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20))
    }
  }
}

/** Access to one database's outbox. */
export class Outbox {
  /** PostgreSQL: the schema the outbox lives in (the source's search path), quoted, with a dot; else ''. */
  private qualifier = ''

  constructor(
    readonly knex: Knex,
    readonly dialect: Dialect,
  ) {}

  private get log(): string {
    return `${this.qualifier}${EVENT_LOG_TABLE}`
  }

  private get dead(): string {
    return `${this.qualifier}${DEAD_LETTER_TABLE}`
  }

  /** Rows of a raw statement, whatever the driver's result shape. */
  private async rows(sql: string, bindings: readonly unknown[] = [], trx: Knex | Knex.Transaction = this.knex): Promise<Record<string, unknown>[]> {
    const result = (await trx.raw(sql, bindings as Knex.RawBinding[])) as unknown
    if (this.dialect === 'postgres') return (result as { rows: Record<string, unknown>[] }).rows
    if (this.dialect === 'mysql') return (result as [Record<string, unknown>[]])[0]
    return result as Record<string, unknown>[]
  }

  /** The number of rows a raw UPDATE/DELETE changed. */
  private async changed(trx: Knex | Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<number> {
    const result = (await (trx === this.knex ? unlocked(this.dialect, () => trx.raw(sql, bindings as Knex.RawBinding[])) : trx.raw(sql, bindings as Knex.RawBinding[]))) as unknown
    if (this.dialect === 'postgres') return (result as { rowCount: number }).rowCount
    if (this.dialect === 'mysql') return (result as [{ affectedRows: number }])[0].affectedRows
    return (result as { changes: number }).changes
  }

  /**
   * Creates the outbox tables when missing and (re)creates the database triggers of `triggers` (all
   * of this database), under a lock (PostgreSQL advisory lock, MySQL `GET_LOCK`, a SQLite write
   * transaction) so that instances starting together do not race.
   * @throws ConfigInvalidError when a trigger's table does not exist
   */
  async install(triggers: readonly EventTrigger[], indexOf: (t: EventTrigger) => number): Promise<void> {
    if (this.dialect === 'postgres') {
      const [row] = await this.rows('select current_schema() as s')
      this.qualifier = `${quoteId('postgres', String(row?.['s'] ?? 'public'))}.`
    }
    const lock = 'tributary_event_triggers'
    // One connection for the whole install (MySQL's GET_LOCK is the connection's; its DDL commits on its own).
    await unlocked(this.dialect, () => this.knex.transaction(async (trx) => {
      if (this.dialect === 'postgres') await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [lock])
      if (this.dialect === 'mysql') await trx.raw('select get_lock(?, 30)', [lock])
      try {
        await this.createTables(trx)
        for (const t of triggers) {
          if (this.dialect === 'postgres') await this.installPostgres(trx, t, indexOf(t))
          else await this.installRowTriggers(trx, t, await this.columns(trx, t, indexOf(t)))
        }
        await this.dropStale(trx, triggers)
      } finally {
        if (this.dialect === 'mysql') await trx.raw('select release_lock(?)', [lock])
      }
    }))
  }

  private async createTables(trx: Knex.Transaction): Promise<void> {
    const d = this.dialect
    const ty = types(d)
    const common = `event_id ${ty.name} NOT NULL, trigger_name ${ty.name} NOT NULL, table_name ${ty.name} NOT NULL, op ${ty.name} NOT NULL, old_row ${ty.text}, new_row ${ty.text}, created_at ${ty.ms} NOT NULL, attempts integer NOT NULL DEFAULT 0, last_error ${ty.text}`
    await trx.raw(`CREATE TABLE IF NOT EXISTS ${this.log} (seq ${ty.key}, ${common}, next_attempt_at ${ty.ms} NOT NULL DEFAULT 0, locked_until ${ty.ms}, locked_by ${ty.name}, delivered_at ${ty.ms})`)
    await trx.raw(`CREATE TABLE IF NOT EXISTS ${this.dead} (seq ${ty.key}, ${common}, dead_at ${ty.ms} NOT NULL)`)
    const index = 'tributary_event_log_due'
    if (d === 'mysql') {
      const [existing] = (await trx.raw(`select count(*) as n from information_schema.statistics where table_schema = database() and table_name = ? and index_name = ?`, [EVENT_LOG_TABLE, index])) as unknown as [{ n: number }[]]
      if (Number(existing[0]?.n ?? 0) === 0) await trx.raw(`CREATE INDEX ${index} ON ${EVENT_LOG_TABLE} (delivered_at, trigger_name, next_attempt_at)`)
    } else {
      await trx.raw(`CREATE INDEX IF NOT EXISTS ${index} ON ${this.log} (delivered_at, trigger_name, next_attempt_at)`)
    }
  }

  /**
   * Drops the database triggers (and PostgreSQL trigger functions) the gateway installed for event
   * triggers no longer in the config: those named `trb_evt_…` (the prefix of every trigger it
   * installs) that belong to none of `triggers`.
   * @returns the names dropped
   */
  async dropStale(trx: Knex.Transaction, triggers: readonly EventTrigger[]): Promise<string[]> {
    const d = this.dialect
    const keep = new Set(triggers.flatMap((t) => [`trb_evt_${t.name}`, ...['insert', 'update', 'delete'].map((op) => `trb_evt_${t.name}_${op}`)]))
    const like = "'trb\\_evt\\_%'"
    const dropped: string[] = []
    if (d === 'postgres') {
      const rows = await this.rows(`select t.tgname as name, c.relname as tbl from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace where not t.tgisinternal and n.nspname = current_schema() and t.tgname like ${like}`, [], trx)
      for (const r of rows) {
        const name = String(r['name'])
        if (keep.has(name)) continue
        await trx.raw(`DROP TRIGGER IF EXISTS ${quoteId(d, name)} ON ${this.qualifier}${quoteId(d, String(r['tbl']))}`)
        await trx.raw(`DROP FUNCTION IF EXISTS ${this.qualifier}${quoteId(d, name)}()`)
        dropped.push(name)
      }
      return dropped
    }
    const rows =
      d === 'mysql'
        ? await this.rows(`select trigger_name as name from information_schema.triggers where trigger_schema = database() and trigger_name like ${like}`, [], trx)
        : await this.rows(`select name from sqlite_master where type = 'trigger' and name like ${like} escape '\\'`, [], trx)
    for (const r of rows) {
      const name = String(r['name'] ?? r['NAME'])
      if (keep.has(name)) continue
      await trx.raw(`DROP TRIGGER IF EXISTS ${quoteId(d, name)}`)
      dropped.push(name)
    }
    return dropped
  }

  /** MySQL and SQLite: the table's columns, in order (their triggers build the row's JSON column by column). */
  private async columns(trx: Knex.Transaction, t: EventTrigger, index: number): Promise<string[]> {
    const rows =
      this.dialect === 'mysql'
        ? await this.rows('select column_name as name from information_schema.columns where table_schema = database() and table_name = ? order by ordinal_position', [t.table], trx)
        : await this.rows(`select name from pragma_table_info(?)`, [t.table], trx)
    if (rows.length === 0) throw new ConfigInvalidError(`events[${index}].table: the source ${t.source} has no table ${t.table}`)
    return rows.map((r) => String(r['name'] ?? r['NAME']))
  }

  /** PostgreSQL: one trigger function and one row trigger for the trigger's operations. */
  private async installPostgres(trx: Knex.Transaction, t: EventTrigger, index: number): Promise<void> {
    const [exists] = await this.rows('select to_regclass(?) as r', [`${this.qualifier}${quoteId('postgres', t.table)}`], trx)
    if (!exists?.['r']) throw new ConfigInvalidError(`events[${index}].table: the source ${t.source} has no table ${t.table} (schema ${this.qualifier.slice(0, -1)})`)
    const fn = `${this.qualifier}${quoteId('postgres', `trb_evt_${t.name}`)}`
    const table = `${this.qualifier}${quoteId('postgres', t.table)}`
    const name = quoteText('postgres', t.name)
    await trx.raw(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $trb$
BEGIN
  INSERT INTO ${this.log} (event_id, trigger_name, table_name, op, old_row, new_row, created_at)
  VALUES (md5(random()::text || clock_timestamp()::text || txid_current()::text)::uuid::text, ${name}, TG_TABLE_NAME, lower(TG_OP),
    CASE WHEN TG_OP <> 'INSERT' THEN row_to_json(OLD)::text END,
    CASE WHEN TG_OP <> 'DELETE' THEN row_to_json(NEW)::text END,
    (extract(epoch from clock_timestamp()) * 1000)::bigint);
  PERFORM pg_notify('${NOTIFY_CHANNEL}', ${name});
  RETURN NULL;
END
$trb$`)
    await trx.raw(`DROP TRIGGER IF EXISTS ${quoteId('postgres', `trb_evt_${t.name}`)} ON ${table}`)
    await trx.raw(`CREATE TRIGGER ${quoteId('postgres', `trb_evt_${t.name}`)} AFTER ${t.on.map((o) => o.toUpperCase()).join(' OR ')} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`)
  }

  /** MySQL and SQLite: one row trigger per operation (dropped first; the ones of operations no longer listed are dropped too). */
  private async installRowTriggers(trx: Knex.Transaction, t: EventTrigger, columns: string[]): Promise<void> {
    const d = this.dialect
    const table = quoteId(d, t.table)
    const rowJson = (alias: 'NEW' | 'OLD') =>
      d === 'mysql'
        ? `JSON_OBJECT(${columns.map((c) => `${quoteText(d, c)}, ${alias}.${quoteId(d, c)}`).join(', ')})`
        : `json_object(${columns.map((c) => `${quoteText(d, c)}, CASE typeof(${alias}.${quoteId(d, c)}) WHEN 'blob' THEN hex(${alias}.${quoteId(d, c)}) ELSE ${alias}.${quoteId(d, c)} END`).join(', ')})`
    const id =
      d === 'mysql'
        ? 'UUID()'
        : "(SELECT substr(h,1,8)||'-'||substr(h,9,4)||'-'||substr(h,13,4)||'-'||substr(h,17,4)||'-'||substr(h,21) FROM (SELECT lower(hex(randomblob(16))) AS h))"
    const now = d === 'mysql' ? 'ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)' : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    for (const op of ['insert', 'update', 'delete'] as const) {
      const trigger = quoteId(d, `trb_evt_${t.name}_${op}`)
      await trx.raw(`DROP TRIGGER IF EXISTS ${trigger}`)
      if (!t.on.includes(op)) continue
      const insert = `INSERT INTO ${EVENT_LOG_TABLE} (event_id, trigger_name, table_name, op, old_row, new_row, created_at) VALUES (${id}, ${quoteText(d, t.name)}, ${quoteText(d, t.table)}, '${op}', ${op === 'insert' ? 'NULL' : rowJson('OLD')}, ${op === 'delete' ? 'NULL' : rowJson('NEW')}, ${now})`
      await trx.raw(d === 'mysql' ? `CREATE TRIGGER ${trigger} AFTER ${op.toUpperCase()} ON ${table} FOR EACH ROW ${insert}` : `CREATE TRIGGER ${trigger} AFTER ${op.toUpperCase()} ON ${table} FOR EACH ROW BEGIN ${insert}; END`)
    }
  }

  /**
   * Claims up to `limit` due events of `triggers` for `leaseMs` (nobody else's lease running).
   * @returns the claim's token and its events, oldest first
   */
  claim(triggers: readonly string[], limit: number, now: number, leaseMs: number): Promise<{ token: string; events: OutboxEvent[] }> {
    return unlocked(this.dialect, () => this.claimOnce(triggers, limit, now, leaseMs))
  }

  private async claimOnce(triggers: readonly string[], limit: number, now: number, leaseMs: number): Promise<{ token: string; events: OutboxEvent[] }> {
    const token = randomUUID()
    const names = triggers.map(() => '?').join(', ')
    const due = `trigger_name IN (${names}) AND delivered_at IS NULL AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?)`
    const bindings = [...triggers, now, now]
    const set = 'SET locked_until = ?, locked_by = ?'
    let rows: Record<string, unknown>[]
    if (this.dialect === 'postgres') {
      rows = await this.rows(`UPDATE ${this.log} ${set} WHERE seq IN (SELECT seq FROM ${this.log} WHERE ${due} ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED) RETURNING *`, [now + leaseMs, token, ...bindings, limit])
    } else {
      const sql = this.dialect === 'mysql' ? `UPDATE ${this.log} ${set} WHERE ${due} ORDER BY seq LIMIT ?` : `UPDATE ${this.log} ${set} WHERE seq IN (SELECT seq FROM ${this.log} WHERE ${due} ORDER BY seq LIMIT ?)`
      const n = await this.changed(this.knex, sql, [now + leaseMs, token, ...bindings, limit])
      rows = n === 0 ? [] : await this.rows(`SELECT * FROM ${this.log} WHERE locked_by = ?`, [token])
    }
    const events = rows
      .map((r) => ({
        seq: Number(r['seq']),
        eventId: String(r['event_id']),
        trigger: String(r['trigger_name']),
        table: String(r['table_name']),
        op: String(r['op']) as OutboxEvent['op'],
        oldRow: r['old_row'] === null || r['old_row'] === undefined ? null : String(r['old_row']),
        newRow: r['new_row'] === null || r['new_row'] === undefined ? null : String(r['new_row']),
        createdAt: Number(r['created_at']),
        attempts: Number(r['attempts']),
      }))
      .sort((a, b) => a.seq - b.seq)
    return { token, events }
  }

  /** Marks a claimed event delivered. @returns false when the claim was lost (the lease ran out and another instance claimed it). */
  async delivered(e: OutboxEvent, token: string, now: number): Promise<boolean> {
    return (await this.changed(this.knex, `UPDATE ${this.log} SET delivered_at = ?, attempts = attempts + 1, locked_until = NULL, locked_by = NULL, last_error = NULL WHERE seq = ? AND locked_by = ?`, [now, e.seq, token])) > 0
  }

  /** Records a failed attempt of a claimed event and schedules the next at `nextAt`. */
  async failed(e: OutboxEvent, token: string, error: string, nextAt: number): Promise<boolean> {
    return (await this.changed(this.knex, `UPDATE ${this.log} SET attempts = attempts + 1, next_attempt_at = ?, locked_until = NULL, locked_by = NULL, last_error = ? WHERE seq = ? AND locked_by = ?`, [nextAt, error, e.seq, token])) > 0
  }

  /** Moves a claimed event to the dead-letter table (its last attempt counted), in one transaction. */
  async deadLetter(e: OutboxEvent, token: string, error: string, now: number): Promise<boolean> {
    return unlocked(this.dialect, () => this.knex.transaction(async (trx) => {
      const cols = 'event_id, trigger_name, table_name, op, old_row, new_row, created_at'
      const moved = await this.changed(trx, `INSERT INTO ${this.dead} (${cols}, attempts, last_error, dead_at) SELECT ${cols}, attempts + 1, ?, ? FROM ${this.log} WHERE seq = ? AND locked_by = ?`, [error, now, e.seq, token])
      if (moved === 0) return false
      await trx.raw(`DELETE FROM ${this.log} WHERE seq = ? AND locked_by = ?`, [e.seq, token])
      return true
    }))
  }

  /** Gives up the claims of `tokens` (a graceful stop): their events are due again at once, no attempt counted. */
  async release(tokens: readonly string[]): Promise<void> {
    if (tokens.length === 0) return
    await this.changed(this.knex, `UPDATE ${this.log} SET locked_until = NULL, locked_by = NULL WHERE locked_by IN (${tokens.map(() => '?').join(', ')})`, tokens)
  }

  /** Undelivered events per trigger (pending, retrying or claimed). */
  async backlog(triggers: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.rows(`SELECT trigger_name, count(*) AS n FROM ${this.log} WHERE delivered_at IS NULL AND trigger_name IN (${triggers.map(() => '?').join(', ')}) GROUP BY trigger_name`, triggers)
    const counts = new Map<string, number>(triggers.map((t) => [t, 0]))
    for (const r of rows) counts.set(String(r['trigger_name']), Number(r['n']))
    return counts
  }

  /** Deletes the events delivered before `before` (epoch ms). */
  async purge(triggers: readonly string[], before: number): Promise<void> {
    await this.changed(this.knex, `DELETE FROM ${this.log} WHERE delivered_at IS NOT NULL AND delivered_at < ? AND trigger_name IN (${triggers.map(() => '?').join(', ')})`, [before, ...triggers])
  }
}
