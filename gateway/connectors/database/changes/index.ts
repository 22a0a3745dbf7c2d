/**
 * Database change streams (`database({ changes })`, README "Database change streams"): the options,
 * and the start of one source's change reader (engines.ts) feeding its subscriptions
 * (subscriptions.ts) through a {@link ChangeFeed}.
 */
import type { Knex } from 'knex'
import type { Model } from '../compiler/registry.js'
import type { SqlDialect } from '../compiler/dialect.js'
import { ChangeFeed } from './feed.js'
import { startChangelog, startPostgres, type EngineReader } from './engines.js'
import { changeOperationEnum, type ChangeShared } from './subscriptions.js'
import { startMysqlChanges, type MysqlChangeMethod } from './mysql-binlog.js'
import { DbChangesUnavailableError } from '../../../errors.js'

export { CHANGELOG_TABLE, changelogInstallSql, postgresInstallSql } from './engines.js'
export { ChangeFeed, type RowChange, type ChangeOp } from './feed.js'

/** Default of {@link DatabaseChangesOptions.pollIntervalMs}, in milliseconds. */
export const DEFAULT_POLL_INTERVAL_MS = 500
/** Default of {@link DatabaseChangesOptions.maxBufferedEvents}. */
export const DEFAULT_MAX_BUFFERED_CHANGES = 1000
/** Default of {@link DatabaseChangesOptions.maxBatchSize}. */
export const DEFAULT_MAX_BATCH_SIZE = 100
/** Default of {@link DatabaseChangesOptions.backlogSize}. */
export const DEFAULT_BACKLOG_SIZE = 10_000
/** Default of {@link DatabaseChangesOptions.maxPayloadBytes}: 64 KiB. */
export const DEFAULT_MAX_CHANGE_PAYLOAD_BYTES = 65_536
/** Default of {@link DatabaseChangesOptions.channel}. */
export const DEFAULT_CHANNEL = 'tributary_changes'

/** `database({ changes })`: change subscriptions. `true` is `{}` (every default). */
export interface DatabaseChangesOptions {
  /**
   * Create what the engine needs (PostgreSQL: the function `tributary_notify_change` and a trigger
   * `tributary_changes` per table; SQLite and MySQL/MariaDB: the table `tributary_changes` and three
   * triggers per table). Default false: they must exist, or the start fails with
   * `TRB_ERR_DB_CHANGES_UNAVAILABLE`.
   */
  install?: boolean
  /** The tables (SQL names) watched. Default every table with a primary key. */
  tables?: string[]
  /** SQLite and MySQL/MariaDB: how often the changelog is looked at, in milliseconds. Default 500. */
  pollIntervalMs?: number
  /** Most changes waiting for one subscriber; one more ends it with `TRB_ERR_EVENTS_SLOW_SUBSCRIBER`. Default 1000. */
  maxBufferedEvents?: number
  /** Largest `batchSize` of a `<model>Stream`. Default 100. */
  maxBatchSize?: number
  /** SQLite and MySQL/MariaDB: changelog rows kept (older ones are deleted). Default 10000. */
  backlogSize?: number
  /** Largest notification or changelog row read, in bytes; a larger one is logged, counted and skipped. Default 65536. */
  maxPayloadBytes?: number
  /** PostgreSQL: the NOTIFY channel. Default `tributary_changes`. */
  channel?: string
  /** PostgreSQL, MySQL/MariaDB binlog: longest delay between two reconnects of the LISTEN or binlog connection, in milliseconds. Default 5000. */
  maxReconnectDelayMs?: number
  /**
   * MySQL/MariaDB: how changes are captured. `binlog`: the row events of the binary log (needs
   * `log_bin`, `binlog_format=ROW`, REPLICATION SLAVE and CLIENT, the package `@vlasky/zongji`);
   * `triggers`: the changelog table filled by triggers; `auto` (default): the binlog when the server
   * and the user allow it, else the triggers. Other engines take `auto` and `triggers` only.
   */
  method?: MysqlChangeMethod
  /** MySQL/MariaDB binlog: the replica server id the gateway announces. Default a random id in 2^31…2^32−1 per process. */
  serverId?: number
}

