/**
 * A private PostgreSQL cluster for tests that need server settings the shared server on 5432 does
 * not have (and must keep): `initdb` (from `/usr/lib/postgresql/<version>/bin`, the newest, or
 * `TEST_PG_BIN`) in a fresh temp directory, started by `pg_ctl` on a free port of 127.0.0.1 with
 * trust authentication, its socket in that directory and the settings asked for (e.g.
 * `wal_level: 'logical'`). initdb refuses to run as root: as root the cluster is the `postgres`
 * user's (`runuser -u postgres`), the directory handed to it. `stop()` stops it (`pg_ctl stop -m
 * immediate`) and removes the directory; a process that exits without calling it stops it too.
 */
import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** A running private cluster. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string
  port: number
  /** The temp directory (data in `data/`, the server log in `log`). */
  dir: string
  /** Stops the server and removes the directory. Idempotent. */
  stop(): Promise<void>
}

/** The directory of the newest installed PostgreSQL's programs, or null. */
function pgBin(): string | null {
  if (process.env['TEST_PG_BIN']) return existsSync(join(process.env['TEST_PG_BIN'], 'initdb')) ? process.env['TEST_PG_BIN'] : null
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return null
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(root, versions[0], 'bin') : null
}

/** A port free on 127.0.0.1 now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0))
    })
  })
}

/**
 * Starts a private cluster with `settings` (server parameters, `-c name=value`).
 * @returns the cluster, or `{ skipReason }` when no initdb is installed or it cannot start (never throws)
 */
export async function startPrivatePostgres(settings: Record<string, string | number> = {}): Promise<PrivatePostgres | { skipReason: string }> {
  const bin = pgBin()
  if (!bin) return { skipReason: 'no initdb (no /usr/lib/postgresql/*/bin/initdb; set TEST_PG_BIN): private PostgreSQL cluster not started' }
  const asRoot = process.getuid?.() === 0
  let ids: { uid: number; gid: number } | undefined
  if (asRoot) {
    try {
      ids = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) }
    } catch {
      return { skipReason: 'running as root without a postgres user: initdb refuses root' }
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'trb-private-pg-'))
  if (ids) chownSync(dir, ids.uid, ids.gid)
  const as = (program: string, args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args])
  const data = join(dir, 'data')
  let stopped = false
  const stopSync = (): void => {
    if (stopped) return
    stopped = true
    try {
      execFileSync(...as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']), { stdio: 'ignore' })
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', stopSync)
  try {
    await run(...as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']))
    const port = await freePort()
    const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ')
    await run(...as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o', options, 'start']))
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dir,
      async stop() {
        if (stopped) return
        stopped = true
        process.removeListener('exit', stopSync)
        await run(...as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])).catch(() => undefined)
        rmSync(dir, { recursive: true, force: true })
      },
    }
  } catch (err) {
    stopSync()
    process.removeListener('exit', stopSync)
    return { skipReason: `private PostgreSQL cluster did not start: ${(err as Error).message.split('\n')[0]}` }
  }
}
