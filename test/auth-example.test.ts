/**
 * examples/auth: its JWKS side service (started here on a free port, as the gateway's `services`
 * would), tokens minted by `scripts/token.mjs`, and every operation of the example through a real
 * gateway built from `examples/auth/config.ts`.
 */
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { promisify } from 'node:util'
import { pino } from 'pino'
import { repoRoot } from './helpers/chinook.js'
import type { TributaryConfigInput } from '../gateway/config/index.js'

const run = promisify(execFile)

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

t.test('the authentication example', async (t) => {
  const port = await freePort()
  process.env.JWKS_PORT = String(port)
  const jwks = spawn(process.execPath, [join(repoRoot, 'examples/auth/jwks-service.mjs')], { env: { ...process.env, JWKS_PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => jwks.kill())
  await new Promise<void>((resolve, reject) => {
    jwks.stdout!.once('data', () => resolve())
    jwks.once('exit', (code) => reject(new Error(`the JWKS service exited with ${code}`)))
  })
  const { resolveConfig } = await import('../gateway/config/index.js')
  const { createGateway } = await import('../gateway/runtime.js')
  const { buildApp } = await import('../gateway/http/app.js')
  const input = (await import('../examples/auth/config.js')).default as TributaryConfigInput
  const config = resolveConfig({
    ...input,
    services: [],
    operations: { dir: join(repoRoot, 'examples/auth/operations') },
    generatedDir: join(tmpdir(), `tributary-auth-example-${process.pid}`),
    server: { ...input.server, rateLimit: { ...input.server!.rateLimit!, redisUrl: undefined, keyPrefix: `tributary-test-example-${process.pid}:` } },
  })
  const gateway = await createGateway(config, { logger: pino({ level: 'silent' }), cwd: repoRoot })
  t.teardown(() => gateway.close())
  const app = await buildApp(gateway, { logger: false })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

  const token = async (...args: string[]) => (await run(process.execPath, [join(repoRoot, 'examples/auth/scripts/token.mjs'), ...args])).stdout.trim()
  const get = async (path: string, tok?: string) => {
    const res = await fetch(`${url}${path}`, { headers: tok ? { authorization: `Bearer ${tok}` } : {} })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { errors?: { path?: unknown[]; extensions: { code: string } }[] } }
  }
  const editor = await token('--sub', 'alice', '--roles', 'editor', '--name', 'Alice')
  const admin = await token('--sub', 'root', '--roles', 'admin,auditor')

  t.equal((await get('/operations/Me')).status, 401)
  t.same((await get('/operations/Me', editor)).body, { me: { sub: 'alice', name: 'Alice', roles: ['editor'] } })
  t.same((await get('/operations/MyNotes', editor)).body, { notes: [{ id: '1', text: "Alice's first note" }, { id: '3', text: "Alice's second note" }] })
  t.equal((await get('/operations/MyNotes?owner=bob', editor)).status, 400, 'claim injection refused')
  const all = await get('/operations/AllNotes', editor)
  t.equal(all.status, 403, 'an editor reads the notes but not `internal`')
  t.same(all.body.errors?.map((e) => e.extensions.code), ['TRB_ERR_AUTH_FORBIDDEN', 'TRB_ERR_AUTH_FORBIDDEN', 'TRB_ERR_AUTH_FORBIDDEN'])
  t.equal((await get('/operations/AllNotes', admin)).status, 200)
  t.equal((await get('/operations/Audit', editor)).status, 403)
  t.equal((await get('/operations/Audit', admin)).status, 200)
  const expired = await token('--sub', 'alice', '--expires', '-1m')
  t.equal((await get('/operations/Me', expired)).status, 401)
})
