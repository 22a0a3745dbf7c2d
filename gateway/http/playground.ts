/**
 * The playground: GraphiQL 3 served entirely by the gateway, so it works offline and behind any
 * host or port.
 *
 * Assets (all under {@link PLAYGROUND_ASSETS_PREFIX}, read once, at startup, from `playground-vendor/`
 * beside this module in the published package, else from `node_modules`):
 * - `react.production.min.js`, `react-dom.production.min.js`: React 18's UMD builds (globals
 *   `React`, `ReactDOM`);
 * - `graphiql.min.js`, `graphiql.min.css`: GraphiQL's UMD build (global `GraphiQL`, fonts inlined);
 * - `graphql-ws/client.js` and the modules it imports: graphql-ws 6's browser client, served as the
 *   ES modules it ships (it imports nothing but its own relative files, so no bundler is needed);
 * - `playground.js` (an ES module: reads the page's JSON config, creates the graphql-ws client with
 *   a `ws:`/`wss:` URL computed from `location`, mounts GraphiQL) and `playground.css`.
 *
 * The page has no inline script or event handler; its Content-Security-Policy allows scripts from
 * the gateway only.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { getNamedType, isInterfaceType, isLeafType, isNonNullType, isObjectType, print, type DocumentNode, type GraphQLSchema } from 'graphql'

/** Where {@link playgroundPlugin} serves the assets (register the plugin without a prefix). */
export const PLAYGROUND_ASSETS_PREFIX = '/playground/assets'

/** Options of {@link playgroundPlugin}. */
export interface PlaygroundPluginOptions {
  /** The GraphQL endpoint the page will use, e.g. `/graphql` (checked at registration). */
  endpoint: string
  /** The WebSocket endpoint, if not `endpoint` (checked at registration). */
  subscriptionEndpoint?: string
  /** The page title (unused by the plugin; for symmetry with {@link renderPlaygroundHtml}). */
  title?: string
}

/** Options of {@link renderPlaygroundHtml}. */
export interface PlaygroundHtmlOptions {
  /** The GraphQL endpoint for queries and mutations (HTTP POST): a path (`/graphql`) or an absolute http(s) URL. */
  endpoint: string
  /**
   * The WebSocket endpoint for subscriptions: a path or URL; default `endpoint`. A path or http(s)
   * URL is turned into `ws:`/`wss:` in the browser, from `location`, so the page works behind any
   * host, port or TLS terminator.
   */
  subscriptionEndpoint?: string
  /** The page title. Default `Tributary playground`. */
  title?: string
  /** Where the assets are served: {@link PLAYGROUND_ASSETS_PREFIX} unless the plugin was registered under a prefix. */
  assetsPrefix: string
  /** The query shown in a new editor tab: the gateway passes {@link playgroundQuery}. Default: a comment and `{ __typename }`. */
  defaultQuery?: string
  /**
   * A query to open the page with (a playground link: `GET /graphql?query=…` from a browser), with
   * its `variables` (JSON text) and `operationName`. It replaces the editor's content.
   */
  initial?: { query: string; variables?: string; operationName?: string }
  /** The admin console's path (README "Admin console"), linked from a corner of the page when given. */
  consoleUrl?: string
}

interface Asset {
  readonly body: Buffer
  readonly contentType: string
  readonly etag: string
  gzipped?: Promise<Buffer>
}

interface AssetTable {
  /** Assets by path under the prefix (`graphiql.min.js`, `graphql-ws/client.js`). */
  readonly assets: ReadonlyMap<string, Asset>
  /** A short hash of every asset: the `?v=` of the URLs in the page. */
  readonly version: string
}

const JS = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'
const IMMUTABLE = 'public, max-age=31536000, immutable'
const REVALIDATE = 'public, max-age=0, must-revalidate'

const WELCOME = `# Welcome to the Tributary playground.
#
# Run an operation with Ctrl-Enter or the play button; subscriptions stream
# over WebSocket (graphql-transport-ws).
`

const DEFAULT_QUERY = `${WELCOME}
{
  __typename
}
`

/** What {@link playgroundQuery} reads of a stored operation (gateway/operations: `CompiledOperation`). */
export interface PlaygroundOperation {
  readonly name: string
  readonly kind: 'query' | 'mutation' | 'subscription'
  /** A `.graphql` operation has its document; a TypeScript one (`language: 'typescript'`) is not shown. */
  readonly stored: { readonly internal: boolean; readonly language?: 'graphql'; readonly document: DocumentNode } | { readonly internal: boolean; readonly language: 'typescript' }
}

const playgroundQueries = new WeakMap<GraphQLSchema, WeakMap<object, string>>()

