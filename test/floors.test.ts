/**
 * The floors of gateway/ (docs/architecture.md §7, .dependency-cruiser.cjs): the check `npm test`
 * runs first (`npm run lint:floors`) passes on the tree, and fails, naming the import, on a copy of
 * the tree given one upward import or one type-only circle across folders.
 */
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { appendFileSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { repoRoot } from './helpers/chinook.js'

const depcruise = join(repoRoot, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs')

/** Runs the check of `npm run lint:floors` in `cwd`; its exit code is the number of violations. */
function lintFloors(cwd: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [depcruise, 'gateway', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], { cwd, encoding: 'utf8' })
  return { status: r.status, output: `${r.stdout}${r.stderr}` }
}

/** A copy of gateway/ and the check's files in a fresh folder, with `change` applied. */
function copyWith(t: Test, change: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'trb-floors-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const f of ['gateway', 'tsconfig.json', '.dependency-cruiser.cjs']) cpSync(join(repoRoot, f), join(dir, f), { recursive: true })
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'))
  change(dir)
  return dir
}

t.test('the tree keeps its floors', async (t) => {
  const r = lintFloors(repoRoot)
  t.equal(r.status, 0, r.output)
})

t.test('an upward import fails, naming the import', async (t) => {
  const dir = copyWith(t, (d) => appendFileSync(join(d, 'gateway/connectors/types.ts'), "\nimport type { HttpOptions } from '../http/app.js'\nexport type FloorsProbe = HttpOptions\n"))
  const r = lintFloors(dir)
  t.not(r.status, 0)
  t.match(r.output, 'upward-from-connectors: gateway/connectors/types.ts → gateway/http/app.ts')
})

t.test('a type-only circle fails, naming its modules', async (t) => {
  const dir = copyWith(t, (d) => appendFileSync(join(d, 'gateway/errors.ts'), "\nimport type { RunMode } from './connectors/types.js'\nexport type FloorsProbe = RunMode\n"))
  const r = lintFloors(dir)
  t.not(r.status, 0)
  t.match(r.output, /no-circular: [^\n]+ → \n(\s+gateway\/[^\n]+ →\n)*\s+gateway\/errors\.ts →/)
  // The rule is named after the bottom floor's modules (upward-from-errors+…): any list of them.
  t.match(r.output, /upward-from-errors[+\w-]*: gateway\/errors\.ts → gateway\/connectors\/types\.ts/)
})
