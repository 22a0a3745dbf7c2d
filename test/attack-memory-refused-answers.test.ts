/**
 * Attack (issue 22 item 9): memory comes back after refused large answers. The demo runs as `npm
 * start` runs it (its own process, npm start's node flags, a fresh SQLite file); one request of 1 MB
 * asks 30 aliases of `deatail(title: $t)` to echo a 1,000,000-character title: a 30 MB answer,
 * refused with 400 `TRB_ERR_GRAPHQL_LIMIT` past `server.maxResponseBytes` (16 MiB). After five of
 * them, the gateway's RSS less V8's young generation (what `npm run fuzz` compares: the young
 * generation, up to 2 × `--max-semi-space-size`, stays at its grown size in an idle process) must come
 * back within 10 % of its baseline, measured the same way after a warm-up with the same document.
 * Before the fix it stayed about 85 MB (50 %) above for minutes: nothing was alive, but the dead
 * answers were not collected while the process idled.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readMemory, type MemoryReading } from '../fuzz/run.js'

const { freePort, memoryOf, startGateway } = await import('../bench/lib/processes.mjs')

const ECHO = `query Echo($t: String!) { ${Array.from({ length: 30 }, (_, i) => `a${i}: deatail(title: $t)`).join(' ')} }`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('five refused 30 MB answers: memory returns within 10 % of its baseline', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-memory-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const gw = await startGateway({ env: { TODO_DATABASE_URL: `sqlite:${join(dir, 'todo.sqlite')}`, ROLE_SERVICE_PORT: String(await freePort()) } })
  t.teardown(() => gw.stop())
  const post = async (title: string) => {
    const res = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: ECHO, variables: { t: title } }) })
    return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: { extensions: { code: string } }[] } }
  }
  // Warm-up: the same document with small titles, so that compiled code and caches are in the baseline.
  for (let i = 0; i < 300; i++) t.equal((await post(`warm ${i}`)).status, 200, 'warm-up', { diagnostic: false })
  // Then answers of 1.5 MB (30 × 50,000 characters, well under the limit), some 300 MB of short-lived
  // objects: the young generation grows to its size under load and every page of it is touched, as
  // after the refusals. (Otherwise RSS less the young generation's committed size reads low at the
  // baseline when the young generation has grown but not yet been filled, and the refusals' first
  // touch of its pages reads as memory that did not come back.)
  const mid = 'm'.repeat(50_000)
  for (let i = 0; i < 200; i++) t.equal((await post(`${mid}${i}`)).status, 200, 'warm-up, 1.5 MB answers', { diagnostic: false })
  /** The lowest reading over `ms` of idle time, every 250 ms (a reading between two GCs is noise). */
  const lowest = async (ms: number): Promise<MemoryReading> => {
    let low = await readMemory(gw)
    for (let waited = 0; waited < ms; waited += 250) {
      await sleep(250)
      const now = await readMemory(gw)
      if (now.rest < low.rest) low = now
    }
    return low
  }
  const baseline = await lowest(3000)

  for (let i = 0; i < 5; i++) {
    const refused = await post('x'.repeat(1_000_000))
    t.equal(refused.status, 400)
    t.equal(refused.body.errors?.[0]?.extensions.code, 'TRB_ERR_GRAPHQL_LIMIT')
  }
  const peak = memoryOf(gw.pid).rssKb / 1024
  // Waits up to 6 s (the gateway collects one second after the last refusal), reading only /proc: a
  // request to /metrics would make the gateway allocate, and so collect, what it left lying. (V8's
  // memory reducer, which the old code relied on, may collect on its own some 8 s after its last
  // full collection.) RSS less the baseline's young generation bounds the figure compared.
  const bound = baseline.rest * 1.1
  for (let waited = 0; waited < 6000 && memoryOf(gw.pid).rssKb / 1024 - baseline.young > bound; waited += 250) await sleep(250)
  const after = await readMemory(gw)
  const mb = (m: MemoryReading) => `${m.rest.toFixed(1)} MB (RSS ${m.rss.toFixed(1)}, young ${m.young.toFixed(1)})`
  t.comment(`baseline ${mb(baseline)}; after five refusals RSS ${peak.toFixed(1)} MB; then ${mb(after)}`)
  t.ok(after.rest <= bound, `RSS less the young generation back within 10 %: ${after.rest.toFixed(1)} <= 1.1 × ${baseline.rest.toFixed(1)} MB`)
  t.equal((await post('after')).status, 200, 'the gateway still answers')
})