/** `{ field { leaf leaf … } }` for the first field of the query root a client can call without arguments. */
function rootFieldQuery(schema: GraphQLSchema): string | undefined {
  const query = schema.getQueryType()
  if (!query) return undefined
  const field = Object.values(query.getFields()).find((f) => !f.name.startsWith('__') && f.args.every((a) => !isNonNullType(a.type) || a.defaultValue !== undefined))
  if (!field) return undefined
  const type = getNamedType(field.type)
  if (isLeafType(type)) return `{\n  ${field.name}\n}\n`
  const leaves = isObjectType(type) || isInterfaceType(type) ? Object.values(type.getFields()).filter((f) => isLeafType(getNamedType(f.type)) && f.args.every((a) => !isNonNullType(a.type))).slice(0, 6).map((f) => f.name) : []
  return `{\n  ${field.name} {\n${(leaves.length ? leaves : ['__typename']).map((f) => `    ${f}\n`).join('')}  }\n}\n`
}

/**
 * The query the playground opens on for a deployment: the document of its first stored query (by
 * name; else its first stored operation), as served (auth directives removed), else a query of the
 * first field of the query root that needs no argument, with up to 6 of its scalar fields; else
 * `{ __typename }`. Internal operations (`operations/internal/`) are never shown.
 *
 * @param schema the deployment's schema.
 * @param operations its stored operations by name (the gateway's `operations`).
 * @returns GraphQL text, with a comment that names the operation's file when it is one. Remembered per
 *   schema and operations object (weakly): a reload computes it again.
 */
export function playgroundQuery(schema: GraphQLSchema, operations: ReadonlyMap<string, PlaygroundOperation>): string {
  const cached = playgroundQueries.get(schema)?.get(operations)
  if (cached !== undefined) return cached
  const served = [...operations.values()]
    .flatMap((op) => (!op.stored.internal && op.stored.language !== 'typescript' ? [{ name: op.name, kind: op.kind, document: op.stored.document }] : []))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const op = served.find((o) => o.kind === 'query') ?? served[0]
  let text: string
  if (op) text = `${WELCOME}#\n# The stored operation ${op.name} (operations/${op.name}.graphql), also GET/POST /operations/${op.name}.\n\n${print(op.document)}\n`
  else {
    const built = rootFieldQuery(schema)
    text = built ? `${WELCOME}\n${built}` : DEFAULT_QUERY
  }
  let bySchema = playgroundQueries.get(schema)
  if (!bySchema) playgroundQueries.set(schema, (bySchema = new WeakMap()))
  bySchema.set(operations, text)
  return text
}

/** The page's own module. It reads its config from the JSON block; nothing is inlined into it. */
const BOOTSTRAP = `import { createClient } from './graphql-ws/client.js'

const config = JSON.parse(document.getElementById('tributary-playground-config').textContent)
const httpUrl = new URL(config.endpoint, location.href)
const wsUrl = new URL(config.subscriptionEndpoint || config.endpoint, location.href)
if (wsUrl.protocol === 'https:') wsUrl.protocol = 'wss:'
else if (wsUrl.protocol === 'http:') wsUrl.protocol = 'ws:'

function showError (message) {
  const box = document.createElement('pre')
  box.className = 'tributary-playground-error'
  box.textContent = message
  document.body.prepend(box)
}

try {
  const wsClient = createClient({ url: wsUrl.href, lazy: true, retryAttempts: 3 })
  const fetcher = GraphiQL.createFetcher({ url: httpUrl.href, wsClient, enableIncrementalDelivery: false })
  const root = ReactDOM.createRoot(document.getElementById('graphiql'))
  const initial = config.initial || {}
  root.render(React.createElement(GraphiQL, {
    fetcher,
    defaultQuery: config.defaultQuery,
    query: initial.query,
    variables: initial.variables,
    operationName: initial.operationName,
    defaultEditorToolsVisibility: true,
    shouldPersistHeaders: false,
  }))
} catch (err) {
  showError('The playground failed to start: ' + (err && err.message ? err.message : String(err)))
}
`

const STYLES = `html, body { height: 100%; margin: 0; }
#graphiql { height: 100vh; }
.tributary-playground-loading { font: 14px system-ui, sans-serif; padding: 1rem; color: #555; }
.tributary-playground-console { position: fixed; right: 0.75rem; bottom: 0.5rem; z-index: 10; font: 12px system-ui, sans-serif; color: #2f6fdb; background: #fff; padding: 0.15rem 0.5rem; border-radius: 4px; border: 1px solid #d5dbe6; text-decoration: none; }
.tributary-playground-error { margin: 0; padding: 0.75rem 1rem; background: #fdecea; color: #611a15; font: 13px ui-monospace, monospace; white-space: pre-wrap; }
`

let table: AssetTable | undefined

