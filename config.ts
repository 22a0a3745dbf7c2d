/**
 * The demo deployment (docs/architecture.md §6): the `todo` SQLite database, the `system` role REST API and the
 * demo schema, plus the sample role service that `system` wraps. Run another deployment with
 * `npm start -- --config <file>` or `TRIBUTARY_CONFIG=<file>`.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from './gateway/config/index.js'
import todo from './datasources/todo/index.js'
import system from './datasources/system/index.js'
import demo from './datasources/demo/index.js'

const rolePort = process.env.ROLE_SERVICE_PORT || '4001'
const roleServiceUrl = process.env.SYSTEM_API_URL || `http://127.0.0.1:${rolePort}`

export default defineConfig({
  datasources: [todo, system, demo],
  services: [
    {
      name: 'role service',
      script: fileURLToPath(new URL('./datasources/system/service.js', import.meta.url)),
      url: roleServiceUrl,
      readyUrl: `${roleServiceUrl}/openapi.json`,
      env: { ROLE_SERVICE_PORT: rolePort, LOG_LEVEL: process.env.LOG_LEVEL || 'warn' },
    },
  ],
  routes: [
    { method: 'GET', path: '/api/v1/todos/', operation: 'Todos' },
    { method: 'GET', path: '/api/v1/todo/:id/', operation: 'TodoById' },
    { method: 'POST', path: '/api/v1/todo/', operation: 'CreateTodo' },
    { method: 'DELETE', path: '/api/v1/todo/:id/', operation: 'DeleteTodo' },
  ],
  // generated/react.ts: TanStack Query hooks over generated/client.ts (README "React hooks").
  codegen: { react: true },
})
