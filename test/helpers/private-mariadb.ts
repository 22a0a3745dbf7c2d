/**
 * A private MariaDB server for one test file, with the binary log on (`--log-bin`,
 * `binlog_format=ROW`), on 127.0.0.1 and a free port, in a temporary data directory: the machine's
 * shared server is never reconfigured. The system tables are created once per MariaDB version
 * (`mariadb-install-db`, about 8 s) into a template under the OS temp directory, then copied for
 * each server (well under a second). `stop()` ends the server (SIGTERM, then SIGKILL) and removes
 * its directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A running private server. */
export interface PrivateMariadb {
  /** `mysql://root@127.0.0.1:<port>` (no database). */
  url: string
  port: number
  /** Stops the server and removes its data. Idempotent. */
  stop(): Promise<void>
}

const which = (names: string[]): string | undefined => {
  for (const n of names) {
    for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) if (existsSync(join(dir, n))) return join(dir, n)
  }
  return undefined
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/**
 * Starts a private MariaDB with the binlog on, or answers why not (no `mariadbd`, install failed).
 * @param extraArgs more `mariadbd` options (e.g. `--binlog-format=STATEMENT`)
 */
export async function startPrivateMariadb(extraArgs: string[] = []): Promise<PrivateMariadb | string> {
  const server = which(['mariadbd', 'mysqld'])
  const install = which(['mariadb-install-db', 'mysql_install_db'])
  if (!server || !install) return 'no mariadbd / mariadb-install-db on this machine'
  const version = spawnSync(server, ['--version'], { encoding: 'utf8' }).stdout.replace(/[^A-Za-z0-9.]+/g, '_').slice(0, 80)
  const template = join(tmpdir(), `tributary-mariadb-template-${version}`)
  if (!existsSync(template)) {
    const building = mkdtempSync(join(tmpdir(), 'tributary-mariadb-building-'))
    const r = spawnSync(install, ['--no-defaults', `--datadir=${building}`, '--auth-root-authentication-method=normal', '--user=root', '--skip-test-db', '--innodb-log-file-size=4M'], { encoding: 'utf8', timeout: 60_000 })
    if (r.status !== 0) {
      rmSync(building, { recursive: true, force: true })
      return `mariadb-install-db failed: ${(r.stderr || r.stdout || '').slice(-300)}`
    }
    try {
      renameSync(building, template)
    } catch {
      // Another test made it meanwhile.
      rmSync(building, { recursive: true, force: true })
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'tributary-mariadb-'))
  const data = join(dir, 'data')
  cpSync(template, data, { recursive: true })
  const port = await freePort()
  const child: ChildProcess = spawn(
    server,
    ['--no-defaults', `--datadir=${data}`, `--socket=${join(dir, 's')}`, `--port=${port}`, '--bind-address=127.0.0.1', `--log-bin=${join(dir, 'bin')}`, '--binlog-format=ROW', '--server-id=1', '--user=root', `--pid-file=${join(dir, 'pid')}`, `--log-error=${join(dir, 'err.log')}`, '--innodb-log-file-size=4M', '--innodb-buffer-pool-size=16M', '--skip-name-resolve', ...extraArgs],
    { stdio: 'ignore' },
  )
  let exited = false
  child.once('exit', () => (exited = true))
  const stop = async (): Promise<void> => {
    if (!exited) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      const t = setTimeout(() => child.kill('SIGKILL'), 5000)
      await gone
      clearTimeout(t)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const { default: mysql } = await import('mysql2/promise')
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' })
      await c.end()
      break
    } catch (err) {
      if (exited || Date.now() > deadline) {
        await stop()
        return `the private MariaDB did not start: ${(err as Error).message}`
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return { url: `mysql://root@127.0.0.1:${port}`, port, stop }
}