function makeAsset(body: Buffer, contentType: string): Asset {
  return { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` }
}

/**
 * Adds graphql-ws's `client.js` and every module it imports statically (relative specifiers in the
 * same folder only) under `graphql-ws/`. Throws when a bare or parent-relative import appears, so an
 * upgrade that would break the page fails at startup instead.
 */
function addEsModuleGraph(assets: Map<string, Asset>, dir: string, entry: string, prefix: string): void {
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop()!
    const key = `${prefix}/${file}`
    if (assets.has(key)) continue
    const source = readFileSync(join(dir, file))
    assets.set(key, makeAsset(source, JS))
    // Static `import`/`export ... from` statements start a line in the modules bundlers emit.
    const text = source.toString('utf8')
    const specifiers = [
      ...text.matchAll(/^[ \t]*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm),
      ...text.matchAll(/^[ \t]*import\s*['"]([^'"]+)['"]/gm),
    ]
    for (const [, specifier] of specifiers) {
      if (specifier === undefined || !/^\.\/[\w.-]+\.js$/.test(specifier)) {
        throw new Error(`Playground: ${prefix}/${file} imports "${specifier}", which cannot be served as a browser module`)
      }
      pending.push(specifier.slice(2))
    }
  }
}

/** Reads every asset once (about 4.5 MB) and computes the version hash; later calls return the same table. */
function loadAssets(): AssetTable {
  if (table) return table
  const require = createRequire(import.meta.url)
  const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`))
  const assets = new Map<string, Asset>()
  // The published package carries React's and GraphiQL's UMD files (scripts/build.mjs copies them to
  // dist/gateway/http/playground-vendor/), so that a consumer does not install GraphiQL's ~100
  // dependencies (about 45 MB) that the bundle already contains; running from the sources, they come
  // from the devDependencies.
  const vendored = fileURLToPath(new URL('./playground-vendor/', import.meta.url))
  const fromVendor = existsSync(join(vendored, 'graphiql.min.js'))
  const file = (key: string, pkg: string, path: string, contentType: string): void => {
    assets.set(key, makeAsset(readFileSync(fromVendor ? join(vendored, key) : join(packageDir(pkg), path)), contentType))
  }
  file('react.production.min.js', 'react', 'umd/react.production.min.js', JS)
  file('react-dom.production.min.js', 'react-dom', 'umd/react-dom.production.min.js', JS)
  file('graphiql.min.js', 'graphiql', 'graphiql.min.js', JS)
  file('graphiql.min.css', 'graphiql', 'graphiql.min.css', CSS)
  addEsModuleGraph(assets, join(packageDir('graphql-ws'), 'dist'), 'client.js', 'graphql-ws')
  assets.set('playground.js', makeAsset(Buffer.from(BOOTSTRAP), JS))
  assets.set('playground.css', makeAsset(Buffer.from(STYLES), CSS))
  const hash = createHash('sha256')
  for (const [key, asset] of [...assets].sort(([a], [b]) => a.localeCompare(b))) hash.update(key).update(asset.etag)
  table = { assets, version: hash.digest('hex').slice(0, 12) }
  return table
}

const gzipAsync = promisify(gzip)

/** True when the request accepts gzip (`Accept-Encoding: gzip`, not `gzip;q=0`). */
function acceptsGzip(request: FastifyRequest): boolean {
  const header = request.headers['accept-encoding']
  if (typeof header !== 'string') return false
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';')
    if (coding?.trim().toLowerCase() !== 'gzip') return false
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

