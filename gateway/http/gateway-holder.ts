/**
 * The served gateway, in a module of its own so that the routes (graphql-endpoint.ts, health.ts,
 * live.ts, operations-routes.ts, persisted.ts, rate-limit.ts) need no import of app.ts, which
 * imports them (no circle, docs/architecture.md §7).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Gateway } from '../runtime.js'
import type { Cluster } from '../cluster/index.js'

/**
 * The gateway currently served. Development mode swaps it when files change; every request reads
 * `current` once, so a request never sees two versions.
 */
export interface GatewayHolder {
  current: Gateway
  /** Incremented on every swap; caches keyed on the schema compare it. */
  version: number
  logger: FastifyBaseLogger
  /** What the instances of the deployment share (Redis or memory); handed to resolvers as `context.cluster`. */
  cluster: Cluster
}
