/**
 * Runs a side service of the federation example when its module is the process's entry point
 * (`node --import tsx examples/federation/services/<name>.ts`), and not when a test imports it.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'

/**
 * Starts `create()` on 127.0.0.1 at the port named by `portEnv` (else `defaultPort`) when the module
 * whose `import.meta.url` is `moduleUrl` is the entry point, and prints its URL.
 * @param label what the service is, for the printed line (e.g. `countries API`).
 */
export async function listenIfMain(moduleUrl: string, create: () => Promise<FastifyInstance>, portEnv: string, defaultPort: number, label: string): Promise<void> {
  let main = false
  try {
    main = !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl))
  } catch {
    main = false
  }
  if (!main) return
  const app = await create()
  const port = Number(process.env[portEnv] || defaultPort)
  await app.listen({ host: '127.0.0.1', port })
  console.log(`${label} listening on http://127.0.0.1:${port}`)
}