function checkEndpoint(name: string, value: unknown): void {
  if (typeof value !== 'string' || !(/^\//.test(value) || /^(https?|wss?):\/\//.test(value))) {
    throw new TypeError(`playgroundPlugin: ${name} must be a path starting with "/" or an absolute http(s)/ws(s) URL, got ${JSON.stringify(value)}`)
  }
}

/**
 * Fastify plugin serving the playground's assets at `GET /playground/assets/*` (and HEAD).
 * Register it without a prefix; it decorates nothing.
 *
 * - An asset requested with the current `?v=` (as the page links it) is sent with
 *   `Cache-Control: public, max-age=31536000, immutable`; without it, with `max-age=0,
 *   must-revalidate`. Every asset has a strong `ETag`; a matching `If-None-Match` gets 304.
 * - `Content-Type` is `text/javascript` or `text/css` (UTF-8); `X-Content-Type-Options: nosniff`.
 * - gzip is used when accepted (compressed once, then cached in memory).
 * - An unknown path goes to the app's not-found handler.
 *
 * @throws TypeError at registration when `endpoint` or `subscriptionEndpoint` is not a path or URL;
 *   Error when an asset cannot be read from `node_modules`.
 */
export const playgroundPlugin: FastifyPluginAsync<PlaygroundPluginOptions> = async (app, options) => {
  checkEndpoint('endpoint', options.endpoint)
  if (options.subscriptionEndpoint !== undefined) checkEndpoint('subscriptionEndpoint', options.subscriptionEndpoint)
  const { assets, version } = loadAssets()

  app.get(`${PLAYGROUND_ASSETS_PREFIX}/*`, async (request: FastifyRequest<{ Params: { '*': string }; Querystring: { v?: string } }>, reply: FastifyReply) => {
    const asset = assets.get(request.params['*'])
    if (!asset) return reply.callNotFound()
    const useGzip = asset.body.length > 1024 && acceptsGzip(request)
    // each encoding is a different representation, so it gets its own strong ETag
    const gzipEtag = `${asset.etag.slice(0, -1)}-gz"`
    reply
      .header('content-type', asset.contentType)
      .header('cache-control', request.query.v === version ? IMMUTABLE : REVALIDATE)
      .header('etag', useGzip ? gzipEtag : asset.etag)
      .header('vary', 'accept-encoding')
      .header('x-content-type-options', 'nosniff')
    const ifNoneMatch = request.headers['if-none-match']
    if (typeof ifNoneMatch === 'string' && ifNoneMatch.split(',').some((tag) => {
      const t = tag.trim().replace(/^W\//, '')
      return t === asset.etag || t === gzipEtag || t === '*'
    })) {
      return reply.code(304).send()
    }
    if (useGzip) {
      asset.gzipped ??= gzipAsync(asset.body, { level: 9 })
      return reply.header('content-encoding', 'gzip').send(await asset.gzipped)
    }
    return reply.send(asset.body)
  })
}

const htmlEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => htmlEscapes[c]!)
}

/** JSON safe to embed in a `<script type="application/json">` block. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
}

/** The origin of an absolute URL (with `http(s)` mapped to `ws(s)` too), or nothing for a path. */
function extraOrigins(url: string | undefined): string[] {
  if (url === undefined || url.startsWith('/')) return []
  const u = new URL(url)
  const secure = u.protocol === 'https:' || u.protocol === 'wss:'
  return [`${secure ? 'https' : 'http'}://${u.host}`, `${secure ? 'wss' : 'ws'}://${u.host}`]
}

/**
 * The Content-Security-Policy of the playground page (also put in the page as a `<meta>`; send it as
 * a header too to add `frame-ancestors`, which a `<meta>` cannot carry). Scripts come from the
 * gateway only; styles also allow inline `style` (GraphiQL's components set it); fonts and images
 * allow `data:` (GraphiQL inlines its fonts); `connect-src 'self'` covers same-origin `ws:`/`wss:`.
 *
 * @returns the policy, directives separated by `; `.
 */
export function playgroundContentSecurityPolicy(options: Pick<PlaygroundHtmlOptions, 'endpoint' | 'subscriptionEndpoint'>): string {
  const connect = ["'self'", ...new Set([...extraOrigins(options.endpoint), ...extraOrigins(options.subscriptionEndpoint)])]
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src ${connect.join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ')
}

/**
 * The playground's HTML page (GraphiQL), for `GET /graphql` from a browser. It references only
 * assets under `assetsPrefix` (with `?v=<version>` so they can be cached for a year), carries its
 * settings in a `<script type="application/json">` block, and has no inline script.
 *
 * @returns a complete UTF-8 HTML document; send it with `Content-Type: text/html; charset=utf-8`.
 * @throws Error when the assets cannot be read from `node_modules` (first call only).
 */
export function renderPlaygroundHtml(options: PlaygroundHtmlOptions): string {
  const { version } = loadAssets()
  const prefix = options.assetsPrefix.replace(/\/+$/, '')
  const asset = (name: string): string => escapeHtml(`${prefix}/${name}?v=${version}`)
  const title = escapeHtml(options.title ?? 'Tributary playground')
  const config = {
    endpoint: options.endpoint,
    subscriptionEndpoint: options.subscriptionEndpoint ?? null,
    defaultQuery: options.defaultQuery ?? DEFAULT_QUERY,
    ...(options.initial ? { initial: options.initial } : {}),
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(playgroundContentSecurityPolicy(options))}">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${asset('graphiql.min.css')}">
<link rel="stylesheet" href="${asset('playground.css')}">
<script type="application/json" id="tributary-playground-config">${jsonForScript(config)}</script>
</head>
<body>
${options.consoleUrl ? `<a class="tributary-playground-console" href="${escapeHtml(options.consoleUrl)}">Admin console</a>
` : ''}<div id="graphiql"><p class="tributary-playground-loading">Loading the playground…</p><noscript>The playground needs JavaScript.</noscript></div>
<script src="${asset('react.production.min.js')}"></script>
<script src="${asset('react-dom.production.min.js')}"></script>
<script src="${asset('graphiql.min.js')}"></script>
<script type="module" src="${asset('playground.js')}"></script>
</body>
</html>
`
}
