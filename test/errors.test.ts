/** Every error code of gateway/errors.ts is documented in the README's error table and in docs/architecture.md §9. */
import t from 'tap'
import { readFileSync } from 'node:fs'
import * as errors from '../gateway/errors.js'
import { errorCodes } from '../gateway/errors.js'

t.test('every code is documented', async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Error codes'))
  const design = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8')
  const designTable = design.slice(design.indexOf('## 9. Error table'))
  t.ok(errorCodes.length > 10)
  for (const code of errorCodes) {
    t.match(table, new RegExp(`\\| \`${code}\` \\|`), `${code} is in the README table`)
    t.match(designTable, new RegExp(`\\| \`${code}\` \\|`), `${code} is in docs/architecture.md §9`)
  }
  t.equal(new Set(errorCodes).size, errorCodes.length, 'codes are unique')
})

t.test('every error constructor of gateway/errors.ts is in errorCodes (the formatter knows only those)', async (t) => {
  // @fastify/error's constructors are all named FastifyError; their code is set per instance.
  const codes = (Object.values(errors) as unknown[])
    .filter((v) => typeof v === 'function' && v.name === 'FastifyError')
    .map((E) => new (E as new () => { code: string })().code)
  t.ok(codes.length >= errorCodes.length, `${codes.length} constructors found`)
  t.same(codes.filter((c) => !errorCodes.includes(c)), [], 'no constructor missing from errorCodes')
})
