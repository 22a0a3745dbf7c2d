#!/usr/bin/env node
/**
 * Issue 30 diagnostic: does the gateway's process make Node's own `process.nextTick` slower?
 *
 * `process.nextTick` builds each tick as `{ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
 * callback, args }`. V8 defines the last three keys through inline caches (feedback slots of kind
 * `DefineKeyedOwnPropertyInLiteral`); when one of them goes MEGAMORPHIC, every tick takes V8's
 * runtime path (`Runtime_DefineKeyedOwnPropertyInLiteral`, `JSObject::MigrateToMap`) and Node's
 * HTTP server makes about 18 such ticks per request (its streams' `endReadable`, `onwrite`,
 * `resume`, `_destroy`).
 *
 * Each run starts a child process with `npm start`'s node flags plus `--allow-natives-syntax`, in
 * one of these stages:
 * - `bare`: nothing else;
 * - `gateway`: builds the demo gateway's app in process (`loadConfigFile` → `createGateway` →
 *   `buildApp`, as bench/hot-path.mjs does; the app does not listen, no side service starts);
 * - `gateway-settled`, `bare-settled`: the same, after `settleTickShape()` (gateway/tick-shape.ts)
 *   as the first thing, as dist/gateway/cli.js runs it.
 * The child then serves a fixed 95-byte JSON answer from a bare `node:http` server. The parent
 * drives it with autocannon (`-c 50`) for `--seconds`, reads the child's CPU per request from
 * /proc, then asks it (SIGUSR2) for the feedback of `process.nextTick` (`%DebugPrint`, after which
 * it exits) and counts its MEGAMORPHIC literal slots. The same bytes from the same server code: any
 * difference between the stages is the state the gateway leaves in the process.
 *
 *   node scripts/build.mjs --if-needed && node bench/tick-feedback.mjs [--runs 6] [--seconds 6] [--stages bare,gateway,gateway-settled]
 *
 * Prints one JSON line per run (`{ stage, run, cpuUsPerRequest, reqPerSec, megamorphicSlots }`) and
 * a summary per stage (median CPU µs per request of the runs with and without megamorphic slots).
 * Needs dist/ and data/todo.sqlite (or TODO_DATABASE_URL); targets 127.0.0.1 only.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { START_NODE_FLAGS, cpuTimeOf, freePort, root, runLoad, startNode } from './lib/processes.mjs'

const BODY = Buffer.from('{"id":1,"title":"Write the spec","completed":true,"createdAt":"2024-01-01T00:00:00.000Z"}')

if (process.env.TRB_TICK_FEEDBACK_CHILD) {
  const stage = process.env.TRB_TICK_FEEDBACK_CHILD
  // First, as dist/gateway/cli.js does: hold the shape of Node's tick objects (gateway/tick-shape.ts).
  if (stage.endsWith('-settled')) {
    const { settleTickShape } = await import(join(root, 'dist/gateway/tick-shape.js'))
    const settled = settleTickShape()
    if (!settled.settled) throw new Error(`settleTickShape: ${settled.reason}`)
  }
  // `%DebugPrint` compiles only with --allow-natives-syntax, which the parent passes.
  const debugPrint = new Function('f', '%DebugPrint(f)')
  if (stage.startsWith('gateway')) {
    process.chdir(root)
    const { loadConfigFile } = await import(join(root, 'dist/gateway/config/load.js'))
    const { createGateway } = await import(join(root, 'dist/gateway/runtime.js'))
    const { buildApp } = await import(join(root, 'dist/gateway/http/app.js'))
    const { pino } = await import('pino')
    const logger = pino({ level: 'warn' })
    const gateway = await createGateway(await loadConfigFile(join(root, 'config.ts')), { logger })
    await (await buildApp(gateway, { logger })).ready()
  }
  // V8 prints through C's stdio, which a pipe buffers: exiting flushes it.
  process.on('SIGUSR2', () => {
    debugPrint(process.nextTick)
    process.exit(0)
  })
  const server = createServer((_req, res) => {
    res.writeHead(200, ['content-type', 'application/json; charset=utf-8'])
    res.end(BODY)
  })
  server.keepAliveTimeout = 72_000
  server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`tick-feedback listening http://127.0.0.1:${process.env.PORT}`))
} else {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`)
    return i < 0 ? fallback : process.argv[i + 1]
  }
  const runs = Math.min(50, Math.max(1, Number(arg('runs', 6))))
  const seconds = Math.min(120, Math.max(1, Number(arg('seconds', 6))))
  const stages = String(arg('stages', 'bare,gateway,gateway-settled')).split(',')
  for (const s of stages) if (!['bare', 'bare-settled', 'gateway', 'gateway-settled'].includes(s)) throw new Error(`unknown stage ${s}: bare, bare-settled, gateway, gateway-settled`)
  if (!existsSync(join(root, 'dist/gateway/cli.js'))) throw new Error('dist/ is missing: run `node scripts/build.mjs` first')
  const work = mkdtempSync(join(tmpdir(), 'tributary-tick-feedback-'))
  let todoUrl = process.env.TODO_DATABASE_URL
  if (!todoUrl) {
    const db = join(work, 'todo.sqlite')
    copyFileSync(join(root, 'data/todo.sqlite'), db)
    todoUrl = `sqlite:${db}`
  }
  const median = (xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : null)
  const results = []
  try {
    for (let run = 1; run <= runs; run++) {
      for (const stage of stages) {
        const port = await freePort()
        let printed = []
        const child = await startNode({
          name: `tick-feedback (${stage})`,
          args: [...START_NODE_FLAGS, '--allow-natives-syntax', join(root, 'bench/tick-feedback.mjs')],
          env: { ...process.env, TRB_TICK_FEEDBACK_CHILD: stage, PORT: String(port), NODE_ENV: 'production', TODO_DATABASE_URL: todoUrl, LOG_LEVEL: 'warn' },
          ready: /tick-feedback listening/,
          onLine: (line) => printed.push(line),
        })
        try {
          const before = cpuTimeOf(child.pid)
          const load = await runLoad({ label: stage, url: `http://127.0.0.1:${port}/`, duration: seconds, connections: 50 })
          const cpuUsPerRequest = +(((cpuTimeOf(child.pid) - before) * 1000) / load.requests.total).toFixed(1)
          printed = []
          process.kill(child.pid, 'SIGUSR2')
          await Promise.race([child.exited, new Promise((ok) => setTimeout(ok, 10_000))])
          if (!printed.some((l) => l.includes('SharedFunctionInfo nextTick'))) throw new Error(`the ${stage} child printed no feedback of nextTick (${printed.length} lines)`)
          const megamorphicSlots = printed.filter((l) => /DefineKeyedOwnPropertyInLiteral MEGAMORPHIC/.test(l)).length
          const result = { stage, run, cpuUsPerRequest, reqPerSec: Math.round(load.reqPerSec), megamorphicSlots }
          results.push(result)
          process.stdout.write(`${JSON.stringify(result)}\n`)
        } finally {
          await child.stop()
        }
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  for (const stage of stages) {
    const mine = results.filter((r) => r.stage === stage)
    const slow = mine.filter((r) => r.megamorphicSlots > 0)
    const fast = mine.filter((r) => r.megamorphicSlots === 0)
    process.stdout.write(`${JSON.stringify({ stage, runs: mine.length, megamorphicRuns: slow.length, medianCpuUs: { monomorphic: median(fast.map((r) => r.cpuUsPerRequest)), megamorphic: median(slow.map((r) => r.cpuUsPerRequest)) } })}\n`)
  }
}
