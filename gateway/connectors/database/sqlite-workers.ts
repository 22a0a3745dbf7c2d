/**
 * SQLite statements off the event loop. better-sqlite3 is synchronous: a statement run in the gateway
 * process blocks every other request (and `/health`) until it returns. Statements that may be slow
 * run instead in a small pool of worker **processes**, each with its own better-sqlite3 connection
 * to the same database file (WAL mode lets them read while another connection writes).
 *
 * Why processes and not `worker_threads` (which the better-sqlite3 docs suggest): better-sqlite3 has
 * no `sqlite3_interrupt`, and `Worker.terminate()` only takes effect when the thread returns to
 * JavaScript, so a thread inside a 10 s statement keeps its core busy for those 10 s (measured:
 * `terminate()` resolved only when a 7.5 s recursive CTE finished). A process is stopped at once by
 * SIGKILL; SQLite then discards whatever it had not committed (the WAL's uncommitted frames, the
 * locks with the file descriptors), which is exactly a rollback.
 *
 * A worker whose statement passes `timeoutMs`, or whose client disconnects, is killed and a new one
 * is started in its place (lazily, on the next statement). The statement's promise rejects with
 * `TRB_ERR_DB_TIMEOUT` / `TRB_ERR_DB_CANCELLED`; nothing retries it.
 *
 * A worker can also be held for a transaction ({@link SqliteWorkers.hold}): every statement of the
 * transaction then runs on that one process's connection, BEGIN IMMEDIATE … COMMIT, so writes stay
 * atomic; if one of them is killed, SQLite rolls the whole transaction back.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { CapacityError, DbCancelledError, DbRawRefusedError, DbTimeoutError, GraphQLLimitError } from '../../errors.js'
import { explainRefusal } from './sqlite-raw-guard.js'

/**
 * Subscribes to the disconnect of a statement's client; returns the unsubscribe function. Calls
 * `onCancel` at once (synchronously) when the client is gone already.
 */
export type CancelWatch = (onCancel: () => void) => () => void

/** What a worker runs: `values` plucks the first column of every row; `exec` returns rows or the affected count. */
export interface SqliteJob {
  mode: 'values' | 'exec'
  sql: string
  bindings: readonly unknown[]
  /**
   * `values` only: the most JSON text (UTF-16 units, summed over the rows) the worker may send back;
   * a larger result is dropped in the worker and the job fails with `GraphQLLimitError`, so that it
   * never crosses into the gateway's heap (see gateway/result-budget.ts).
   */
  maxChars?: number
  /** Raw SQL (`queryRaw`/`executeRaw`): the worker refuses it when SQLite's bytecode reaches files or code (sqlite-raw-guard.ts). */
  raw?: boolean
}

/** The result of an `exec` job (see `ExecResult` in compiler/db.ts). */
export interface SqliteExecResult {
  rows: Record<string, unknown>[]
  affected: number
}

