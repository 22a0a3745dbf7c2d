/**
 * Test helper: runs the built CLI (`dist/gateway/cli.js`) as a user does, collecting its output.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { Test } from 'tap'
import { repoRoot } from './chinook.js'

/** True when process `pid` is gone or a zombie (it exited and only its exit status remains): Linux `/proc/<pid>/stat`. */
export function processExited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return true
  }
}

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A running CLI process. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams
  /** Everything written to stdout and stderr so far. */
  readonly out: string
  /** Resolves with the exit code. */
  exited: Promise<number | null>
  /** Polls every 100 ms until `out` contains `text`, the process exits, or `timeoutMs` passes. */
  waitFor(text: string, timeoutMs?: number): Promise<void>
}

/**
 * Spawns `node [nodeArgs] dist/gateway/cli.js <args>` in `cwd` (default: the repository root) with
 * `env` added to the environment; killed with SIGKILL at the test's end if still running.
 */
export function runCli(t: Test, args: string[], env: NodeJS.ProcessEnv, options: { nodeArgs?: string[]; cwd?: string } = {}): RunningCli {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), join(repoRoot, 'dist/gateway/cli.js'), ...args], { cwd: options.cwd ?? repoRoot, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    get out() {
      return out
    },
    exited,
    async waitFor(text, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs
      while (!out.includes(text) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100))
    },
  }
}
