/**
 * The admin console (README "Admin console", issue 27): a small front-end at `/console` and its JSON
 * API under `/console/api/*`.
 *
 * Pages (`GET /console`, hash routes `#/sources`, `#/schema`, `#/operations`, `#/traffic`,
 * `#/graphiql`): a React 18 bundle built by `scripts/build-console.mjs` (esbuild) into
 * `console-assets/` beside this module, served offline from `/console/assets/*` with the OpenAPI
 * viewer (Swagger UI, `swagger-ui-dist`) at `/console/openapi` and GraphiQL with the explorer plugin
 * (`@graphiql/plugin-explorer`, over the playground's GraphiQL) at `/console/graphiql`.
 *
 * API (JSON, `Cache-Control: no-store`):
 * - `GET /console/api/overview`: mode, URLs, counts.
 * - `GET /console/api/sources`: each source's kind, namespace, URL with secrets masked, health and
 *   probe latency, last error, root fields, types, and the links from and to it.
 * - `GET /console/api/schema?namespace=&q=`: the types of one namespace (or those matching `q`,
 *   with or without the namespace prefix), with fields, arguments, descriptions, database columns
 *   and their types, relations and links.
 * - `GET /console/api/operations`: every served stored operation with its method, route, variables
 *   JSON Schema, document, curl line and typed-client call.
 * - `GET /console/api/traffic`: requests/s, p50/p95/p99 and error rate per operation and per source
 *   over 15 minutes, and the last 100 errors (observability/traffic.ts).
 *
 * Access to the API (the pages and assets hold no data): a request carrying an `Origin` that is
 * neither the gateway's own nor in `server.allowedOrigins` gets 403 `TRB_ERR_ORIGIN_FORBIDDEN`;
 * in development a loopback client is let in; otherwise the request needs `X-Tributary-Admin-Secret:
 * <console.adminSecret>` or a token (`auth.jwt`) with a role of `console.roles`: else 401
 * `TRB_ERR_CONSOLE_DENIED` (403 for a valid token without the role). Every API answer is scrubbed of
 * the config's secrets (passwords in URLs, header values, tokens, keys) before it is sent.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  getNamedType, isEnumType, isInputObjectType, isInterfaceType, isObjectType, isUnionType, print,
  type GraphQLArgument, type GraphQLField, type GraphQLInputField, type GraphQLNamedType, type GraphQLSchema,
} from 'graphql'
import type { GatewayHolder } from './gateway-holder.js'
import type { Gateway } from '../runtime.js'
import type { SourceHealth } from '../connectors/types.js'
import { LINK_EXTENSION } from '../connectors/types.js'
import { BadRequestError, ConsoleDeniedError, OriginForbiddenError, isTributaryError } from '../errors.js'
import { authenticateRequest } from './auth.js'
import { isOwnOrigin } from './origin.js'
import { sendError } from './format-error.js'
import { observers } from '../observability/probes.js'
import { TrafficRecorder, graphqlTrafficName } from '../observability/traffic.js'
import { routePattern } from '../observability/route-info.js'
import { isAnswerWithoutErrors } from './answer-errors.js'
import { PLAYGROUND_ASSETS_PREFIX, playgroundQuery, renderPlaygroundHtml } from './playground.js'

/** Where the console is served. */
export const CONSOLE_PREFIX = '/console'
/** The header that carries `console.adminSecret`. */
export const ADMIN_SECRET_HEADER = 'x-tributary-admin-secret'
/** Longest `q` of `/console/api/schema`, in characters. */
export const MAX_SEARCH_LENGTH = 100
/** Most types `/console/api/schema` returns for a search. */
export const MAX_SEARCH_RESULTS = 50
/** Largest answer body (bytes) the console reads for the errors it carries. */
const MAX_SCANNED_BODY = 1 << 20
/** How long a probe of the sources page may take, in milliseconds (besides `server.healthTimeoutMs`). */
const PROBE_TIMEOUT_MS = 2000

const MASK = '****'

// ---------------------------------------------------------------------------------------------
// Secrets

const SECRET_KEY = /pass(word)?|secret|token|api[-_]?key|credential|authorization|cookie|private/i

