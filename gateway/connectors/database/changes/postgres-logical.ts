/**
 * PostgreSQL change capture through logical replication (README "Database change streams",
 * `changes: { method: 'logical' | 'auto' }`), the alternative to the triggers of engines.ts.
 *
 * - A **publication** (`CREATE PUBLICATION … FOR TABLE <watched tables>`) says which tables the
 *   server decodes, a **logical replication slot** with the `pgoutput` plugin keeps the server's
 *   position (`confirmed_flush_lsn`) and the WAL not yet acknowledged. Both are created only with
 *   `install: true` (which also sets `REPLICA IDENTITY FULL` on the watched tables that have the
 *   default identity, so that a DELETE carries the deleted row as the trigger method's does);
 *   otherwise they must exist, or the start fails with `TRB_ERR_DB_CHANGES_UNAVAILABLE`.
 * - The gateway opens one replication connection (`replication=database`, the streaming
 *   replication protocol, PostgreSQL docs §55.4) with the `pg-logical-replication` package (an
 *   optional peer dependency, loaded only here) and runs `START_REPLICATION SLOT … LOGICAL` with
 *   `proto_version '1'` and the publication. Its pgoutput parser decodes Relation, Begin,
 *   Insert, Update, Delete and Commit messages (§55.9); Truncate, Type, Origin and Message are
 *   ignored (TRUNCATE is not reported, as with triggers).
 * - Changes are published to the {@link ChangeFeed} in chunks of {@link LOGICAL_CHUNK} and at each
 *   Commit; the Commit's end LSN is then acknowledged (a standby status update with write = flush =
 *   apply = LSN + 1). Nothing is acknowledged before it was handed on, so after a restart or a lost
 *   connection the server sends again every transaction not acknowledged (at least once: a
 *   transaction cut in the middle is sent whole again). While no transaction is open, a server
 *   keepalive's WAL end is acknowledged too (the slot does not hold WAL for other databases' or
 *   other tables' writes).
 * - Reading starts at the first subscription of the source, or `maxWaitForSubscriberMs` after the
 *   start when none came, so that what the slot kept while the gateway was down reaches the
 *   subscribers of the restarted gateway rather than nobody.
 * - A status update asking for a reply goes out every {@link STATUS_INTERVAL_MS}; a connection
 *   from which nothing came for three intervals is taken as dead. A lost connection is re-opened
 *   with exponential backoff (100 ms to `maxReconnectDelayMs`, ±20 % jitter).
 */
import type { Knex } from 'knex'
import type * as Lib from 'pg-logical-replication'
import { DbChangesUnavailableError } from '../../../errors.js'
import { requireOptional } from '../../../optional-package.js'
import type { Model } from '../compiler/registry.js'
import { backoff, startPostgres, type EngineOptions, type EngineReader } from './engines.js'
import type { RowChange } from './feed.js'

/** Changes of one transaction handed on together at most (a larger transaction is handed on in parts). */
export const LOGICAL_CHUNK = 500
/** How often a standby status update (with a reply requested) is sent, in milliseconds. */
export const STATUS_INTERVAL_MS = 10_000

/** What {@link startPostgresLogical} needs besides {@link EngineOptions}. */
export interface LogicalOptions extends EngineOptions {
  /** The replication slot's name. */
  slot: string
  /** The publication's name. */
  publication: string
  /** Longest wait for a first subscription before the slot is read anyway, in milliseconds. */
  maxWaitForSubscriberMs: number
}

type Message = Lib.Pgoutput.Message
type Relation = Lib.Pgoutput.MessageRelation
type TypeParser = (text: string) => unknown

