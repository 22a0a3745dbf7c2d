/**
 * The settings a running server applied once, when it started (README "HTTP contract", `npm run dev`): a
 * development reload swaps sources, operations, links, permissions and hooks in place, but the HTTP
 * server, its plugins and the WebSocket handler keep what they were built with.
 */
import type { TributaryConfig } from './index.js'

/**
 * Config paths read only when the server starts. A whole section (`server`) stands for every key in
 * it; `graphql.<key>` entries are the limits the WebSocket handler was built with (HTTP requests read
 * the reloaded value).
 */
export const RESTART_ONLY_SETTINGS: readonly string[] = [
  'server',
  'pubsub',
  'metrics',
  'telemetry',
  'console',
  'routes',
  'services',
  'auth.oidc',
  'graphql.maxDepth',
  'graphql.maxAliases',
  'graphql.maxFragmentSpreads',
  'graphql.maxSelections',
  'graphql.maxTokens',
  'graphql.maxInputDepth',
  'graphql.maxCost',
  'graphql.defaultListSize',
  'graphql.maxSubscriptionsPerSocket',
  'graphql.shareSubscriptions',
  'graphql.introspection',
]

/**
 * The restart-only settings whose value differs between two configs, as dotted paths, one level
 * below a whole section (`server.rateLimit`, `routes`, `graphql.maxDepth`), in
 * {@link RESTART_ONLY_SETTINGS} order. Values are compared as data; a function by its source text
 * (a re-imported config makes new function objects). Never throws: values that cannot be printed
 * (cycles) count as changed when they are not the same object.
 * @param before the config the running server started with.
 * @param after the reloaded config.
 * @returns the changed paths, empty when a reload applies everything.
 */
export function settingsNeedingRestart(before: TributaryConfig, after: TributaryConfig): string[] {
  const changed: string[] = []
  for (const path of RESTART_ONLY_SETTINGS) {
    const a = at(before, path)
    const b = at(after, path)
    if (same(a, b)) continue
    if (!path.includes('.') && isPlainObject(a) && isPlainObject(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) if (!same(a[key], b[key])) changed.push(`${path}.${key}`)
    } else changed.push(path)
  }
  return changed
}

function at(config: TributaryConfig, path: string): unknown {
  let value: unknown = config
  for (const key of path.split('.')) value = isPlainObject(value) ? value[key] : undefined
  return value
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true
  try {
    return print(a) === print(b)
  } catch {
    return false
  }
}

function print(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'function' ? `function ${String(v)}` : v instanceof RegExp ? `regexp ${String(v)}` : v)) ?? 'undefined'
}
