/**
 * How each engine reports row changes to the change feed (README "Database change streams"):
 *
 * - PostgreSQL: an AFTER ROW trigger per table (`tributary_changes`) calls the function
 *   `<schema>.tributary_notify_change()`, which sends `pg_notify(channel, payload)` with the
 *   table, the operation and the primary key (a DELETE adds the old row when the payload stays
 *   under 7900 bytes, NOTIFY's limit being 8000). The gateway LISTENs on one connection of its own
 *   and reconnects with exponential backoff; notifications sent while it is disconnected are lost
 *   (NOTIFY is not durable).
 * - SQLite and MySQL/MariaDB: AFTER INSERT/UPDATE/DELETE triggers per table write the same facts to
 *   the table `tributary_changes`, which the gateway reads by increasing id: SQLite when
 *   `PRAGMA data_version` (on a connection of its own) says another connection committed, MySQL on
 *   every poll. The gateway's own writes look at once. The table keeps the last `backlogSize` rows.
 *
 * Triggers and functions are created only with `install: true`; otherwise their absence fails the
 * start with `TRB_ERR_DB_CHANGES_UNAVAILABLE`.
 */
import type { Knex } from 'knex'
import { DbChangesUnavailableError } from '../../../errors.js'
import type { Model } from '../compiler/registry.js'
import type { SqlDialect } from '../compiler/dialect.js'
import type { ChangeFeed, ChangeOp, RowChange } from './feed.js'

/** The changelog table (SQLite, MySQL/MariaDB) and the trigger name (PostgreSQL). */
export const CHANGELOG_TABLE = 'tributary_changes'

/** What an engine's change reader needs. */
export interface EngineOptions {
  knex: Knex
  d: SqlDialect
  feed: ChangeFeed
  /** The models whose tables are watched (tables with a primary key). */
  models: readonly Model[]
  install: boolean
  sourceName: string
  /** PostgreSQL: the introspected schema. */
  schema: string
  /** PostgreSQL: the NOTIFY channel. */
  channel: string
  /** SQLite file: its path. */
  sqliteFile?: string
  pollIntervalMs: number
  backlogSize: number
  maxPayloadBytes: number
  maxReconnectDelayMs: number
  /** A change the gateway could not read (malformed, too large): logged and counted. */
  reject(why: string, details?: Record<string, unknown>): void
  warn(message: string, details?: Record<string, unknown>): void
}

/** A running change reader. */
export interface EngineReader {
  /** Look for changes now (the gateway wrote). */
  poke(): void
  /** `null` when reading, else why not. */
  problem(): string | null
  /** What `/health` shows of the reader besides `problem` (the logical reader: its state, slot and LSN). */
  state?(): Record<string, unknown>
  close(): Promise<void>
}

const OPS: Record<string, ChangeOp> = { INSERT: 'INSERT', UPDATE: 'UPDATE', DELETE: 'DELETE' }

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Reads one change from its parts; null (with the reason) when malformed.
 * @param old the deleted row's JSON, dropped (the change kept) when longer than `maxOld` bytes
 */
export function parseChange(table: unknown, op: unknown, key: unknown, oldKey: unknown, old: unknown, maxOld: number): RowChange | string {
  const json = (v: unknown): unknown => {
    if (typeof v !== 'string') return v
    return JSON.parse(v) as unknown
  }
  try {
    const o = typeof op === 'string' ? OPS[op] : undefined
    if (typeof table !== 'string' || !o) return 'no table or operation'
    const k = json(key)
    if (!isRecord(k)) return 'no key'
    const ok = oldKey === null || oldKey === undefined ? undefined : json(oldKey)
    const oldText = typeof old === 'string' ? old : old === null || old === undefined ? undefined : JSON.stringify(old)
    const r = oldText !== undefined && Buffer.byteLength(oldText) <= maxOld ? json(oldText) : undefined
    return { table, op: o, key: k, ...(isRecord(ok) ? { oldKey: ok } : {}), ...(isRecord(r) ? { old: r } : {}) }
  } catch {
    return 'not JSON'
  }
}

const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`

/** Exponential backoff from 100 ms to `max` ms, ±20 % jitter. */
export function backoff(attempt: number, max: number): number {
  return Math.min(max, 100 * 2 ** Math.min(attempt, 16)) * (0.8 + Math.random() * 0.4)
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: triggers + LISTEN/NOTIFY

/** The SQL that installs the notify function and the triggers of `models` (PostgreSQL). */
export function postgresInstallSql(d: SqlDialect, schema: string, channel: string, models: readonly Model[]): string[] {
  const fn = `${d.q(schema)}.tributary_notify_change`
  const out = [
    `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  n jsonb; o jsonb; k jsonb := '{}'; ok jsonb := '{}'; c text; payload text; full_payload text;
