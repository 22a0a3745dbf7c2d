/** Types of bench/lib/processes.mjs, for the TypeScript that imports it (fuzz/run.ts). */

/** The repository root (an absolute path). */
export const root: string

/** The node flags of package.json's `scripts.start`, e.g. `['--disable-proto=throw', '--max-semi-space-size=32']`. */
export const START_NODE_FLAGS: string[]

/** A child process started by {@link startNode}: its own process group, stopped with SIGTERM then SIGKILL. */
export interface NodeHandle {
  name: string
  pid: number
  /** Its stdout and stderr lines (the last 200). */
  lines: string[]
  /** Resolves when it has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGTERM to its group, SIGKILL after `graceMs` (default 15000 ms); resolves once it exited. */
  stop(graceMs?: number): Promise<unknown>
}

/** A consistent copy of a SQLite file (WAL included) at `dest`, through better-sqlite3's online backup. */
export function copySqlite(src: string, dest: string): Promise<void>

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number>

/**
 * Starts the gateway as `npm start` does (`node <START_NODE_FLAGS> dist/gateway/cli.js start [--config <file>]`,
 * HOST 127.0.0.1, a free PORT, LOG_LEVEL warn, `env` on top); resolves once it printed its GraphQL URL.
 * @throws when it exits first or is not ready within 90 s
 */
export function startGateway(options: { config?: string; env?: Record<string, string>; nodeArgs?: string[]; args?: string[]; onLine?: (line: string) => void }): Promise<NodeHandle & { url: string }>

/** RSS and its high-water mark of a process, in KiB (/proc/<pid>/status VmRSS, VmHWM). */
export function memoryOf(pid: number): { rssKb: number; hwmKb: number }
