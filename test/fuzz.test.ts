/**
 * Fuzzing in `npm test`: a few hundred random documents, mutations of them, hostile documents and
 * random stored-operation requests (fuzz/) against the demo and the Chinook example, in development
 * and production mode, over real HTTP. `npm run fuzz` runs 10,000 with a summary.
 */
import t from 'tap'
import { createRandom } from '../fuzz/generate.js'
import { fuzzTarget, rssAfterGc, startChinookTarget, startDemoTarget, type FuzzTarget } from '../fuzz/run.js'

const PER_TARGET = 150

t.test('random and hostile requests never break an invariant', async (t) => {
  const targets: FuzzTarget[] = [
    await startDemoTarget(t, 'development'),
    await startDemoTarget(t, 'production'),
    await startChinookTarget(t, 'development'),
    await startChinookTarget(t, 'production'),
  ]
  // The same seeds every run, so a failure replays; the caches are warmed before the baseline.
  for (const target of targets) await fuzzTarget(target, 50, createRandom(99))
  const before = rssAfterGc()
  let seed = 1
  for (const target of targets) {
    const stats = await fuzzTarget(target, PER_TARGET, createRandom(seed++))
    t.equal(stats.requests, PER_TARGET, `${target.name}: every request was answered`)
    t.same(stats.findings.map((f) => `${f.invariant} ${f.status} ${f.request.slice(0, 200)} -> ${f.body.slice(0, 300)}`), [], `${target.name}: no finding`)
    // Reported, not asserted: in-process targets share this process' event loop (npm run fuzz asserts it per gateway process).
    t.comment(`${target.name}: longest event-loop delay ${stats.maxEventLoopDelayMs?.toFixed(0) ?? '?'} ms`)
    const statuses = Object.keys(stats.statuses).map(Number)
    t.ok(statuses.includes(200) && statuses.some((s) => s >= 400), `${target.name}: both successes and refusals were exercised (${JSON.stringify(stats.statuses)})`)
  }
  const growth = (rssAfterGc() - before) / 1048576
  // Bounded, not zero: the document caches (1024 entries per gateway) fill up during the run.
  t.ok(growth < 150, `RSS grew by ${growth.toFixed(1)} MB over ${PER_TARGET * targets.length} requests (bound 150 MB)`)
})