/** What logical replication lacks on this server and database: `server` (install cannot help), `objects` (install creates them). */
interface Missing {
  server: string[]
  objects: string[]
}

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`

/**
 * Looks at what logical replication needs: `wal_level = logical`, a user with REPLICATION (or a
 * superuser), the slot (plugin pgoutput, this database) and the publication of every watched table.
 */
async function logicalMissing(o: LogicalOptions): Promise<Missing> {
  const out: Missing = { server: [], objects: [] }
  const rows = async <T>(sql: string, b: unknown[] = []): Promise<T[]> => ((await o.knex.raw(sql, b as Knex.RawBinding[])) as { rows: T[] }).rows
  const [who] = await rows<{ wal: string; repl: boolean; usr: string; db: string }>(
    `SELECT current_setting('wal_level') AS wal, (r.rolreplication OR r.rolsuper) AS repl, current_user AS usr, current_database() AS db FROM pg_roles r WHERE r.rolname = current_user`,
  )
  if (who?.wal !== 'logical') out.server.push(`wal_level is ${who?.wal ?? '?'} (logical replication needs wal_level = logical, set in postgresql.conf, and a server restart)`)
  if (!who?.repl) out.server.push(`the user ${who?.usr ?? '?'} has no REPLICATION attribute (ALTER ROLE … REPLICATION)`)
  const [slot] = await rows<{ plugin: string | null; database: string | null }>(`SELECT plugin, database FROM pg_replication_slots WHERE slot_name = ?`, [o.slot])
  if (!slot) out.objects.push(`the replication slot ${o.slot} does not exist`)
  else if (slot.plugin !== 'pgoutput' || slot.database !== who?.db) out.server.push(`the replication slot ${o.slot} is not a pgoutput slot of the database ${who?.db ?? '?'} (plugin ${slot.plugin ?? 'none'}, database ${slot.database ?? 'none'}): choose another changes.slot`)
  const [pub] = await rows<{ ins: boolean; upd: boolean; del: boolean }>(`SELECT pubinsert AS ins, pubupdate AS upd, pubdelete AS del FROM pg_publication WHERE pubname = ?`, [o.publication])
  if (!pub) out.objects.push(`the publication ${o.publication} does not exist`)
  else {
    if (!pub.ins || !pub.upd || !pub.del) out.server.push(`the publication ${o.publication} does not publish inserts, updates and deletes (publish = 'insert, update, delete')`)
    const have = new Set((await rows<{ t: string }>(`SELECT tablename AS t FROM pg_publication_tables WHERE pubname = ? AND schemaname = ?`, [o.publication, o.schema])).map((r) => r.t))
    const lacking = o.models.filter((m) => !have.has(m.table)).map((m) => m.table)
    if (lacking.length > 0) out.objects.push(`the publication ${o.publication} does not publish ${lacking.join(', ')}`)
  }
  return out
}

/** The SQL that creates (or completes) the publication and sets `REPLICA IDENTITY FULL` where the identity is the default. The slot is created apart (not in a transaction that wrote). */
async function installPublication(o: LogicalOptions): Promise<void> {
  const table = (m: Model): string => `${ident(o.schema)}.${ident(m.table)}`
  await o.knex.transaction(async (trx) => {
    const exists = ((await trx.raw(`SELECT 1 FROM pg_publication WHERE pubname = ?`, [o.publication])) as { rows: unknown[] }).rows.length > 0
    const have = new Set(((await trx.raw(`SELECT tablename AS t FROM pg_publication_tables WHERE pubname = ? AND schemaname = ?`, [o.publication, o.schema])) as { rows: { t: string }[] }).rows.map((r) => r.t))
    const lacking = o.models.filter((m) => !have.has(m.table))
    if (!exists) await trx.raw(`CREATE PUBLICATION ${ident(o.publication)} FOR TABLE ${o.models.map(table).join(', ')}`)
    else if (lacking.length > 0) await trx.raw(`ALTER PUBLICATION ${ident(o.publication)} ADD TABLE ${lacking.map(table).join(', ')}`)
    const identities = ((await trx.raw(
      `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relreplident = 'd' AND c.relname = ANY(?)`,
      [o.schema, o.models.map((m) => m.table)],
    )) as { rows: { t: string }[] }).rows.map((r) => r.t)
    for (const m of o.models.filter((m) => identities.includes(m.table))) await trx.raw(`ALTER TABLE ${table(m)} REPLICA IDENTITY FULL`)
  })
}

/** Why logical replication cannot run here, or null when it can (after creating what `install` allows). */
async function prepareLogical(o: LogicalOptions): Promise<string | null> {
  const missing = await logicalMissing(o)
  if (missing.server.length > 0 || (!o.install && missing.objects.length > 0)) {
    return [...missing.server, ...missing.objects].join('; ') + (o.install || missing.objects.length === 0 ? '' : ' (set changes: { install: true } to create them)')
  }
  if (missing.objects.length === 0) return null
  await installPublication(o)
  if (missing.objects.some((m) => m.startsWith('the replication slot'))) {
    await o.knex.raw(`SELECT pg_create_logical_replication_slot(?, 'pgoutput')`, [o.slot])
  }
  return null
}

/**
 * Starts the change stream of a PostgreSQL source by `method`: `logical` (fails when logical
 * replication cannot run), or `auto`: logical replication where it can run (after creating the
 * slot and the publication with `install`), else the triggers (existing or, with `install`,
 * created), else the error naming what each method lacks.
 * @throws DbChangesUnavailableError (`TRB_ERR_DB_CHANGES_UNAVAILABLE`) naming what is missing
 * @throws PackageMissingError (`TRB_ERR_PACKAGE_MISSING`) when logical replication is chosen and `pg-logical-replication` is not installed
 */
export async function startPostgresChanges(method: 'logical' | 'auto', o: LogicalOptions): Promise<EngineReader> {
  const why = await prepareLogical(o)
  if (why === null) return startPostgresLogical(o)
  if (method === 'logical') throw new DbChangesUnavailableError(o.sourceName, `logical replication: ${why}`)
  try {
    const reader = await startPostgres(o)
    o.warn('database changes: logical replication cannot run here; using triggers', { why })
    return reader
  } catch (err) {
    if (!(err instanceof DbChangesUnavailableError)) throw err
    const text = (err as Error).message
    const mark = 'cannot stream changes: '
    throw new DbChangesUnavailableError(o.sourceName, `neither logical replication (${why}) nor triggers (${text.includes(mark) ? text.slice(text.indexOf(mark) + mark.length) : text}) can run`)
  }
}

/**
 * Whether the transaction `xid` (32 bits, as a Begin message gives it) has ended in a snapshot
 * (`txid_current_snapshot()`: 64-bit ids, the epoch in the upper half): below `xmax` and not running.
 */
function visible(s: { xmin: bigint; xmax: bigint; running: Set<bigint> }, xid: number): boolean {
  let full = (s.xmax & ~0xffffffffn) | BigInt(xid >>> 0)
  if (full >= s.xmax) full -= 0x100000000n
  return full < s.xmin || (full < s.xmax && !s.running.has(full))
}

/** `a > b` for two LSNs (`X/Y`, hexadecimal). */
function lsnAfter(a: string, b: string): boolean {
  const n = (s: string): bigint => {
    const [hi = '0', lo = '0'] = s.split('/')
    return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`)
  }
  return n(a) > n(b)
}

