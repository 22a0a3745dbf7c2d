/**
 * A gateway serving database data sources over real HTTP on 127.0.0.1 (an ephemeral port), in
 * production mode with arbitrary operations allowed, for tests that drive it with `fetch`.
 */
import type { Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { resolveConfig, type database } from '../../gateway/config/index.js'
import { createGateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

/** A GraphQL answer: HTTP status and JSON body. */
export interface Answer {
  status: number
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions: { code: string } }[] }
}

/**
 * Starts the gateway for `datasources`; everything is closed and removed at `t`'s teardown.
 * @returns `gql(query, variables)` posting to `/graphql`
 */
export async function startDatabaseGateway(t: Test, datasources: ReturnType<typeof database>[]): Promise<{ gql(query: string, variables?: Record<string, unknown>): Promise<Answer> }> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-db-gw-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = resolveConfig({
    datasources,
    operations: { dir: join(dir, 'operations') },
    generatedDir: join(dir, 'generated'),
    mode: 'production',
    graphql: { allowArbitraryOperationsInProduction: true },
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/graphql`
  return {
    async gql(query, variables) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      return { status: res.status, body: (await res.json()) as Answer['body'] }
    },
  }
}
