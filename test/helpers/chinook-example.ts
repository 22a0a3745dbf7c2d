/**
 * The Chinook example (examples/chinook/config.ts) served in process, on a copy of its SQLite file
 * in a temporary folder (removed at teardown), so that a test's writes never touch the committed file.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Builds the Chinook example's gateway and app (not listening) on a fresh copy of chinook.sqlite.
 * @param t anything with tap's `teardown`: the app, the gateway and the copy are closed/removed there.
 * @returns the app and the example's operations folder.
 */
export async function startChinookExample(t: { teardown(fn: () => unknown): void }): Promise<{ app: FastifyInstance; operationsDir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-chinook-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  copyFileSync(join(root, 'examples/chinook/chinook.sqlite'), join(dir, 'chinook.sqlite'))
  process.env.CHINOOK_DATABASE_URL = `sqlite:${join(dir, 'chinook.sqlite')}`
  const input = (await import('../../examples/chinook/config.js')).default as TributaryConfigInput
  const operationsDir = join(root, 'examples/chinook/operations')
  const config = resolveConfig({ ...input, operations: { dir: operationsDir }, generatedDir: join(dir, 'generated') })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  const app = await buildApp(gateway, { logger: false })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
  })
  return { app, operationsDir }
}