/** The connection settings of the source's pool, for the replication connection. */
function replicationConfig(knex: Knex): { config: Record<string, unknown>; typeParser(oid: number): TypeParser } {
  const c = ((knex.client as { config?: { connection?: unknown } }).config?.connection ?? {}) as Record<string, unknown> & { types?: { getTypeParser(oid: number, format: 'text'): TypeParser } }
  const config: Record<string, unknown> = { connectionTimeoutMillis: 5000 }
  for (const k of ['host', 'port', 'user', 'password', 'database', 'ssl', 'application_name']) if (c[k] !== undefined) config[k] = c[k]
  return { config, typeParser: (oid) => c.types?.getTypeParser(oid, 'text') ?? ((s: string) => s) }
}

/** The state of the logical reader, for `/health`. */
export interface LogicalState {
  /** `waiting` (for a first subscriber), `streaming`, `reconnecting`, `closed`. */
  state: 'waiting' | 'connecting' | 'streaming' | 'reconnecting' | 'closed'
  slot: string
  publication: string
  /** The last LSN acknowledged to the server (what a restart resumes after); null before the first. */
  confirmedLsn: string | null
}

/**
 * Reads the slot (which, like the publication, must exist: see {@link startPostgresChanges}) and
 * publishes the changes of the watched tables to `o.feed`.
 * @throws PackageMissingError when `pg-logical-replication` is not installed
 */
