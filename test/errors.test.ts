/** Every error code of gateway/errors.ts is documented in the README's error table and in docs/architecture.md §9. */
import t from 'tap'
import { readFileSync } from 'node:fs'
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