/** The code each worker process runs (CommonJS, given to `node -e`). */
const WORKER_CODE = `
'use strict'
const Database = require(process.env.TRB_SQLITE_MODULE)
let db
try {
  db = new Database(process.env.TRB_SQLITE_FILE, { fileMustExist: true })
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
} catch (err) {
  // The file cannot be opened (SQLITE_CANTOPEN…): reported with its code, then the process ends.
  process.send({ ready: false, error: { message: String(err && err.message), code: err && err.code } }, () => process.exit(1))
}
const caches = { values: new Map(), exec: new Map() }
const buf = (v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v)
function statement(mode, sql) {
  const cache = caches[mode]
  let stmt = cache.get(sql)
  if (!stmt) {
    if (cache.size >= 1000) cache.clear()
    stmt = db.prepare(sql)
    if (mode === 'values') stmt.pluck(true)
    cache.set(sql, stmt)
  }
  return stmt
}
const explainRefusal = ${explainRefusal.toString()}
process.on('message', (m) => {
  let reply
  try {
    const refused = m.raw ? explainRefusal(db, m.sql) : null
    if (refused) { process.send({ id: m.id, ok: false, error: { message: refused, code: 'TRB_ERR_DB_RAW_REFUSED' } }); return }
    const stmt = statement(m.mode, m.sql)
    const args = m.bindings.map(buf)
    let result
    if (m.mode === 'values') {
      result = stmt.all(...args)
      if (m.maxChars !== undefined) {
        let n = 0
        for (const v of result) if (typeof v === 'string') n += v.length
        if (n > m.maxChars) { process.send({ id: m.id, ok: false, error: { message: 'too large', code: 'TRB_RESULT_TOO_LARGE', size: n } }); return }
      }
    }
    else if (stmt.reader) { const rows = stmt.all(...args); result = { rows, affected: rows.length } }
    else result = { rows: [], affected: stmt.run(...args).changes }
    reply = { id: m.id, ok: true, result }
  } catch (err) {
    reply = { id: m.id, ok: false, error: { message: String(err && err.message), code: err && err.code } }
  }
  process.send(reply)
})
process.on('disconnect', () => process.exit(0))
if (db) process.send({ ready: true })
`

const sqliteModule = createRequire(import.meta.url).resolve('better-sqlite3')

interface Pending {
  job: SqliteJob
  resolve(value: unknown): void
  reject(err: unknown): void
  cancel: CancelWatch | undefined
  /** Called when the worker starts the statement (after the process is ready). */
  started?: () => void
  /** Unsubscribes from the client's disconnect. */
  off?: () => void
  timer?: NodeJS.Timeout
}

/** One worker process. */
class Worker {
  readonly child: ChildProcess
  private nextId = 0
  current: (Pending & { id: number }) | undefined
  /** Held for a transaction: only its holder sends statements. */
  held = false
  dead = false
  /** True once the process has opened the database; statements sent earlier wait (their timeout not yet running). */
  private ready = false
  private readonly onReady: (() => void)[] = []
  private readonly bootTimer: NodeJS.Timeout

  constructor(
    filename: string,
    private readonly onExit: (w: Worker) => void,
  ) {
    this.child = spawn(process.execPath, ['-e', WORKER_CODE], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
      env: { TRB_SQLITE_MODULE: sqliteModule, TRB_SQLITE_FILE: filename },
    })
    this.bootTimer = setTimeout(() => this.kill(new Error('the SQLite worker process did not start within 10 s')), 10_000)
    this.child.on('message', (m: { ready?: boolean; id: number; ok: boolean; result?: unknown; error?: { message: string; code?: string } }) => {
      // The database could not be opened: the statement waiting for this process fails with the driver's code.
      if (m.ready === false) return this.die(Object.assign(new Error(m.error?.message ?? 'the SQLite worker cannot open the database'), { code: m.error?.code }))
      if (m.ready) {
        clearTimeout(this.bootTimer)
        this.ready = true
        for (const fn of this.onReady.splice(0)) fn()
        return
      }
      const p = this.current
      if (!p || p.id !== m.id) return
      this.finish()
      if (m.ok) p.resolve(m.result)
      else if (m.error?.code === 'TRB_RESULT_TOO_LARGE') p.reject(new GraphQLLimitError(`The results of this request exceed its limit of server.maxResponseBytes; ask for less`))
      else if (m.error?.code === 'TRB_ERR_DB_RAW_REFUSED') p.reject(new DbRawRefusedError(m.error.message))
      else p.reject(Object.assign(new Error(m.error?.message ?? 'SQLite error'), { code: m.error?.code }))
    })
    this.child.on('exit', () => this.die(new Error('the SQLite worker process exited')))
    this.child.on('error', (err) => this.die(err))
  }

  /** Sends one statement (once the process is ready); `p` settles with its result or error. */
  send(p: Pending, timeoutMs: number): void {
    const id = ++this.nextId
    const current = { ...p, id }
    this.current = current
    if (p.cancel) current.off = p.cancel(() => this.kill(new DbCancelledError()))
    const go = (): void => {
      if (this.current !== current) return
      current.timer = setTimeout(() => this.kill(new DbTimeoutError(timeoutMs)), timeoutMs)
      p.started?.()
      this.child.send({ id, mode: p.job.mode, sql: p.job.sql, bindings: p.job.bindings, maxChars: p.job.maxChars, raw: p.job.raw })
    }
    if (this.ready) go()
    else this.onReady.push(go)
  }

  private finish(): void {
    const p = this.current
    if (!p) return
    this.current = undefined
    clearTimeout(p.timer)
    p.off?.()
  }

  /** Kills the process (SIGKILL: the statement stops now, uncommitted work is rolled back by SQLite). */
  kill(reason: Error): void {
    if (this.dead) return
    this.child.kill('SIGKILL')
    this.die(reason)
  }

  private die(reason: Error): void {
    clearTimeout(this.bootTimer)
    const p = this.current
    this.finish()
    if (!this.dead) {
      this.dead = true
      this.onExit(this)
    }
    p?.reject(reason)
  }
}

