/**
 * Test helper: the demo deployment on a fresh SQLite file, with a real role service on 127.0.0.1,
 * as an in-process fastify app (use `app.inject`) or a listening server (`listen: true`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import type { FastifyInstance } from 'fastify'
import { resolveConfig, type TributaryConfig, type TributaryConfigInput } from '../../gateway/config/index.js'
import { createGateway, type Gateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'
import { createRoleService } from '../../datasources/system/service.js'

/** What {@link startDemo} returns. */
export interface Demo {
  app: FastifyInstance
  gateway: Gateway
  config: TributaryConfig
  /** `http://127.0.0.1:<port>` when `listen` was set. */
  url: string
  roleServiceUrl: string
  dir: string
}

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * Starts the demo. `rawSql: true` turns raw SQL on for the demo's database source in every mode (the
 * fixture operations in test/fixtures/operations-demo use `todo_queryRaw`); the demo itself has it in
 * development mode only (`rawSql: 'development'`).
 * Environment variables must be read by the config at import time, so this sets
 * `TODO_DATABASE_URL` and `SYSTEM_API_URL` before importing `config.ts` (once per test process).
 */
export async function startDemo(
  t: Teardown,
  options: { listen?: boolean; override?: Partial<TributaryConfigInput>; env?: Record<string, string>; rawSql?: boolean } = {},
): Promise<Demo> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-demo-'))
  const roles = await createRoleService({ logger: false })
  const cleanup: (() => Promise<unknown> | unknown)[] = [() => roles.close(), () => rmSync(dir, { recursive: true, force: true })]
  // Registered first, so that a gateway that fails to start still releases the role service.
  t.teardown(async () => {
    for (const fn of cleanup.reverse()) await fn()
  })
  await roles.listen({ host: '127.0.0.1', port: 0 })
  const address = roles.server.address()
  const roleServiceUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  process.env.TODO_DATABASE_URL ??= `sqlite:${join(dir, 'todo.sqlite')}`
  process.env.SYSTEM_API_URL = roleServiceUrl
  process.env.DEMO_MESSAGE_INTERVAL_MS ??= '100'
  for (const [k, v] of Object.entries(options.env ?? {})) process.env[k] = v
  const input = (await import('../../config.js')).default as TributaryConfigInput
  const config = resolveConfig({
    ...input,
    datasources: input.datasources.map((d) =>
      d.kind === 'rest' && d.namespace === 'system'
        ? { ...d, baseUrl: roleServiceUrl }
        : d.kind === 'database'
          ? // A statement waits up to 30 s for a SQLite worker (default 2 s): on a loaded machine a
            // document of 30 aliases waited past 2 s and got 503. The queue's limits are tested on
            // their own configs (attack-sqlite-workers.test.ts).
            { ...d, ...(options.rawSql ? { rawSql: true } : {}), sqliteWorkers: { maxWaitMs: 30_000, ...d.sqliteWorkers } }
          : d,
    ),
    services: [],
    generatedDir: join(dir, 'generated'),
    ...options.override,
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  cleanup.push(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  cleanup.push(() => app.close())
  let url = ''
  if (options.listen) {
    await app.listen({ host: '127.0.0.1', port: 0 })
    const a = app.server.address()
    url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`
  } else {
    await app.ready()
  }
  return { app, gateway, config, url, roleServiceUrl, dir }
}
