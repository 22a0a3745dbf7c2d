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
import { DbCancelledError, DbTimeoutError, GraphQLLimitError } from '../../errors.js'

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
process.on('message', (m) => {
  let reply
  try {
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
      this.child.send({ id, mode: p.job.mode, sql: p.job.sql, bindings: p.job.bindings, maxChars: p.job.maxChars })
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
}

/**
 * A pool of SQLite worker processes on one database file.
 *
 * Statements queue (first come, first served) while every worker is busy; `timeoutMs` counts from
 * the moment a worker starts the statement.
 */
export class SqliteWorkers {
  private readonly workers = new Set<Worker>()
  private readonly idle: Worker[] = []
  private readonly waiting: { take(w: Worker): void; fail(err: Error): void }[] = []
  private closed = false

  /**
   * @param filename the database file (absolute path); it must exist
   * @param size how many worker processes at most
   * @param timeoutMs the statement timeout, in milliseconds
   */
  constructor(
    readonly filename: string,
    readonly size: number,
    readonly timeoutMs: number,
  ) {}

  /** A free worker, started if the pool is not full, else the next one released (in order of asking). */
  private take(cancel: CancelWatch | undefined): Promise<Worker> {
    if (this.closed) return Promise.reject(new Error('the database source is closed'))
    const w = this.idle.pop()
    if (w) return Promise.resolve(w)
    if (this.workers.size < this.size) {
      const fresh = new Worker(this.filename, (dead) => this.remove(dead))
      this.workers.add(fresh)
      return Promise.resolve(fresh)
    }
    return new Promise((resolve, reject) => {
      const entry = {
        take: (worker: Worker) => {
          off?.()
          resolve(worker)
        },
        fail: (err: Error) => {
          off?.()
          reject(err)
        },
      }
      const off = cancel?.(() => {
        const i = this.waiting.indexOf(entry)
        if (i >= 0) this.waiting.splice(i, 1)
        reject(new DbCancelledError())
      })
      this.waiting.push(entry)
    })
  }

  private give(w: Worker): void {
    if (w.dead) return
    w.held = false
    const next = this.waiting.shift()
    if (next) next.take(w)
    else this.idle.push(w)
  }

  private remove(w: Worker): void {
    this.workers.delete(w)
    const i = this.idle.indexOf(w)
    if (i >= 0) this.idle.splice(i, 1)
    // A replacement for whoever waits.
    if (!this.closed && this.waiting.length > 0 && this.workers.size < this.size) {
      const fresh = new Worker(this.filename, (dead) => this.remove(dead))
      this.workers.add(fresh)
      this.waiting.shift()!.take(fresh)
    }
  }

  /** Runs one statement on any worker. Rejects with the driver's error, `TRB_ERR_DB_TIMEOUT` or `TRB_ERR_DB_CANCELLED`. */
  async run(job: SqliteJob, cancel?: CancelWatch): Promise<unknown> {
    const w = await this.take(cancel)
    try {
      return await this.runOn({ worker: w }, job, cancel)
    } finally {
      this.give(w)
    }
  }

  /** Takes a worker for a transaction: nobody else uses it until {@link release}. */
  async hold(cancel?: CancelWatch): Promise<HeldWorker> {
    const worker = await this.take(cancel)
    worker.held = true
    return { worker }
  }

  /** Runs one statement on a held worker. */
  runOn(held: HeldWorker, job: SqliteJob, cancel?: CancelWatch): Promise<unknown> {
    const w = held.worker
    if (w.dead) return Promise.reject(new Error('the SQLite worker process is gone'))
    return new Promise((resolve, reject) => w.send({ job, resolve, reject, cancel }, this.timeoutMs))
  }

  /** Gives a held worker back. */
  release(held: HeldWorker): void {
    this.give(held.worker)
  }

  /** Stops every worker process. */
  close(): void {
    this.closed = true
    for (const entry of this.waiting.splice(0)) entry.fail(new Error('the database source is closed'))
    for (const w of [...this.workers]) w.kill(new Error('the database source is closed'))
  }
}

/** True when `value` is a worker held by {@link SqliteWorkers.hold}. */
export function isHeldWorker(value: unknown): value is HeldWorker {
  return typeof value === 'object' && value !== null && (value as { worker?: unknown }).worker instanceof Worker
}