/** A worker held for a transaction: run its statements with {@link SqliteWorkers.runOn}, then {@link SqliteWorkers.release}. */
export interface HeldWorker {
  readonly worker: Worker
  /** The class the worker was taken for (see {@link SqliteWorkers}). */
  readonly light: boolean
}

/** Default of {@link SqliteWorkerLimits.maxQueue}. */
export const DEFAULT_SQLITE_MAX_QUEUE = 256
/** Default of {@link SqliteWorkerLimits.maxWaitMs}, in milliseconds. */
export const DEFAULT_SQLITE_MAX_WAIT_MS = 2000

/** The queue limits of a {@link SqliteWorkers} pool. */
export interface SqliteWorkerLimits {
  /** Statements (and transactions) waiting for a worker at most; one more is refused at once. Default {@link DEFAULT_SQLITE_MAX_QUEUE}. */
  maxQueue?: number
  /** Longest wait for a worker, in milliseconds; a statement that waited that long is refused. Default {@link DEFAULT_SQLITE_MAX_WAIT_MS}. */
  maxWaitMs?: number
  /**
   * Worker time one request may use, in milliseconds, summed over its statements run with
   * {@link SqliteWorkers.run} (a document of 30 aliases runs 30): each statement's timeout is what is
   * left of it (at most the statement timeout); once spent, the next statement fails with
   * `TRB_ERR_DB_TIMEOUT` without running. Default: the statement timeout.
   */
  requestBudgetMs?: number
}

/** One statement or transaction waiting for a worker. */
interface Waiting {
  light: boolean
  take(w: Worker): void
  fail(err: Error): void
}

/**
 * A pool of SQLite worker processes on one database file.
 *
 * Two classes of work share it. *Heavy* statements are those the caller cannot bound by the rows
 * they read (reads with a relation filter of the client: a correlated subquery per row filtered;
 * raw SQL); everything else is *light*: other reads (the caller says so, `light`) and transactions,
 * so that writes never wait behind slow reads. Heavy work runs on at most `size` processes at once;
 * the pool starts one more process, `size + 1`, that only light work may take, so a few slow
 * relation filters can hold every heavy slot but never delay a plain read by more than the light
 * work ahead of it. Waiting light work goes before waiting heavy work; each class is first come,
 * first served.
 *
 * The queue is bounded: past `maxQueue` waiting, or after `maxWaitMs` of waiting, a statement is
 * refused with 503 `TRB_ERR_CAPACITY` (its `retryAfterSec` is the pool's timeout, in whole seconds:
 * the longest a worker stays busy with one statement). `timeoutMs` counts from the moment a worker
 * starts the statement.
 */
