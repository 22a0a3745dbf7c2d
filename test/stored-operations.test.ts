/**
 * Each stored operation of the demo and of the Chinook example has its expected response beside it:
 * `<Name>.expected.json` = `{ "request": "GET /operations/...", "body"?: {...}, "status": 200, "response": {...} }`.
 * Run with `UPDATE_EXPECTED=1` to rewrite them after a deliberate change (and review the diff).
 */
import t from 'tap'
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { resolveConfig, type TributaryConfigInput } from '../gateway/config/index.js'
import { createGateway } from '../gateway/runtime.js'
import { buildApp } from '../gateway/http/app.js'
import { startDemo } from './helpers/demo.js'
import { checkExpectedResponses } from './helpers/expected-responses.js'

const root = fileURLToPath(new URL('..', import.meta.url))

t.test('demo operations', async (t) => {
  const { app } = await startDemo(t)
  await checkExpectedResponses(t, app, join(root, 'operations'))
})

t.test('Chinook example operations', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-chinook-'))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  process.env.CHINOOK_DATABASE_URL = `sqlite:${join(dir, 'chinook.sqlite')}`
  const input = (await import('../examples/chinook/config.js')).default as TributaryConfigInput
  const config = resolveConfig({ ...input, operations: { dir: join(root, 'examples/chinook/operations') }, generatedDir: join(dir, 'generated') })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  await checkExpectedResponses(t, app, join(root, 'examples/chinook/operations'))
})