/** The state of a source's change capture, as `/health` shows it (`sources.<name>.changes`). */
export interface ChangesHealth {
  /** `listen` (PostgreSQL NOTIFY), `triggers` (changelog polled), `binlog` (MySQL/MariaDB replication stream). */
  method: 'listen' | 'triggers' | 'binlog'
  /** `up` while reading, `reconnecting` while the connection or the poll fails (changes are late, not lost, except NOTIFY). */
  status: 'up' | 'reconnecting'
  /** Why it is not up: the last error. */
  lastError?: string
}

/** A running change stream of one source. */
export interface SourceChanges {
  /** What `buildSchema` takes (`BuildSchemaOptions.changes`). */
  shared: ChangeShared & { tables: ReadonlySet<string> }
  /** Starts reading (after the schema was built). */
  start(models: readonly Model[]): Promise<void>
  /** The gateway wrote to the source. */
  poke(): void
  /** Null when reading, else why not. */
  problem(): string | null
  /** The capture method and its state; undefined before `start`. */
  health(): ChangesHealth | undefined
  close(): Promise<void>
}

/** What {@link createSourceChanges} needs besides the options. */
export interface SourceChangesContext {
  knex: Knex
  d: SqlDialect
  sourceName: string
  schema: string
  sqliteFile?: string
  /** SQL names of the tables that have a primary key. */
  tablesWithKey: readonly string[]
  reject(why: string, details?: Record<string, unknown>): void
  warn(message: string, details?: Record<string, unknown>): void
}

/**
 * Prepares the change stream of one source; {@link SourceChanges.start} installs or checks the
 * triggers and starts reading.
 * @throws DbChangesUnavailableError (from `start`) when the triggers are missing and `install` is false
 */
export function createSourceChanges(options: DatabaseChangesOptions | true, c: SourceChangesContext): SourceChanges {
  const o = options === true ? {} : options
  const feed = new ChangeFeed()
  const tables = new Set(o.tables ?? c.tablesWithKey)
  let reader: EngineReader | undefined
  let method: ChangesHealth['method'] | undefined
  const serverId = o.serverId ?? 2 ** 31 + Math.floor(Math.random() * (2 ** 31 - 1))
  return {
    shared: {
      feed,
      tables,
      limits: { maxBufferedEvents: o.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_CHANGES, maxBatchSize: o.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE },
      operation: changeOperationEnum(),
      warn: c.warn,
    },
    async start(models) {
      const options = {
        knex: c.knex, d: c.d, feed, models: models.filter((m) => tables.has(m.table)), install: o.install === true, sourceName: c.sourceName,
        schema: c.schema, channel: o.channel ?? DEFAULT_CHANNEL, ...(c.sqliteFile ? { sqliteFile: c.sqliteFile } : {}),
        pollIntervalMs: o.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, backlogSize: o.backlogSize ?? DEFAULT_BACKLOG_SIZE,
        maxPayloadBytes: o.maxPayloadBytes ?? DEFAULT_MAX_CHANGE_PAYLOAD_BYTES, maxReconnectDelayMs: o.maxReconnectDelayMs ?? 5000,
        reject: c.reject, warn: c.warn,
      }
      const wanted = o.method ?? 'auto'
      if (wanted === 'binlog' && c.d.dialect !== 'mysql') throw new DbChangesUnavailableError(c.sourceName, 'method binlog is for MySQL/MariaDB sources')
      if (c.d.dialect === 'mysql') {
        const started = await startMysqlChanges({ ...options, serverId }, wanted)
        reader = started.reader
        method = started.method
      } else {
        reader = c.d.dialect === 'postgres' ? await startPostgres(options) : await startChangelog(options)
        method = c.d.dialect === 'postgres' ? 'listen' : 'triggers'
      }
    },
    poke: () => reader?.poke(),
    problem: () => (reader ? reader.problem() : 'not started'),
    health: () => {
      if (!reader || !method) return undefined
      const p = reader.problem()
      return p === null ? { method, status: 'up' } : { method, status: 'reconnecting', lastError: p }
    },
    async close() {
      await reader?.close()
    },
  }
}