export class SqliteWorkers {
  private readonly workers = new Set<Worker>()
  private readonly idle: Worker[] = []
  private readonly waitingLight: Waiting[] = []
  private readonly waitingHeavy: Waiting[] = []
  /** Workers running heavy work (or held for a transaction). */
  private heavyBusy = 0
  private closed = false
  /** See {@link SqliteWorkerLimits.maxQueue}. */
  readonly maxQueue: number
  /** See {@link SqliteWorkerLimits.maxWaitMs}. */
  readonly maxWaitMs: number
  /** See {@link SqliteWorkerLimits.requestBudgetMs}. */
  readonly requestBudgetMs: number
  /** Worker milliseconds used so far, per request (its `owner` object). */
  private readonly spent = new WeakMap<object, number>()

  /**
   * @param filename the database file (absolute path); it must exist
   * @param size how many worker processes heavy work may use at once (one more serves light statements)
   * @param timeoutMs the statement timeout, in milliseconds
   * @param limits the queue's bounds (see {@link SqliteWorkerLimits})
   */
  constructor(
    readonly filename: string,
    readonly size: number,
    readonly timeoutMs: number,
    limits: SqliteWorkerLimits = {},
  ) {
    this.maxQueue = limits.maxQueue ?? DEFAULT_SQLITE_MAX_QUEUE
    this.maxWaitMs = limits.maxWaitMs ?? DEFAULT_SQLITE_MAX_WAIT_MS
    this.requestBudgetMs = limits.requestBudgetMs ?? timeoutMs
  }

  /** What is left of `owner`'s {@link requestBudgetMs} (the statement timeout without an owner), capped at the statement timeout. */
  private timeLeft(owner: object | undefined): number {
    return owner ? Math.min(this.timeoutMs, this.requestBudgetMs - (this.spent.get(owner) ?? 0)) : this.timeoutMs
  }

  /** Statements and transactions waiting for a worker now. */
  get queued(): number {
    return this.waitingLight.length + this.waitingHeavy.length
  }

  private spawn(): Worker {
    const fresh = new Worker(this.filename, (dead) => this.remove(dead))
    this.workers.add(fresh)
    return fresh
  }

  /** A worker for work of this class now, or undefined (see the class' rules). */
  private free(light: boolean): Worker | undefined {
    if (!light && this.heavyBusy >= this.size) return undefined
    return this.idle.pop() ?? (this.workers.size < this.size + 1 ? this.spawn() : undefined)
  }

  private refuse(what: string): Error {
    return Object.assign(new CapacityError(`${what}; retry later`), { retryAfterSec: Math.max(1, Math.ceil(this.timeoutMs / 1000)) })
  }

  /**
   * A worker for work of this class: free now, else the next one released (light first, then in
   * order of asking). Rejects with `TRB_ERR_CAPACITY` when the queue is full or the wait passes
   * `maxWaitMs`, `TRB_ERR_DB_CANCELLED` when the client goes away while waiting.
   */
  private take(light: boolean, cancel: CancelWatch | undefined): Promise<Worker> {
    if (this.closed) return Promise.reject(new Error('the database source is closed'))
    const w = this.free(light)
    if (w) {
      if (!light) this.heavyBusy++
      return Promise.resolve(w)
    }
    if (this.queued >= this.maxQueue) return Promise.reject(this.refuse(`${this.queued} database statements are waiting for this SQLite file (maxQueue)`))
    const queue = light ? this.waitingLight : this.waitingHeavy
    return new Promise((resolve, reject) => {
      let off: (() => void) | undefined
      let left = false
      const leave = (): void => {
        left = true
        clearTimeout(timer)
        off?.()
        const i = queue.indexOf(entry)
        if (i >= 0) queue.splice(i, 1)
      }
      const entry: Waiting = {
        light,
        take: (worker) => {
          leave()
          if (!light) this.heavyBusy++
          resolve(worker)
        },
        fail: (err) => {
          leave()
          reject(err)
        },
      }
      const timer = setTimeout(() => entry.fail(this.refuse(`no SQLite worker was free within ${this.maxWaitMs} ms (maxWaitMs)`)), this.maxWaitMs)
      queue.push(entry)
      // A client gone already is called back at once, from inside `cancel`.
      off = cancel?.(() => entry.fail(new DbCancelledError()))
      if (left) off?.()
    })
  }