/** The password of a URL with userinfo, and the values of its query parameters named like secrets. */
function urlSecrets(text: string): string[] {
  const out: string[] = []
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#@]*)@/i.exec(text)
  if (userinfo) {
    const [, password] = userinfo[1]!.split(':')
    if (password) out.push(password, decodeURIComponentSafe(password))
  }
  const query = text.indexOf('?')
  if (query !== -1) {
    for (const pair of text.slice(query + 1).split(/[&#]/)) {
      const [k, v] = pair.split('=')
      if (k && v && SECRET_KEY.test(k)) out.push(v, decodeURIComponentSafe(v))
    }
  }
  return out
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * Every secret string of a config value: URL passwords and secret query parameters anywhere, every
 * value under a `headers` object, every string under a key named like a secret. Walks at most 64
 * levels; functions and class instances other than plain objects and arrays are skipped.
 */
export function collectSecrets(value: unknown, out = new Set<string>(), key = '', underHeaders = false, depth = 0): Set<string> {
  if (depth > 64 || value === null || value === undefined) return out
  if (typeof value === 'string') {
    if (underHeaders || SECRET_KEY.test(key)) out.add(value)
    for (const s of urlSecrets(value)) out.add(s)
    return out
  }
  if (Array.isArray(value)) {
    for (const item of value) collectSecrets(item, out, key, underHeaders, depth + 1)
    return out
  }
  if (typeof value === 'object' && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    for (const [k, v] of Object.entries(value)) collectSecrets(v, out, k, underHeaders || /headers$/i.test(k), depth + 1)
  }
  return out
}

/** `url` with its password and secret query parameters replaced by `****`. */
export function maskUrl(url: string): string {
  let out = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/?#@:]*):([^/?#@]*)@/i, (_m, scheme: string, user: string) => `${scheme}${user}:${MASK}@`)
  out = out.replace(/([?&])([^=&#]+)=([^&#]*)/g, (m, sep: string, k: string) => (SECRET_KEY.test(k) ? `${sep}${k}=${MASK}` : m))
  return out
}

/** Replaces every secret (4 characters or more) in `text` with `****`. */
function scrub(text: string, secrets: readonly string[]): string {
  let out = text
  for (const s of secrets) {
    if (s.length < 4) continue
    if (out.includes(s)) out = out.split(s).join(MASK)
    const json = JSON.stringify(s).slice(1, -1)
    if (json !== s && out.includes(json)) out = out.split(json).join(MASK)
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Access

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/**
 * Checks a console API request (see the module comment).
 * @returns the error to answer with, or null when the request may go on.
 */
async function refusal(gateway: Gateway, request: FastifyRequest, secret: Buffer | null): Promise<{ error: Error & { code: string; statusCode?: number }; status?: number } | null> {
  const { config } = gateway
  const origin = request.headers.origin
  if (origin !== undefined && !config.server.allowedOrigins.includes(origin) && !isOwnOrigin(origin, request.headers.host)) {
    return { error: new OriginForbiddenError(origin.slice(0, 200)) }
  }
  if (config.mode === 'development' && LOOPBACK.has(request.ip)) return null
  const given = request.headers[ADMIN_SECRET_HEADER]
  if (secret && typeof given === 'string' && timingSafeEqual(digest(given), secret)) return null
  if (gateway.jwt) {
    try {
      const auth = await authenticateRequest(gateway, request)
      if (auth) {
        if (auth.roles.some((r) => config.console.roles.includes(r))) return null
        return { error: new ConsoleDeniedError(`The console needs a role of console.roles (${config.console.roles.join(', ')})`), status: 403 }
      }
    } catch (err) {
      if (isTributaryError(err)) return { error: err as Error & { code: string } }
      throw err
    }
  }
  return { error: new ConsoleDeniedError(`The console needs ${ADMIN_SECRET_HEADER}: <console.adminSecret>${gateway.jwt ? ' or a token with a role of console.roles' : ''}`), status: 401 }
}

// ---------------------------------------------------------------------------------------------
// Sources

/** The URL a source definition names (database `url`, REST `baseUrl`/`source`, GraphQL `url`), masked. */
function sourceUrl(definition: Record<string, unknown>): string | null {
  for (const key of ['url', 'endpoint', 'baseUrl', 'openapi', 'source']) {
    const v = definition[key]
    if (typeof v === 'string') return maskUrl(v)
  }
  const subgraphs = definition.subgraphs
  if (Array.isArray(subgraphs)) {
    const urls = subgraphs.map((s: unknown) => (typeof s === 'object' && s && typeof (s as { url?: unknown }).url === 'string' ? maskUrl((s as { url: string }).url) : null)).filter(Boolean)
    if (urls.length) return urls.join(', ')
  }
  return null
}

/** The public name of a source's own type: `<namespace>_<Type>` when the public schema has it, else as is. */
function publicName(schema: GraphQLSchema, namespace: string, name: string): string {
  return namespace && schema.getType(`${namespace}_${name}`) ? `${namespace}_${name}` : name
}

/** The public type names of one source. */
function sourceTypeNames(gateway: Gateway, source: Gateway['sources'][number]): string[] {
  const own = source.subschema.schema
  const names: string[] = []
  for (const t of Object.values(own.getTypeMap())) {
    if (t.name.startsWith('__') || t === own.getQueryType() || t === own.getMutationType() || t === own.getSubscriptionType()) continue
    const name = publicName(gateway.schema, source.namespace, t.name)
    if (gateway.schema.getType(name)) names.push(name)
  }
  return names.sort()
}

/** The public root fields of one source, by operation type. */
function sourceRootFields(gateway: Gateway, source: Gateway['sources'][number]): Record<'query' | 'mutation' | 'subscription', string[]> {
  const own = source.subschema.schema
  const pick = (ownRoot: ReturnType<GraphQLSchema['getQueryType']>, root: ReturnType<GraphQLSchema['getQueryType']>) => {
    if (!ownRoot || !root) return []
    const fields = root.getFields()
    return Object.keys(ownRoot.getFields()).map((f) => (source.namespace && fields[`${source.namespace}_${f}`] ? `${source.namespace}_${f}` : f)).filter((f) => fields[f]).sort()
  }
  return {
    query: pick(own.getQueryType(), gateway.schema.getQueryType()),
    mutation: pick(own.getMutationType(), gateway.schema.getMutationType()),
    subscription: pick(own.getSubscriptionType(), gateway.schema.getSubscriptionType()),
  }
}

/** The source (by name) that serves a public root query field. */
function rootFieldSource(gateway: Gateway, field: string): string | null {
  for (const s of gateway.sources) if (sourceRootFields(gateway, s).query.includes(field)) return s.name
  return null
}

/** The source (by name) that owns a public type. */
function typeSource(gateway: Gateway, type: string): string | null {
  for (const s of gateway.sources) if (sourceTypeNames(gateway, s).includes(type)) return s.name
  return null
}

interface ProbeRecord {
  health: SourceHealth
  at: string
}

function probe(source: Gateway['sources'][number], timeoutMs: number): Promise<SourceHealth> {
  let timer: NodeJS.Timeout | undefined
  const down: SourceHealth = { status: 'down', message: `no answer within ${timeoutMs} ms` }
  const started = performance.now()
  return Promise.race([
    source.subschema.health().catch((err: unknown): SourceHealth => ({ status: 'down', message: err instanceof Error ? err.message : String(err) })),
    new Promise<SourceHealth>((resolve) => (timer = setTimeout(() => resolve(down), timeoutMs))),
  ]).then((h) => ({ ...h, latencyMs: h.latencyMs ?? +(performance.now() - started).toFixed(2) })).finally(() => clearTimeout(timer))
}

// ---------------------------------------------------------------------------------------------
// Schema

interface FieldInfo {
  name: string
  type: string
  description: string | null
  args: { name: string; type: string; description: string | null; defaultValue: unknown }[]
  /** Database sources: the column and its declared type. */
  column?: string
  dataType?: string
  /** The object type it leads to, when it is one of the deployment's object types (a relation). */
  target?: string
  /** A link (README "Links") and the root field it calls. */
  link?: string
  deprecationReason?: string | null
}

interface TypeInfo {
  name: string
  /** The name without its namespace prefix. */
  shortName: string
  kind: 'object' | 'interface' | 'union' | 'enum' | 'input' | 'scalar'
  description: string | null
  fields: FieldInfo[]
  values?: string[]
  possibleTypes?: string[]
}

function argInfo(a: GraphQLArgument | GraphQLInputField) {
  return { name: a.name, type: String(a.type), description: a.description ?? null, defaultValue: a.defaultValue ?? null }
}

function fieldInfo(f: GraphQLField<unknown, unknown> | GraphQLInputField, links: ReadonlyMap<string, string>, parent: string): FieldInfo {
  const ext = (f.extensions as Record<string, unknown> | undefined)?.tributary as { column?: string; dataType?: string } | undefined
  const named = getNamedType(f.type)
  const info: FieldInfo = {
    name: f.name,
    type: String(f.type),
    description: f.description ?? null,
    args: 'args' in f ? f.args.map(argInfo) : [],
  }
  if (ext?.column) info.column = ext.column
  if (ext?.dataType) info.dataType = ext.dataType
  if (isObjectType(named) || isInterfaceType(named)) info.target = named.name
  const link = links.get(`${parent}.${f.name}`)
  if (link) info.link = link
  if ('deprecationReason' in f && f.deprecationReason) info.deprecationReason = f.deprecationReason
  return info
}

function typeInfo(t: GraphQLNamedType, namespace: string, links: ReadonlyMap<string, string>): TypeInfo {
  const shortName = namespace && t.name.startsWith(`${namespace}_`) ? t.name.slice(namespace.length + 1) : t.name
  const base = { name: t.name, shortName, description: t.description ?? null }
  if (isObjectType(t) || isInterfaceType(t)) return { ...base, kind: isObjectType(t) ? 'object' : 'interface', fields: Object.values(t.getFields()).map((f) => fieldInfo(f, links, t.name)) }
  if (isInputObjectType(t)) return { ...base, kind: 'input', fields: Object.values(t.getFields()).map((f) => fieldInfo(f, links, t.name)) }
  if (isEnumType(t)) return { ...base, kind: 'enum', fields: [], values: t.getValues().map((v) => v.name) }
  if (isUnionType(t)) return { ...base, kind: 'union', fields: [], possibleTypes: t.getTypes().map((x) => x.name) }
  return { ...base, kind: 'scalar', fields: [] }
}

/** `Type.field` → target root field, for every link of the config (also read from the field's extensions). */
function linkMap(gateway: Gateway): Map<string, string> {
  const out = new Map<string, string>()
  for (const l of gateway.config.links) out.set(`${l.on}.${l.field}`, l.target)
  for (const t of Object.values(gateway.schema.getTypeMap())) {
    if (!isObjectType(t)) continue
    for (const f of Object.values(t.getFields())) if (f.extensions?.[LINK_EXTENSION] && !out.has(`${t.name}.${f.name}`)) out.set(`${t.name}.${f.name}`, '(link)')
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Operations

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

/** An example value for a JSON Schema: its default, first enum value, or a placeholder of its type. */
function exampleOf(schema: Record<string, unknown> | undefined): unknown {
  if (!schema) return null
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0]
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'integer':
    case 'number':
      return 1
    case 'boolean':
      return true
    case 'string':
      return 'text'
    case 'array':
      return []
    default:
      return {}
  }
}

function operationInfo(gateway: Gateway, op: Gateway['operations'] extends ReadonlyMap<string, infer O> ? O : never, base: string) {
  const schema = op.variablesSchema as { properties?: Record<string, Record<string, unknown>>; required?: string[] }
  const required = schema.required ?? []
  const example: Record<string, unknown> = {}
  // Required variables, and the optional ones of a plain type (a filter object is left to the form).
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const value = exampleOf(prop)
    if (required.includes(name) || (value !== null && typeof value !== 'object')) example[name] = value
  }
  const method = op.kind === 'mutation' ? 'POST' : 'GET'
  const path = `/operations/${op.name}`
  let curl: string
  if (method === 'GET') {
    const qs = new URLSearchParams(Object.entries(example).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString()
    curl = `curl ${shellQuote(`${base}${path}${qs ? `?${qs}` : ''}`)}`
  } else {
    curl = `curl -X POST ${shellQuote(`${base}${path}`)} -H 'Content-Type: application/json' -d ${shellQuote(JSON.stringify(example))}`
  }
  if (op.kind === 'subscription') curl = `curl -N -H 'Accept: text/event-stream' ${shellQuote(`${base}${path}`)}`
  const callee = /^[A-Za-z_$][\w$]*$/.test(op.name) ? `client.${op.name}` : `client[${JSON.stringify(op.name)}]`
  const args = Object.keys(example).length ? JSON.stringify(example).replace(/"([A-Za-z_$][\w$]*)":/g, '$1: ').replace(/,/g, ', ') : ''
  const clientCall = op.kind === 'subscription' ? `for await (const event of ${callee}(${args})) { /* … */ }` : `const data = await ${callee}(${args})`
  return {
    name: op.name,
    kind: op.kind,
    method,
    path,
    routes: gateway.config.routes.filter((r) => r.operation === op.name).map((r) => ({ method: r.method, path: r.path })),
    variablesSchema: op.variablesSchema,
    example,
    /** The GraphQL document; null for a TypeScript operation (its file is code). */
    document: op.stored.language === 'typescript' ? null : print(op.stored.document),
    curl,
    clientCall,
  }
}

// ---------------------------------------------------------------------------------------------
// Assets and pages

interface Asset {
  body: Buffer
  type: string
  etag: string
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.txt': 'text/plain; charset=utf-8', '.map': 'application/json' }

/** The built assets: `console-assets/` beside this module (dist), else the repository's `dist/gateway/http/console-assets/`. */
function assetDir(): string | null {
  const beside = fileURLToPath(new URL('./console-assets/', import.meta.url))
  if (existsSync(join(beside, 'console.js'))) return beside
  const fromSources = fileURLToPath(new URL('../../dist/gateway/http/console-assets/', import.meta.url))
  return existsSync(join(fromSources, 'console.js')) ? fromSources : null
}

let assets: { files: Map<string, Asset>; version: string } | undefined

function loadAssets(): { files: Map<string, Asset>; version: string } {
  if (assets) return assets
  const files = new Map<string, Asset>()
  const dir = assetDir()
  if (dir) {
    for (const name of readdirSync(dir)) {
      const ext = /\.[a-z]+$/.exec(name)?.[0] ?? ''
      const body = readFileSync(join(dir, name))
      files.set(name, { body, type: TYPES[ext] ?? (name.startsWith('LICENSE') ? TYPES['.txt']! : 'application/octet-stream'), etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` })
    }
  }
  const hash = createHash('sha256')
  for (const [k, a] of [...files].sort(([a], [b]) => a.localeCompare(b))) hash.update(k).update(a.etag)
  assets = { files, version: hash.digest('hex').slice(0, 12) }
  return assets
}

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-src 'self'",
  "frame-ancestors 'self'",
].join('; ')

function page(title: string, body: string, styles: string[], scripts: string[]): string {
  const { version } = loadAssets()
  const url = (name: string) => (name.startsWith('/') ? name : `${CONSOLE_PREFIX}/assets/${name}?v=${version}`)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="data:,">
${styles.map((s) => `<link rel="stylesheet" href="${url(s)}">`).join('\n')}
</head>
<body>
${body}
${scripts.map((s) => `<script src="${url(s)}"${s.endsWith('.mjs') ? ' type="module"' : ''}></script>`).join('\n')}
</body>
</html>
`
}

function sendPage(reply: FastifyReply, html: string) {
  return reply.header('content-security-policy', CSP).header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').type('text/html; charset=utf-8').send(html)
}

// ---------------------------------------------------------------------------------------------
// Traffic

/** Paths that are not operations: never counted in the traffic window. */
const NOT_TRAFFIC = /^\/(console|health|playground\/assets|openapi\.json|metrics)(\/|$|\?)/

/**
 * Whether a request's URL is counted in the traffic window (not {@link NOT_TRAFFIC}): `/operations/…` and
 * `/graphql…`, the hot paths, without running the regular expression (it cannot match them).
 */
function isTraffic(url: string): boolean {
  return url.startsWith('/operations/') || url.startsWith('/graphql') || !NOT_TRAFFIC.test(url)
}

const kFailed = Symbol('tributary.console.failed')
type Marked = { [kFailed]?: boolean }

/** The operation label of a request: a stored operation's name, a `/graphql` operation's name, or `METHOD /route`. */
function operationLabel(request: FastifyRequest, route: string): string {
  if (route === '/operations/*') {
    const name = (request.params as { '*': string })['*']
    return name.endsWith('/') ? name.replace(/\/+$/, '') : name
  }
  if (route === '/graphql') {
    const body = request.body as { operationName?: unknown } | undefined
    return graphqlTrafficName(body && typeof body === 'object' && typeof body.operationName === 'string' ? body.operationName : (request.query as { operationName?: unknown }).operationName)
  }
  return `${request.method} ${route}`
}

/** Reads the errors of a JSON answer (`{ errors: [...] }`) into the recorder. */
function recordErrors(recorder: TrafficRecorder, gateway: Gateway, request: FastifyRequest, status: number, payload: string): void {
  let parsed: unknown
  try {
    parsed = JSON.parse(payload)
  } catch {
    return
  }
  const errors = (parsed as { errors?: unknown } | null)?.errors
  if (!Array.isArray(errors)) return
  const operation = operationLabel(request, routePattern(request) ?? '(unmatched)')
  for (const e of errors.slice(0, 10) as { message?: unknown; path?: unknown; extensions?: { code?: unknown; errorId?: unknown } }[]) {
    recorder.error({
      time: new Date().toISOString(),
      code: typeof e?.extensions?.code === 'string' ? e.extensions.code : 'TRB_ERR_INTERNAL',
      errorId: typeof e?.extensions?.errorId === 'string' ? e.extensions.errorId : null,
      path: Array.isArray(e?.path) ? e.path.join('.') : null,
      operation,
      status,
      message: gateway.config.mode === 'development' && typeof e?.message === 'string' ? e.message.slice(0, 500) : null,
    })
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Registers the console's pages, assets and API on `app`, and its traffic hooks (an `onSend` and an
 * `onResponse` hook on every route; they count operations only). Call only when `console.enabled`.
 */
export async function registerConsole(app: FastifyInstance, holder: GatewayHolder): Promise<void> {
  const recorder = (observers.traffic ??= new TrafficRecorder())
  const lastErrors = new Map<string, ProbeRecord>()

  // Both hooks run on every request: the cheap tests first, the route read from its context (not
  // `request.routeOptions`, a getter that builds an object), the body scanned only for a string of at most MAX_SCANNED_BODY characters
  // and only when its route did not mark it as an answer without errors.
  app.addHook('onSend', (request, reply, payload, done) => {
    const status = reply.statusCode
    if (status < 200 || !isTraffic(request.url)) return done(null, payload)
    // A body its route built without errors (answer-errors.ts) is not scanned.
    if (isAnswerWithoutErrors(reply, payload)) {
      if (status >= 400) (request as unknown as Marked)[kFailed] = true
      return done(null, payload)
    }
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) && payload.length <= MAX_SCANNED_BODY ? payload.toString('utf8') : undefined
    if (text !== undefined && text.length <= MAX_SCANNED_BODY && text.includes('"errors"')) {
      ;(request as unknown as Marked)[kFailed] = true
      recordErrors(recorder, holder.current, request, status, text)
    } else if (status >= 400) {
      ;(request as unknown as Marked)[kFailed] = true
    }
    done(null, payload)
  })
  app.addHook('onResponse', (request, reply, done) => {
    if (request.headers.upgrade === undefined && isTraffic(request.url)) {
      const route = routePattern(request)
      const type = reply.getHeader('content-type')
      if (route !== undefined && !(typeof type === 'string' ? type : String(type ?? '')).startsWith('text/html')) {
        recorder.operation(operationLabel(request, route), reply.elapsedTime, (request as unknown as Marked)[kFailed] === true || reply.statusCode >= 500)
      }
    }
    done()
  })

  const secretOf = () => {
    const s = holder.current.config.console.adminSecret
    return s ? digest(s) : null
  }
  const secretsOf = (() => {
    let cached: { gateway: Gateway; list: string[] } | undefined
    return (gateway: Gateway): string[] => {
      if (cached?.gateway === gateway) return cached.list
      const set = collectSecrets(gateway.config.datasources as unknown)
      const c = gateway.config
      for (const v of [c.console.adminSecret, c.metrics.bearerToken, c.pubsub.redisUrl, c.server.rateLimit?.redisUrl, (c.auth.jwt as { secret?: string } | null)?.secret]) {
        if (typeof v === 'string') {
          set.add(v)
          for (const s of urlSecrets(v)) set.add(s)
        }
      }
      collectSecrets(c.services as unknown, set)
      const list = [...set].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)
      cached = { gateway, list }
      return list
    }
  })()

  await app.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      const refused = await refusal(holder.current, request, secretOf())
      if (refused) return sendError(reply, refused.error, refused.status)
    })
    // No answer of the API carries a secret of the config, whatever put it there.
    scope.addHook('onSend', async (_request, reply, payload) => {
      reply.header('cache-control', 'no-store')
      return typeof payload === 'string' ? scrub(payload, secretsOf(holder.current)) : payload
    })

    scope.get('/overview', async (request) => {
      const gateway = holder.current
      const host = request.headers.host ?? '127.0.0.1'
      return {
        mode: gateway.config.mode,
        sources: gateway.sources.length,
        operations: [...gateway.operations.values()].filter((o) => !o.stored.internal).length,
        types: Object.keys(gateway.schema.getTypeMap()).filter((n) => !n.startsWith('__')).length,
        urls: {
          graphql: `http://${host}/graphql`,
          playground: gateway.config.graphql.playground ? `http://${host}/graphql` : null,
          openapi: `http://${host}/openapi.json`,
          metrics: gateway.config.metrics.enabled ? `http://${host}${gateway.config.metrics.path}` : null,
          health: `http://${host}/health`,
        },
        introspection: gateway.config.graphql.introspection,
      }
    })

    scope.get('/sources', async () => {
      const gateway = holder.current
      const timeout = Math.max(gateway.config.server.healthTimeoutMs, PROBE_TIMEOUT_MS)
      const healths = await Promise.all(gateway.sources.map((s) => probe(s, timeout)))
      const links = gateway.config.links.map((l) => ({ on: l.on, field: l.field, target: l.target, from: typeSource(gateway, l.on), to: rootFieldSource(gateway, l.target) }))
      return {
        sources: gateway.sources.map((s, i) => {
          const health = healths[i]!
          if (health.status === 'down') lastErrors.set(s.name, { health, at: new Date().toISOString() })
          const last = lastErrors.get(s.name)
          const definition = gateway.config.datasources.find((d, j) => (d.name ?? d.namespace ?? `source#${j}`) === s.name) as Record<string, unknown> | undefined
          return {
            name: s.name,
            namespace: s.namespace,
            kind: s.kind,
            url: definition ? sourceUrl(definition) : null,
            health: { status: health.status, message: health.message ?? null, latencyMs: health.latencyMs ?? null, ...(health.circuit ? { circuit: health.circuit } : {}) },
            lastError: last ? { message: last.health.message ?? 'down', at: last.at } : null,
            rootFields: sourceRootFields(gateway, s),
            types: sourceTypeNames(gateway, s),
            links: links.filter((l) => l.from === s.name || l.to === s.name),
          }
        }),
        links,
      }
    })

    scope.get('/schema', async (request, reply) => {
      const gateway = holder.current
      const { namespace, q } = request.query as { namespace?: unknown; q?: unknown }
      if ((q !== undefined && typeof q !== 'string') || (namespace !== undefined && typeof namespace !== 'string')) {
        return sendError(reply, new BadRequestError('namespace and q are strings (give each once)'))
      }
      if (typeof q === 'string' && q.length > MAX_SEARCH_LENGTH) {
        return sendError(reply, new BadRequestError(`q is longer than ${MAX_SEARCH_LENGTH} characters`))
      }
      const links = linkMap(gateway)
      const namespaces = gateway.sources.map((s) => ({ name: s.name, namespace: s.namespace, kind: s.kind }))
      const ownerOf = new Map<string, string>()
      for (const s of gateway.sources) for (const t of sourceTypeNames(gateway, s)) ownerOf.set(t, s.namespace)
      if (typeof q === 'string' && q.trim()) {
        const needle = q.trim().toLowerCase()
        const hits: { t: TypeInfo; score: number }[] = []
        for (const t of Object.values(gateway.schema.getTypeMap())) {
          if (t.name.startsWith('__')) continue
          const ns = ownerOf.get(t.name) ?? ''
          const info = typeInfo(t, ns, links)
          const short = info.shortName.toLowerCase()
          const full = t.name.toLowerCase()
          const score = short === needle ? 0 : full === needle ? 1 : short.startsWith(needle) ? 2 : full.startsWith(needle) ? 3 : short.includes(needle) || full.includes(needle) ? 4 : -1
          if (score >= 0) hits.push({ t: info, score })
        }
        hits.sort((a, b) => a.score - b.score || a.t.name.length - b.t.name.length || a.t.name.localeCompare(b.t.name))
        return { namespaces, types: hits.slice(0, MAX_SEARCH_RESULTS).map((h) => h.t) }
      }
      const source = gateway.sources.find((s) => s.namespace === namespace || s.name === namespace) ?? gateway.sources[0]
      if (!source) return { namespaces, types: [] }
      const types = sourceTypeNames(gateway, source).map((n) => typeInfo(gateway.schema.getType(n)!, source.namespace, links))
      const roots = sourceRootFields(gateway, source)
      const rootType = (kind: 'query' | 'mutation' | 'subscription', root: ReturnType<GraphQLSchema['getQueryType']>): TypeInfo[] => {
        if (!root || !roots[kind].length) return []
        const fields = root.getFields()
        return [{ name: root.name, shortName: root.name, kind: 'object', description: `The ${kind} root fields of ${source.name}`, fields: roots[kind].map((f) => fieldInfo(fields[f]!, links, root.name)) }]
      }
      return {
        namespaces,
        source: source.name,
        namespace: source.namespace,
        types: [...rootType('query', gateway.schema.getQueryType()), ...rootType('mutation', gateway.schema.getMutationType()), ...rootType('subscription', gateway.schema.getSubscriptionType()), ...types],
      }
    })

    scope.get('/operations', async (request) => {
      const gateway = holder.current
      const base = `http://${request.headers.host ?? '127.0.0.1'}`
      const ops = [...gateway.operations.values()].filter((o) => !o.stored.internal).sort((a, b) => a.name.localeCompare(b.name))
      return { operations: ops.map((op) => operationInfo(gateway, op, base)), openapi: '/openapi.json' }
    })

    scope.get('/traffic', async () => {
      const snapshot = recorder.snapshot()
      // The recorder is per process: a production gateway shows no message, whoever recorded it.
      if (holder.current.config.mode === 'production') snapshot.errors = snapshot.errors.map((e) => ({ ...e, message: null }))
      return snapshot
    })
  }, { prefix: `${CONSOLE_PREFIX}/api` })

  // Pages and assets: no data, so no access check beyond the app's own (Host, CORS).
  const shell = () =>
    page('Tributary console', '<div id="root"><p class="loading">Loading the console…</p><noscript>The console needs JavaScript.</noscript></div>', ['console.css'], ['console.js'])
  app.get(CONSOLE_PREFIX, async (_request, reply) => {
    if (!loadAssets().files.has('console.js')) return reply.code(503).type('text/plain; charset=utf-8').send('The console is not built: run `npm run build`.')
    return sendPage(reply, shell())
  })
  app.get(`${CONSOLE_PREFIX}/openapi`, async (_request, reply) =>
    sendPage(reply, page('OpenAPI · Tributary console', '<div id="swagger-ui"></div>', ['swagger-ui.css'], ['swagger-ui-bundle.js', 'openapi.js'])))
  app.get(`${CONSOLE_PREFIX}/graphiql`, async (_request, reply) => {
    const gateway = holder.current
    const html = renderPlaygroundHtml({ endpoint: '/graphql', subscriptionEndpoint: '/graphql', title: 'GraphiQL · Tributary console', assetsPrefix: PLAYGROUND_ASSETS_PREFIX, defaultQuery: playgroundQuery(gateway.schema, gateway.operations) })
    const { version } = loadAssets()
    // The playground's page, with the explorer plugin's script and styles, and the console's own bootstrap instead of the playground's.
    const withExplorer = html
      .replace('</head>', `<link rel="stylesheet" href="${CONSOLE_PREFIX}/assets/plugin-explorer.css?v=${version}">\n</head>`)
      .replace(/<script type="module" src="[^"]*playground\.js[^"]*"><\/script>/, `<script src="${CONSOLE_PREFIX}/assets/plugin-explorer.umd.js?v=${version}"></script>\n<script type="module" src="${CONSOLE_PREFIX}/assets/graphiql.mjs?v=${version}"></script>`)
    return reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').type('text/html; charset=utf-8').send(withExplorer)
  })
  app.get(`${CONSOLE_PREFIX}/assets/*`, async (request, reply) => {
    const { files, version } = loadAssets()
    const asset = files.get((request.params as { '*': string })['*'])
    if (!asset) return reply.callNotFound()
    reply.header('content-type', asset.type).header('etag', asset.etag).header('x-content-type-options', 'nosniff')
      .header('cache-control', (request.query as { v?: string }).v === version ? 'public, max-age=31536000, immutable' : 'public, max-age=0, must-revalidate')
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send()
    return reply.send(asset.body)
  })
}
