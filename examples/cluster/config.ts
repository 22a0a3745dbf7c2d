/**
 * The cluster example (examples/cluster/README.md): the demo's `todo` database (point
 * `TODO_DATABASE_URL` at PostgreSQL or MySQL: every instance must see the same rows) and the demo
 * schema with its `messageCreated` stream, served by as many gateway processes as you start. With
 * `REDIS_URL` set they share pub/sub, the producer lock, the live-query pollers and the response cache.
 *
 *   TODO_DATABASE_URL=postgres://… REDIS_URL=redis://127.0.0.1:6379 PORT=4000 npx tributary start --config examples/cluster/config.ts
 *   TODO_DATABASE_URL=postgres://… REDIS_URL=redis://127.0.0.1:6379 PORT=4002 npx tributary start --config examples/cluster/config.ts
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from '../../gateway/config/index.js'
import todo from '../../datasources/todo/index.js'
import demo from '../../datasources/demo/index.js'

export default defineConfig({
  datasources: [todo, demo],
  operations: { dir: fileURLToPath(new URL('./operations', import.meta.url)) },
  generatedDir: process.env.CLUSTER_GENERATED_DIR || 'generated',
  server: {
    // Behind a load balancer: answer 503 on /health/ready this long before closing (≥ its check interval).
    shutdownDelayMs: Number(process.env.SHUTDOWN_DELAY_MS) || 0,
    // bench/run.mjs (subscribers scenario) opens thousands of WebSockets.
    maxWebSockets: Number(process.env.MAX_WEBSOCKETS) || 1000,
    // …and as many TCP connections (the default, 10000 or 80 % of the open-file limit, otherwise).
    ...(Number(process.env.MAX_CONNECTIONS) > 0 ? { maxConnections: Number(process.env.MAX_CONNECTIONS) } : {}),
  },
  // bench/run.mjs compares SHARE_SUBSCRIPTIONS=false (one stream per subscriber) with the default.
  graphql: { shareSubscriptions: process.env.SHARE_SUBSCRIPTIONS !== 'false' },
  routes: [
    { method: 'GET', path: '/api/v1/todos/', operation: 'Todos' },
    { method: 'POST', path: '/api/v1/todo/', operation: 'CreateTodo' },
  ],
})
