/**
 * The deployment of the `roles` bench scenario (bench/run.mjs): the demo's `system` REST source and the
 * role service it wraps, with one stored operation, `Roles` (`bench/roles/operations/Roles.graphql`).
 * Generated files go to a temporary directory, never to the repository's `generated/`.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from '../../gateway/config/index.js'
import system from '../../datasources/system/index.js'

const rolePort = process.env.ROLE_SERVICE_PORT || '4001'
const roleServiceUrl = process.env.SYSTEM_API_URL || `http://127.0.0.1:${rolePort}`

export default defineConfig({
  datasources: [system],
  services: [
    {
      name: 'role service',
      script: fileURLToPath(new URL('../../datasources/system/service.js', import.meta.url)),
      url: roleServiceUrl,
      readyUrl: `${roleServiceUrl}/openapi.json`,
      env: { ROLE_SERVICE_PORT: rolePort, LOG_LEVEL: process.env.LOG_LEVEL || 'warn' },
    },
  ],
  operations: { dir: 'bench/roles/operations' },
  generatedDir: join(tmpdir(), `tributary-bench-roles-${process.pid}`),
})
