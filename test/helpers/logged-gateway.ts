/**
 * Test helper: a gateway listening on 127.0.0.1 whose pino log records (level info and up) are
 * collected as parsed objects, for tests that check what is logged beside what a client sees.
 */
import { rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import type { TributaryConfig } from '../../gateway/config/index.js'
import { createGateway } from '../../gateway/runtime.js'
import { buildApp } from '../../gateway/http/app.js'

/**
 * Builds and serves `config`; at teardown closes the app and the gateway and removes `dir` (the
 * test's folder of operations and generated files).
 * @returns the gateway's `http://127.0.0.1:<port>` and the log records so far (a live array)
 */
export async function serveLoggedGateway(t: { teardown(fn: () => unknown): void }, config: TributaryConfig, dir: string): Promise<{ url: string; logs: Record<string, unknown>[] }> {
  const logs: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const logger = pino({ level: 'info' }, stream)
  const gateway = await createGateway(config, { logger })
  const app = await buildApp(gateway, { logger })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    await app.close()
    await gateway.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return { url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, logs }
}
