/** Test helper: runs `node dist/gateway/cli.js <args>` as a child process and collects its output. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { join } from 'node:path'
import { repoRoot } from './chinook.js'

/** A running CLI process. */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams
  /** stdout and stderr so far, interleaved. */
  output(): string
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>
}

/**
 * Starts the built CLI with `args`, in `cwd` (default the repository), with `env` over this process'
 * environment. Registers a teardown that SIGKILLs it if it still runs.
 */
export function spawnCli(t: { teardown(fn: () => unknown): void }, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): CliProcess {
  const child = spawn(process.execPath, ['--disable-proto=throw', join(repoRoot, 'dist/gateway/cli.js'), ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  child.stdin.end()
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return { child, output: () => out, exited }
}