export async function startPostgresLogical(o: LogicalOptions): Promise<EngineReader & { state(): LogicalState }> {
  const lib = requireOptional<typeof Lib>('pg-logical-replication', `PostgreSQL source '${o.sourceName}' (changes: { method: 'logical' })`)
  const { config, typeParser } = replicationConfig(o.knex)
  const watched = new Map(o.models.map((m) => [m.table, m.primaryKey.map((f) => m.fieldMap.get(f)!.column)] as const))
  let state: LogicalState['state'] = 'waiting'
  let problem: string | null = null
  let confirmed: string | null = null
  let generation = 0
  let attempt = 0
  let service: Lib.LogicalReplicationService | undefined
  let reconnect: NodeJS.Timeout | undefined
  let lastHeard = 0
  let inTx = false
  /** The open transaction's id (Begin) and its changes not yet queued. */
  let xid = 0
  let pending: RowChange[] = []
  /** Parts of transactions decoded, waiting to be handed on in order; `ack`: the Commit's LSN. */
  let queue: { xid: number; changes: RowChange[]; ack?: string }[] = []
  let queued = 0
  let handing = false

  const identity = (s: unknown): unknown => s
  /** A key (SQL column → value, parsed as the gateway's reads parse it), or null when a key column is missing. */
  const keyOf = (rel: Relation, cols: readonly string[], tuple: Record<string, unknown> | null): Record<string, unknown> | null => {
    if (!tuple) return null
    const out: Record<string, unknown> = {}
    for (const col of cols) {
      const raw = tuple[col]
      if (typeof raw !== 'string') return null
      const c = rel.columns.find((x) => x.name === col)
      out[col] = c ? typeParser(c.typeOid)(raw) : raw
    }
    return out
  }
  const size = (tuple: Record<string, unknown>, cols?: readonly string[]): number => {
    let n = 0
    for (const col of cols ?? Object.keys(tuple)) n += typeof tuple[col] === 'string' ? Buffer.byteLength(tuple[col] as string) : 0
    return n
  }
  /** One Insert, Update or Delete as a {@link RowChange}; null when it is not a watched table's (or rejected). */
  const toChange = (msg: Lib.Pgoutput.MessageInsert | Lib.Pgoutput.MessageUpdate | Lib.Pgoutput.MessageDelete): RowChange | null => {
    const rel = msg.relation
    const cols = rel.schema === o.schema ? watched.get(rel.name) : undefined
    if (!cols) return null
    const oldTuple = msg.tag === 'insert' ? null : (msg.old ?? msg.key)
    const newTuple = msg.tag === 'delete' ? null : msg.new
    if (size(newTuple ?? oldTuple ?? {}, cols) > o.maxPayloadBytes) {
      o.reject(`change with a key larger than ${o.maxPayloadBytes} bytes`, { table: rel.name })
      return null
    }
    const oldKey = keyOf(rel, cols, oldTuple)
    // An unchanged TOASTed key column is left out of the new tuple: the old key is the key then.
    const key = (newTuple ? keyOf(rel, cols, newTuple) : null) ?? oldKey
    if (!key) {
      o.reject('change without its primary key', { table: rel.name, op: msg.tag })
      return null
    }
    if (msg.tag === 'insert') return { table: rel.name, op: 'INSERT', key }
    if (msg.tag === 'update') return { table: rel.name, op: 'UPDATE', key, oldKey: oldKey ?? key }
    // The deleted row's values (text, as the server wrote them: the re-read casts them to the columns' types).
    const old = msg.old && size(msg.old) <= o.maxPayloadBytes ? { ...msg.old } : undefined
    return { table: rel.name, op: 'DELETE', key, oldKey: key, ...(old ? { old } : {}) }
  }
  const acknowledge = (ping = false): void => {
    if (confirmed && service) void service.acknowledge(confirmed, ping).catch(() => undefined)
  }
  /** The socket of the replication connection (the library's own flow control pauses it the same way). */
  const socket = (): { pause?(): void; resume?(): void } | undefined => (service as unknown as { _connection?: { stream?: { pause?(): void; resume?(): void } } } | undefined)?._connection?.stream
  /**
   * Hands the queue on in order. The walsender may send a Commit before the committing session made
   * the transaction visible to others (the commit record is in the WAL first): a re-read then would
   * not find the row. So, while someone listens, a part is handed on once a fresh snapshot
   * (`txid_current_snapshot()`) no longer counts its transaction as running.
   */
  const handOn = async (gen: number): Promise<void> => {
    if (handing) return
    handing = true
    try {
      let snapshot: { xmin: bigint; xmax: bigint; running: Set<bigint> } | undefined
      const started = Date.now()
      while (queue.length > 0 && gen === generation) {
        const head = queue[0]!
        if (o.feed.size > 0 && !(snapshot && visible(snapshot, head.xid))) {
          const text = ((await o.knex.raw('SELECT txid_current_snapshot()::text AS s')) as { rows: { s: string }[] }).rows[0]!.s
          const [xmin = '0', xmax = '0', list = ''] = text.split(':')
          snapshot = { xmin: BigInt(xmin), xmax: BigInt(xmax), running: new Set(list.split(',').filter(Boolean).map(BigInt)) }
          if (gen !== generation) break
          if (!visible(snapshot, head.xid) && Date.now() - started < 5000) {
            await new Promise((r) => setTimeout(r, 2))
            continue
          }
        }
        queue.shift()
        queued -= head.changes.length
        if (head.changes.length > 0) o.feed.publish(head.changes)
        if (head.ack) {
          confirmed = head.ack
          acknowledge()
        }
      }
    } catch (err) {
      if (gen === generation) lost(gen, err)
    } finally {
      handing = false
    }
    // Parts queued by a newer connection while this loop ended.
    if (queue.length > 0) return handOn(generation)
    socket()?.resume?.()
  }
  const enqueue = (ack?: string): void => {
    queue.push({ xid, changes: pending, ...(ack ? { ack } : {}) })
    queued += pending.length
    pending = []
    // Bounded: past a few parts waiting, the socket is paused until they were handed on.
    if (queued > 2 * LOGICAL_CHUNK) socket()?.pause?.()
    void handOn(generation)
  }
  const onMessage = (lsn: string, msg: Message | { tag: 'unreadable'; why: string }): void => {
    lastHeard = Date.now()
    switch (msg.tag) {
      case 'relation':
        // Values stay text: keys are parsed per column by the gateway's own type parsers, a deleted
        // row's values are cast back by the re-read.
        for (const c of msg.columns) c.parser = identity
        return
      case 'begin':
        inTx = true
        xid = msg.xid
        return
      case 'insert':
      case 'update':
      case 'delete': {
        const c = toChange(msg)
        if (c) pending.push(c)
        if (pending.length >= LOGICAL_CHUNK) enqueue()
        return
      }
      case 'commit':
        inTx = false
        enqueue(msg.commitEndLsn ?? lsn)
        return
      case 'unreadable':
        o.reject(`unreadable pgoutput message: ${msg.why}`)
        return
      default:
      // truncate (not reported), type, origin, message
    }
  }
  const lost = (gen: number, err?: unknown): void => {
    if (gen !== generation || state === 'closed') return
    generation++
    // The rest of a transaction cut in the middle comes again whole (it was not acknowledged).
    pending = []
    queue = []
    queued = 0
    inTx = false
    const s = service
    service = undefined
    void s?.destroy().catch(() => undefined)
    const message = err instanceof Error ? err.message : 'the server ended the stream'
    problem = `replication connection lost: ${message}`
    if (state === 'streaming') o.warn('database changes: the replication connection was lost; reconnecting', { slot: o.slot, err: message })
    state = 'reconnecting'
    reconnect = setTimeout(() => {
      reconnect = undefined
      connect()
    }, backoff(attempt++, o.maxReconnectDelayMs))
    reconnect.unref()
  }
  const connect = (): void => {
    if (state === 'closed') return
    const gen = ++generation
    if (state === 'waiting') state = 'connecting'
    const s = new lib.LogicalReplicationService(config, { acknowledge: { auto: false, timeoutSeconds: 0 } })
    service = s
    const inner = new lib.PgoutputPlugin({ protoVersion: 1, publicationNames: [o.publication] })
    // A message the parser cannot read is counted and skipped, never thrown into pg's socket handler.
    const plugin = Object.assign(Object.create(inner) as Lib.PgoutputPlugin, {
      parse: (buffer: Buffer) => {
        try {
          return inner.parse(buffer)
        } catch (err) {
          return { tag: 'unreadable', why: (err as Error).message } as unknown as Message
        }
      },
    })
    s.on('data', (lsn: string, msg: Message) => {
      if (gen !== generation) return
      try {
        onMessage(lsn, msg)
      } catch (err) {
        o.reject(`change not handed on: ${(err as Error).message}`)
      }
    })
    s.on('heartbeat', (lsn: string, _time: number, shouldRespond: boolean) => {
      if (gen !== generation) return
      lastHeard = Date.now()
      // Between transactions everything sent before the keepalive was handed on.
      if (!inTx && queue.length === 0 && (confirmed === null || lsnAfter(lsn, confirmed))) confirmed = lsn
      if (shouldRespond) acknowledge()
    })
    s.on('start', () => {
      if (gen !== generation) return
      state = 'streaming'
      problem = null
      attempt = 0
      lastHeard = Date.now()
    })
    s.on('error', (err: Error) => lost(gen, err))
    s.subscribe(plugin, o.slot).then(() => lost(gen), (err: unknown) => lost(gen, err))
  }
  const status = setInterval(() => {
    if (state !== 'streaming') return
    if (Date.now() - lastHeard > 3 * STATUS_INTERVAL_MS) return lost(generation, new Error(`no message from the server for ${3 * STATUS_INTERVAL_MS / 1000} s`))
    acknowledge(true)
  }, STATUS_INTERVAL_MS)
  status.unref()
  // Reading starts with the first subscription (or after the wait): what the slot kept reaches someone.
  const begin = (): void => {
    if (state !== 'waiting') return
    clearTimeout(waitTimer)
    o.feed.onListen = () => {}
    connect()
  }
  const waitTimer = setTimeout(begin, o.maxWaitForSubscriberMs)
  waitTimer.unref()
  o.feed.onListen = begin
  if (o.feed.size > 0) begin()
  return {
    poke: () => {},
    problem: () => problem,
    state: () => ({ state, slot: o.slot, publication: o.publication, confirmedLsn: confirmed }),
    async close() {
      state = 'closed'
      generation++
      clearTimeout(waitTimer)
      clearInterval(status)
      if (reconnect) clearTimeout(reconnect)
      const s = service
      service = undefined
      await s?.destroy().catch(() => undefined)
    },
  }
}
