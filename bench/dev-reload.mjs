/**
 * Issue 23: how long `tributary dev` takes to reload the demo after an operation edit, and after a
 * config edit. Runs `node dist/gateway/cli.js dev` on the demo config (a copy of config.ts beside a
 * copy of operations/, free ports, a fresh SQLite file), edits `Todos.graphql` ROUNDS times and the
 * config once, and prints, per edit, the reload time the gateway reports ("operations reloaded in
 * N ms", measured from the debounced change to the swap) and the time from the file write to the
 * first answer of the new version over HTTP (includes fs.watch latency and the 100 ms debounce).
 *
 *   node bench/dev-reload.mjs            # ROUNDS=5
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const rounds = Number(process.env.ROUNDS ?? 5)
const freePort = () => new Promise((resolve) => { const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) }) })

const dir = mkdtempSync(join(tmpdir(), 'trb-bench-reload-'))
cpSync(join(root, 'operations'), join(dir, 'operations'), { recursive: true })
const configFile = join(dir, 'tributary.config.js')
const writeConfig = (take) => writeFileSync(configFile, `import demo from ${JSON.stringify(join(root, 'dist/config.js'))}
export default { ...demo, graphql: { ...demo.graphql, defaultListSize: ${take} } }
`)
writeConfig(10)
const env = { ...process.env, NODE_ENV: 'development', PORT: String(await freePort()), ROLE_SERVICE_PORT: String(await freePort()), TODO_DATABASE_URL: `sqlite:${join(dir, 'todo.sqlite')}`, LOG_LEVEL: 'info' }
const child = spawn(process.execPath, [join(root, 'dist/gateway/cli.js'), 'dev', '--config', configFile], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
let out = ''
child.stdout.on('data', (c) => (out += c))
child.stderr.on('data', (c) => (out += c))
const stop = () => { try { process.kill(-child.pid, 'SIGTERM') } catch {} rmSync(dir, { recursive: true, force: true }) }
const until = async (check, what, ms = 60_000) => {
  const end = Date.now() + ms
  while (Date.now() < end) { if (await check()) return; await new Promise((r) => setTimeout(r, 10)) }
  stop()
  throw new Error(`timed out waiting for ${what}\n${out}`)
}
try {
  const started = Date.now()
  await until(() => /watching for changes/.test(out), 'the dev server')
  console.log(`dev server up in ${Date.now() - started} ms`)
  const base = /(http:\/\/127\.0\.0\.1:\d+)\/operations\/Todos/.exec(out)[1]
  const file = join(dir, 'operations', 'Todos.graphql')
  const original = readFileSync(file, 'utf8')
  const rows = []
  for (let i = 1; i <= rounds; i++) {
    const alias = `r${i}: __typename`
    const from = out.length
    const t0 = performance.now()
    writeFileSync(file, original.replace(/\{/, `{\n  ${alias}`))
    await until(async () => (await (await fetch(`${base}/operations/Todos`)).text()).includes(`"r${i}"`), `edit ${i}`)
    const served = performance.now() - t0
    await until(() => /operations reloaded in \d+ ms/.test(out.slice(from)), 'the reload line')
    rows.push({ reported: Number(/operations reloaded in (\d+) ms/.exec(out.slice(from))[1]), served: Math.round(served) })
  }
  console.log('operation edit: reported ms / write-to-served ms:', rows.map((r) => `${r.reported}/${r.served}`).join(', '))
  const from = out.length
  const t0 = performance.now()
  writeConfig(11)
  await until(() => /config reloaded in \d+ ms[^\n]*/.test(out.slice(from)), 'the config reload')
  console.log(`config edit (no source changed): ${/config reloaded in \d+ ms[^\n]*/.exec(out.slice(from))[0]}; write-to-swap ${Math.round(performance.now() - t0)} ms`)
} finally {
  stop()
}
