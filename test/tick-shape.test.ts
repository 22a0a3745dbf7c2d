/**
 * The shape of Node's tick objects, held for the process' life (gateway/tick-shape.ts): the keys it
 * recognises on this Node, idempotence, and — in a child process with `--allow-natives-syntax` — that
 * the object it holds has the very map of the objects `process.nextTick` builds afterwards, under
 * load (so that V8 can neither collect nor replace that map), and that the `tributary` command runs
 * it first; on a `nextTick` of another shape it does nothing and says why. Run this file with a Node
 * 22 or 24 binary first on the PATH to check their five-key shape
 * (`PATH=<that node's bin folder>:$PATH npx tap test/tick-shape.test.ts`).
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { settleTickShape } from '../gateway/tick-shape.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const major = Number(process.versions.node.split('.')[0])

t.test("settleTickShape recognises this Node's tick and holds one object, once", async (t) => {
  const first = settleTickShape()
  t.equal(first.settled, true, first.reason ?? '')
  const expected = major >= 22
    ? ['async_id_symbol', 'trigger_async_id_symbol', 'kAsyncContextFrame', 'callback', 'args']
    : ['async_id_symbol', 'trigger_async_id_symbol', 'callback', 'args']
  t.same(first.keys, expected, `Node ${process.versions.node}`)
  // Every symbol key of the shape comes before its string keys, so this lists them in definition order.
  const holder = first.holder!
  t.same([...Object.getOwnPropertySymbols(holder).map((s) => s.description), ...Object.keys(holder)], expected, 'the holder has those keys, in that order')
  t.equal(settleTickShape(), first, 'a second call returns what the first did')
})

t.test("the holder has the map of every tick built after it, under load (V8's own check)", async (t) => {
  // The child settles first, as cli.js does, then serves HTTP requests to itself for a while
  // (Node's streams make ticks of every kind: endReadable, onwrite, resume, _destroy), then captures
  // ticks through an init hook and compares maps with %HaveSameMap.
  const script = `
    import { settleTickShape } from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/tick-shape.js')).href)}
    import { createServer, request } from 'node:http'
    import { createHook } from 'node:async_hooks'
    const { holder } = settleTickShape()
    const server = createServer((req, res) => res.end('ok')).listen(0, '127.0.0.1')
    await new Promise((ok) => server.once('listening', ok))
    const one = () => new Promise((ok, fail) => request({ port: server.address().port, host: '127.0.0.1', agent: false }, (res) => { res.resume(); res.on('end', ok) }).on('error', fail).end())
    for (let i = 0; i < 300; i++) await Promise.all(Array.from({ length: 10 }, one))
    const same = []
    const hook = createHook({ init(id, type, trigger, resource) { if (type === 'TickObject') same.push(%HaveSameMap(holder, resource)) } }).enable()
    process.nextTick(() => {})
    process.nextTick(() => {}, 1)
    process.nextTick(() => {}, 1, 2, 3, 4)
    await one()
    hook.disable()
    server.close()
    console.log(JSON.stringify({ ticks: same.length, same: same.every(Boolean) }))
  `
  const out = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 60_000 })
  t.equal(out.status, 0, out.stderr)
  const result = JSON.parse(out.stdout.trim().split('\n').pop()!) as { ticks: number; same: boolean }
  t.ok(result.ticks >= 3, `ticks captured: ${result.ticks}`)
  t.equal(result.same, true, 'every tick captured has the holder’s map')
})

t.test('a nextTick of another shape is left alone, with the reason', async (t) => {
  // A wrapper in place of Node's nextTick (as an instrumentation library might install) has none of
  // the tick literal's source: nothing is held, nothing throws, ticks still run.
  const script = `
    import { settleTickShape } from ${JSON.stringify(pathToFileURL(join(root, 'dist/gateway/tick-shape.js')).href)}
    const original = process.nextTick
    process.nextTick = function wrapped(callback, ...args) { return original(callback, ...args) }
    const result = settleTickShape()
    process.nextTick(() => console.log(JSON.stringify({ settled: result.settled, reason: result.reason, holder: result.holder !== undefined })))
  `
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 })
  t.equal(out.status, 0, out.stderr)
  t.same(JSON.parse(out.stdout.trim()), { settled: false, reason: "this Node's process.nextTick builds its ticks in an unknown shape", holder: false })
})

t.test('the tributary command settles the shape before anything else', async (t) => {
  const cli = readFileSync(join(root, 'gateway/cli.ts'), 'utf8')
  const code = cli.split('\n').filter((l) => l && !l.startsWith('#!') && !/^\s*(\/\*\*|\*|\*\/|\/\/)/.test(l))
  t.match(code[0], /^import \{ settleTickShape \} from '\.\/tick-shape\.js'$/, 'its first import')
  t.equal(code.find((l) => !l.startsWith('import ')), 'settleTickShape()', 'its first statement')
})
