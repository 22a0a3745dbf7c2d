/** generated/ is written only by the codegen and must be fresh: it equals what the codegen renders now. */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { renderGenerated } from '../gateway/codegen/index.js'
import { startDemo } from './helpers/demo.js'

t.test('generated/ is fresh', async (t) => {
  const { gateway } = await startDemo(t)
  const files = renderGenerated(gateway)
  t.ok(Object.keys(files).includes('schema.graphql'))
  for (const [name, content] of Object.entries(files)) {
    const onDisk = readFileSync(new URL(`../generated/${name}`, import.meta.url), 'utf8')
    t.equal(onDisk, content, `generated/${name} is fresh (run npm run build and commit it)`)
  }
  const cached = JSON.parse(readFileSync(new URL('../generated/sources/todo.introspection.json', import.meta.url), 'utf8'))
  t.equal(cached.dialect, 'sqlite')
  t.ok(cached.tables.some((table: { name: string }) => table.name === 'Todo'))
})