  /** The next waiting entry a worker may serve now, light first. */
  private next(): Waiting | undefined {
    if (this.waitingLight.length > 0) return this.waitingLight[0]
    if (this.waitingHeavy.length > 0 && this.heavyBusy < this.size) return this.waitingHeavy[0]
    return undefined
  }

  private give(w: Worker, light: boolean): void {
    if (!light) this.heavyBusy--
    if (w.dead) return this.dispatch()
    w.held = false
    const next = this.next()
    if (next) next.take(w)
    else this.idle.push(w)
  }

  /** Starts replacements for waiting work while the pool has room (after a worker died). */
  private dispatch(): void {
    for (let next = this.next(); next && !this.closed; next = this.next()) {
      const w = this.idle.pop() ?? (this.workers.size < this.size + 1 ? this.spawn() : undefined)
      if (!w) return
      next.take(w)
    }
  }

  private remove(w: Worker): void {
    this.workers.delete(w)
    const i = this.idle.indexOf(w)
    if (i >= 0) this.idle.splice(i, 1)
    // A replacement for whoever waits.
    if (!this.closed) this.dispatch()
  }

  /**
   * Runs one statement on any worker. Rejects with the driver's error, `TRB_ERR_DB_TIMEOUT` (the
   * statement timeout, or the request's budget spent), `TRB_ERR_DB_CANCELLED` or `TRB_ERR_CAPACITY`
   * (503: the queue is full, or no worker was free in time).
   * @param light light work (see the class): it may use the process kept for it
   * @param owner the request (any object, e.g. its resolver context) charged with the worker time, see {@link SqliteWorkerLimits.requestBudgetMs}
   */
  async run(job: SqliteJob, cancel?: CancelWatch, light = false, owner?: object): Promise<unknown> {
    if (this.timeLeft(owner) <= 0) throw new DbTimeoutError(this.requestBudgetMs)
    const w = await this.take(light, cancel)
    let start: number | undefined
    try {
      const left = this.timeLeft(owner)
      if (left <= 0) throw new DbTimeoutError(this.requestBudgetMs)
      return await new Promise((resolve, reject) => {
        if (w.dead) return reject(new Error('the SQLite worker process is gone'))
        w.send({ job, resolve, reject, cancel, started: () => void (start = performance.now()) }, left)
      })
    } finally {
      if (owner && start !== undefined) this.spent.set(owner, (this.spent.get(owner) ?? 0) + performance.now() - start)
      this.give(w, light)
    }
  }

  /**
   * Takes a worker for a transaction (light work: writes are not made to wait behind slow reads):
   * nobody else uses it until {@link release}. Rejects as {@link run} does.
   */
  async hold(cancel?: CancelWatch): Promise<HeldWorker> {
    const worker = await this.take(true, cancel)
    worker.held = true
    return { worker, light: true }
  }

  /** Runs one statement on a held worker. */
  runOn(held: HeldWorker, job: SqliteJob, cancel?: CancelWatch): Promise<unknown> {
    const w = held.worker
    if (w.dead) return Promise.reject(new Error('the SQLite worker process is gone'))
    return new Promise((resolve, reject) => w.send({ job, resolve, reject, cancel }, this.timeoutMs))
  }

  /** Gives a held worker back. */
  release(held: HeldWorker): void {
    this.give(held.worker, held.light)
  }

  /** Stops every worker process. */
  close(): void {
    this.closed = true
    for (const entry of [...this.waitingLight, ...this.waitingHeavy]) entry.fail(new Error('the database source is closed'))
    for (const w of [...this.workers]) w.kill(new Error('the database source is closed'))
  }
}

/** True when `value` is a worker held by {@link SqliteWorkers.hold}. */
export function isHeldWorker(value: unknown): value is HeldWorker {
  return typeof value === 'object' && value !== null && (value as { worker?: unknown }).worker instanceof Worker
}
