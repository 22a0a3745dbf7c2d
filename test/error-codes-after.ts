/**
 * Run by tap after every test file (`after` in .taprc), like fastify's check of its FST_ERR_* codes:
 * reads every error code the gateway put in an error body during the run (each test process appends
 * them to `<TRIBUTARY_ERROR_CODE_LOG>/<pid>.codes`, see `recordErrorCode` in gateway/errors.ts) and
 * exits 1, failing `npm test`, when one is missing from the gateway/errors.ts table or from the
 * README's "Error codes" table. Prints the codes seen.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/** Where the test processes record their codes: `.tap/error-codes` (the value .taprc's test-env gives). */
export const errorCodeLogDir = join(root, '.tap', 'error-codes')

/** The codes recorded during the run, with the number of test processes that sent each. */
export function recordedCodes(dir = errorCodeLogDir): Map<string, number> {
  const seen = new Map<string, number>()
  if (!existsSync(dir)) return seen
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.codes')) continue
    for (const code of new Set(readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean))) seen.set(code, (seen.get(code) ?? 0) + 1)
  }
  return seen
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { errorCodes } = await import('../gateway/errors.js')
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const table = readme.slice(readme.indexOf('## Error codes'))
  const seen = recordedCodes()
  const problems: string[] = []
  for (const code of seen.keys()) {
    if (!errorCodes.includes(code)) problems.push(`${code} is not in gateway/errors.ts`)
    if (!table.includes(`| \`${code}\` |`)) problems.push(`${code} is not in the README's "Error codes" table`)
  }
  const list = [...seen].sort().map(([code, n]) => `${code} (${n})`).join(', ')
  console.log(`# error codes sent during the tests: ${seen.size ? list : 'none recorded'}`)
  if (problems.length) {
    console.error(`# error codes outside the contract:\n${problems.map((p) => `#   ${p}`).join('\n')}`)
    process.exitCode = 1
  }
}
