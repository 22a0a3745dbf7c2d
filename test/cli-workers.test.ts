/**
 * `start --workers 2` (node:cluster): two worker processes serve one port, the primary starts the
 * side service once, replaces a worker that dies and stops everything on SIGTERM. Bad values fail.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnCli } from './helpers/spawn-cli.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const cli = join(root, 'dist/gateway/cli.js')
// Three gateway processes start on a shared, slow machine.
t.setTimeout(6 * 60_000)

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** The gateway workers among a process' children (/proc/<pid>/task/<pid>/children). */
function workers(pid: number): number[] {
  let children: number[]
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
  return children.filter((c) => {
    try {
      return readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('cli.js')
    } catch {
      return false
    }
  })
}

t.test('--workers is checked', async (t) => {
  const bad = spawnSync(process.execPath, [cli, 'start', '--workers', '0'], { encoding: 'utf8' })
  t.equal(bad.status, 1)
  t.match(bad.stderr, /--workers must be a number from 1 to 64, not "0"/)
  const dev = spawnSync(process.execPath, [cli, 'dev', '--workers', '2'], { encoding: 'utf8' })
  t.equal(dev.status, 1)
  t.match(dev.stderr, /--workers applies to start only/)
})

t.test('start --workers 2 serves one port with two processes and replaces a dead one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-workers-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const [port, rolePort] = [await freePort(), await freePort()]
  const { child, output, exited } = spawnCli(t, ['start', '--workers', '2'], {
    env: { REDIS_URL: '', PORT: String(port), ROLE_SERVICE_PORT: String(rolePort), SYSTEM_API_URL: '', TODO_DATABASE_URL: `sqlite:${join(dir, 'todo.sqlite')}`, LOG_LEVEL: 'info' },
  })
  t.teardown(() => {
    for (const w of workers(child.pid!)) process.kill(w, 'SIGKILL')
  })
  const base = `http://127.0.0.1:${port}`
  /**
   * Resolves once the output has `count` matches of `re` (waits on the output, no polling), or on
   * exit or after `timeoutMs`; the caller asserts.
   */
  const until = (re: RegExp, count: number, timeoutMs: number) =>
    new Promise<void>((resolve) => {
      const g = new RegExp(re.source, 'g')
      const check = () => {
        if ((output().match(g)?.length ?? 0) < count && child.exitCode === null) return
        done()
      }
      const done = () => {
        clearTimeout(timer)
        child.stdout.off('data', later)
        child.stderr.off('data', later)
        child.off('exit', done)
        resolve()
      }
      // spawnCli's own 'data' listener appends to output() first; this one runs after it.
      const later = () => setImmediate(check)
      const timer = setTimeout(done, timeoutMs)
      child.stdout.on('data', later)
      child.stderr.on('data', later)
      child.on('exit', done)
      check()
    })
  // LOG_LEVEL=info: the primary logs "workers listening" once every worker listens (each worker logs
  // "Server listening at <its URL>"). (At warn, the old loop could only end at its 120 s deadline.)
  await until(/"msg":"workers listening"/, 1, 120_000)
  const pids = workers(child.pid!)
  t.equal(pids.length, 2, pids.length === 2 ? 'two workers run' : `two workers run:\n${output()}`)
  t.match(output(), /"msg":"workers listening"/, 'the primary says every worker listens')
  t.equal(output().match(/Tributary is up/g)?.length, 1, 'the summary is printed once')
  const res = await fetch(`${base}/operations/TodoById?id=1`)
  t.equal(res.status, 200)

  process.kill(pids[0]!, 'SIGKILL')
  // The primary logs the exit and forks a replacement after 1 s, which logs "Server listening at".
  // (The side service logs its own "Server listening at", on another port.)
  await until(new RegExp(`Server listening at http://127\\.0\\.0\\.1:${port}\\b`), 3, 90_000)
  t.match(output(), /worker exited; starting another in 1 s/)
  const now = workers(child.pid!)
  t.equal(now.length, 2, 'the dead worker was replaced')
  t.notOk(now.includes(pids[0]!))
  t.equal((await fetch(`${base}/health/live`)).status, 200, 'the port is served meanwhile')

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'the primary exits cleanly on SIGTERM')
  t.same(now.filter((p) => { try { process.kill(p, 0); return true } catch { return false } }), [], 'the workers are gone')
  t.equal(await fetch(`http://127.0.0.1:${rolePort}/api/v1/role/all`).then(() => 'up', () => 'down'), 'down', 'the side service stopped')
})
