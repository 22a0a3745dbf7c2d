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
import { serveGateway } from './serve.js'
import { sqlLog } from './sql-log.js'

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
  const { url: base } = await serveGateway(t, config)
  const url = `${base}/graphql`
  return {
    async gql(query, variables) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      return { status: res.status, body: (await res.json()) as Answer['body'] }
    },
  }
}

/** One statement from a database source's debug `sql` log line. */
export interface LoggedStatement {
  sql: string
  /** SQLite files only: true when it ran in a worker process, false on the gateway's own connection. */
  worker?: boolean
}

/**
 * Starts the gateway for `datasources` with the stored operations of `dir` (which also holds
 * `generated/`), logging at debug level, and serves it on 127.0.0.1; closed at `t`'s teardown
 * (open keep-alive sockets are cut, so that aborted fetches do not hold `close()`).
 * @param onStatement called with every statement a database source logs (msg `sql`)
 * @returns the base URL, `http://127.0.0.1:<port>`
 */
export async function startLoggedGateway(t: Test, datasources: ReturnType<typeof database>[], dir: string, onStatement: (s: LoggedStatement) => void): Promise<string> {
  const { stream } = sqlLog(onStatement)
  const config = resolveConfig({ datasources, operations: { dir }, generatedDir: join(dir, 'generated'), server: { logLevel: 'debug' } })
  return (await serveGateway(t, config, { logger: pino({ level: 'debug' }, stream), cwd: dir })).url
}
