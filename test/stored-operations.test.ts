/**
 * Each stored operation of the demo and of the Chinook example has its expected response beside it:
 * `<Name>.expected.json` = `{ "request": "GET /operations/...", "body"?: {...}, "status": 200, "response": {...} }`.
 * Run with `UPDATE_EXPECTED=1` to rewrite them after a deliberate change (and review the diff).
 */
import t from 'tap'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDemo } from './helpers/demo.js'
import { checkExpectedResponses } from './helpers/expected-responses.js'
import { startChinookExample } from './helpers/chinook-example.js'

const root = fileURLToPath(new URL('..', import.meta.url))

t.test('demo operations', async (t) => {
  const { app } = await startDemo(t)
  await checkExpectedResponses(t, app, join(root, 'operations'))
})

t.test('Chinook example operations', async (t) => {
  const { app, operationsDir } = await startChinookExample(t)
  await checkExpectedResponses(t, app, operationsDir)
})