BEGIN
  IF TG_OP <> 'DELETE' THEN n := to_jsonb(NEW); END IF;
  IF TG_OP <> 'INSERT' THEN o := to_jsonb(OLD); END IF;
  FOREACH c IN ARRAY TG_ARGV LOOP
    IF n IS NOT NULL THEN k := k || jsonb_build_object(c, n -> c); END IF;
    IF o IS NOT NULL THEN ok := ok || jsonb_build_object(c, o -> c); END IF;
  END LOOP;
  payload := jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME, 'op', TG_OP,
    'k', CASE WHEN TG_OP = 'DELETE' THEN ok ELSE k END, 'ok', CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE ok END)::text;
  IF TG_OP = 'DELETE' THEN
    full_payload := (payload::jsonb || jsonb_build_object('r', o))::text;
    IF octet_length(full_payload) < 7900 THEN payload := full_payload; END IF;
  END IF;
  IF octet_length(payload) < 7900 THEN
    PERFORM pg_notify(${lit(channel)}, payload);
  ELSE
    RAISE WARNING 'tributary_notify_change: the key of a % row is too large for NOTIFY; change not sent', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $fn$`,
  ]
  for (const m of models) {
    const table = d.table(m.table)
    const cols = m.primaryKey.map((f) => lit(m.fieldMap.get(f)!.column)).join(', ')
    out.push(`DROP TRIGGER IF EXISTS ${CHANGELOG_TABLE} ON ${table}`)
    out.push(`CREATE TRIGGER ${CHANGELOG_TABLE} AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}(${cols})`)
  }
  return out
}

interface PgNotification { channel: string; payload?: string }
interface PgClient {
  query(sql: string): Promise<unknown>
  on(event: 'notification', fn: (m: PgNotification) => void): void
  on(event: 'error' | 'end', fn: (err?: Error) => void): void
}

/**
 * Installs (with `install`) or checks the triggers, then LISTENs.
 * @throws DbChangesUnavailableError when a watched table has no trigger and `install` is false
 */
export async function startPostgres(o: EngineOptions): Promise<EngineReader> {
  if (o.install) {
    await o.knex.transaction(async (trx) => {
      for (const s of postgresInstallSql(o.d, o.schema, o.channel, o.models)) await trx.raw(s)
    })
  } else {
    const rows = (await o.knex.raw(
      `SELECT c.relname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE t.tgname = ? AND n.nspname = ?`,
      [CHANGELOG_TABLE, o.schema],
    )) as { rows: { name: string }[] }
    const have = new Set(rows.rows.map((r) => r.name))
    const missing = o.models.filter((m) => !have.has(m.table)).map((m) => m.table)
    if (missing.length > 0) {
      const wal = (await o.knex.raw('SHOW wal_level').catch(() => ({ rows: [{ wal_level: '?' }] }))) as { rows: { wal_level: string }[] }
      throw new DbChangesUnavailableError(o.sourceName, `the tables ${missing.join(', ')} have no ${CHANGELOG_TABLE} trigger (wal_level is ${wal.rows[0]?.wal_level ?? '?'}): set changes: { install: true } to create them, run the SQL of README "Database change streams", or use changes: { method: 'logical' } where wal_level is logical`)
    }
  }
  const client = o.knex.client as { acquireRawConnection(): Promise<PgClient>; destroyRawConnection(c: PgClient): Promise<void> }
  let conn: PgClient | undefined
  let closed = false
  let problem: string | null = 'connecting'
  let attempt = 0
  let timer: NodeJS.Timeout | undefined
  const onNotification = (m: PgNotification): void => {
    if (m.channel !== o.channel) return
    const text = m.payload ?? ''
    if (Buffer.byteLength(text) > o.maxPayloadBytes) return o.reject(`notification larger than ${o.maxPayloadBytes} bytes`)
    let p: Record<string, unknown>
    try {
      p = JSON.parse(text) as Record<string, unknown>
    } catch {
      return o.reject('notification is not JSON')
    }
    if (!isRecord(p)) return o.reject('notification is not a JSON object')
    if (p['s'] !== o.schema) return
    const c = parseChange(p['t'], p['op'], p['k'], p['ok'], p['r'], o.maxPayloadBytes)
    if (typeof c === 'string') return o.reject(`malformed notification: ${c}`)
    o.feed.publish([c])
  }
  const connect = async (): Promise<void> => {
    try {
      const c = await client.acquireRawConnection()
      if (closed) return void (await client.destroyRawConnection(c).catch(() => undefined))
      conn = c
      c.on('notification', onNotification)
      const lost = (err?: Error): void => {
        if (conn !== c || closed) return
        conn = undefined
        problem = `LISTEN connection lost${err ? `: ${err.message}` : ''}`
        o.warn('database changes: the LISTEN connection was lost; reconnecting', { err: err?.message })
        void client.destroyRawConnection(c).catch(() => undefined)
        schedule()
      }
      c.on('error', lost)
      c.on('end', lost)
      await c.query(`LISTEN ${o.d.q(o.channel)}`)
      problem = null
      attempt = 0
    } catch (err) {
      problem = `LISTEN failed: ${(err as Error).message}`
      if (conn) {
        const c = conn
        conn = undefined
        void client.destroyRawConnection(c).catch(() => undefined)
      }
      schedule()
    }
  }
  const schedule = (): void => {
    if (closed || timer) return
    timer = setTimeout(() => {
      timer = undefined
      void connect()
    }, backoff(attempt++, o.maxReconnectDelayMs))
    timer.unref()
  }
  await connect()
  return {
    poke: () => {},
    problem: () => problem,
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      const c = conn
      conn = undefined
      if (c) await client.destroyRawConnection(c).catch(() => undefined)
    },
  }
}

// ---------------------------------------------------------------------------------------------
// SQLite and MySQL/MariaDB: triggers + changelog table

/** The SQL that installs the changelog table and the triggers of `models` (SQLite, MySQL/MariaDB). */
export function changelogInstallSql(d: SqlDialect, models: readonly Model[]): string[] {
  const mysql = d.dialect === 'mysql'
  const log = d.q(CHANGELOG_TABLE)
  const out = [
    mysql
      ? `CREATE TABLE IF NOT EXISTS ${log} (id BIGINT AUTO_INCREMENT PRIMARY KEY, tbl VARCHAR(255) NOT NULL, op VARCHAR(6) NOT NULL, k LONGTEXT NOT NULL, ok LONGTEXT NULL, r LONGTEXT NULL)`
      : `CREATE TABLE IF NOT EXISTS ${log} (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, op TEXT NOT NULL, k TEXT NOT NULL, ok TEXT, r TEXT)`,
  ]
  const obj = mysql ? 'JSON_OBJECT' : 'json_object'
  for (const m of models) {
    const pk = (row: string) => `${obj}(${m.primaryKey.map((f) => { const c = m.fieldMap.get(f)!.column; return `${lit(c)}, ${row}.${d.q(c)}` }).join(', ')})`
    // BLOB columns cannot be JSON values: left out of the old row.
    const all = `${obj}(${m.fields.filter((f) => f.scalar !== 'Bytes').map((f) => `${lit(f.column)}, OLD.${d.q(f.column)}`).join(', ')})`
    const body: Record<string, string> = {
      INSERT: `INSERT INTO ${log} (tbl, op, k) VALUES (${lit(m.table)}, 'INSERT', ${pk('NEW')})`,
      UPDATE: `INSERT INTO ${log} (tbl, op, k, ok) VALUES (${lit(m.table)}, 'UPDATE', ${pk('NEW')}, ${pk('OLD')})`,
      DELETE: `INSERT INTO ${log} (tbl, op, k, ok, r) VALUES (${lit(m.table)}, 'DELETE', ${pk('OLD')}, ${pk('OLD')}, ${all})`,
    }
    for (const [op, stmt] of Object.entries(body)) {
      const name = d.q(triggerName(m.table, op))
      out.push(`DROP TRIGGER IF EXISTS ${name}`)
      out.push(mysql ? `CREATE TRIGGER ${name} AFTER ${op} ON ${d.table(m.table)} FOR EACH ROW ${stmt}` : `CREATE TRIGGER ${name} AFTER ${op} ON ${d.table(m.table)} BEGIN ${stmt}; END`)
    }
  }
  return out
}

/** The changelog trigger of one table and operation. */
function triggerName(table: string, op: string): string {
  return `${CHANGELOG_TABLE}_${table}_${op.charAt(0).toLowerCase()}`.slice(0, 64)
}

interface SqliteConn {
  pragma(s: string, o: { simple: true }): unknown
  prepare(s: string): { all(...a: unknown[]): unknown[]; get(...a: unknown[]): unknown; run(...a: unknown[]): unknown }
  close(): void
}

/**
 * Installs (with `install`) or checks the changelog and its triggers, then polls it.
 * @throws DbChangesUnavailableError when a trigger or the table is missing and `install` is false
 */
export async function startChangelog(o: EngineOptions): Promise<EngineReader> {
  const mysql = o.d.dialect === 'mysql'
  if (o.install) {
    for (const s of changelogInstallSql(o.d, o.models)) await o.knex.raw(s)
  } else {
    const names = o.models.flatMap((m) => ['INSERT', 'UPDATE', 'DELETE'].map((op) => triggerName(m.table, op)))
    const rows = (await o.knex.raw(
      mysql ? `SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()` : `SELECT name FROM sqlite_master WHERE type = 'trigger'`,
    )) as unknown
    const list = (mysql ? (rows as [{ name: string }[]])[0] : (rows as { name: string }[])).map((r) => r.name)
    const missing = names.filter((n) => !list.includes(n))
    if (missing.length > 0) {
      throw new DbChangesUnavailableError(o.sourceName, `the triggers ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? '…' : ''} that fill ${CHANGELOG_TABLE} do not exist: set changes: { install: true } to create them`)
    }
  }
  let sqlite: SqliteConn | undefined
  if (!mysql) {
    if (!o.sqliteFile) throw new DbChangesUnavailableError(o.sourceName, 'an in-memory SQLite database has no other writer to watch: use a file')
    const { default: Database } = await import('better-sqlite3')
    sqlite = new Database(o.sqliteFile, { fileMustExist: true, timeout: 1000 }) as unknown as SqliteConn
  }
  const select = `SELECT id, tbl, op, k, ok, r FROM ${o.d.q(CHANGELOG_TABLE)} WHERE id > ? ORDER BY id LIMIT 500`
  const maxId = async (): Promise<number> => {
    const sql = `SELECT COALESCE(MAX(id), 0) AS m FROM ${o.d.q(CHANGELOG_TABLE)}`
    if (sqlite) return Number((sqlite.prepare(sql).get() as { m: number }).m)
    return Number(((await o.knex.raw(sql)) as [{ m: number }[]])[0][0]!.m)
  }
  let last = await maxId()
  let version: unknown = sqlite?.pragma('data_version', { simple: true })
  let closed = false
  let problem: string | null = null
  let running: Promise<void> | undefined
  let again = false
  let polls = 0
  const read = async (): Promise<void> => {
    for (;;) {
      const rows = (sqlite ? sqlite.prepare(select).all(last) : ((await o.knex.raw(select, [last])) as [unknown[]])[0]) as { id: number; tbl: unknown; op: unknown; k: unknown; ok: unknown; r: unknown }[]
      if (rows.length === 0) return
      const changes: RowChange[] = []
      for (const row of rows) {
        last = Math.max(last, Number(row.id))
        const kText = typeof row.k === 'string' ? row.k : JSON.stringify(row.k)
        if (Buffer.byteLength(kText ?? '') > o.maxPayloadBytes) {
          o.reject(`changelog row larger than ${o.maxPayloadBytes} bytes`, { id: row.id })
          continue
        }
        const c = parseChange(row.tbl, row.op, row.k, row.ok, row.r, o.maxPayloadBytes)
        if (typeof c === 'string') o.reject(`malformed changelog row: ${c}`, { id: row.id })
        else changes.push(c)
      }
      o.feed.publish(changes)
      if (rows.length < 500) return
    }
  }
  const prune = async (): Promise<void> => {
    const sql = `DELETE FROM ${o.d.q(CHANGELOG_TABLE)} WHERE id <= ?`
    const below = last - o.backlogSize
    if (below <= 0) return
    if (sqlite) sqlite.prepare(sql).run(below)
    else await o.knex.raw(sql, [below])
  }
  const pollOnce = async (forced: boolean): Promise<void> => {
    try {
      const v = sqlite?.pragma('data_version', { simple: true })
      if (!sqlite || forced || v !== version) {
        version = v
        await read()
        if (++polls % 100 === 0) await prune()
      }
      problem = null
    } catch (err) {
      // Logged when it starts failing, not on every poll.
      if (problem === null) o.warn(`database changes: reading ${CHANGELOG_TABLE} failed`, { err: (err as Error).message })
      problem = `reading ${CHANGELOG_TABLE} failed: ${(err as Error).message}`
    }
  }
  /** One poll at a time; a forced poll asked for while one runs runs after it. */
  const poll = (forced: boolean): Promise<void> => {
    if (running) {
      again = again || forced
      return running
    }
    const p = pollOnce(forced).then((): Promise<void> | undefined => {
      running = undefined
      if (!again || closed) return undefined
      again = false
      return poll(true)
    })
    running = p
    return p
  }
  const timer = setInterval(() => void poll(false), o.pollIntervalMs)
  timer.unref()
  return {
    poke: () => {
      // The write may not be committed yet: look now and once more soon after.
      void poll(true)
      setTimeout(() => void poll(true), 25).unref()
    },
    problem: () => problem,
    async close() {
      closed = true
      clearInterval(timer)
      await running
      sqlite?.close()
    },
  }
}
