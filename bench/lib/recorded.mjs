/**
 * bench/recorded.json: the last recorded figures the bench compares each run with (issue 30). Two
 * maps, both "lower is better":
 * - `cpuUsPerRequest`: `<scenario>.<side>` (e.g. `rest.gateway`, `rest.baseline`) → median CPU µs per
 *   request of that server process over the scenario's rounds (bench/run.mjs, `/proc/<pid>/stat`);
 * - `instructions`: `<target>[.<mode>]` → instructions per request (bench/instructions.mjs, callgrind).
 * plus where and when they were recorded (`cpuAt` with `machine`, `instructionsAt` with `instructionsRun`, and
 * `commits.cpu`, `commits.instructions`: the commit of each kind's last recording).
 * `--record` (run.mjs, instructions.mjs) rewrites the figures of the run; other keys stay.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root } from './processes.mjs'

export const recordedFile = join(root, 'bench/recorded.json')

/** A figure more than this fraction above its recorded value is flagged as a regression. */
export const REGRESSION_THRESHOLD = 0.1

/** The recorded figures, or `{}` when none are committed. */
export function readRecorded() {
  return existsSync(recordedFile) ? JSON.parse(readFileSync(recordedFile, 'utf8')) : {}
}

/**
 * Writes `data` to bench/recorded.json with the current commit (`git rev-parse --short HEAD`) as the
 * commit of the `kind` of figures just recorded (`commits.cpu` or `commits.instructions`; the other
 * kind keeps its own), and as `commit`, the last recording of either.
 */
export function writeRecorded(data, kind) {
  let commit
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
  } catch {
    commit = undefined
  }
  writeFileSync(recordedFile, `${JSON.stringify({ ...data, commits: { ...(data.commits ?? {}), [kind]: commit }, commit }, null, 2)}\n`)
}

/**
 * Compares `figures` (key → number, lower is better) with `recorded` (the same keys); prints one line
 * per key that has a recorded value through `say` and returns the keys flagged as regressions: more
 * than {@link REGRESSION_THRESHOLD} above the recorded value.
 *
 * CPU figures come in pairs, `<scenario>.gateway` beside `<scenario>.baseline` (the hand-written
 * route measured in the same rounds), and CPU per request moves with the machine (the same code gave
 * a route of 16 µs on one VM and 92 on another). So a `.gateway` figure with both baselines known is
 * flagged only when its ratio to its own baseline is also more than the threshold above the recorded
 * ratio (a slower machine raises both sides alike: the line then says so and is not flagged); a
 * `.baseline` figure is the machine's, printed and never flagged. Figures without a pair (the
 * instructions, which do not move with the machine) are judged on their own.
 */
export function compareWithRecorded(recorded, figures, unit, say) {
  const flagged = []
  const lines = []
  const pct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`
  for (const [key, value] of Object.entries(figures)) {
    const before = recorded[key]
    if (typeof before !== 'number' || typeof value !== 'number' || before <= 0) continue
    const change = (value - before) / before
    let regressed = change > REGRESSION_THRESHOLD
    let note = ''
    const scenario = key.endsWith('.gateway') ? key.slice(0, -'.gateway'.length) : key.endsWith('.baseline') ? key.slice(0, -'.baseline'.length) : undefined
    const baseNow = scenario === undefined ? undefined : figures[`${scenario}.baseline`]
    const baseBefore = scenario === undefined ? undefined : recorded[`${scenario}.baseline`]
    if (key.endsWith('.baseline')) {
      if (regressed) note = '  (the hand-written baseline: the machine, not flagged)'
      regressed = false
    } else if (typeof baseNow === 'number' && typeof baseBefore === 'number' && baseNow > 0 && baseBefore > 0) {
      const relative = value / baseNow / (before / baseBefore) - 1
      note = `  (÷ its baseline ${pct(relative)})`
      if (regressed && relative <= REGRESSION_THRESHOLD) {
        regressed = false
        note += ': the baseline moved alike, the machine — not flagged'
      }
    }
    if (regressed) flagged.push(key)
    lines.push(`  ${key.padEnd(28)} ${String(value).padStart(10)} ${unit} (recorded ${before}, ${pct(change)})${note}${regressed ? `  ⚠ REGRESSION > ${REGRESSION_THRESHOLD * 100} %` : ''}`)
  }
  if (lines.length) {
    say(`\nagainst bench/recorded.json (${unit}):`)
    for (const l of lines) say(l)
  }
  return flagged
}
