/**
 * Database change streams (`database({ changes })`, README "Database change streams"): the options,
 * and the start of one source's change reader (engines.ts: triggers; postgres-logical.ts: PostgreSQL
 * logical replication, `method: 'logical' | 'auto'`) feeding its subscriptions (subscriptions.ts)
 * through a {@link ChangeFeed}.
 */
import type { Knex } from 'knex'
import type { Model } from '../compiler/registry.js'
import type { SqlDialect } from '../compiler/dialect.js'
import { ChangeFeed } from './feed.js'
import { startChangelog, startPostgres, type EngineReader } from './engines.js'
import { startPostgresChanges } from './postgres-logical.js'
import { DbChangesUnavailableError } from '../../../errors.js'
import type { ChangeStreamHealth } from '../../types.js'
import { changeOperationEnum, type ChangeShared } from './subscriptions.js'
import { startMysqlChanges } from './mysql-binlog.js'

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
/** Default of {@link DatabaseChangesOptions.maxWaitForSubscriberMs}, in milliseconds. */
export const DEFAULT_MAX_WAIT_FOR_SUBSCRIBER_MS = 60_000

/**
 * Default name of the replication slot and of the publication of a source (logical replication):
 * `tributary_` and the source's name in lower case, other characters than `a-z0-9_` as `_`, at most
 * 63 characters (PostgreSQL's NAMEDATALEN − 1).
 */
export function defaultLogicalName(sourceName: string): string {
  return `tributary_${sourceName.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63)
}

/** `database({ changes })`: change subscriptions. `true` is `{}` (every default). */
export interface DatabaseChangesOptions {
  /**
   * How changes are captured. `triggers`: triggers per table (PostgreSQL: with LISTEN/NOTIFY;
   * SQLite and MySQL/MariaDB: filling a changelog table). `logical` (PostgreSQL): logical
   * replication with the `pgoutput` plugin, a publication and a replication slot (needs
   * `wal_level = logical`, a user with REPLICATION and the `pg-logical-replication` package).
   * `binlog` (MySQL/MariaDB): the row events of the binary log (needs `log_bin`, `binlog_format=ROW`,
   * REPLICATION SLAVE and CLIENT, and the `@vlasky/zongji` package). `auto`: logical replication or
   * the binlog where it can run, else triggers, else `TRB_ERR_DB_CHANGES_UNAVAILABLE` naming what
   * each lacks (SQLite: triggers). Default: `triggers` on PostgreSQL and SQLite (a replication slot
   * keeps WAL while no gateway reads it), `auto` on MySQL/MariaDB (the binlog holds nothing back).
   */
  method?: 'triggers' | 'logical' | 'binlog' | 'auto'
  /**
   * Create what the engine needs (PostgreSQL triggers: the function `tributary_notify_change` and a
   * trigger `tributary_changes` per table; PostgreSQL logical: the publication, the slot and
   * `REPLICA IDENTITY FULL` on tables with the default identity; SQLite and MySQL/MariaDB: the table
   * `tributary_changes` and three triggers per table). Default false: they must exist, or the start
   * fails with `TRB_ERR_DB_CHANGES_UNAVAILABLE`.
   */
  install?: boolean
  /** PostgreSQL logical: the replication slot (`[a-z0-9_]`, ≤ 63). Default {@link defaultLogicalName}. */
  slot?: string
  /** PostgreSQL logical: the publication (`[a-z_][a-z0-9_]*`, ≤ 63). Default {@link defaultLogicalName}. */
  publication?: string
  /**
   * PostgreSQL logical: longest wait after the start for a first subscription before the slot is
   * read anyway (what the slot kept while the gateway was down goes to the subscribers present when
   * reading starts), in milliseconds. Default 60000.
   */
  maxWaitForSubscriberMs?: number
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
  /** PostgreSQL, MySQL/MariaDB binlog: longest delay between two reconnects of the LISTEN, replication or binlog connection, in milliseconds. Default 5000. */
  maxReconnectDelayMs?: number
  /** MySQL/MariaDB binlog: the replica server id the gateway announces. Default a random id in 2^31…2^32−1 per process. */
  serverId?: number
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
  /** What `/health` shows of the change stream. */
  health(): ChangeStreamHealth
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
  let method: ChangeStreamHealth['method'] = 'triggers'
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
      const wanted = o.method ?? (c.d.dialect === 'mysql' ? 'auto' : 'triggers')
      if (wanted === 'binlog' && c.d.dialect !== 'mysql') throw new DbChangesUnavailableError(c.sourceName, 'method binlog is for MySQL/MariaDB sources')
      if (wanted === 'logical' && c.d.dialect !== 'postgres') throw new DbChangesUnavailableError(c.sourceName, `method 'logical' (logical replication) is PostgreSQL's; use 'triggers'${c.d.dialect === 'mysql' ? " or 'binlog'" : ''} on ${c.d.dialect === 'mysql' ? 'MySQL/MariaDB' : 'SQLite'}`)
      if (c.d.dialect === 'postgres' && (wanted === 'logical' || wanted === 'auto')) {
        const name = defaultLogicalName(c.sourceName)
        reader = await startPostgresChanges(wanted, {
          ...options, slot: o.slot ?? name, publication: o.publication ?? name, maxWaitForSubscriberMs: o.maxWaitForSubscriberMs ?? DEFAULT_MAX_WAIT_FOR_SUBSCRIBER_MS,
        })
        method = reader.state ? 'logical' : 'triggers'
      } else if (c.d.dialect === 'mysql') {
        const started = await startMysqlChanges({ ...options, serverId }, wanted === 'logical' ? 'triggers' : wanted)
        reader = started.reader
        method = started.method
      } else {
        reader = c.d.dialect === 'postgres' ? await startPostgres(options) : await startChangelog(options)
        method = 'triggers'
      }
    },
    poke: () => reader?.poke(),
    problem: () => (reader ? reader.problem() : 'not started'),
    health: () => {
      const problem = reader ? reader.problem() : 'not started'
      return { method, status: problem === null ? 'up' : 'reconnecting', ...(problem === null ? {} : { lastError: problem }), ...reader?.state?.() }
    },
    async close() {
      await reader?.close()
    },
  }
}
