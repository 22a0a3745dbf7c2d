#!/usr/bin/env node
/**
 * Prints a summary of the failed assertions and of the slowest test files in a TAP stream (TAP 14 with subtests, as tap 21's
 * `tap` reporter writes it), so that a CI log whose tail is all one sees still names them.
 *
 * Usage: `node scripts/tap-failures.mjs <file>` (or the stream on standard input).
 * Output: for each `not ok` line, the chain of subtest names leading to it (the test file first) and
 * up to 40 lines of its YAML diagnostic block; the twelve slowest test files (seconds); then
 * `N failed assertion(s)`. Exit code 0 always (the
 * caller keeps the test command's own status).
 */
import { readFileSync } from 'node:fs'

const text = readFileSync(process.argv[2] ?? 0, 'utf8')
const lines = text.split('\n')
/** Subtest names by indentation level (4 spaces a level). */
const stack = []
const failures = []
/** Test files with their run time (ms), from the top-level result lines. */
const files = []
/** By level: whether a failure was reported inside the current subtest at that level. */
const failedBelow = []
for (let i = 0; i < lines.length; i++) {
  const line = lines[i]
  const indent = line.length - line.trimStart().length
  const level = Math.floor(indent / 4)
  const trimmed = line.trim()
  const subtest = /^# Subtest: (.*)$/.exec(trimmed)
  if (subtest) {
    stack.length = level
    stack[level] = subtest[1]
    failedBelow.length = level
    failedBelow[level] = false
    continue
  }
  const file = level === 0 ? /^(?:not )?ok \d+ - (\S+\.test\.ts) # time=([\d.]+)ms/.exec(trimmed) : null
  if (file) files.push({ name: file[1], ms: Number(file[2]) })
  const notOk = /^not ok \d+ - (.*?)(?: # (?:time=.*))?$/.exec(trimmed)
  if (!notOk) continue
  // A parent's "not ok" only repeats a failure already reported among its subtests: report leaves
  // (a parent with no failed subtest, such as a test file killed at its timeout, is a leaf).
  const isParent = failedBelow[level] === true
  const diag = []
  if (lines[i + 1]?.trim() === '---') {
    for (let j = i + 2; j < lines.length && lines[j].trim() !== '...'; j++) diag.push(lines[j].slice(indent))
  }
  for (let l = 0; l < level; l++) failedBelow[l] = true
  failedBelow.length = level
  if (isParent) continue
  failures.push({ path: [...stack.slice(0, level), notOk[1]].join(' › '), diag: diag.slice(0, 40) })
}
if (failures.length > 0) {
  console.log('\n[ci] ==================== failed assertions ====================')
  for (const f of failures) {
    console.log(`\n[ci] not ok: ${f.path}`)
    for (const l of f.diag) console.log(`    ${l}`)
  }
}
if (files.length > 0) {
  const slowest = [...files].sort((a, b) => b.ms - a.ms).slice(0, 12)
  console.log(`\n[ci] slowest test files (of ${files.length}):`)
  for (const f of slowest) console.log(`[ci]   ${(f.ms / 1000).toFixed(1).padStart(6)} s  ${f.name}`)
}
console.log(`\n[ci] ${failures.length} failed assertion(s)`)
